"""The ``cpgraph`` command line: one subcommand per job, each in cpgraph/commands/<name>.py."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Each module defines ``add_parser(subparsers) -> None`` (registering its parser with
# ``set_defaults(run=<callable(args) -> int>)``) and is imported lazily so that
# ``cpgraph check`` does not pay for torch and ``cpgraph prove`` does not pay for matplotlib.
COMMANDS = ("prove", "check", "review", "plan", "simulate")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cpgraph",
        description="Invariants, proofs and checkers for context-parallel prefill under CUDA graphs.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"cpgraph.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"cpgraph.commands.{name}":
                raise
            continue  # not built yet
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help()
        return 2
    code = run(args)
    assert isinstance(code, int)
    return code


if __name__ == "__main__":
    sys.exit(main())
