"""How a command ends: the exit codes (the README's table), a usage error, and Ctrl-C (told apart from a
KeyboardInterrupt a policy raises, and let through the solver).

Exit codes:
    0 all hold / proved; 1 a violation or refutation; 2 usage error; 3 unknown (no verdict);
    4 internal error (a cpgraph bug); 130 interrupted.
"""

from __future__ import annotations

OK = 0
FOUND = 1
USAGE = 2
UNKNOWN = 3
INTERNAL = 4
INTERRUPTED = 130

EXIT_CODES = (
    (OK, "every invariant holds / every theorem proved / no design crashes"),
    (FOUND, "a violation, refutation or crash was found (the counterexample is shown)"),
    (USAGE, "usage error: bad flag or value, unreadable or invalid file, policy that breaks the protocol"),
    (UNKNOWN, "unknown: the solver gave up or a budget ran out before a required verdict"),
    (INTERNAL, "internal error: a bug in cpgraph (one line; the traceback with --debug)"),
    (INTERRUPTED, "interrupted (Ctrl-C)"),
)

class _Interrupt:
    """Set by the command line's SIGINT handler: a real Ctrl-C, told apart from a KeyboardInterrupt
    that a policy raises (cpgraph/check/calls.py reads it)."""

    real = False


INTERRUPT = _Interrupt()


class _Process:
    """``standalone``: this process is the ``cpgraph`` command itself (``main()`` with no argv), so a
    subcommand may fork a supervisor that outlives it (cpgraph/check/calls.py supervise())."""

    standalone = False


PROCESS = _Process()


class UsageError(Exception):
    """A bad command line or input file: printed as one line, exit 2."""


def solver_leaves_ctrl_c_to_python() -> None:
    """z3 catches SIGINT during a check by default (it cancels the query and answers unknown, and the
    Ctrl-C is lost); with this the interrupt reaches Python as soon as the running query returns, and
    the command exits 130."""
    import z3

    z3.set_param("ctrl_c", False)
