"""impl's decisions against the reference's on the same drawn input: rows, bucket, admission, fallback reason.

Every strategy id the reference exposes is compared (``cpgraph.reference.validate.STRATEGIES``), so a strategy
added to the reference's table is covered here as soon as its row lands; impl must know every one of them.
Lengths are drawn as lists, tuples, int64 numpy arrays and CPU tensors, short (scalar path) and long
(vectorised path).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from cpgraph import reference
from cpgraph.impl import decision, policy
from cpgraph.impl.checks import STRATEGY_IDS
from cpgraph.impl.lengths import VECTOR_MIN_REQUESTS
from cpgraph.reference import policy as reference_policy
from cpgraph.reference.keying import keying_row
from cpgraph.reference.validate import STRATEGIES


def test_impl_knows_every_reference_strategy_and_its_alignment() -> None:
    assert set(STRATEGIES) <= set(STRATEGY_IDS)
    for strategy in STRATEGIES:
        for p in (1, 2, 3, 4, 8, 64):
            assert decision.default_align_size(cp_size=p, strategy=strategy) == reference.default_align_size(
                cp_size=p, strategy=strategy
            )


FORMS = ("tuple", "list", "numpy", "tensor")


def _as(form: str, lengths: tuple[int, ...]) -> Any:
    if form == "list":
        return list(lengths)
    if form == "numpy":
        return np.array(lengths, dtype=np.int64)
    if form == "tensor":
        return torch.tensor(lengths, dtype=torch.int64)
    return lengths


@given(lengths=st.lists(st.integers(0, 9000), min_size=1, max_size=3 * VECTOR_MIN_REQUESTS).map(tuple),
       p=st.sampled_from((1, 2, 3, 4, 5, 8, 16, 32, 64)), a=st.integers(1, 130), strategy=st.sampled_from(STRATEGIES),
       form=st.sampled_from(FORMS))
@example(lengths=(1534, 161, 353) * 20, p=4, a=8, strategy="zigzag", form="numpy")
@example(lengths=(2**70, 5) * 30, p=4, a=8, strategy="zigzag", form="list")
def test_impl_rows_agree_with_reference_on_every_form_and_length(
    lengths: tuple[int, ...], p: int, a: int, strategy: str, form: str
) -> None:
    if form in ("numpy", "tensor") and max(lengths) >= 2**62:
        return
    expected = reference.required_local_tokens(lengths, cp_size=p, align_size=a, strategy=strategy)
    given_lengths = _as(form, lengths)
    assert decision.required_local_tokens(given_lengths, cp_size=p, align_size=a, strategy=strategy) == expected
    assert decision.max_rank_load(given_lengths, cp_size=p, strategy=strategy) == max(
        reference.rank_loads(lengths, cp_size=p, strategy=strategy)
    )


@given(bucket=st.integers(1, 20000), p=st.sampled_from((1, 2, 3, 4, 8, 64)), strategy=st.sampled_from(STRATEGIES),
       context_len=st.none() | st.integers(1, 5000), requests=st.integers(1, 40))
@example(bucket=4128, p=4, strategy="zigzag", context_len=2047, requests=1)
def test_impl_capacities_agree_with_reference(
    bucket: int, p: int, strategy: str, context_len: int | None, requests: int
) -> None:
    a = reference.default_align_size(cp_size=p, strategy=strategy)
    assert decision.capture_local_tokens(bucket, cp_size=p, align_size=a, strategy=strategy,
                                         context_len=context_len) == reference.capture_local_tokens(
        bucket, cp_size=p, align_size=a, strategy=strategy, context_len=context_len)
    assert decision.headroom_local_tokens(bucket, cp_size=p, align_size=a, max_requests=requests,
                                          strategy=strategy) == reference.headroom_local_tokens(
        bucket, cp_size=p, align_size=a, max_requests=requests, strategy=strategy)


@st.composite
def cp_sizes(draw: st.DrawFn) -> int:
    return draw(st.sampled_from((1, 2, 3, 4, 8, 16)))


@st.composite
def batches(draw: st.DrawFn, *, max_requests: int = 16, max_len: int = 600) -> tuple[int, ...]:
    """Request lengths, biased to the interesting residues around multiples of 2P."""
    return tuple(draw(st.lists(st.integers(0, max_len), min_size=1, max_size=max_requests)))


@st.composite
def capture_tables(draw: st.DrawFn, cp_size: int, align_size: int) -> tuple[tuple[int, ...], dict[int, int | None]]:
    """A sorted capture list with capacities: captured, headroom, or arbitrary with absent buckets."""
    buckets = tuple(sorted(draw(st.sets(st.integers(1, 4096), min_size=1, max_size=12))))
    kind = draw(st.sampled_from(("captured", "headroom", "arbitrary")))
    caps: dict[int, int | None]
    if kind == "captured":
        caps = {b: reference.capture_local_tokens(b, cp_size=cp_size, align_size=align_size) for b in buckets}
    elif kind == "headroom":
        r = draw(st.integers(1, 16))
        caps = {b: reference.headroom_local_tokens(b, cp_size=cp_size, align_size=align_size, max_requests=r)
                for b in buckets}
    else:
        caps = {b: draw(st.none() | st.integers(0, 2048)) for b in buckets if draw(st.booleans())}
    return buckets, caps


@st.composite
def policy_batches(draw: st.DrawFn) -> dict[str, Any]:
    p = draw(cp_sizes())
    a = draw(st.sampled_from((2 * p, p, 1)))
    lengths = draw(batches())
    n = sum(lengths) + draw(st.sampled_from((0, 0, 0, 1, 17)))
    buckets, caps = draw(capture_tables(p, a))
    if draw(st.booleans()):  # put n right at a bucket edge
        n = max(n, draw(st.sampled_from(buckets)))
    return dict(cp_rank=draw(st.integers(0, p - 1)), cp_size=p, align_size=a, num_tokens=max(n, 1),
                extend_seq_lens=lengths, capture_num_tokens=buckets, bucket_local_tokens=caps,
                max_padding_factor=draw(st.sampled_from((1, 2, 3))))


WORKED = dict(cp_rank=1, cp_size=4, align_size=8, num_tokens=2048, extend_seq_lens=(1534, 161, 353),
              capture_num_tokens=(2048, 2304, 2560), bucket_local_tokens={2048: 512, 2304: 576, 2560: 640},
              max_padding_factor=2)


@given(lengths=batches(max_requests=40, max_len=5000), p=cp_sizes(), a=st.integers(1, 40),
       strategy=st.sampled_from(STRATEGIES))
@example(lengths=(5,), p=2, a=4, strategy="dual_chunk_swap")
@example(lengths=(300, 3, 49, 50), p=4, a=1, strategy="dual_chunk_swap_dcp")
@example(lengths=(1534, 161, 353), p=4, a=8, strategy="zigzag")
@example(lengths=(0,), p=16, a=1, strategy="contiguous")
def test_impl_agrees_with_reference_on_required_local_tokens(
    lengths: tuple[int, ...], p: int, a: int, strategy: str
) -> None:
    expected = reference.required_local_tokens(lengths, cp_size=p, align_size=a, strategy=strategy)
    assert decision.required_local_tokens(lengths, cp_size=p, align_size=a, strategy=strategy) == expected
    assert decision.max_rank_load(lengths, cp_size=p, strategy=strategy) == max(
        reference.rank_loads(lengths, cp_size=p, strategy=strategy)
    )


@given(batch=policy_batches())
@example(batch=WORKED)
def test_impl_policy_agrees_with_reference_policy(batch: dict[str, Any]) -> None:
    assert policy.admit(**batch) == reference_policy.admit(**batch)
    try:
        expected: int | None = reference_policy.replay_bucket(**batch)
    except LookupError:
        expected = None
    if expected is None:
        with pytest.raises(LookupError):
            policy.replay_bucket(**batch)
    else:
        assert policy.replay_bucket(**batch) == expected
        assert policy.local_rows(bucket=expected, **batch) == reference_policy.local_rows(bucket=expected, **batch)


@given(batch=policy_batches())
def test_impl_agrees_with_reference_on_select_replay_bucket(batch: dict[str, Any]) -> None:
    args = dict(num_tokens=batch["num_tokens"], capture_num_tokens=batch["capture_num_tokens"],
                bucket_local_tokens=batch["bucket_local_tokens"], max_padding_factor=batch["max_padding_factor"])
    for required in (0, 1, 64, 513, 520, 2048):
        assert decision.select_replay_bucket(required_local_tokens=required, **args) == (
            reference.select_replay_bucket(required_local_tokens=required, **args)
        )


@st.composite
def runner_setups(draw: st.DrawFn) -> tuple[int, tuple[int, ...], reference.CaptureRule, int, str]:
    p = draw(st.sampled_from((1, 2, 4, 8)))
    buckets = tuple(sorted(draw(st.sets(st.integers(1, 2048), min_size=1, max_size=10))))
    buckets = buckets if buckets[-1] >= 2 * p else buckets + (2 * p,)
    rule = draw(st.sampled_from(("captured", "headroom")))
    strategy = draw(st.sampled_from(STRATEGIES))
    return (p, buckets, reference.CaptureRule(rule, max_requests=draw(st.integers(1, 16))), draw(st.sampled_from((1, 2))),
            strategy)


@given(setup=runner_setups(), lengths=batches(max_len=700), extra=st.sampled_from((0, 0, 3)),
       form=st.sampled_from(FORMS), repeat=st.sampled_from((1, 1, 30)))
@example(setup=(4, (2048, 2304, 2560), reference.CaptureRule(), 2, "zigzag"), lengths=(1534, 161, 353), extra=0,
         form="tuple", repeat=1)
def test_impl_plan_agrees_with_reference_runner_plan(
    setup: tuple[int, tuple[int, ...], reference.CaptureRule, int, str], lengths: tuple[int, ...], extra: int,
    form: str, repeat: int,
) -> None:
    """The dispatcher's plan (bucket, capacity, fallback reason) equals the reference runner's, field by field,
    for every strategy, from every form of the lengths, and through the policy's ``decide``."""
    p, buckets, rule, factor, strategy = setup
    lengths = lengths * repeat  # 30 copies: the vectorised path
    ref = reference.ReferenceRunner(cp_size=p, capture_num_tokens=buckets, capture_rule=rule, max_padding_factor=factor,
                                    strategy=strategy)
    kept = ref.capture_num_tokens
    a = decision.default_align_size(cp_size=p, strategy=strategy)
    if rule.kind == "headroom":
        caps = {b: decision.headroom_local_tokens(b, cp_size=p, align_size=a, max_requests=rule.max_requests,
                                                  strategy=strategy) for b in kept}
    else:
        caps = {b: decision.capture_local_tokens(b, cp_size=p, align_size=a, strategy=strategy) for b in kept}
    assert caps == ref.bucket_local_tokens
    n = sum(lengths) + extra
    if n == 0:
        return
    selector = decision.Selector.build(kept, caps)
    want = ref.plan(lengths, n)
    plans = [
        decision.plan_batch(lengths, num_tokens=n, cp_size=p, align_size=a, selector=selector,
                            max_padding_factor=factor, strategy=strategy),
        decision.plan_lengths(_as(form, lengths), n, cp_size=p, align_size=a, selector=selector,
                              max_padding_factor=factor, strategy=strategy),
        policy.decide(strategy=strategy, cp_rank=0, cp_size=p, align_size=a, num_tokens=n,
                      extend_seq_lens=_as(form, lengths), capture_num_tokens=kept, bucket_local_tokens=caps,
                      max_padding_factor=factor),
    ]
    for got in plans:
        assert got.extend_seq_lens == lengths
        assert (got.bucket, got.bucket_local_tokens, got.required_local_tokens) == (
            want.bucket, want.bucket_local_tokens, want.required_local_tokens), (lengths, n, p, buckets, rule)
        assert (got.fallback.value if got.fallback else None) == (want.fallback.value if want.fallback else None)


@pytest.mark.parametrize("p", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_impl_plan_agrees_with_reference_at_every_gate_edge(p: int, strategy: str) -> None:
    """Each fallback gate at its edge and one past it (n = 2P with one request of 2P tokens, a request of
    2P - 1, n at the largest bucket and one past it), field by field against the reference runner."""
    buckets = (2 * p, 3 * p, 4 * p, 8 * p)
    ref = reference.ReferenceRunner(cp_size=p, capture_num_tokens=buckets, max_padding_factor=2, strategy=strategy)
    a = decision.default_align_size(cp_size=p, strategy=strategy)
    selector = decision.Selector.build(ref.capture_num_tokens, ref.bucket_local_tokens)
    decide = decision.decider(cp_size=p, align_size=a, selector=selector, max_padding_factor=2, strategy=strategy)
    low = 2 * p
    cases = [((low,), low), ((low,), low + 1), ((low - 1,), low), ((low - 1,), low - 1), ((low, low - 1), 4 * low),
             ((low,), 8 * p), ((low,), 8 * p + 1), ((low, low), 8 * p), ((low, low + 1), 4 * p + 1)]
    for lengths, n in cases:
        want = ref.plan(lengths, n)
        plans = [
            decision.plan_batch(lengths, num_tokens=n, cp_size=p, align_size=a, selector=selector,
                                max_padding_factor=2, strategy=strategy),
            decision.plan_lengths(list(lengths), n, cp_size=p, align_size=a, selector=selector,
                                  max_padding_factor=2, strategy=strategy),
        ]
        for got in plans:
            assert (got.bucket, got.bucket_local_tokens, got.required_local_tokens) == (
                want.bucket, want.bucket_local_tokens, want.required_local_tokens), (lengths, n)
            assert (got.fallback.value if got.fallback else None) == (want.fallback.value if want.fallback else None), (lengths, n)
        # The dispatcher's bound decider (its own inlined gates) decides the same.
        _, _, (required, bucket, capacity, reason) = decide(list(lengths), n)
        assert (bucket, capacity, required) == (want.bucket, want.bucket_local_tokens, want.required_local_tokens), (lengths, n)
        assert (reason.value if reason else None) == (want.fallback.value if want.fallback else None), (lengths, n)


BAD_CALLS: list[dict[str, Any]] = [
    dict(extend_seq_lens=()),
    dict(extend_seq_lens=(3, -2)),
    dict(extend_seq_lens=(3, False)),
    dict(extend_seq_lens="12"),
    dict(extend_seq_lens=None),
    dict(cp_size=0),
    dict(cp_size=True),
    dict(align_size=0),
    dict(align_size=1.5),
    dict(strategy="ring"),
    dict(strategy=None),
]


@pytest.mark.parametrize("bad", BAD_CALLS)
def test_impl_raises_the_reference_error_on_bad_input(bad: dict[str, Any]) -> None:
    args: dict[str, Any] = dict(extend_seq_lens=(10, 20), cp_size=4, align_size=8, strategy="zigzag")
    args.update(bad)
    with pytest.raises(Exception) as want:
        reference.required_local_tokens(**args)
    with pytest.raises(type(want.value)) as got:
        decision.required_local_tokens(**args)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("p", [2, 3, 4])
def test_impl_agrees_with_reference_exhaustively_on_small_batches(p: int) -> None:
    """Every batch of one or two requests with lengths in [0, 4P+2] (every residue mod 2P, both sides of 2P),
    num_tokens at the sum and one past it, against captured, headroom and gapped capture tables."""
    a = 2 * p
    buckets = tuple(range(2 * p, 12 * p + 1, p))
    tables: list[dict[int, int | None]] = [
        {b: reference.capture_local_tokens(b, cp_size=p, align_size=a) for b in buckets},
        {b: reference.headroom_local_tokens(b, cp_size=p, align_size=a, max_requests=2) for b in buckets},
        {b: (None if i % 3 == 1 else reference.capture_local_tokens(b, cp_size=p, align_size=a) + a * (i % 2))
         for i, b in enumerate(buckets)},
    ]
    lengths_space = [(x,) for x in range(4 * p + 3)] + [(x, y) for x in range(4 * p + 3) for y in range(4 * p + 3)]
    for table in tables:
        for lengths in lengths_space:
            for n in (sum(lengths), sum(lengths) + 1):
                if n == 0:
                    continue
                for factor in (1, 2):
                    batch = dict(cp_rank=0, cp_size=p, align_size=a, num_tokens=n, extend_seq_lens=lengths,
                                 capture_num_tokens=buckets, bucket_local_tokens=table, max_padding_factor=factor)
                    admitted = reference_policy.admit(**batch)  # type: ignore[arg-type]
                    assert policy.admit(**batch) == admitted, batch  # type: ignore[arg-type]
                    if admitted:
                        assert policy.replay_bucket(**batch) == reference_policy.replay_bucket(**batch), batch  # type: ignore[arg-type]


# -- per-rank loads and decodes ----------------------------------------------------------------------------------


@st.composite
def flagged_batches(draw: st.DrawFn, *, max_requests: int = 3 * VECTOR_MIN_REQUESTS) -> tuple[
        tuple[int, ...], int, str, tuple[bool, ...] | None]:
    """(lengths, P, strategy, is_prefilling): decodes (short, mostly one token) only for the strategies that
    place them; short and long batches (scalar and vectorised paths)."""
    p = draw(st.sampled_from((1, 2, 3, 4, 5, 8, 16)))
    strategy = draw(st.sampled_from(STRATEGIES))
    count = draw(st.integers(1, max_requests))
    flags = None
    if reference.STRATEGY_TABLE[strategy].decodes is not None and draw(st.integers(0, 3)):
        flags = tuple(draw(st.lists(st.booleans(), min_size=count, max_size=count)))
    lengths = tuple(
        draw(st.integers(0, 3) if flags is not None and not flags[i] else st.integers(0, 4 * p * p + 600))
        for i in range(count))
    return lengths, p, strategy, flags


@given(case=flagged_batches(), form=st.sampled_from(FORMS), flag_form=st.sampled_from(("tuple", "list", "numpy", "tensor")))
@example(case=((300, 1, 1, 1, 1, 1), 4, "dual_chunk_swap", (True, False, False, False, False, False)), form="tuple",
         flag_form="tuple")
@example(case=((170, 161, 153), 4, "dual_chunk_swap", None), form="list", flag_form="tuple")
@example(case=((49, 50, 3, 0, 1), 4, "dual_chunk_swap_dcp", (True, True, True, True, False)), form="numpy",
         flag_form="numpy")
def test_impl_rank_loads_agree_with_reference_with_decodes(
    case: tuple[tuple[int, ...], int, str, tuple[bool, ...] | None], form: str, flag_form: str
) -> None:
    lengths, p, strategy, flags = case
    want = reference.rank_loads(lengths, cp_size=p, strategy=strategy, is_prefilling=flags)
    given_flags: Any = flags
    if flags is not None and flag_form == "list":
        given_flags = list(flags)
    elif flags is not None and flag_form == "numpy":
        given_flags = np.array(flags, dtype=bool)
    elif flags is not None and flag_form == "tensor":
        given_flags = torch.tensor(flags, dtype=torch.bool)
    given_lengths = _as(form, lengths)
    assert decision.rank_loads(given_lengths, cp_size=p, strategy=strategy, is_prefilling=given_flags) == want
    assert decision.max_rank_load(given_lengths, cp_size=p, strategy=strategy, is_prefilling=given_flags) == max(want)
    a = reference.default_align_size(cp_size=p, strategy=strategy)
    assert decision.required_local_tokens(given_lengths, cp_size=p, align_size=a, strategy=strategy,
                                          is_prefilling=given_flags) == reference.align_up(max(want), a)


# -- keyed decisions: global (with decodes) and local, against the reference's selection and keying tables ----------


@st.composite
def keyed_batches(draw: st.DrawFn) -> dict[str, Any]:
    lengths, p, strategy, flags = draw(flagged_batches(max_requests=40))
    sizes = tuple(sorted(draw(st.sets(st.integers(1, 3000), min_size=1, max_size=12))))
    if draw(st.booleans()):  # a size right at the key, or one past it
        key = max(reference.rank_loads(lengths, cp_size=p, strategy=strategy, is_prefilling=flags))
        sizes = tuple(sorted(set(sizes) | {max(1, key + draw(st.sampled_from((-1, 0, 0, 1))))}))
    return dict(lengths=lengths, p=p, strategy=strategy, flags=flags, sizes=sizes,
                a=draw(st.sampled_from((1, p, 2 * p))), extra=draw(st.sampled_from((0, 0, 3))),
                factor=draw(st.sampled_from((1, 2, 3))))


def _expected_local(case: dict[str, Any]) -> tuple[int, int | None]:
    """The reference's local keying: key m = the largest rank_loads (keying table's key), size = the least listed
    s >= m (a size s holds s rows: the table's capacities)."""
    row = keying_row("local")
    loads = reference.rank_loads(case["lengths"], cp_size=case["p"], strategy=case["strategy"],
                                 is_prefilling=case["flags"])
    key = row.key(_n(case), loads)
    capacities = row.capacities(case["sizes"], {})
    fitting = [s for s in case["sizes"] if s >= key and (capacities.get(s) or 0) >= key]
    assert key == max(loads) and not row.windowed and not row.gated
    return key, (fitting[0] if fitting else None)


def _expected_global(case: dict[str, Any], caps: dict[int, int | None]) -> tuple[int, int | None]:
    lengths, p, n = case["lengths"], case["p"], _n(case)
    loads = reference.rank_loads(lengths, cp_size=p, strategy=case["strategy"], is_prefilling=case["flags"])
    required = reference.align_up(max(loads), case["a"])
    if not reference.is_cp_active(lengths, num_tokens=n, cp_size=p):
        return required, None
    return required, reference.select_replay_bucket(
        num_tokens=n, required_local_tokens=required, capture_num_tokens=case["sizes"], bucket_local_tokens=caps,
        max_padding_factor=case["factor"])


def _n(case: dict[str, Any]) -> int:
    lengths: tuple[int, ...] = case["lengths"]
    extra: int = case["extra"]
    return max(1, sum(lengths) + extra)


def _impl_decisions(case: dict[str, Any], keying: str, caps: dict[int, int | None],
                    policy_caps: dict[int, int | None] | None = None) -> list[tuple[int, int | None]]:
    """(required rows, bucket) from every door of impl's decision path; the policy's doors are handed
    ``policy_caps`` (default ``caps``) as the batch's bucket_local_tokens."""
    lengths, p, strategy, flags, n = case["lengths"], case["p"], case["strategy"], case["flags"], _n(case)
    table = caps if policy_caps is None else policy_caps
    a, factor, sizes = case["a"], case["factor"], case["sizes"]
    selector = decision.Selector.build(sizes, caps)
    config: dict[str, Any] = dict(cp_size=p, align_size=a, selector=selector, max_padding_factor=factor,
                                  strategy=strategy, keying=keying)
    out = []
    _, _, (required, bucket, capacity, _) = decision.decider(**config)(list(lengths), n, flags)
    out.append((required, bucket))
    for got in (decision.plan_lengths(np.array(lengths, dtype=np.int64), n, is_prefilling=flags, **config),
                decision.plan_batch(lengths, num_tokens=n, is_prefilling=flags, **config),
                policy.decide(strategy=strategy, keying=keying, is_prefilling=flags, cp_rank=p - 1, cp_size=p,
                              align_size=a, num_tokens=n, extend_seq_lens=lengths, capture_num_tokens=sizes,
                              bucket_local_tokens=table, max_padding_factor=factor)):
        out.append((got.required_local_tokens, got.bucket))
        if keying == "local" and got.bucket is not None:
            assert got.bucket_local_tokens == got.bucket  # a size s holds s rows
    batch: dict[str, Any] = dict(cp_rank=0, cp_size=p, align_size=a, num_tokens=n, extend_seq_lens=lengths,
                                 capture_num_tokens=sizes, bucket_local_tokens=table, max_padding_factor=factor)
    admitted = policy.admit(strategy=strategy, keying=keying, is_prefilling=flags, **batch)
    try:
        replayed: int | None = policy.replay_bucket(strategy=strategy, keying=keying, is_prefilling=flags, **batch)
    except LookupError:
        replayed = None
    assert admitted == (replayed is not None)
    if replayed is not None:
        rows = policy.local_rows(bucket=replayed, strategy=strategy, keying=keying, is_prefilling=flags, **batch)
        out.append((rows[0], replayed))
        assert len(set(rows)) == 1 and len(rows) == p
    return out


@given(case=keyed_batches())
@example(case=dict(lengths=(170, 161, 153), p=4, strategy="dual_chunk_swap", flags=None,
                   sizes=(1, 2, 4, *range(8, 256, 8), *range(256, 513, 16)), a=1, extra=0, factor=2))
@example(case=dict(lengths=(300, 1, 1, 1, 1, 1), p=4, strategy="dual_chunk_swap_replicated",
                   flags=(True, False, False, False, False, False), sizes=(80, 81, 96), a=1, extra=0, factor=2))
@example(case=dict(lengths=(3,), p=1, strategy="zigzag", flags=None, sizes=(2, 3), a=2, extra=0, factor=1))
def test_impl_local_keyed_decisions_agree_with_reference(case: dict[str, Any]) -> None:
    """Under local keying every door (the dispatcher's bound decider, plan_lengths, plan_batch, the policy's
    decide/admit/replay_bucket/local_rows) picks the least captured size >= max(reference.rank_loads), and
    records that key as the rows; no CP-active gate, no window, no capacity table read."""
    key, size = _expected_local(case)
    captured: dict[int, int | None] = {s: s for s in case["sizes"]}
    recorded: dict[int, int | None] = {s: (s * 7919) % 50 or None for s in case["sizes"][::2]}  # not read
    for got in _impl_decisions(case, "local", captured, recorded):
        assert got == (key, size), case


@given(case=keyed_batches(), kind=st.sampled_from(("captured", "arbitrary")))
def test_impl_global_keyed_decisions_with_decodes_agree_with_reference(case: dict[str, Any], kind: str) -> None:
    """Under global keying, with decodes: the required rows are align_up(max(reference.rank_loads), A) and the
    bucket is the reference's selection over the recorded capacities, behind its CP-active gate."""
    p, a, strategy = case["p"], case["a"], case["strategy"]
    caps: dict[int, int | None] = (
        {b: reference.capture_local_tokens(b, cp_size=p, align_size=a, strategy=strategy) for b in case["sizes"]}
        if kind == "captured" else {b: (b * 7919) % 700 or None for b in case["sizes"]})
    want_required, want_bucket = _expected_global(case, caps)
    for required, bucket in _impl_decisions(case, "global", caps):
        assert bucket == want_bucket, case
        assert required in (want_required, -1)  # policy refusals before selection compute no rows
