"""Theorems about spec/, the one `check` helper, counterexample replay, boundary cases and conformance."""
