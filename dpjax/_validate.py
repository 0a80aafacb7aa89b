"""Argument checks that raise errors naming the argument, the value and the rule."""
from __future__ import annotations

import math
from typing import Any

import numpy as np


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


def positive(name: str, value: Any, rule: str | None = None) -> float:
    v = float(value)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{name}={_fmt(value)} violates {rule or name + ' > 0 (finite)'}")
    return v


def nonnegative(name: str, value: Any, rule: str | None = None) -> float:
    v = float(value)
    if not (v >= 0 and math.isfinite(v)):
        raise ValueError(f"{name}={_fmt(value)} violates {rule or name + ' >= 0 (finite)'}")
    return v


def in_range(name: str, value: Any, low: float, high: float, *, low_open=False, high_open=False) -> float:
    v = float(value)
    ok_low = v > low if low_open else v >= low
    ok_high = v < high if high_open else v <= high
    if not (ok_low and ok_high):
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        raise ValueError(f"{name}={_fmt(value)} violates {name} in {lo}{low}, {high}{hi}")
    return v


def positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name}={_fmt(value)} violates {name} a positive integer")
    return int(value)


def finite_array(name: str, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0].tolist()
        raise ValueError(f"{name} has a non-finite value {arr[tuple(bad)]!r} at index {bad}; all values must be finite")
    return arr


def one_of(name: str, value: Any, allowed) -> Any:
    if value not in allowed:
        raise ValueError(f"{name}={_fmt(value)} is not one of {sorted(allowed)}")
    return value
