"""cpgraph.proofs.conformance.boundaries: every clause edge is reached, each case sits exactly on its edge, output is stable."""

import pytest

from cpgraph import reference
from cpgraph.proofs.conformance import boundaries
from cpgraph.proofs.conformance.boundaries import BoundaryCase, boundary_cases


def _required(case: BoundaryCase, strategy: str = "zigzag") -> int:
    return reference.required_local_tokens(
        case.extend_seq_lens, cp_size=case.cp_size, align_size=case.align_size, strategy=strategy
    )


def _select(case: BoundaryCase, strategy: str = "zigzag") -> int | None:
    return reference.select_replay_bucket(
        num_tokens=case.num_tokens,
        required_local_tokens=_required(case, strategy),
        capture_num_tokens=case.capture_num_tokens,
        bucket_local_tokens=case.bucket_local_tokens,
        max_padding_factor=case.max_padding_factor,
    )


@pytest.mark.parametrize("cp_size", [2, 4, 8])
def test_every_clause_edge_is_reached(cp_size: int) -> None:
    clauses = {c.clause for c in boundary_cases(cp_size=cp_size)}
    residues = [c.removeprefix("L mod 2P = ").split(" (")[0].split(" = ") for c in clauses if c.startswith("L mod 2P")]
    for residue in ("0", "P-1", "P", "P+1", "2P-1"):
        assert sum(residue in names for names in residues) == 2, residue  # one request and three
    for edge in ("required = capacity", "required = capacity + 1", "bucket = n", "bucket = F*n", "bucket = F*n + 1",
                 "missing capacity", "num_tokens = 2P (least CP-active)", "L = 2P - 1 (not CP-active)"):
        assert edge in clauses, edge
    assert any(c.startswith("required > captured capacity") for c in clauses)


@pytest.mark.parametrize("cp_size", [1, 2, 3, 4, 8])
def test_each_case_sits_exactly_on_its_edge(cp_size: int) -> None:
    for case in boundary_cases(cp_size=cp_size):
        p, n, f = case.cp_size, case.num_tokens, case.max_padding_factor
        assert n == sum(case.extend_seq_lens) <= 4096 and len(case.extend_seq_lens) <= 3
        assert list(case.capture_num_tokens) == sorted(set(case.capture_num_tokens))
        assert case.align_size == reference.default_align_size(cp_size=p)
        if case.clause.startswith("L mod 2P = "):
            label = case.clause.removeprefix("L mod 2P = ").split(" (")[0].split(" = ")[0]
            residue = {"0": 0, "P-1": p - 1, "P": p, "P+1": p + 1, "2P-1": 2 * p - 1}[label] % (2 * p)
            assert all(x % (2 * p) == residue for x in case.extend_seq_lens), case
        elif case.clause == "required = capacity":
            assert case.bucket_local_tokens[n] == _required(case) and _select(case) == n
        elif case.clause == "required = capacity + 1":
            assert case.bucket_local_tokens[n] == _required(case) - 1 and _select(case) != n
        elif case.clause.startswith("required > captured capacity"):
            assert _required(case) > case.bucket_local_tokens[n] and len(case.extend_seq_lens) >= 2
        elif case.clause == "bucket = F*n":
            assert case.capture_num_tokens[-1] == f * n and _select(case) == f * n
        elif case.clause == "bucket = F*n + 1":
            assert case.capture_num_tokens == (f * n + 1,) and _select(case) is None
        elif case.clause == "missing capacity":
            assert n in case.capture_num_tokens and n not in case.bucket_local_tokens
        elif case.clause == "L = 2P - 1 (not CP-active)":
            assert min(case.extend_seq_lens) == 2 * p - 1
            assert not reference.is_cp_active(case.extend_seq_lens, num_tokens=n, cp_size=p)
        elif case.clause == "num_tokens = 2P (least CP-active)":
            assert n == 2 * p and reference.is_cp_active(case.extend_seq_lens, num_tokens=n, cp_size=p)


def test_cases_are_deterministic_across_calls_and_cache_clears() -> None:
    first = boundary_cases(cp_size=5, max_requests=2, max_tokens=999)
    boundaries._boundary_cases.cache_clear()
    again = boundary_cases(cp_size=5, max_requests=2, max_tokens=999)
    assert [(c.clause, c.extend_seq_lens, c.capture_num_tokens, dict(c.bucket_local_tokens)) for c in first] == [
        (c.clause, c.extend_seq_lens, c.capture_num_tokens, dict(c.bucket_local_tokens)) for c in again
    ]


def test_other_strategies_and_factors_are_honoured() -> None:
    for case in boundary_cases(cp_size=4, strategy="interleave", max_padding_factor=3, align_size=16):
        assert case.align_size == 16 and case.max_padding_factor == 3
    assert any(c.clause == "bucket = F*n" and c.capture_num_tokens[-1] == 3 * c.num_tokens
               for c in boundary_cases(cp_size=4, max_padding_factor=3))


def test_unreachable_edges_are_skipped_not_faked() -> None:
    cases = boundary_cases(cp_size=8, max_tokens=20)  # CP-active needs lengths >= 16
    assert all(sum(c.extend_seq_lens) <= 20 for c in cases)
    assert all(len(c.extend_seq_lens) == 1 or c.clause.startswith("L = 2P - 1") for c in cases)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(cp_size=0), "cp_size must be an int >= 1"),
        (dict(cp_size=2, align_size=0), "align_size must be None"),
        (dict(cp_size=2, max_padding_factor=0), "max_padding_factor must be"),
        (dict(cp_size=2, strategy="ring"), "strategy must be one of"),
        (dict(cp_size=True), "cp_size must be"),
    ],
)
def test_bad_arguments_name_the_argument_and_what_is_allowed(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        boundary_cases(**kwargs)  # type: ignore[arg-type]


def test_an_edge_z3_cannot_decide_is_a_failure_naming_it_never_a_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(boundaries, "_RLIMIT", 1)  # z3 gives up at once: unknown
    boundaries._boundary_cases.cache_clear()
    try:
        with pytest.raises(boundaries.BoundaryDrawError, match=r"could not draw the edge 'L mod 2P = 0'.*unknown"):
            boundary_cases(cp_size=3, max_tokens=777)
    finally:
        boundaries._boundary_cases.cache_clear()  # no case drawn under the tiny limit stays cached


def test_an_unreachable_edge_is_skipped_only_on_unsat() -> None:
    # P = 8 with at most 20 tokens: three CP-active requests (each >= 16 tokens) cannot exist; z3 proves it.
    config = boundaries._Config(8, 16, 2, 3, 20, "zigzag")
    assert boundaries._draw_lengths(config, 3, lambda ls, n: [], active=True, clause="three requests") is None
    assert boundaries._draw_lengths(config, 1, lambda ls, n: [], active=True, clause="one request") == (16,)
