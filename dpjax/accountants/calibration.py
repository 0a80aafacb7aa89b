"""Calibration: the smallest noise, or the most steps, or the largest sampling rate, that meets
a target (eps, delta) under noisy-SGD accounting.

Each solver works on a function of one parameter that the accountant makes monotone (eps
falls as the noise multiplier grows; it grows with the number of steps and with the sampling
rate), in log space (eps is close to a power law in each parameter, so log eps is close to
linear in the log parameter and interpolation is accurate):

1. a bracket: from a first guess (the zCDP approximation rho = steps q^2 / (2 sigma^2), the
   small-q limit of the subsampled Gaussian's RDP), steps of x2 (or /2) until eps changes side;
2. ITP (Oliveira & Takahashi 2020, "An enhancement of the bisection method average
   performance preserving minmax optimality", ACM TOMS 47(1)): interpolation steps, truncated
   and projected so that the number of evaluations never exceeds bisection's by more than one,
   on every configuration at once (one vectorised accountant call per iteration);
3. the answer is the end of the final bracket on the safe side: its eps, *as computed by the
   same accountant*, is <= the target, never above; the other end (eps > target) is returned
   too. Steps are integers: the bracket closes when its ends are adjacent integers.

Accountants: ``"rdp"`` (:func:`dpjax.accountants.noisy_sgd_curve`: the Poisson-subsampled
Gaussian RDP of Mironov, Talwar & Zhang 2019, composed over steps, converted at ``delta``) and
``"pld"`` (:func:`dpjax.accountants.pld_curve`, privacy-loss distributions, imported when
asked for; its eps is pessimistic).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Optional

import numpy as np

from .. import _validate
from .composition.pld_accountant import ADJACENCY_SPELLINGS

ACCOUNTANTS = ("pld", "rdp")
_NOISE_RANGE = (1e-2, 1e9)
_RATE_MIN = 1e-12
_MAX_STEPS = 10**12
_ITP_N0 = 1  # ITP's slack over bisection's count (its worst case: n_bisection + n0 iterations)
_ITP_K2 = 2.0


@dataclasses.dataclass(frozen=True)
class Calibration:
    """What a calibration found.

    value: the calibrated parameter (a float, an int for steps, or an array for batched
        targets); its eps under ``accountant`` is <= ``target_epsilon`` (never above).
    epsilon: that eps.
    rejected: the other end of the final bracket, the nearest value tried whose eps exceeds
        the target (noise: value * (1 - rtol) or closer; steps: value + 1; sampling rate:
        within rtol above). NaN where no such value exists (a sampling rate of 1 meets the target).
    rejected_epsilon: its eps (NaN likewise).
    evaluations: accountant evaluations per configuration (an int, or an array).
    calls: vectorised accountant calls made for the whole batch.
    """

    parameter: str
    value: object
    epsilon: object
    rejected: object
    rejected_epsilon: object
    target_epsilon: object
    delta: object
    evaluations: object
    calls: int
    accountant: str

    def __float__(self) -> float:
        return float(self.value)


# ------------------------------------------------------------------------------------------
# accountants: eps for arrays of (sigma, q, steps) at delta
def _pld_curve():
    """dpjax.accountants.pld_curve (the PLD accountant, where this dpjax has it)."""
    from .composition.pld_accountant import pld_curve

    return pld_curve


class _Accountant:
    """eps(sigma, q, steps) for flat arrays, counting evaluations."""

    def __init__(self, name: str, adjacency: str, delta: np.ndarray, orders, sampling: str, pld_options: Optional[Mapping]):
        self.name, self.adjacency, self.delta = name, adjacency, delta
        self.orders, self.sampling, self.pld_options = orders, sampling, dict(pld_options or {})
        self.calls = 0
        if name == "pld" and orders is not None:
            raise ValueError("orders= is for accountant='rdp'; the PLD accountant takes its options in pld_options=")
        if name == "rdp" and pld_options:
            raise ValueError(f"pld_options={dict(pld_options)!r} is for accountant='pld'")
        if name == "pld":
            try:
                _pld_curve()
            except ImportError as err:
                raise ValueError(
                    "accountant='pld' needs dpjax.accountants.pld_curve, which this dpjax does not have "
                    f"({err}); use accountant='rdp'"
                ) from None
        elif sampling != "poisson":
            raise ValueError(f"sampling={sampling!r} is not supported by accountant='rdp' (Poisson sampling only)")

    def per_step_rdp(self, sigma: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(orders, per-step RDP of shape (n, orders)) through noisy_sgd_curve (one step)."""
        from .composition.rdp import noisy_sgd_curve

        n = sigma.size
        # pad to a power of two: the RDP kernels compile once per array size
        size = 1 << max(n - 1, 0).bit_length()
        pad = lambda v: np.concatenate([v, np.full(size - n, v[-1])])  # noqa: E731
        curve = noisy_sgd_curve(1, pad(sigma), pad(q), orders=self.orders, adjacency=self.adjacency.replace("-", "_"))
        return curve.orders, curve.rdp[:n]

    def epsilon(self, sigma, q, steps, index) -> np.ndarray:
        """eps at (sigma[i], q[i], steps[i]) for the configurations ``index`` (flat arrays)."""
        from .conversions import rdp_to_epsilon

        self.calls += 1
        sigma, q, steps = (np.asarray(v) for v in (sigma, q, steps))
        delta = self.delta[index]
        if self.name == "rdp":
            orders, rdp = self.per_step_rdp(sigma.astype(np.float64), q.astype(np.float64))
            return rdp_to_epsilon(orders, steps.astype(np.float64)[:, None] * rdp, delta)
        out = np.empty(sigma.size)
        if set(self.pld_options) <= _PLD_EPSILONS_OPTIONS:
            # the batched path: the pessimistic eps of every configuration sharing a delta in one
            # call, keeping no distributions and skipping the optimistic side (a calibration
            # needs only the bound); the same numbers as pld_curve(...).epsilon(delta)
            from .composition.pld_accountant import pld_epsilons

            for d in np.unique(delta):
                sel = np.flatnonzero(delta == d)
                out[sel] = pld_epsilons(sigma[sel].astype(np.float64), q[sel].astype(np.float64), steps[sel].astype(np.int64), float(d),
                                        adjacency=self.adjacency, sampling=self.sampling, optimistic=False, **self.pld_options)[0]
            return out
        pld_curve = _pld_curve()
        for i in range(sigma.size):
            curve = pld_curve(float(sigma[i]), float(q[i]), int(steps[i]), adjacency=self.adjacency,
                              sampling=self.sampling, **self.pld_options)
            out[i] = float(np.asarray(curve.epsilon(float(delta[i]))))
        return out


_PLD_EPSILONS_OPTIONS = {"mechanism", "value_discretization_interval", "tail_mass"}


# ------------------------------------------------------------------------------------------
# the vectorised bracketing solver
def _itp(x_ok, f_ok, x_bad, f_bad, evaluate, tol, integer: bool, counts):
    """ITP on x (log parameter) between x_ok (f <= 0) and x_bad (f > 0), per element.

    ``evaluate(x, index) -> f`` for the active elements; f = log eps - log target. Stops per
    element when |x_bad - x_ok| <= 2 tol (reals) or the exponentiated ends are adjacent
    integers. Returns the final (x_ok, f_ok, x_bad, f_bad)."""
    x_ok, f_ok, x_bad, f_bad = (np.array(v, dtype=np.float64) for v in (x_ok, f_ok, x_bad, f_bad))
    tol = np.broadcast_to(np.asarray(tol, dtype=np.float64), x_ok.shape)
    width0 = np.abs(x_bad - x_ok)
    n_half = np.ceil(np.log2(np.maximum(width0 / (2.0 * tol), 1.0)))
    n_max = n_half + _ITP_N0
    k1 = 0.2 / np.maximum(width0, 1e-300)
    j = 0

    def done():
        if integer:
            return np.abs(np.round(np.exp(x_bad)) - np.round(np.exp(x_ok))) <= 1
        return np.abs(x_bad - x_ok) <= 2.0 * tol

    active = ~done()
    while np.any(active):
        idx = np.flatnonzero(active)
        a, b, fa, fb = x_ok[idx], x_bad[idx], f_ok[idx], f_bad[idx]
        width = np.abs(b - a)
        mid = 0.5 * (a + b)
        # regula falsi on the ends (f finite: the caller clips log eps)
        with np.errstate(invalid="ignore", divide="ignore"):
            x_f = (fb * a - fa * b) / (fb - fa)
        x_f = np.where(np.isfinite(x_f), x_f, mid)
        # truncation towards the midpoint, then projection onto the minmax ball around it
        sgn = np.sign(mid - x_f)
        shrink = k1[idx] * width**_ITP_K2
        x_t = np.where(shrink <= np.abs(mid - x_f), x_f + sgn * shrink, mid)
        radius = np.maximum(tol[idx] * 2.0 ** (n_max[idx] - j) - width / 2.0, 0.0)
        x = np.where(np.abs(x_t - mid) <= radius, x_t, mid - sgn * radius)
        if integer:
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            n_lo, n_hi = np.round(np.exp(lo)), np.round(np.exp(hi))
            n = np.clip(np.round(np.exp(x)), n_lo + 1, n_hi - 1)
            x = np.log(n)
        else:  # stay strictly inside the bracket
            x = np.where((x <= np.minimum(a, b)) | (x >= np.maximum(a, b)), mid, x)
        f = evaluate(x, idx)
        counts[idx] += 1
        ok = f <= 0
        x_ok[idx] = np.where(ok, x, a)
        f_ok[idx] = np.where(ok, f, fa)
        x_bad[idx] = np.where(ok, b, x)
        f_bad[idx] = np.where(ok, fb, f)
        j += 1
        active = ~done()
    return x_ok, f_ok, x_bad, f_bad


def _expand(x0, evaluate, step, x_limit, counts):
    """From x0, step by ``step`` (in log space, towards the side that changes the sign) until
    f changes sign or the limit is passed. Returns (x_ok, f_ok, x_bad, f_bad, reached_limit);
    ``step`` > 0 means f decreases as x grows (noise), < 0 the opposite (steps, rate)."""
    n = x0.size
    all_idx = np.arange(n)
    f0 = evaluate(x0, all_idx)
    counts += 1
    x_ok = np.where(f0 <= 0, x0, np.nan)
    f_ok = np.where(f0 <= 0, f0, np.nan)
    x_bad = np.where(f0 > 0, x0, np.nan)
    f_bad = np.where(f0 > 0, f0, np.nan)
    stuck = np.zeros(n, dtype=bool)
    lo_lim, hi_lim = x_limit
    while True:
        need = np.isnan(x_ok) | np.isnan(x_bad)
        need &= ~stuck
        if not np.any(need):
            break
        idx = np.flatnonzero(need)
        # towards ok (away from bad) if only bad is known, else towards bad
        has_bad = ~np.isnan(x_bad[idx])
        direction = np.where(has_bad, 1.0, -1.0) * np.sign(step)
        start = np.where(has_bad, x_bad[idx], x_ok[idx])
        x = start + direction * abs(step)
        beyond = (x > hi_lim) | (x < lo_lim)
        x = np.clip(x, lo_lim, hi_lim)
        at_edge = np.isclose(start, x, rtol=0, atol=1e-15)
        stuck[idx[at_edge]] = True
        go = ~at_edge
        if not np.any(go):
            continue
        ii = idx[go]
        f = evaluate(x[go], ii)
        counts[ii] += 1
        ok = f <= 0
        x_ok[ii] = np.where(ok, x[go], x_ok[ii])
        f_ok[ii] = np.where(ok, f, f_ok[ii])
        x_bad[ii] = np.where(ok, x_bad[ii], x[go])
        f_bad[ii] = np.where(ok, f_bad[ii], f)
        stuck[ii[beyond[go] & (np.isnan(x_ok[ii]) | np.isnan(x_bad[ii]))]] = True
    return x_ok, f_ok, x_bad, f_bad


# ------------------------------------------------------------------------------------------
# arguments
def _common(target_epsilon, delta, accountant, adjacency):
    _validate.one_of("accountant", accountant, ACCOUNTANTS)
    if not isinstance(adjacency, str) or adjacency not in ADJACENCY_SPELLINGS:
        raise ValueError(f"adjacency={adjacency!r} is not one of {sorted(ADJACENCY_SPELLINGS)}")
    eps = np.asarray(target_epsilon, dtype=np.float64)
    if np.any(~((eps > 0) & np.isfinite(eps))):
        raise ValueError(f"target_epsilon={target_epsilon!r} violates 0 < target_epsilon < inf")
    d = np.asarray(delta, dtype=np.float64)
    if np.any(~((d > 0) & (d < 1))):
        raise ValueError(f"delta={delta!r} violates 0 < delta < 1")
    return eps, d, ADJACENCY_SPELLINGS[adjacency]


def _rates(sampling_rate, name="sampling_rate") -> np.ndarray:
    q = np.asarray(sampling_rate, dtype=np.float64)
    if np.any(~((q > 0) & (q <= 1))):
        raise ValueError(f"{name}={sampling_rate!r} violates 0 < {name} <= 1")
    return q


def _steps(steps) -> np.ndarray:
    t = np.asarray(steps)
    if t.dtype.kind == "f" and np.all(np.isfinite(t)) and np.all(t == np.round(t)):
        t = t.astype(np.int64)
    if t.dtype.kind not in "iu":
        raise TypeError(f"steps={steps!r} violates steps a positive integer (or an array of them)")
    if np.any(t < 1):
        raise ValueError(f"steps={steps!r} violates steps >= 1")
    return t.astype(np.int64)


def _noises(noise_multiplier) -> np.ndarray:
    s = np.asarray(noise_multiplier, dtype=np.float64)
    if np.any(~((s > 0) & np.isfinite(s))):
        raise ValueError(f"noise_multiplier={noise_multiplier!r} violates 0 < noise_multiplier < inf")
    return s


def _rho(target, delta):
    """rho of the zCDP bound eps = rho + 2 sqrt(rho log(1/delta)) solved for the target."""
    log_inv = -np.log(delta)
    return (np.sqrt(log_inv + target) - np.sqrt(log_inv)) ** 2


def _shape_out(result_shape, arrays):
    if result_shape == ():
        return [a.reshape(()).item() if isinstance(a, np.ndarray) else a for a in arrays]
    return [a.reshape(result_shape) for a in arrays]


class _Objective:
    """x -> log eps - log target for the configurations ``idx`` (-inf for eps = 0, +inf for no
    guarantee: the solver then bisects), remembering each eps exactly as the accountant gave it."""

    def __init__(self, eps_of, log_target):
        self.eps_of, self.log_target = eps_of, log_target
        self.seen: dict = {}

    def __call__(self, x, idx):
        eps = np.asarray(self.eps_of(x, idx), dtype=np.float64)
        for i, xi, e in zip(idx.tolist(), np.asarray(x).tolist(), eps.tolist()):
            self.seen[(i, xi)] = e
        with np.errstate(divide="ignore"):
            return np.log(eps) - self.log_target[idx]

    def eps(self, x, idx=None) -> np.ndarray:
        idx = np.arange(np.size(x)) if idx is None else idx
        return np.array([self.seen[(i, xi)] for i, xi in zip(idx.tolist(), np.asarray(x).tolist())])


def _finish(parameter, acc, shape, value, eps_v, rejected, eps_r, target, delta, counts):
    value, eps_v, rejected, eps_r, target, delta, counts = _shape_out(shape, [value, eps_v, rejected, eps_r, target, delta, counts])
    return Calibration(parameter, value, eps_v, rejected, eps_r, target, delta, counts, acc.calls, acc.name)


# ------------------------------------------------------------------------------------------
# public
@_validate.arguments(target_epsilon="numbers", delta="numbers", sampling_rate="numbers", steps="ints", rtol="number", orders="array?")
def calibrate_noise_multiplier(
    target_epsilon,
    delta,
    sampling_rate,
    steps,
    *,
    accountant: str = "pld",
    adjacency: str = "add-remove",
    sampling: str = "poisson",
    rtol: float = 1e-6,
    orders=None,
    pld_options: Optional[Mapping] = None,
) -> Calibration:
    """The smallest noise multiplier whose eps at ``delta``, after ``steps`` steps at Poisson
    ``sampling_rate``, is <= ``target_epsilon`` (never above it, as computed by ``accountant``),
    to relative precision ``rtol`` (the returned ``rejected`` noise, within ``rtol`` below,
    exceeds the target). Arguments broadcast; a batch is solved together. ``orders`` is for
    ``accountant="rdp"``; ``pld_options`` are passed to ``pld_curve``. Searches noise multipliers
    in [0.01, 1e9] and raises if the target is met below (or not met at) its ends.
    """
    target, d, adj = _common(target_epsilon, delta, accountant, adjacency)
    q, t = _rates(sampling_rate), _steps(steps)
    rtol = _validate.in_range("rtol", rtol, 0.0, 0.1, low_open=True)
    shape = np.broadcast_shapes(target.shape, d.shape, q.shape, t.shape)
    target, d, q, t = (np.broadcast_to(v, shape).ravel() for v in (target, d, q, t))
    acc = _Accountant(accountant, adj, d, orders, sampling, pld_options)
    log_target = np.log(target)
    counts = np.zeros(target.size, dtype=np.int64)

    f = _Objective(lambda x, idx: acc.epsilon(np.exp(x), q[idx], t[idx], idx), log_target)

    # first guess: the zCDP approximation sigma = q sqrt(steps / (2 rho))
    guess = np.clip(q * np.sqrt(t / (2.0 * _rho(target, d))), *_NOISE_RANGE)
    limits = (math.log(_NOISE_RANGE[0]), math.log(_NOISE_RANGE[1]))
    x_ok, f_ok, x_bad, f_bad = _expand(np.log(guess), f, math.log(2.0), limits, counts)
    if np.any(np.isnan(x_ok)):
        bad = np.flatnonzero(np.isnan(x_ok))
        raise ValueError(
            f"target_epsilon is not reached even with noise_multiplier={_NOISE_RANGE[1]:g} for configuration(s) "
            f"{bad[:5].tolist()} (target_epsilon={target[bad[:5]].tolist()}, delta={d[bad[:5]].tolist()})"
        )
    if np.any(np.isnan(x_bad)):
        bad = np.flatnonzero(np.isnan(x_bad))
        raise ValueError(
            f"target_epsilon is met by every noise_multiplier >= {_NOISE_RANGE[0]:g} for configuration(s) "
            f"{bad[:5].tolist()} (target_epsilon={target[bad[:5]].tolist()}): the smallest one lies below the search range"
        )
    tol = 0.5 * math.log1p(rtol)
    x_ok, f_ok, x_bad, f_bad = _itp(x_ok, f_ok, x_bad, f_bad, f, tol, False, counts)
    value, rejected = np.exp(x_ok), np.exp(x_bad)
    return _finish("noise_multiplier", acc, shape, value, f.eps(x_ok), rejected, f.eps(x_bad), target, d, counts)


@_validate.arguments(target_epsilon="numbers", delta="numbers", noise_multiplier="numbers", sampling_rate="numbers", max_steps="int", orders="array?")
def calibrate_steps(
    target_epsilon,
    delta,
    noise_multiplier,
    sampling_rate,
    *,
    accountant: str = "pld",
    adjacency: str = "add-remove",
    sampling: str = "poisson",
    max_steps: int = _MAX_STEPS,
    orders=None,
    pld_options: Optional[Mapping] = None,
) -> Calibration:
    """The largest number of steps whose eps at ``delta`` is <= ``target_epsilon`` (as computed
    by ``accountant``; ``rejected`` = value + 1 exceeds it). Integers throughout. Raises if even
    one step exceeds the target, or if ``max_steps`` steps still meet it."""
    target, d, adj = _common(target_epsilon, delta, accountant, adjacency)
    s, q = _noises(noise_multiplier), _rates(sampling_rate)
    max_steps = _validate.positive_int("max_steps", max_steps)
    shape = np.broadcast_shapes(target.shape, d.shape, s.shape, q.shape)
    target, d, s, q = (np.broadcast_to(v, shape).ravel() for v in (target, d, s, q))
    acc = _Accountant(accountant, adj, d, orders, sampling, pld_options)
    log_target = np.log(target)
    counts = np.zeros(target.size, dtype=np.int64)
    cache = {}
    if accountant == "rdp":
        # the per-step RDP does not depend on the number of steps: compute it once
        cache["orders"], cache["rdp"] = acc.per_step_rdp(s, q)

    def eps_at(n, idx):
        if accountant == "rdp":
            from .conversions import rdp_to_epsilon

            acc.calls += 1
            return rdp_to_epsilon(cache["orders"], n[:, None] * cache["rdp"][idx], d[idx])
        return acc.epsilon(s[idx], q[idx], n.astype(np.int64), idx)

    f = _Objective(lambda x, idx: eps_at(np.round(np.exp(x)), idx), log_target)

    all_idx = np.arange(target.size)
    one = f(np.zeros(target.size), all_idx)
    counts += 1
    if np.any(one > 0):
        bad = np.flatnonzero(one > 0)
        raise ValueError(
            f"even steps=1 exceeds target_epsilon for configuration(s) {bad[:5].tolist()} "
            f"(eps at one step {f.eps(np.zeros(target.size))[bad[:5]].tolist()} > target_epsilon={target[bad[:5]].tolist()})"
        )
    guess = np.clip(np.round(_rho(target, d) * 2.0 * s**2 / q**2), 1, max_steps)
    limits = (0.0, math.log(max_steps))
    x_ok, f_ok, x_bad, f_bad = _expand(np.log(guess), f, -math.log(2.0), limits, counts)
    x_ok = np.where(np.isnan(x_ok), 0.0, x_ok)  # steps = 1 is known to meet the target
    f_ok = np.where(np.isnan(f_ok), one, f_ok)
    if np.any(np.isnan(x_bad)):
        bad = np.flatnonzero(np.isnan(x_bad))
        raise ValueError(
            f"every number of steps up to max_steps={max_steps} meets target_epsilon for configuration(s) "
            f"{bad[:5].tolist()}; raise max_steps"
        )
    x_ok, f_ok, x_bad, f_bad = _itp(x_ok, f_ok, x_bad, f_bad, f, 0.25 / np.exp(x_bad), True, counts)
    value, rejected = np.round(np.exp(x_ok)).astype(np.int64), np.round(np.exp(x_bad)).astype(np.int64)
    return _finish("steps", acc, shape, value, f.eps(x_ok), rejected, f.eps(x_bad), target, d, counts)


@_validate.arguments(target_epsilon="numbers", delta="numbers", noise_multiplier="numbers", steps="ints", rtol="number", orders="array?")
def calibrate_sampling_rate(
    target_epsilon,
    delta,
    noise_multiplier,
    steps,
    *,
    accountant: str = "pld",
    adjacency: str = "add-remove",
    sampling: str = "poisson",
    rtol: float = 1e-6,
    orders=None,
    pld_options: Optional[Mapping] = None,
) -> Calibration:
    """The largest Poisson sampling rate in (0, 1] whose eps at ``delta`` is <= ``target_epsilon``
    (as computed by ``accountant``), to relative precision ``rtol``; 1.0 if full batches meet
    the target. Raises if even a rate of 1e-12 exceeds it."""
    target, d, adj = _common(target_epsilon, delta, accountant, adjacency)
    s, t = _noises(noise_multiplier), _steps(steps)
    rtol = _validate.in_range("rtol", rtol, 0.0, 0.1, low_open=True)
    shape = np.broadcast_shapes(target.shape, d.shape, s.shape, t.shape)
    target, d, s, t = (np.broadcast_to(v, shape).ravel() for v in (target, d, s, t))
    acc = _Accountant(accountant, adj, d, orders, sampling, pld_options)
    log_target = np.log(target)
    counts = np.zeros(target.size, dtype=np.int64)

    f = _Objective(lambda x, idx: acc.epsilon(s[idx], np.minimum(np.exp(x), 1.0), t[idx], idx), log_target)

    all_idx = np.arange(target.size)
    full = f(np.zeros(target.size), all_idx)
    counts += 1
    value = np.ones(target.size)
    eps_v = f.eps(np.zeros(target.size))
    rejected = np.full(target.size, np.nan)
    eps_r = np.full(target.size, np.nan)
    todo = np.flatnonzero(full > 0)
    if todo.size:
        sub_counts = np.zeros(todo.size, dtype=np.int64)

        def g(x, idx):
            return f(x, todo[idx])

        guess = np.minimum(s[todo] * np.sqrt(2.0 * _rho(target[todo], d[todo]) / t[todo]), 0.5)
        limits = (math.log(_RATE_MIN), 0.0)
        x_ok, f_ok, x_bad, f_bad = _expand(np.log(guess), g, -math.log(2.0), limits, sub_counts)
        x_bad = np.where(np.isnan(x_bad), 0.0, x_bad)  # rate 1 is known to exceed the target
        f_bad = np.where(np.isnan(f_bad), full[todo], f_bad)
        if np.any(np.isnan(x_ok)):
            bad = todo[np.isnan(x_ok)]
            raise ValueError(
                f"even sampling_rate={_RATE_MIN:g} exceeds target_epsilon for configuration(s) {bad[:5].tolist()} "
                f"(target_epsilon={target[bad[:5]].tolist()})"
            )
        x_ok, f_ok, x_bad, f_bad = _itp(x_ok, f_ok, x_bad, f_bad, g, 0.5 * math.log1p(rtol), False, sub_counts)
        value[todo], eps_v[todo] = np.exp(x_ok), f.eps(x_ok, todo)
        rejected[todo], eps_r[todo] = np.minimum(np.exp(x_bad), 1.0), f.eps(x_bad, todo)
        counts[todo] += sub_counts
    return _finish("sampling_rate", acc, shape, value, eps_v, rejected, eps_r, target, d, counts)


__all__ = ["ACCOUNTANTS", "Calibration", "calibrate_noise_multiplier", "calibrate_sampling_rate", "calibrate_steps"]
