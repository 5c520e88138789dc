"""Adapters that present other projects' bucket-selection code as ``cpgraph check`` policies.

``cpgraph.adapters.sglang``: sglang's own prefill-CP CUDA-graph selector (``:zigzag``, ``:interleave``),
run from its files in an import sandbox (``cpgraph.adapters.shim``).
"""
