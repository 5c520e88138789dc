"""Theorems about spec/ and what makes them trustworthy, in layers (each imports only the ones below it):
``conformance/`` and ``teeth/`` over ``run`` (obligations in parallel workers) over ``registry`` (every theorem
``cpgraph prove`` runs) over ``theorems/`` over ``engine/`` (the one solver helper, obligations, scopes,
results). ``mutants/`` holds the planted-bug policies ``cpgraph check`` is scored against."""
