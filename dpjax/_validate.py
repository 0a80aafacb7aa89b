"""Argument checks that raise errors naming the argument, the value and the rule.

Every check first makes sure the value is of the right kind (a real number, an integer, an
array of real numbers) and raises ``TypeError`` naming the argument otherwise, so a string,
``None`` or a list where a number belongs never ends in Python's bare "could not convert
string to float"; then it checks the range and raises ``ValueError``.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np


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
        raise TypeError(f"{name}={_fmt(value)} violates {rule}: got {type(value).__name__}")
    if isinstance(value, numbers.Real):
        return float(value)
    if hasattr(value, "shape") and np.shape(value) == () and hasattr(value, "dtype") and np.dtype(value.dtype).kind in "iuf":
        return float(np.asarray(value))
    raise TypeError(f"{name}={_fmt(value)} violates {rule}: got {_kind(value)}")


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
        raise TypeError(f"{name}={_fmt(value)} violates {rule or name + ' an integer'}: got {_kind(value)}")
    return int(value)


def positive_int(name: str, value: Any) -> int:
    rule = f"{name} a positive integer"
    v = integer(name, value, rule)
    if v <= 0:
        raise ValueError(f"{name}={_fmt(value)} violates {rule}")
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


def real_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 numpy array if it holds real numbers (numpy, JAX, nested lists);
    raises ``TypeError`` naming ``name`` for strings, None, ragged lists or non-numeric dtypes."""
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name}={_fmt(value)} violates {name} an array of real numbers: got {type(value).__name__}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as err:  # ragged nested sequences
        raise TypeError(f"{name}={_fmt(value)} violates {name} an array of real numbers: {err}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}={_fmt(value)} violates {name} an array of real numbers: got dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False)


def finite_array(name: str, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind == "O":
        raise TypeError(f"{name} holds Python objects (dtype object), e.g. {_fmt(arr.flat[0]) if arr.size else '[]'}; expected real numbers")
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0].tolist()
        raise ValueError(f"{name} has a non-finite value {arr[tuple(bad)]!r} at index {bad}; all values must be finite")
    return arr


def one_of(name: str, value: Any, allowed) -> Any:
    try:
        known = value in allowed
    except TypeError:  # unhashable values against a set
        known = False
    if not known:
        raise ValueError(f"{name}={_fmt(value)} is not one of {sorted(allowed)}")
    return value
