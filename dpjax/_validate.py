"""Argument checks that raise errors naming the argument, the value and the rule.

Every check first makes sure the value is of the right kind (a real number, an integer, an
array of real numbers) and raises ``TypeError`` naming the argument otherwise, so a string,
``None`` or a list where a number belongs never ends in Python's bare "could not convert
string to float"; then it checks the range and raises ``ValueError``.
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers
from typing import Any

import numpy as np


class ArgumentKindError(TypeError, ValueError):
    """A value of the wrong kind (a string, None, a list, a bool where a number belongs, ...).
    A ``TypeError``, and also a ``ValueError`` so that code catching bad values catches it."""


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _kind(value: Any) -> str:
    if isinstance(value, np.ndarray) or hasattr(value, "shape"):
        return f"an array of shape {tuple(np.shape(value))}"
    return type(value).__name__


def real(name: str, value: Any, rule: str = "a real number") -> float:
    """``value`` as a float if it is a real number (int, float, numpy or 0-d array scalar; not
    bool, str, None or a sequence); raises ``TypeError`` naming ``name`` and ``rule`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (str, bytes)) or value is None:
        raise ArgumentKindError(f"{name}={_fmt(value)} violates {rule}: {name} must be a real number, got {type(value).__name__}")
    if isinstance(value, numbers.Real):
        return float(value)
    if hasattr(value, "shape") and np.shape(value) == () and hasattr(value, "dtype") and np.dtype(value.dtype).kind in "iuf":
        return float(np.asarray(value))
    raise ArgumentKindError(f"{name}={_fmt(value)} violates {rule}: {name} must be a real number, got {_kind(value)}")


def positive(name: str, value: Any, rule: str | None = None) -> float:
    rule = rule or f"{name} > 0 (finite)"
    v = real(name, value, rule)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{name}={_fmt(value)} violates {rule}")
    return v


def nonnegative(name: str, value: Any, rule: str | None = None) -> float:
    rule = rule or f"{name} >= 0 (finite)"
    v = real(name, value, rule)
    if not (v >= 0 and math.isfinite(v)):
        raise ValueError(f"{name}={_fmt(value)} violates {rule}")
    return v


def finite_real(name: str, value: Any, rule: str | None = None) -> float:
    rule = rule or f"{name} a finite real number"
    v = real(name, value, rule)
    if not math.isfinite(v):
        raise ValueError(f"{name}={_fmt(value)} violates {rule}")
    return v


def in_range(name: str, value: Any, low: float, high: float, *, low_open=False, high_open=False) -> float:
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    rule = f"{name} in {lo}{low}, {high}{hi}"
    v = real(name, value, rule)
    ok_low = v > low if low_open else v >= low
    ok_high = v < high if high_open else v <= high
    if not (ok_low and ok_high):  # NaN fails both
        raise ValueError(f"{name}={_fmt(value)} violates {rule}")
    return v


def _is_integer(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return hasattr(value, "shape") and np.shape(value) == () and hasattr(value, "dtype") and np.dtype(value.dtype).kind in "iu"


def integer(name: str, value: Any, rule: str | None = None) -> int:
    """``value`` as an int if it is an integer (Python, numpy or 0-d integer array; not bool or
    float); raises ``TypeError`` naming ``name`` otherwise."""
    if not _is_integer(value):
        # a whole float is shown with its ".0" here ("steps=1.0 ... got float", never "steps=1")
        shown = repr(value) if isinstance(value, float) else _fmt(value)
        raise ArgumentKindError(f"{name}={shown} violates {rule or name + ' an integer'}: {name} must be an integer, got {_kind(value)}")
    return int(value)


def positive_int(name: str, value: Any) -> int:
    rule = f"{name} a positive integer"
    v = integer(name, value, rule)
    if v <= 0:
        raise ValueError(f"{name}={_fmt(value)} violates {rule}")
    return v


MAX_DIMENSION = 2**31 - 1  # the largest array axis a device indexes (int32)


def dimension(name: str, value: Any) -> int:
    """A size that becomes an array axis (a model's dimension): a positive integer the device can
    index (10**30 used to be accepted, and failed later inside numpy or XLA)."""
    v = positive_int(name, value)
    if v > MAX_DIMENSION:
        raise ValueError(f"{name}={v} violates {name} <= 2**31 - 1 (an array axis the device can index)")
    return v


def nonnegative_int(name: str, value: Any) -> int:
    rule = f"{name} a non-negative integer"
    v = integer(name, value, rule)
    if v < 0:
        raise ValueError(f"{name}={_fmt(value)} violates {rule}")
    return v


def seed(name: str, value: Any) -> int:
    """A seed: a non-negative integer below 2**63 (what numpy and JAX accept)."""
    rule = f"{name} an integer in [0, 2**63)"
    v = integer(name, value, rule)
    if not 0 <= v < 2**63:
        raise ValueError(f"{name}={_fmt(value)} violates {rule}")
    return v


def real_array(name: str, value: Any, cast: bool = True) -> np.ndarray:
    """``value`` as a float64 numpy array (``cast=False``: its own numeric dtype) if it holds
    real numbers (numpy, JAX, nested lists); raises ``TypeError`` naming ``name`` for strings,
    None, ragged lists or non-numeric dtypes."""
    if value is None or isinstance(value, (str, bytes)):
        raise ArgumentKindError(f"{name}={_fmt(value)} violates {name} an array of real numbers: got {type(value).__name__}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):  # ragged nested sequences
        raise ArgumentKindError(f"{name}={_fmt(value)} violates {name} an array of real numbers: its nested sequences differ in length") from None
    if arr.dtype.kind not in "biuf":
        raise ArgumentKindError(f"{name} has dtype {arr.dtype}; {name} must be an array of real numbers")
    return arr.astype(np.float64, copy=False) if cast else arr


def finite_array(name: str, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind == "O":
        raise ArgumentKindError(f"{name} holds Python objects (dtype object), e.g. {_fmt(arr.flat[0]) if arr.size else '[]'}; expected real numbers")
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0].tolist()
        raise ValueError(f"{name} has a non-finite value {arr[tuple(bad)]!r} at index {bad}; all values must be finite")
    return arr


def one_of(name: str, value: Any, allowed) -> Any:
    try:
        # an array compared with a name is an array of booleans: not a choice either
        known = isinstance(value, str) if all(isinstance(a, str) for a in allowed) else True
        known = known and bool(value in allowed)
    except (TypeError, ValueError):  # unhashable values against a set, arrays against names
        known = False
    if not known:
        raise ValueError(f"{name}={_fmt(value)} is not one of {sorted(allowed)}")
    return value


# --- declarative checks on a public function's arguments ------------------------------------

_KINDS = {
    "number": "a real number (not NaN)",
    "numbers": "a real number or an array of real numbers (not NaN)",
    "array": "a non-empty array of real numbers (not NaN)",
    "reals": "a non-empty array of real numbers",
    "int": "an integer",
    "ints": "an integer or a non-empty array of integers",
}


def _is_traced(value: Any) -> bool:
    # inside jax.jit / vmap the value is abstract: its kind is JAX's business, NaN unknowable
    return any(cls.__name__.endswith("Tracer") for cls in type(value).__mro__)


def _check_kind(name: str, value: Any, kind: str) -> None:
    optional = kind.endswith("?")
    kind = kind.rstrip("?")
    if (value is None and optional) or _is_traced(value):
        return
    rule = f"{name} {_KINDS[kind]}"
    if kind == "int":
        integer(name, value, rule)
        return
    if kind == "ints":
        if _is_integer(value):
            return
        if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
            raise ArgumentKindError(f"{name}={_fmt(value)} violates {rule}: got {type(value).__name__}")
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError) as err:
            raise ArgumentKindError(f"{name}={_fmt(value)} violates {rule}: {err}") from None
        if arr.dtype.kind not in "iu":
            raise ArgumentKindError(f"{name}={_fmt(value)} violates {rule}: got dtype {arr.dtype}")
        if arr.size == 0:
            raise ValueError(f"{name}={_fmt(value)} violates {rule}: it is empty")
        return
    if kind == "number":
        v = real(name, value, rule)
        if math.isnan(v):
            raise ValueError(f"{name}=nan violates {name} finite (a real number, not NaN)")
        return
    if isinstance(value, (bool, np.bool_)):
        raise ArgumentKindError(f"{name}={_fmt(value)} violates {rule}: got bool")
    arr = real_array(name, value) if not isinstance(value, numbers.Real) else np.asarray(float(value))
    if kind in ("array", "reals") and arr.size == 0:
        raise ValueError(f"{name}={_fmt(value)} violates {rule}: it is empty")
    if kind == "reals":  # NaN left to the function's own, more specific check
        return
    if np.isnan(arr).any():
        if arr.ndim == 0:
            raise ValueError(f"{name}=nan violates {name} finite (a real number, not NaN)")
        where = np.argwhere(np.isnan(arr))[0].tolist()
        raise ValueError(f"{name} has a NaN at index {where}; {name} must be {_KINDS[kind]}")


def arguments(**kinds: str):
    """Decorator: before the call, check that each named argument is of its kind (raising
    ``TypeError``/``ValueError`` naming the argument, the value and the rule) instead of
    letting a string, ``None``, a ragged list or a NaN fail deep inside (or pass through as a
    silent NaN). Kinds: ``"number"`` (a real scalar), ``"numbers"`` (a real scalar or array),
    ``"array"`` (a non-empty real array), ``"int"``; a trailing ``"?"`` also allows ``None``.
    Ranges stay the function's own business (with :func:`positive`, :func:`in_range`, ...)."""

    def decorate(fn):
        signature = inspect.signature(fn)
        unknown = set(kinds) - set(signature.parameters)
        if unknown:
            raise TypeError(f"arguments(): {fn.__qualname__} has no parameter {sorted(unknown)}")
        for kind in kinds.values():
            if kind.rstrip("?") not in _KINDS:
                raise TypeError(f"arguments(): unknown kind {kind!r}; use one of {sorted(_KINDS)}")

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as err:
                raise TypeError(f"{fn.__qualname__}(): {err}") from None
            for name, kind in kinds.items():
                if name in bound.arguments:
                    _check_kind(name, bound.arguments[name], kind)
            return fn(*args, **kwargs)

        checked.argument_kinds = dict(kinds)  # what each argument is checked to be (read by the tests)
        return checked

    return decorate


def record_steps(record_steps: Any, num_steps: int) -> np.ndarray:
    """The sorted distinct steps 0 <= t <= ``num_steps`` at which a coupled run records its chains
    (``None``: the last step only), for :func:`dpjax.run_coupled` and
    :func:`dpjax.samplers.mala.run_metropolis_pair`."""
    if record_steps is None:
        return np.array([num_steps])
    try:
        steps = np.atleast_1d(np.asarray(record_steps))
    except (ValueError, TypeError):  # ragged
        steps = np.zeros((0,))
    if steps.dtype.kind not in "iu" or steps.ndim != 1 or steps.size == 0:
        raise ValueError(f"record_steps={record_steps!r} must be a non-empty 1-D sequence of integers")
    if steps.min() < 0 or steps.max() > num_steps:
        raise ValueError(f"record_steps must satisfy 0 <= t <= num_steps = {num_steps}; got min {steps.min()} max {steps.max()}")
    return np.unique(steps)
