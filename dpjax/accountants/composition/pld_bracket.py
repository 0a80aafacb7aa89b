"""The PLD bracket: pessimistic and optimistic privacy-loss distributions of one accounting.

A :class:`~dpjax.accountants.curve.PrivacyCurve` made by :func:`dpjax.accountants.pld_curve`
holds a :class:`PLDBracket`; two brackets compose by an FFT convolution of their PLDs
(:func:`compose_plds`). It lives apart from the accountant so that the curve type can hold and
compose brackets without importing the accountant (which itself returns curves).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from ... import _validate, _x64
from . import pld as _pld

__all__ = ["PLDBracket", "compose_plds"]

DEFAULT_TAIL = 1e-15  # mass allowed outside the composed window (dp_accounting's default truncation)
MAX_GRID = 2**24  # largest FFT length per configuration (128 MiB of float64)


# --- bracket held by a PrivacyCurve ---------------------------------------------------------------
@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class PLDBracket:
    """Pessimistic and optimistic discrete PLDs of one accounting (a batch of configurations).

    ``pessimistic``: one PLD per direction (remove / add for add-remove adjacency; one for a
    symmetric pair); delta(eps) is the largest over them. ``optimistic``: likewise, each never
    above the truth. ``adjacency`` and ``step`` must match to compose two brackets."""

    pessimistic: tuple
    optimistic: tuple
    adjacency: str = dataclasses.field(metadata=dict(static=True))
    step: float = dataclasses.field(metadata=dict(static=True))

    @property
    def batch_shape(self) -> tuple:
        return self.pessimistic[0].batch_shape

    @property
    def delta_floor(self) -> np.ndarray:
        """The smallest delta the pessimistic side certifies with a finite eps: its mass at +inf
        (the pair's own, plus what may lie beyond the composed window, about ``tail_mass``).
        Below it ``epsilon`` is inf. Per configuration of the batch."""
        return np.maximum.reduce([np.asarray(p.infinity_mass, dtype=np.float64) for p in self.pessimistic])

    @_validate.arguments(epsilon="numbers")
    def delta(self, epsilon, optimistic: bool = False) -> np.ndarray:
        """delta(``epsilon``), pessimistic (or ``optimistic``), for eps >= 0."""
        e = _epsilon_values(epsilon)
        plds = self.optimistic if _flag("optimistic", optimistic) else self.pessimistic
        return np.maximum.reduce([p.delta(e) for p in plds])

    @_validate.arguments(delta="numbers")
    def epsilon(self, delta, optimistic: bool = False) -> np.ndarray:
        """eps(``delta``), pessimistic (or ``optimistic``), for 0 < delta < 1; inf below
        :attr:`delta_floor`."""
        d = _delta_values(delta)
        plds = self.optimistic if _flag("optimistic", optimistic) else self.pessimistic
        return np.maximum.reduce([p.epsilon(d) for p in plds])

    @_validate.arguments(delta="numbers")
    def epsilon_bracket(self, delta):
        """(optimistic, pessimistic) eps at ``delta``: the true eps of the dominating pair lies
        in between; the difference is the discretisation error."""
        return self.epsilon(delta, optimistic=True), self.epsilon(delta)

    @_validate.arguments(epsilon="numbers")
    def delta_bracket(self, epsilon):
        """(optimistic, pessimistic) delta at ``epsilon``."""
        return self.delta(epsilon, optimistic=True), self.delta(epsilon)

    def compose(self, other: "PLDBracket") -> "PLDBracket":
        if not isinstance(other, PLDBracket):
            raise TypeError(f"can only compose a PLD bracket with another; got {type(other).__name__}")
        if other.adjacency != self.adjacency:
            raise ValueError(f"cannot compose PLDs for {self.adjacency} adjacency with PLDs for {other.adjacency}")
        if not math.isclose(other.step, self.step, rel_tol=1e-12):
            raise ValueError(f"cannot compose PLDs on different grids (step {self.step:g} vs {other.step:g}); "
                             "compute both with the same value_discretization_interval")

        def pairwise(a, b, pessimistic):
            if len(a) == 1 or len(b) == 1 or len(a) == len(b):
                n = max(len(a), len(b))
                return tuple(compose_plds(a[i % len(a)], b[i % len(b)], pessimistic) for i in range(n))
            raise ValueError(f"cannot pair {len(a)} directions with {len(b)}")

        return PLDBracket(pairwise(self.pessimistic, other.pessimistic, True), pairwise(self.optimistic, other.optimistic, False), self.adjacency, self.step)


def _flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise _validate.ArgumentKindError(f"{name}={_validate._fmt(value)} violates {name} True or False: got {type(value).__name__}")
    return bool(value)


def _delta_values(delta) -> np.ndarray:
    d = np.asarray(delta, dtype=np.float64)
    if np.any(~((d > 0) & (d < 1))):
        raise ValueError(f"delta={_validate._fmt(delta)} violates 0 < delta < 1")
    return d


def _epsilon_values(epsilon) -> np.ndarray:
    e = np.asarray(epsilon, dtype=np.float64)
    if np.any(~(e >= 0)):  # NaN fails too
        raise ValueError(f"epsilon={_validate._fmt(epsilon)} violates epsilon >= 0")
    return e


def _trim(pmf, start, inf, tail: float, pessimistic: bool):
    """Drop grid points from both ends of a batch of PMFs (host, numpy) keeping at most ``tail``
    of mass outside on each side: pessimistic: the lower part moves up to the new first point,
    the upper part to +inf; optimistic: the lower part is dropped, the upper part moves down to
    the new last point. Returns a common-length window for the batch."""
    pmf = np.asarray(pmf, dtype=np.float64)
    n = pmf.shape[-1]
    low = np.cumsum(pmf, axis=-1)
    high = np.cumsum(pmf[..., ::-1], axis=-1)[..., ::-1]
    first = np.asarray(np.argmax(low > tail, axis=-1))  # first index whose cumulative mass exceeds tail
    last = np.asarray(n - 1 - np.argmax(high[..., ::-1] > tail, axis=-1))
    first = np.minimum(first, last)
    width = int(np.max(last - first)) + 1 if pmf.size else 1
    first = np.minimum(first, n - width)
    idx = first[..., None] + np.arange(width)
    out = np.take_along_axis(pmf, idx, axis=-1).copy()
    below = np.take_along_axis(low, first[..., None], axis=-1)[..., 0] - out[..., 0]
    above = np.take_along_axis(high, (first + width - 1)[..., None], axis=-1)[..., 0] - out[..., -1]
    below, above = np.maximum(below, 0.0), np.maximum(above, 0.0)
    inf = np.asarray(inf, dtype=np.float64).copy()
    if pessimistic:
        out[..., 0] += below
        inf = inf + above
    else:
        out[..., -1] += above
    return out, np.asarray(start) + first, inf


@functools.partial(jax.jit, static_argnames=("n",))
def _compose_pair_batch(pmf, inf, k_lo, k_hi, n, step):
    steps = jnp.ones(2)
    dummy = jnp.ones(1)  # n covers the whole support (no wrap-around): no Chernoff bound needed

    def one(p, i, lo, hi):
        out, inf_out, _, _, roundoff = _pld._compose_one(n, step, p, i, lo, steps, hi, jnp.sum(lo), dummy, dummy, dummy)
        return out, inf_out, roundoff

    return jax.vmap(one)(pmf, inf, k_lo, k_hi)


@_x64.float64
def compose_plds(a: _pld.DiscretePLD, b: _pld.DiscretePLD, pessimistic: bool) -> _pld.DiscretePLD:
    """The PLD of the composition (the convolution), by a zero-padded FFT (no wrap-around), with
    the round-off bound and tail trimming applied on the side given by ``pessimistic``."""
    shape = np.broadcast_shapes(a.batch_shape, b.batch_shape)
    la, lb = a.pmf.shape[-1], b.pmf.shape[-1]
    length = max(la, lb)
    n = _next_pow2(la + lb - 1)
    if n > MAX_GRID:
        raise ValueError(f"composing PLDs of {la} and {lb} grid points needs an FFT of {n} > {MAX_GRID} points; "
                         "use a coarser value_discretization_interval")

    def prep(p):
        pmf = np.broadcast_to(p.pmf, shape + p.pmf.shape[-1:]).reshape(-1, p.pmf.shape[-1])
        pmf = np.pad(pmf, ((0, 0), (0, length - pmf.shape[-1])))
        st = np.broadcast_to(p.start, shape).reshape(-1).astype(np.int64)
        inf = np.broadcast_to(p.infinity_mass, shape).reshape(-1)
        return pmf, st, inf, st + p.pmf.shape[-1] - 1

    pa, sa, ia, ha = prep(a)
    pb, sb, ib, hb = prep(b)
    out, inf, roundoff = (np.asarray(x) for x in _compose_pair_batch(
        np.stack([pa, pb], axis=1), np.stack([ia, ib], axis=1), np.stack([sa, sb], axis=1), np.stack([ha, hb], axis=1),
        n=n, step=a.step))
    if pessimistic:  # every composed mass raised by its pointwise bound R / n (pld.pessimistic_window)
        out = np.asarray(out)[:, : la + lb - 1] + (np.asarray(roundoff) / n)[:, None]
    else:
        out = _pld.remove_from_top(out, roundoff)
    out, start, inf = _trim(np.asarray(out)[:, : la + lb - 1], sa + sb, np.asarray(inf), DEFAULT_TAIL, pessimistic)
    return _pld.DiscretePLD(out.reshape(shape + out.shape[-1:]), start.reshape(shape), inf.reshape(shape), a.step)


def _next_pow2(x: int) -> int:
    return 1 << max(0, int(math.ceil(math.log2(max(int(x), 1)))))
