"""The theorems, one module per subject: arithmetic (``arith``), the layouts' conservation and balance
(``strategies``, ``zigzag``, ``dual_chunk_swap``), capacities (``capacity``), the scan and consensus
(``selection``), the end-to-end theorems per graph keying (``end_to_end``, ``end_to_end_local``, ``whole_list``),
and what they stand on: the claims restated from their definitions (``claims``), the setting every end-to-end
theorem quantifies over (``setting``), the class-batch abstraction (``batch``) and the induction over requests
(``induction``); plus the lemmas behind ``cpgraph review``'s count encoding (``design_lemmas``). Each theorem is
a builder of queries (proofs/engine/obligation.py); proofs/registry.py lists the ones ``cpgraph prove`` runs."""
