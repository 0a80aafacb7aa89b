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
from typing import Optional

import jax
import numpy as np

from ... import _validate, _x64
from ..._result_methods import printed_by
from .. import _convention, _xp
from . import pld as _pld
from .pld_plan import MAX_GRID, _next_pow2, numpy_applies

__all__ = ["PLDBracket", "PLDEpsilons", "RDPFallback", "compose_plds"]

DEFAULT_TAIL = 1e-15  # mass allowed outside the composed window (dp_accounting's default truncation)


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
    # the RDP accountant's bound for the same run, consulted where the bracket is wide
    # (:class:`RDPFallback`); None where the RDP accountant does not apply
    fallback: Optional["RDPFallback"] = dataclasses.field(default=None, metadata=dict(static=True))

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
        """delta(``epsilon``), pessimistic (or ``optimistic``), for eps >= 0. Pessimistic:
        where the bracket is wide the RDP bound answers if smaller (:class:`RDPFallback`)."""
        e = _epsilon_values(epsilon)
        if _flag("optimistic", optimistic):
            return np.maximum.reduce([p.delta(e) for p in self.optimistic])
        pess = np.maximum.reduce([p.delta(e) for p in self.pessimistic])
        if self.fallback is None:
            return pess
        opt = np.maximum.reduce([p.delta(e) for p in self.optimistic])
        return self.fallback.delta_where_wide(e, pess, opt)

    @_validate.arguments(delta="numbers")
    def epsilon(self, delta, optimistic: bool = False) -> np.ndarray:
        """eps(``delta``), pessimistic (or ``optimistic``), for 0 < delta < 1; inf below
        :attr:`delta_floor`. Pessimistic: where the bracket is wide the RDP bound answers if
        smaller (:class:`RDPFallback`; :meth:`source` says which answered)."""
        d = _delta_values(delta)
        if _flag("optimistic", optimistic):
            return np.maximum.reduce([p.epsilon(d) for p in self.optimistic])
        pess = self.pld_epsilon(d)
        if self.fallback is None:
            return pess
        opt = np.maximum.reduce([p.epsilon(d) for p in self.optimistic])
        return self.fallback.epsilon_where_wide(d, pess, opt)

    @_validate.arguments(delta="numbers")
    def pld_epsilon(self, delta) -> np.ndarray:
        """The PLD's own pessimistic eps(``delta``), without the RDP fallback."""
        d = _delta_values(delta)
        return np.maximum.reduce([p.epsilon(d) for p in self.pessimistic])

    @_validate.arguments(delta="numbers")
    def source(self, delta) -> np.ndarray:
        """Which accountant answers :meth:`epsilon` at ``delta``: "pld", or "rdp" where the
        bracket is wide and the RDP bound is smaller (an array of str over the batch)."""
        d = _delta_values(delta)
        pess = self.pld_epsilon(d)
        if self.fallback is None:
            return np.full(np.shape(pess), "pld")
        opt = np.maximum.reduce([p.epsilon(d) for p in self.optimistic])
        return np.where(self.fallback.epsilon_where_wide(d, pess, opt) < pess, "rdp", "pld")

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

        # the RDP bound of a composition is the sum of the two: its stages joined (same batch only)
        fallback = None
        if self.fallback is not None and other.fallback is not None and self.fallback.shape == other.fallback.shape:
            fallback = RDPFallback(self.fallback.stages + other.fallback.stages, self.fallback.shape)
        return PLDBracket(pairwise(self.pessimistic, other.pessimistic, True), pairwise(self.optimistic, other.optimistic, False),
                          self.adjacency, self.step, fallback)


@dataclasses.dataclass(frozen=True)
class RDPFallback:
    """The RDP accountant's bound for the run a bracket accounts for, consulted where the
    bracket is wide.

    The PLD's pessimistic eps can sit far above the truth where the grid resolves a small delta
    poorly (issue 38: sigma 5.11, q 0.00566, 8069 steps, delta 5.6e-11 on the default grid:
    1.51, where dp_accounting's PLD gives 0.591 and the RDP bound 0.620). Where the optimistic
    and pessimistic values differ by more than ``WIDE`` of the pessimistic one, the RDP bound
    of Mironov, Talwar & Zhang 2019 (Poisson-subsampled Gaussian, add/remove adjacency, or
    full batches) is computed and the smaller of the two upper bounds answers; both hold, so
    the answer stays a bound. Not where the bracket is tight (no RDP work there), and never
    where the PLD's eps is inf (below its delta floor: that limit is stated, not papered over).

    ``stages``: ((noise multipliers, sampling rates, step counts), ...), each a tuple of the
    flattened batch's values (hashable: this is static pytree metadata); ``shape``: the batch."""

    stages: tuple
    shape: tuple

    WIDE = 0.05  # the bracket's width, as a fraction of the pessimistic value, from which the RDP bound is asked

    @classmethod
    def for_run(cls, sigma, q, steps, shape) -> "RDPFallback":
        """From (B, S) arrays of a run's stages (B the flattened batch)."""
        sigma, q, steps = (np.asarray(a) for a in (sigma, q, steps))
        stages = tuple((tuple(sigma[:, s].astype(float)), tuple(q[:, s].astype(float)), tuple(int(t) for t in steps[:, s]))
                       for s in range(sigma.shape[1]))
        return cls(stages, tuple(shape))

    def times(self, k: int) -> "RDPFallback":
        """The fallback of the ``k``-fold composition (RDP multiplies by k)."""
        return RDPFallback(tuple((s, q, tuple(t * k for t in ts)) for s, q, ts in self.stages), self.shape)

    def _rdp(self):
        return _fallback_rdp(self)

    def epsilon_where_wide(self, d, pess, opt) -> np.ndarray:
        pess = np.asarray(pess, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            wide = np.isfinite(pess) & (pess - opt > self.WIDE * pess)
        if not np.any(wide):
            return pess
        from ..conversions import rdp_to_epsilon

        orders, rdp = self._rdp()
        rdp_eps = rdp_to_epsilon(orders, rdp, d)
        return np.where(wide, np.minimum(pess, rdp_eps), pess)

    def delta_where_wide(self, e, pess, opt) -> np.ndarray:
        pess = np.asarray(pess, dtype=np.float64)
        wide = pess - opt > self.WIDE * pess
        if not np.any(wide):
            return pess
        from ..conversions import rdp_to_delta

        orders, rdp = self._rdp()
        rdp_delta = rdp_to_delta(orders, rdp, e)
        return np.where(wide, np.minimum(pess, rdp_delta), pess)


# --- the bracket read at one delta: pld_epsilons' result -------------------------------------------
@dataclasses.dataclass(frozen=True)
class PLDEpsilons:
    """eps at one ``delta`` for a batch of configurations, as :func:`~dpjax.accountants.pld_epsilons`
    returns it (the PLDs themselves are not kept).

    epsilon: the pessimistic eps, one per configuration (the arguments' broadcast shape): an
        upper bound, the PLD's own (no RDP fallback, unlike :meth:`PLDBracket.epsilon`); inf
        below the delta floor (the mass at +inf, about ``tail_mass``).
    optimistic_epsilon: the optimistic eps, never above the true eps of the dominating pair;
        NaN where ``optimistic=False`` skipped it. The truth lies in
        [optimistic_epsilon, epsilon]; the width is the grid's discretisation error.
    delta: the delta both were read at.
    value_discretization_interval: the PLD grid (nats).

    Named fields, because a bare pair is easy to read backwards
    (:meth:`PLDBracket.epsilon_bracket` is (optimistic, pessimistic)). The previous release's
    ``pess, opt = pld_epsilons(...)`` and ``pld_epsilons(...)[0]`` still work for this
    release, with a DeprecationWarning.
    """

    epsilon: np.ndarray
    optimistic_epsilon: np.ndarray
    delta: float
    value_discretization_interval: float

    summary, __repr__ = printed_by("pld_epsilons_summary", "The batch's eps, both sides, the delta and the grid, in a few lines.")

    def _as_tuple(self, how: str) -> tuple:
        _convention.deprecated(f"{how} the result of pld_epsilons as the tuple (pessimistic, optimistic) of the previous release",
                               "result.epsilon (pessimistic) and result.optimistic_epsilon")
        return self.epsilon, self.optimistic_epsilon

    def __iter__(self):
        """Deprecated: ``pess, opt = pld_epsilons(...)``."""
        return iter(self._as_tuple("unpacking"))

    def __getitem__(self, index):
        """Deprecated: ``pld_epsilons(...)[0]`` (pessimistic), ``[1]`` (optimistic)."""
        return self._as_tuple("indexing")[index]


# the RDP accountant's default orders (rdp.DEFAULT_ORDERS, dp_accounting's), written out here:
# rdp imports the PLD accountant, so importing it back would make a circle (a test
# checks that the two agree: tests/test_api_edges.py)
_FALLBACK_ORDERS = np.array([1.0 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024], dtype=np.float64)


@functools.lru_cache(maxsize=16)
def _fallback_rdp(fallback: RDPFallback):
    """(orders, RDP of the whole run (batch shape + orders)): sum over stages of steps times
    the one-step RDP (cached: a curve queried many times computes it once)."""
    from ..mechanisms.gaussian import subsampled_gaussian_rdp

    orders = _FALLBACK_ORDERS
    total = 0.0
    for sigma, q, steps in fallback.stages:
        per_step = subsampled_gaussian_rdp(np.asarray(q)[:, None], np.asarray(sigma)[:, None], orders)
        total = total + np.asarray(steps, dtype=np.float64)[:, None] * per_step
    return orders, np.asarray(total).reshape(fallback.shape + (orders.size,))


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


def _compose_pair(pmf, inf, k_lo, k_hi, n, step):
    """(composed PMF (n,), mass at +inf, round-off bound R) of the two PMFs ``pmf`` (2, W) on
    grids from ``k_lo``: one FFT of n points covering the whole support (no wrap-around, so no
    Chernoff bound is needed). On numpy arrays, or JAX's inside :func:`_compose_pair_batch`."""
    xp = _xp.namespace(pmf, inf, k_lo, k_hi)
    dummy = xp.ones(1)
    out, inf_out, _, _, roundoff = _pld._compose_one(n, step, pmf, inf, k_lo, xp.ones(2), k_hi, xp.sum(k_lo), dummy, dummy, dummy)
    return out, inf_out, roundoff


@functools.partial(jax.jit, static_argnames=("n",))
def _compose_pair_batch(pmf, inf, k_lo, k_hi, n, step):
    return jax.vmap(lambda p, i, lo, hi: _compose_pair(p, i, lo, hi, n, step))(pmf, inf, k_lo, k_hi)


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
    args = (np.stack([pa, pb], axis=1), np.stack([ia, ib], axis=1), np.stack([sa, sb], axis=1), np.stack([ha, hb], axis=1))
    if numpy_applies(pa.shape[0], [n]):  # a few pairs: the same composition in numpy, compiling nothing
        with np.errstate(all="ignore"):  # logs of 0 are expected (-inf)
            out, inf, roundoff = (np.array(x) for x in zip(*(_compose_pair(*row, n, a.step) for row in zip(*args))))
    else:
        out, inf, roundoff = (np.asarray(x) for x in _compose_pair_batch(*args, n=n, step=a.step))
    if pessimistic:  # every composed mass raised by its pointwise bound R / n (pld.pessimistic_window)
        out = np.asarray(out)[:, : la + lb - 1] + (np.asarray(roundoff) / n)[:, None]
    else:
        out = _pld.remove_from_top(out, roundoff)
    out, start, inf = _trim(np.asarray(out)[:, : la + lb - 1], sa + sb, np.asarray(inf), DEFAULT_TAIL, pessimistic)
    return _pld.DiscretePLD(out.reshape(shape + out.shape[-1:]), start.reshape(shape), inf.reshape(shape), a.step)
