"""The decision path's boundary: request lengths validated once, in whatever form a serving stack holds them.

``accept_lengths`` takes a list, a tuple, a 1-d integer numpy array or a CPU torch tensor and returns the facts
every formula needs, computed once: ``(values, vector, requests, total, minimum)``. It is a plain tuple on purpose
(built once a batch on the hot path, where a record class costs more than the whole R = 1 decision); ``values`` are
the ints as given (None when only an array is held), ``vector`` the same lengths as an int64 numpy array (None on
the scalar path), ``total`` the exact sum as a Python int.

numpy is imported lazily, on the first batch long enough to want it (it comes with matplotlib, a core
dependency; without it every batch takes the scalar path). torch is never imported here: a tensor is recognised
only when its caller has already imported torch, so ``cpgraph check cpgraph.impl.policy`` pays for neither.

``accept_is_prefilling`` is the same boundary for the optional per-request ``is_prefilling`` (which requests are
prefills; a False one is a decode): None, a list/tuple of bools, a 1-d bool numpy array or CPU bool tensor, one
per request; an all-True batch is returned as None (the same batch as no flags), any other as a tuple of bools.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cpgraph.reference.validate import check_is_prefilling, check_lengths

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Int64Array = NDArray[np.int64]
else:
    Int64Array = Any

# (values as given, int64 array, R, sum, min); see the module docstring.
Lengths = tuple[Sequence[int] | None, Int64Array | None, int, int, int]

# From this many requests on, a list is converted once to an int64 array and computed vectorised; below it the
# scalar path is faster. Measured crossover (required_local_tokens, thread CPU time, 2026-12-01): 32 for P <= 16;
# for P = 64 the vectorised path already wins by about 20% at R = 12, which a single threshold gives up.
VECTOR_MIN_REQUESTS = 32
ALLOWED_ARRAYS = "a 1-d integer numpy array or CPU torch tensor (int64, int32, int16, int8, uint32, uint16, uint8)"
_NUMPY: list[ModuleType | None] = []
_DTYPES: list[Any] = []  # numpy's int64 dtype, once numpy is imported
# One compiled ``struct`` per batch size: packing a list of Python ints into int64 bytes is the fastest C-speed
# conversion the standard library offers (about 3x ``array('q', ...)``); numpy then reads the bytes in place.
_PACKERS: dict[int, struct.Struct] = {}


def _packer(count: int) -> struct.Struct:
    if len(_PACKERS) >= 256:
        _PACKERS.clear()
    packer = _PACKERS[count] = struct.Struct(f"{count}q")
    return packer


def _int64_bytes(values: Sequence[int]) -> bytes:
    """The values as native int64 bytes; struct.error for an item that is not an integer or does not fit int64."""
    return (_PACKERS.get(len(values)) or _packer(len(values))).pack(*values)


def numpy_module() -> ModuleType | None:
    """numpy if it can be imported (imported once, on first need), else None."""
    if not _NUMPY:
        try:
            import numpy
        except ImportError:  # pragma: no cover - numpy comes with matplotlib, a core dependency
            _NUMPY.append(None)
        else:
            _NUMPY.append(numpy)
            _DTYPES.append(numpy.dtype(numpy.int64))
            _UFUNCS.extend((numpy.frombuffer, numpy.add.reduce))
    return _NUMPY[0]


# numpy's frombuffer and add.reduce, bound once numpy is imported: the hot path calls them once a batch, and a
# module attribute lookup costs a few percent of an R = 256 decision.
_UFUNCS: list[Any] = []
_INT64_MAX = 2**63 - 1


_TORCH_INT_DTYPES: list[frozenset[Any]] = []


def _torch_int_dtypes(torch_mod: Any) -> frozenset[Any]:
    """The torch integer dtypes a length tensor may have (those with a numpy counterpart we accept)."""
    if not _TORCH_INT_DTYPES:
        _TORCH_INT_DTYPES.append(frozenset(
            (torch_mod.int64, torch_mod.int32, torch_mod.int16, torch_mod.int8, torch_mod.uint8)
            + tuple(getattr(torch_mod, name) for name in ("uint16", "uint32") if hasattr(torch_mod, name))
        ))
    return _TORCH_INT_DTYPES[0]


def lengths_tuple(lengths: Lengths) -> tuple[int, ...]:
    """The lengths as a tuple of Python ints (what ``Plan.extend_seq_lens`` records)."""
    values, vector = lengths[0], lengths[1]
    if type(values) is tuple:
        return values
    if values is not None:
        return tuple(values)
    assert vector is not None
    return tuple(vector.tolist())


def _exact(name: str, value: object) -> Lengths:
    """The exact path: the reference's validator (its messages), then the facts."""
    items = check_lengths(name, value)
    return (items, None, len(items), sum(items), min(items))


def _from_array(name: str, vec: Any, given: object) -> Lengths:
    """A numpy array: validated with reductions (min, max, sum; exact), never a Python loop."""
    if vec.dtype is not _DTYPES[0] or vec.ndim != 1:  # int64 (numpy's dtype object: identity is the cheapest test)
        vec = _int64_vector(name, vec, sys.modules["numpy"])
    count: int = vec.shape[0]
    if count < VECTOR_MIN_REQUESTS:  # a short array is cheaper as Python ints (exact ints, so no type checks)
        if not count:
            raise ValueError(f"{name} must be a non-empty sequence of ints >= 0, got an empty batch {given!r}")
        items = vec.tolist()
        lo = min(items)
        if lo < 0:
            i = next(i for i, x in enumerate(items) if x < 0)  # the first negative, as the reference names it
            raise ValueError(f"{name}[{i}] must be an int >= 0, got {items[i]} in {name}={given!r}")
        return (items, None, count, sum(items), lo)
    # argmin/argmax are ndarray methods in C (a fraction of a ufunc reduction's call overhead); item() gives a
    # Python int.
    low: int = vec.item(vec.argmin())
    if low < 0:
        i = int(sys.modules["numpy"].argmax(vec < 0))  # the first negative, as the reference names it
        raise ValueError(f"{name}[{i}] must be an int >= 0, got {int(vec[i])} in {name}={given!r}")
    # Non-negative int64 lengths whose maximum times their count stays below 2**63 sum without wrapping; past
    # that (never for real lengths), the exact sum on Python ints.
    if vec.item(vec.argmax()) <= _INT64_MAX // count:
        return (None, vec, count, int(_UFUNCS[1](vec)), low)
    items = tuple(vec.tolist())
    return (items, None, count, sum(items), low)


def _int64_vector(name: str, vec: Any, np: Any) -> Any:
    """A 1-d integer array as int64 (a copy unless it is one); TypeError/ValueError naming what is allowed."""
    if vec.ndim != 1:
        raise ValueError(f"{name} must be {ALLOWED_ARRAYS}; got shape {tuple(vec.shape)}")
    if vec.dtype is _DTYPES[0]:
        return vec
    if not (vec.dtype.kind == "i" or (vec.dtype.kind == "u" and vec.dtype.itemsize <= 4)):
        raise TypeError(f"{name} must be {ALLOWED_ARRAYS}; got dtype {vec.dtype}")
    return vec.astype(np.int64)


def _from_sequence(name: str, value: Any, count: int) -> Lengths:
    """A list or tuple of two or more items. The common case is accepted at C speed: ``sum`` (its type stays int
    only when every item is an int: a float, a numpy scalar, a Fraction or a str changes or breaks it) and the
    minimum (>= 2 rules out bools, which equal 0 or 1, and negatives). Anything else takes the exact check."""
    try:
        total = sum(value)
    except TypeError:
        return _exact(name, value)
    if type(total) is not int:
        return _exact(name, value)
    if count >= VECTOR_MIN_REQUESTS:
        if (_NUMPY[0] if _NUMPY else numpy_module()) is not None:
            packer = _PACKERS.get(count) or _packer(count)
            try:
                vec = _UFUNCS[0](packer.pack(*value), _DTYPES[0])
            except struct.error:  # a non-integer item, or a length past int64: the exact/scalar path
                return _exact(name, value)
            lo = vec.item(vec.argmin())
            if lo < 2:  # a bool, a negative, or a legal 0/1 length: the exact check decides (and says why)
                _exact(name, value)
            return (value, vec, count, total, lo)
    lo = min(value)
    if lo < 2:
        return _exact(name, value)
    return (value, None, count, total, lo)


def accept_lengths(value: object, name: str = "extend_seq_lens") -> Lengths:
    """Validate request lengths once: a non-empty list/tuple of ints >= 0, or a 1-d integer numpy array or CPU
    torch tensor of values >= 0. Errors (TypeError/ValueError) name the argument, the value and what is allowed;
    for lists and tuples they are the reference's, word for word."""
    kind = type(value)
    if kind is tuple or kind is list:
        count = len(value)  # type: ignore[arg-type]
        if count >= VECTOR_MIN_REQUESTS and _UFUNCS and _NUMPY[0] is not None:  # _from_sequence's long path, inline
            # A list is copied into a tuple once here: ``pack(*list)`` would build that tuple anyway, and the
            # facts then hold the lengths as the tuple a Plan records (lengths_tuple returns it, no second copy).
            items: tuple[Any, ...] = value if kind is tuple else tuple(value)  # type: ignore[assignment,arg-type]
            try:
                total = sum(items)
                vec = _UFUNCS[0]((_PACKERS.get(count) or _packer(count)).pack(*items), _DTYPES[0])
            except (TypeError, struct.error):  # a non-int item, or a length past int64: the exact/scalar path
                return _exact(name, value)
            if type(total) is not int:  # a float, numpy scalar or Fraction among ints (packing took its __index__)
                return _exact(name, value)
            low = vec.item(vec.argmin())
            if low < 2:  # a bool, a negative, or a legal 0/1 length: the exact check decides (and says why)
                _exact(name, value)
            return (items, vec, count, total, low)
        if count == 1:
            x = value[0]  # type: ignore[index]
            if type(x) is int and x >= 0:
                return (value, None, 1, x, x)  # type: ignore[return-value]
        elif count:
            return _from_sequence(name, value, count)
        return _exact(name, value)
    np_mod = sys.modules.get("numpy")
    if np_mod is not None and isinstance(value, np_mod.ndarray):
        if not _UFUNCS:
            numpy_module()
        return _from_array(name, value, value)
    torch_mod = sys.modules.get("torch")
    if torch_mod is not None and isinstance(value, torch_mod.Tensor):
        if not value.is_cpu:
            raise ValueError(
                f"{name} must be {ALLOWED_ARRAYS}; got a tensor on {value.device} (copy it to the CPU once, "
                "outside the decision: reading it here would synchronise the device)"
            )
        if value.dtype not in _torch_int_dtypes(torch_mod):
            raise TypeError(f"{name} must be {ALLOWED_ARRAYS}; got dtype {value.dtype}")
        if numpy_module() is None:  # pragma: no cover - numpy comes with matplotlib
            return _exact(name, value.tolist())
        return _from_array(name, value.numpy(), value)  # integer tensors never require grad: no detach needed
    return _exact(name, value)


def trusted_lengths(lengths: tuple[int, ...]) -> Lengths:
    """The facts of lengths a caller already validated (no checks; the int64 array only where it pays)."""
    count, total = len(lengths), sum(lengths)
    np = numpy_module() if count >= VECTOR_MIN_REQUESTS else None
    if np is not None:
        try:
            vec = np.frombuffer(_int64_bytes(lengths), dtype=np.int64)
        except struct.error:  # lengths past int64: the scalar path computes on Python ints
            pass
        else:
            return (lengths, vec, count, total, vec.item(vec.argmin()))
    return (lengths, None, count, total, min(lengths))


ALLOWED_FLAGS = "a 1-d bool numpy array or CPU torch tensor"


def accept_is_prefilling(value: object, requests: int, name: str = "is_prefilling") -> tuple[bool, ...] | None:
    """Validate ``is_prefilling`` once for a batch of ``requests`` requests: None (every request a prefill), a
    list/tuple of exactly ``requests`` bools (the reference's messages, word for word), or a 1-d bool numpy array
    or CPU torch tensor of that length. Returns None when every request is a prefill, else the flags as a tuple."""
    if value is None:
        return None
    kind = type(value)
    if kind is tuple or kind is list:
        items: Sequence[object] = value  # type: ignore[assignment]
        if len(items) == requests and set(map(type, items)) == {bool}:  # C-speed accept of the common case
            return None if all(items) else tuple(items)  # type: ignore[arg-type]
        return check_is_prefilling(name, value, requests=requests)
    np_mod = sys.modules.get("numpy")
    torch_mod = sys.modules.get("torch")
    array: Any = None
    if np_mod is not None and isinstance(value, np_mod.ndarray):
        if value.dtype != np_mod.bool_:
            raise TypeError(f"{name} must be None, a sequence of {requests} bools (one per request) or "
                            f"{ALLOWED_FLAGS}; got dtype {value.dtype}")
        array = value
    elif torch_mod is not None and isinstance(value, torch_mod.Tensor):
        if not value.is_cpu:
            raise ValueError(f"{name} must be None, a sequence of {requests} bools or {ALLOWED_FLAGS}; got a "
                             f"tensor on {value.device} (copy it to the CPU once, outside the decision)")
        if value.dtype != torch_mod.bool:
            raise TypeError(f"{name} must be None, a sequence of {requests} bools (one per request) or "
                            f"{ALLOWED_FLAGS}; got dtype {value.dtype}")
        array = value
    if array is None:
        return check_is_prefilling(name, value, requests=requests)
    if array.ndim != 1:
        raise ValueError(f"{name} must be {ALLOWED_FLAGS} of one bool per request; got shape {tuple(array.shape)}")
    if array.shape[0] != requests:
        raise ValueError(f"{name} must hold one bool per request ({requests}), got {array.shape[0]}: {value!r}")
    if bool(array.all()):
        return None
    return tuple(bool(x) for x in array.tolist())
