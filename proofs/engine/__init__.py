"""The engine every proof runs on, knowing no theorem: the one solver helper (``check``: proved, refuted with a
model, or unknown; ``cross_check`` with cvc5), what a theorem is (``obligation``: a named builder of queries over
one parameter), each theorem's declared scope (``scope``) and the witnesses that its hypotheses reach it
(``witness``), the records a run reports (``results``, ``opinions``), a refuted query's minimised counterexample
and its replay through the reference (``counterexample``, ``replay``, ``replay_batch``), the spec evaluated on
concrete inputs (``evaluate``), least models for the design review (``search``) and the constants a term
mentions (``constants``). It imports spec/, reference/ and z3, never a theorem."""
