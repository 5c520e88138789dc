"""Deliberately wrong variants, each with the verdict its theorem must give: ``catalogue`` (every variant, the
list the teeth pass runs), ``end_to_end`` and ``local`` (wrong sides for the end-to-end theorems of each graph
keying) and ``terms`` (the wrong term builders they swap in)."""
