"""Conformance: implementations (the reference, impl/, any object with the reference's API) against the spec
on concrete inputs. ``harness`` is the entry point, in two forms: one case at a time (``compare`` against the
spec evaluated through Z3, inputs from ``cases`` and the Z3-drawn clause edges of ``boundaries``) and in bulk
(``runner``, ``families`` and ``invalid`` judge the decision ``paths`` against the ``mirror``'s closed forms on
``draw``'s random inputs, reported by ``report``)."""
