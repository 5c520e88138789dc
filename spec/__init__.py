"""The executable spec in Z3: term builders only (no solver calls). One concept per module:

- spec.terms: typed aliases (IntTerm, BoolTerm, IntLike) and the Defined / Loads records.
- spec.arith: divmod_by (explicit quotient and remainder), floor_div, ceil_div, align_up, max_of.
- spec.zigzag: zigzag blocks, ownership and per-request loads.
- spec.strategies: the strategy table (zigzag, interleave, contiguous) and batch rank_loads.
- spec.capacity: required_local_tokens, capture_local_tokens, headroom_bound, headroom_local_tokens.
- spec.selection: the capture list, the padding window, the declarative least-fitting relation and the scan.
- spec.invariants: the docs/semantics.md invariants by id, plus conservation, balance and headroom.
"""
