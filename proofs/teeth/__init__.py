"""The teeth pass: a proved theorem counts only if it still tells a wrong spec apart. ``run`` runs the pass
(alone, or in the proofs' pool of workers); its checks are the deliberately wrong variants (``variants/``: the
catalogue, the end-to-end and local-keying sides, the wrong term builders), one variant's verdict (``bite``),
coverage and non-vacuity (``coverage``), bounds no other hypothesis implies (``needed``), the spec's domain
guards (``guards``), minimal counterexamples (``minimal``) and the spec's agreement with the reference on
concrete edge cases (``agreement/``)."""
