"""The agreement stage of the teeth pass: spec/ evaluated on concrete edge cases against reference/ (``stage``),
the spec's batch forms against their meaning (``forms``), the theorems' claim builders against their
definitions (``claims``), and the bookkeeping they share (``tally``)."""
