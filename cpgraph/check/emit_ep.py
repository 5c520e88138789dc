"""--emit-test for EP-step violations: a pytest module that replays each minimised step through the release's own
code (fetched by version when its folder is gone) and asserts the invariant; it fails while the release breaks it.

``ep_broken`` is what an emitted test calls: the release's answers for the step, judged by the reference."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from cpgraph.check.subjects.ep_steps import EpViolation
from cpgraph.reference.ep_graphs import EpConfig, RankStep, judge
from cpgraph.reference.invariants import INVARIANT_TABLE

ENV = "CPGRAPH_RELEASE"  # 'installed': run against the installed megatron-core instead
PACKAGE = "megatron-core"


def ep_driver(version: str, root: str | None = None) -> object:
    """The Megatron-Core adapter over ``version``: unpacked under ``root`` when it holds the package, else fetched
    (or the installed release with CPGRAPH_RELEASE=installed)."""
    from cpgraph.adapters import megatron

    if os.environ.get(ENV) == "installed":
        return megatron.policy_from(megatron.installed_root())
    if root is None or not os.path.isdir(os.path.join(root, "megatron")):
        from cpgraph.adapters.releases import fetch

        root = str(fetch(PACKAGE, version))
    return megatron.policy_from(root)


def ep_broken(version: str, root: str | None, config: EpConfig, steps: Sequence[RankStep], invariant: str, kind: str = "") -> str:
    """Why the release breaks ``invariant`` (of ``kind``, when given) on ``steps`` under ``config``, every EP
    rank's answer listed; '' when it keeps it."""
    from cpgraph.adapters.megatron import MegatronPolicy

    driver = ep_driver(version, root)
    assert isinstance(driver, MegatronPolicy)
    graphs = driver.graphs(config)
    answers = driver.answers(config, steps)
    found = [f for f in judge(steps, graphs, answers, matching=config.matching, equal_shapes=config.equal_shapes)
             if f.invariant == invariant and not f.info and (not kind or f.kind == kind)]
    ranks = "\n".join(f"  EP rank {a.rank}: step {s} -> {a.describe()}" for a, s in zip(answers, steps))
    return f"{found[0].why}\n{ranks}" if found else ""


def ep_regression_test(target: str, violations: Sequence[EpViolation], version: str, root: str, *, test_path: str) -> str:
    """Source of a pytest module with one test per violation, run against megatron-core ``version``."""
    if not violations:
        raise ValueError("ep_regression_test needs at least one violation; every invariant held")
    rel_root = os.path.relpath(os.path.abspath(root), os.path.dirname(os.path.abspath(test_path)))
    lines = [
        f'"""EP-step regression tests emitted by `cpgraph check {target}`: one minimised step per broken invariant,',
        f"found in megatron-core {version}. They run against that release: unpacked under RELEASE_ROOT when it is",
        f'there, else fetched from the package index ({ENV}=installed: the installed megatron-core)."""',
        "",
        "import os",
        "",
        "from cpgraph.check.emit_ep import ep_broken",
        "from cpgraph.reference.ep_graphs import EpConfig, GraphDims",
        "",
        "HERE = os.path.dirname(os.path.abspath(__file__))",
        f"RELEASE = {version!r}",
        f"RELEASE_ROOT = os.path.normpath(os.path.join(HERE, {rel_root!r}))",
    ]
    for v in violations:
        c = v.config
        fields = ", ".join(f"{k}={getattr(c, k)!r}" for k in vars(c))
        name = re.sub(r"\W+", "_", f"{v.invariant}_{v.kind}_ep_{c.ep_size}_{c.model}").lower()
        steps = ", ".join("None" if s is None else f"GraphDims({s.tokens}, {s.prefill}, {s.decode})" for s in v.steps)
        lines += [
            "",
            "",
            f"def test_{name}() -> None:",
            f'    """{v.invariant} ({v.kind}): {INVARIANT_TABLE[v.invariant].stated("ep_step")}."""',
            f"    config = EpConfig({fields})",
            f"    steps = ({steps},)  # one per EP rank: [tokens]: prefill P + decode D, None idle",
            *[f"    # decided at {where}" for where in v.decided_at],
            f"    why = ep_broken(RELEASE, RELEASE_ROOT, config, steps, {v.invariant!r}, {v.kind!r})",
            f'    assert not why, f"{v.invariant} broken: {{why}}"',
        ]
    return "\n".join(lines) + "\n"


def write_ep_test(path: str, target: str, violations: Sequence[EpViolation], version: str, root: str) -> str:
    source = ep_regression_test(target, violations, version, root, test_path=path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(source)
    return path
