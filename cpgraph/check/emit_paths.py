"""--emit-test for graph-path violations: a pytest module that replays each minimised step through the
release's own graph paths and asserts the invariant; it fails while the release breaks it."""

from __future__ import annotations

import os
import re

from cpgraph.check.subjects.path_violation import PathViolation
from cpgraph.check.release import ENV, INSTALLED, Release
from cpgraph.reference.invariants import INVARIANT_TABLE

def paths_regression_test(target: str, violations: tuple[PathViolation, ...], release: Release, *, test_path: str) -> str:
    """Source of a pytest module with one test per graph-path violation, run against ``release`` (as the
    prefill tests: RELEASE_ROOT relative to the test, fetched by version when missing; CPGRAPH_RELEASE=installed
    for the installed stack)."""
    if not violations:
        raise ValueError("paths_regression_test needs at least one violation; every graph path held")
    test_dir = os.path.dirname(os.path.abspath(test_path))
    rel_root = os.path.relpath(release.root, test_dir)
    lines = [
        f'"""Graph-path regression tests emitted by `cpgraph check {target}`: one minimised step per broken invariant',
        f"and path, found in {release.label}. They run against that release: unpacked under RELEASE_ROOT when it is",
        f"there, else fetched from the package index. With {ENV}={INSTALLED} they run against the installed",
        f'{release.package} instead (in your own checkout: `{ENV}={INSTALLED} pytest THIS_FILE`)."""',
        "",
        "import os",
        "",
        "from cpgraph.check.release import path_broken",
        "from cpgraph.reference.graph_paths import GraphConfig, GraphStep",
        "",
        "HERE = os.path.dirname(os.path.abspath(__file__))",
        f"POLICY = {target!r}",
        f"RELEASE = {release.version!r}  # the {release.package} release the steps came from",
        f"RELEASE_ROOT = os.path.normpath(os.path.join(HERE, {rel_root!r}))  # where it was unpacked, relative to this file",
    ]
    for v in violations:
        c = v.config
        name = re.sub(r"\W+", "_", f"{v.invariant}_on_{v.mode}_dcp_{v.dcp_size}_dp_{len(v.steps)}").lower()
        steps = [f"GraphStep(lengths={s.lengths!r}, prefilling={s.prefilling!r}, cp_size={s.cp_size}, placement={s.placement!r})"
                 for s in v.steps]
        lines += [
            "",
            "",
            f"def test_{name}() -> None:",
            f'    """{v.invariant}: {INVARIANT_TABLE[v.invariant].graph_path} (costs {v.cost})."""',
            "    steps = (  # one per DP rank",
            *[f"        {step}," for step in steps],
            "    )",
            f"    config = GraphConfig({c.cudagraph_mode!r}, token_sizes={c.token_sizes!r}, decode_request_sizes={c.decode_request_sizes!r},",
            f"                         query_lens={c.query_lens!r}, max_num_seqs={c.max_num_seqs})",
            *[f"    # decided at {where}" for where in v.decided_at],
            f"    why = path_broken(POLICY, RELEASE, RELEASE_ROOT, steps, config, {v.invariant!r}, dcp_size={v.dcp_size})",
            f'    assert not why, f"{v.invariant} broken on {v.mode}: {{why}}"',
        ]
    return "\n".join(lines) + "\n"


def write_paths_test(path: str, target: str, violations: tuple[PathViolation, ...], release: Release) -> str:
    source = paths_regression_test(target, violations, release, test_path=path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(source)
    return path
