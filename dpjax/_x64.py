"""Scoped float64.

Privacy numbers are computed in float64 (DESIGN: conventions). JAX's x64 switch is global
state, so dpjax never flips it on import; public functions that produce privacy numbers
enter ``jax.enable_x64(True)`` for the duration of the call instead.
"""
from __future__ import annotations

import functools
from typing import Callable, TypeVar

import jax

F = TypeVar("F", bound=Callable)


def float64(fn: F) -> F:
    """Run ``fn`` with JAX's 64-bit mode on, restoring the caller's setting afterwards."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
