"""Calibration: the smallest noise, or the most steps, or the largest sampling rate, that meets
a target (eps, delta) under noisy-SGD accounting.

Each solver works on a function of one parameter that the accountant makes monotone (eps
falls as the noise multiplier grows; it grows with the number of steps and with the sampling
rate), in log space (eps is close to a power law in each parameter, so log eps is close to
linear in the log parameter and interpolation is accurate):

1. a bracket: from a first guess (the zCDP approximation rho = steps q^2 / (2 sigma^2), the
   small-q limit of the subsampled Gaussian's RDP), steps of x2 (or /2) until eps changes side;
   the PLD accountant's noise search starts instead at the RDP accountant's answer (a cheap
   calibration, an upper end in practice) with steps of x1.25 that grow (:func:`_pld_noise_start`),
   its steps search at the central-limit (Gaussian-DP) estimate of the answer, likewise
   (:func:`_pld_steps_start`): each PLD evaluation far from the answer compiles programs of
   its own, so a start near it is what keeps a calibration within seconds;
2. ITP (Oliveira & Takahashi 2020, "An enhancement of the bisection method average
   performance preserving minmax optimality", ACM TOMS 47(1)): interpolation steps, truncated
   and projected so that the number of evaluations never exceeds bisection's by more than one,
   on every configuration at once (one vectorised accountant call per iteration);
3. the answer is the end of the final bracket on the safe side: its eps, *as computed by the
   same accountant*, is <= the target, never above; the other end (eps > target) is returned
   too. Steps are integers: the bracket closes when its ends are adjacent integers.
4. an answer is returned only when both ends' eps come from evaluations that resolve the
   target: the same grid at both ends, the rejected end's eps finite (not the PLD's +inf
   below its delta floor), and (PLD) the grid's own effect small: both ends computed again on
   a grid twice as coarse move by at most ``GRID_TOLERANCE`` (1%) of the target. Otherwise the
   grid follows the candidate and the search runs again: finer (by the factor the measured
   effect asks for) where the grid decides, coarser where the ends had to be coarsened to fit.
   During the search a candidate whose PLD needs more than ``MAX_GRID`` points is evaluated on
   the finest grid 2^k h that fits (a coarser grid only raises the pessimistic eps). Where no
   grid can resolve the target (the FFT limit, the delta floor), the error says which limit
   was hit and that ``accountant="rdp"`` answers. The grid of the answer is reported.
   So a value is limited by the target alone, never by the accountant's numerics.
5. the PLD search has cost caps (an FFT of at most 2^22 points per candidate, a grid refined at
   most 16-fold at once and 256-fold in all) and refuses an answer whose optimistic eps is 0 on
   its grid (a grid that resolves nothing there): every calibration answers or refuses in
   seconds, the same way for the same arguments (no clock), and a refusal says that
   ``accountant="rdp"`` answers.

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
from . import _convention

ACCOUNTANTS = ("pld", "rdp")
GRID_TOLERANCE = 0.01  # the PLD grid's own effect on eps at an answer, as a fraction of the target (see the module docstring)
_MAX_INTERVAL = 0.5  # the coarsest PLD grid a candidate is evaluated on (nats)
_MAX_ROUNDS = 8  # searches per configuration (each after a change of its grid)
# Cost caps, so that every calibration answers or refuses within seconds (issue 38:
# calibrate_steps(1, 1e-5, 1000.0, 0.01) ran for minutes, refining its grid 256-fold to an FFT
# of 2^24 points at 4e8 steps, 36 s an evaluation). Deterministic, not a clock: the same
# arguments always give the same answer or the same refusal. A candidate's PLD may use an FFT
# of at most _CALIBRATION_MAX_GRID points (beyond: the next coarser grid that fits, as for
# MAX_GRID), and a grid is refined at most _MAX_REFINE-fold at once, 2^_MAX_REFINE_TOTAL-fold
# in all; past either the target is out of the PLD's resolution and the error says so (and
# that accountant='rdp' answers).
_CALIBRATION_MAX_GRID = 2**22
_MAX_REFINE = 16.0
_MAX_REFINE_TOTAL = 8
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
    value_discretization_interval: ``accountant="pld"``: the grid (nats) on which ``epsilon``
        and ``rejected_epsilon`` were computed, the one asked for unless the grid had to
        follow the candidate (module docstring); None for ``accountant="rdp"``.
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
    value_discretization_interval: object = None

    def __float__(self) -> float:
        return float(self.value)

    def __str__(self) -> str:
        """A few lines: the value, its eps against the target, the rejected neighbour (the raw
        dataclass repr stays available as repr())."""
        grid = "" if self.value_discretization_interval is None else f", PLD grid {_short(self.value_discretization_interval)}"
        lines = [f"{self.parameter} = {_short(self.value)}: eps = {_short(self.epsilon)} <= target {_short(self.target_epsilon)} "
                 f"at delta = {_short(self.delta)} ({self.accountant} accountant{grid})",
                 f"  rejected {_short(self.rejected)} gives eps = {_short(self.rejected_epsilon)}; "
                 f"{_short(self.evaluations)} evaluations in {self.calls} calls"]
        return "\n".join(lines)


def _short(value) -> str:
    """A number to 10 significant digits (a calibration resolves rtol 1e-6), an array as its shape and range."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        v = arr.item()
        return f"{v:,}" if isinstance(v, (int, np.integer)) else f"{v:.10g}"
    finite = arr[np.isfinite(arr)] if arr.dtype.kind in "fc" else arr
    if finite.size == 0:
        return f"array{arr.shape}"
    return f"array{arr.shape} in [{finite.min():.6g}, {finite.max():.6g}]"


# ------------------------------------------------------------------------------------------
# accountants: eps for arrays of (sigma, q, steps) at delta
def _pld_curve():
    """dpjax.accountants.pld_curve (the PLD accountant, where this dpjax has it)."""
    from .composition.pld_accountant import pld_curve

    return pld_curve


_PLD_OPTIONS = ("mechanism", "value_discretization_interval", "tail_mass")


class _Accountant:
    """eps(sigma, q, steps) at each configuration's delta for flat arrays, counting calls; for
    the PLD accountant also the grid each eps was computed on (NaN for RDP)."""

    def __init__(self, name: str, adjacency: str, delta: np.ndarray, orders, sampling: str, pld_options: Optional[Mapping]):
        self.name, self.adjacency, self.delta = name, adjacency, delta
        self.orders, self.sampling = orders, sampling
        self.calls = 0
        self.optimistic = False  # PLD: answer the optimistic eps instead (the answer's check, _solve)
        if pld_options is not None and not isinstance(pld_options, Mapping):
            raise TypeError(f"pld_options={pld_options!r} violates pld_options a mapping of pld_curve options (or None)")
        options = dict(pld_options or {})
        if name == "pld" and orders is not None:
            raise ValueError("orders= is for accountant='rdp'; the PLD accountant takes its options in pld_options=")
        if name == "rdp" and options:
            raise ValueError(f"pld_options={options!r} is for accountant='pld'")
        if name == "pld":
            try:
                _pld_curve()
            except ImportError as err:
                raise ValueError(
                    "accountant='pld' needs dpjax.accountants.pld_curve, which this dpjax does not have "
                    f"({err}); use accountant='rdp'"
                ) from None
            unknown = sorted(set(options) - set(_PLD_OPTIONS))
            if unknown:
                raise ValueError(f"pld_options={options!r} has {unknown}, not among the options a calibration passes to the "
                                 f"PLD accountant {list(_PLD_OPTIONS)}")
            from .composition import pld_accountant as pa

            self.mechanism = _validate.one_of("pld_options['mechanism']", options.get("mechanism", "gaussian"), pa.MECHANISMS)
            self.grid = _validate.in_range("pld_options['value_discretization_interval']",
                                           options.get("value_discretization_interval", pa.DEFAULT_INTERVAL), 0.0, 1.0, low_open=True)
            self.tail = _validate.in_range("pld_options['tail_mass']", options.get("tail_mass", pa.DEFAULT_TAIL), 0.0, 1e-3, low_open=True)
            self.sampling = _convention.sampling(sampling)
        elif sampling != "poisson":
            raise ValueError(f"sampling={sampling!r} is not supported by accountant='rdp' (Poisson sampling only)")
        else:
            self.grid = math.nan

    def per_step_rdp(self, sigma: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(orders, per-step RDP of shape (n, orders)) through noisy_sgd_curve (one step)."""
        from .composition.rdp import _rdp_curve

        n = sigma.size
        # pad to a power of two: the RDP kernels compile once per array size
        size = 1 << max(n - 1, 0).bit_length()
        pad = lambda v: np.concatenate([v, np.full(size - n, v[-1])])  # noqa: E731
        curve = _rdp_curve(pad(sigma), pad(q), 1, self.orders, self.adjacency)
        return curve.orders, curve.rdp[:n]

    def epsilon(self, sigma, q, steps, index, grid) -> tuple[np.ndarray, np.ndarray]:
        """(eps, grid used) at (sigma[i], q[i], steps[i]) for the configurations ``index`` (flat
        arrays). PLD: each on its grid ``grid[i]``, or, where that PLD would need more than
        MAX_GRID points, on the finest grid 2^k grid[i] that fits (NaN eps where none up to
        _MAX_INTERVAL does): the grid follows the candidate."""
        from .conversions import rdp_to_epsilon

        self.calls += 1
        sigma, q, steps = (np.asarray(v) for v in (sigma, q, steps))
        delta = self.delta[index]
        if self.name == "rdp":
            orders, rdp = self.per_step_rdp(sigma.astype(np.float64), q.astype(np.float64))
            return rdp_to_epsilon(orders, steps.astype(np.float64)[:, None] * rdp, delta), np.full(sigma.size, math.nan)
        from .composition.pld_accountant import _epsilons

        grid = np.broadcast_to(np.asarray(grid, dtype=np.float64), sigma.shape).copy()
        eps = np.full(sigma.size, np.nan)
        todo = np.arange(sigma.size)
        while todo.size:
            for d, h in {(float(a), float(b)) for a, b in zip(delta[todo], grid[todo])}:
                sel = todo[(delta[todo] == d) & (grid[todo] == h)]
                pess, opt = _epsilons(sigma[sel].astype(np.float64), q[sel].astype(np.float64), steps[sel].astype(np.int64), d,
                                      self.adjacency, self.sampling, self.mechanism, h, self.tail, optimistic=self.optimistic,
                                      skip_over_limit=True, max_grid=_CALIBRATION_MAX_GRID)
                eps[sel] = opt if self.optimistic else pess
            todo = todo[np.isnan(eps[todo]) & (grid[todo] * 2 <= _MAX_INTERVAL)]
            grid[todo] *= 2
        return eps, grid


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


def _expand(x0, evaluate, step, x_limit, counts, growth: float = 1.0):
    """From x0, step by ``step`` (in log space, towards the side that changes the sign) until
    f changes sign or the limit is passed, each further step ``growth`` times the last. Returns
    (x_ok, f_ok, x_bad, f_bad); ``step`` > 0 means f decreases as x grows (noise), < 0 the
    opposite (steps, rate)."""
    n = x0.size
    moves = np.zeros(n)  # steps taken by each element
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
        x = start + direction * abs(step) * growth ** moves[idx]
        moves[idx] += 1
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
    adjacency = _convention.adjacency(adjacency)
    eps = np.asarray(target_epsilon, dtype=np.float64)
    if np.any(~((eps > 0) & np.isfinite(eps))):
        raise ValueError(f"target_epsilon={target_epsilon!r} violates 0 < target_epsilon < inf")
    d = np.asarray(delta, dtype=np.float64)
    if np.any(~((d > 0) & (d < 1))):
        raise ValueError(f"delta={delta!r} violates 0 < delta < 1")
    return eps, d, adjacency


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


def _setup(target_epsilon, delta, accountant, adjacency, sampling, orders, pld_options, *fixed):
    """The checked arguments of a calibration, broadcast and flattened: (shape, target, delta,
    the ``fixed`` parameters (each a (checker, value) pair), the accountant)."""
    for name, value in [("target_epsilon", target_epsilon), ("delta", delta)] + [(check.__name__, v) for check, v in fixed]:
        if np.size(value) == 0:  # an empty batch: nothing to calibrate (it ended in an IndexError)
            name = _FIXED_NAMES.get(name, name)
            raise ValueError(f"{name}={_validate._fmt(value)} violates {name} a number or a non-empty array: it is empty")
    target, d, adj = _common(target_epsilon, delta, accountant, adjacency)
    values = [check(value) for check, value in fixed]
    shape = np.broadcast_shapes(target.shape, d.shape, *(v.shape for v in values))
    target, d, *values = (np.broadcast_to(v, shape).ravel() for v in [target, d] + values)
    return shape, target, d, values, _Accountant(accountant, adj, d, orders, sampling, pld_options)


_FIXED_NAMES = {"_rates": "sampling_rate", "_steps": "steps", "_noises": "noise_multiplier"}


def _rho(target, delta):
    """rho of the zCDP bound eps = rho + 2 sqrt(rho log(1/delta)) solved for the target."""
    log_inv = -np.log(delta)
    return (np.sqrt(log_inv + target) - np.sqrt(log_inv)) ** 2


# ------------------------------------------------------------------------------------------
# one solver for the three parameters
@dataclasses.dataclass
class _Problem:
    """What differs between the three calibrations; the search itself is :func:`_solve`'s.

    x is the log of the parameter; eps(x) is monotone: decreasing in the noise, increasing in
    the steps and the sampling rate. ``eps_of(parameter values, configuration indices, grids)``
    returns (eps, grid used). ``anchor``: an end known before the search (steps: 1 must meet
    the target; sampling rate: 1, which answers if it meets it)."""

    parameter: str
    decreasing: bool
    integer: bool
    limits: tuple  # (lowest, highest) parameter value searched
    guess: np.ndarray
    eps_of: object
    tol: object  # half-width in x at which a real search stops
    anchor: Optional[str] = None  # "lowest meets", "highest answers"
    # the bracket's expansion from the guess: first step in x (log parameter) and the factor by
    # which each further step grows (1: constant steps of x2)
    first_step: float = math.log(2.0)
    step_growth: float = 1.0

    def value(self, x):
        v = np.exp(x)
        return np.round(v).astype(np.int64) if self.integer else (np.minimum(v, 1.0) if self.parameter == "sampling_rate" else v)


class _Objective:
    """x -> log eps - log target for the configurations ``idx`` on their grids (+inf where eps
    is inf or cannot be evaluated: the solver then treats x as not meeting the target),
    remembering each (eps, grid) exactly as the accountant gave it."""

    def __init__(self, problem: _Problem, log_target, grid):
        self.problem, self.log_target, self.grid = problem, log_target, grid
        self.seen: dict = {}

    def __call__(self, x, idx):
        eps, used = self.problem.eps_of(self.problem.value(np.asarray(x)), idx, self.grid[idx])
        eps = np.asarray(eps, dtype=np.float64)
        for i, xi, e, h in zip(idx.tolist(), np.asarray(x).tolist(), eps.tolist(), np.asarray(used).tolist()):
            self.seen[(i, xi)] = (e, h)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.log(eps) - self.log_target[idx]
        return np.where(np.isnan(f), np.inf, f)

    def eps(self, x, idx) -> np.ndarray:
        return np.array([self.seen[(i, xi)][0] for i, xi in zip(idx.tolist(), np.asarray(x).tolist())])

    def grid_used(self, x, idx) -> np.ndarray:
        return np.array([self.seen[(i, xi)][1] for i, xi in zip(idx.tolist(), np.asarray(x).tolist())])


class _Limit(Exception):
    """A configuration the accountant cannot calibrate: ``kind`` (which limit), ``detail``."""

    def __init__(self, kind: str, index: int, detail: str):
        super().__init__(detail)
        self.kind, self.index, self.detail = kind, index, detail


def _kind_of(f: _Objective, i: int, x: float, kind: str) -> str:
    """``kind``, unless the eps at x was no number (a grid limit) or +inf (the PLD's floor):
    then that limit, not the target, is what the search ran into."""
    eps = f.seen.get((i, float(x)), (math.nan, math.nan))[0]
    if math.isnan(eps):
        return "grid"
    return "floor" if math.isinf(eps) else kind


def _search(problem: _Problem, f: _Objective, idx: np.ndarray, counts) -> tuple:
    """The bracketing search of the module docstring on the configurations ``idx``: returns the
    final (x_ok, x_bad) (x_bad NaN where the anchor "highest answers" holds)."""
    n = idx.size
    lo, hi = math.log(problem.limits[0]), math.log(problem.limits[1])
    x_ok = np.full(n, np.nan)
    x_bad = np.full(n, np.nan)
    f_ok = np.full(n, np.nan)
    f_bad = np.full(n, np.nan)
    todo = np.arange(n)
    if problem.anchor is not None:
        edge = lo if problem.anchor == "lowest meets" else hi
        f_edge = f(np.full(n, edge), idx)
        counts[idx] += 1
        meets = f_edge <= 0
        if problem.anchor == "lowest meets":
            if not np.all(meets):
                j = int(np.flatnonzero(~meets)[0])
                raise _Limit(_kind_of(f, int(idx[j]), edge, "anchor"), int(idx[j]), f"{problem.value(np.array(edge))}")
            x_ok[:], f_ok[:] = edge, f_edge
        else:
            x_bad[~meets], f_bad[~meets] = edge, f_edge[~meets]
            x_ok[meets], f_ok[meets] = edge, f_edge[meets]  # the highest rate meets it: the answer
            todo = np.flatnonzero(~meets)
    if todo.size:
        sub = np.zeros(todo.size, dtype=np.int64)
        g = lambda x, j: f(x, idx[todo[j]])  # noqa: E731
        step = problem.first_step if problem.decreasing else -problem.first_step
        e_ok, e_fok, e_bad, e_fbad = _expand(np.log(np.clip(problem.guess[idx[todo]], *problem.limits)), g, step, (lo, hi), sub,
                                             problem.step_growth)
        known_ok, known_bad = ~np.isnan(x_ok[todo]), ~np.isnan(x_bad[todo])
        e_ok = np.where(np.isnan(e_ok) & known_ok, x_ok[todo], e_ok)
        e_fok = np.where(np.isnan(e_fok) & known_ok, f_ok[todo], e_fok)
        e_bad = np.where(np.isnan(e_bad) & known_bad, x_bad[todo], e_bad)
        e_fbad = np.where(np.isnan(e_fbad) & known_bad, f_bad[todo], e_fbad)
        for missing, kind in ((np.isnan(e_ok), "never meets"), (np.isnan(e_bad), "always meets")):
            if np.any(missing):
                j = int(np.flatnonzero(missing)[0])
                i, last = int(idx[todo[j]]), e_bad[j] if kind == "never meets" else e_ok[j]
                raise _Limit(_kind_of(f, i, last, kind), i, f"{problem.value(np.array(last))}")
        tol = problem.tol if problem.integer else np.broadcast_to(problem.tol, (idx.size,))[todo]
        tol = 0.25 / np.exp(np.maximum(e_ok, e_bad)) if problem.integer else tol
        e_ok, e_fok, e_bad, e_fbad = _itp(e_ok, e_fok, e_bad, e_fbad, g, tol, problem.integer, sub)
        x_ok[todo], x_bad[todo] = e_ok, e_bad
        counts[idx[todo]] += sub
    return x_ok, x_bad


def _solve(problem: _Problem, acc: _Accountant, target, delta) -> dict:
    """Search every configuration, then check each answer as the module docstring says: both
    ends evaluated on one grid, the rejected one's eps finite, and (PLD) the grid's own effect
    on eps within GRID_TOLERANCE of the target, else the grid is refined (or coarsened to the
    ends' common one) and the search run again. Raises :class:`_Limit` for a configuration
    that hits a limit."""
    n = target.size
    log_target = np.log(target)
    base = np.full(n, acc.grid)
    counts = np.zeros(n, dtype=np.int64)
    out = {k: np.full(n, np.nan) for k in ("x_ok", "x_bad", "eps_ok", "eps_bad", "grid")}
    active = np.arange(n)
    pld = acc.name == "pld"
    for _ in range(_MAX_ROUNDS):
        if not active.size:
            break
        f = _Objective(problem, log_target, base)
        x_ok, x_bad = _search(problem, f, active, counts)
        answered = np.isnan(x_bad)  # the anchor answers: nothing rejected
        both = np.flatnonzero(~answered)
        eps_ok, h_ok = f.eps(x_ok, active), f.grid_used(x_ok, active)
        eps_bad, h_bad = np.full(active.size, np.nan), np.full(active.size, np.nan)
        eps_bad[both], h_bad[both] = f.eps(x_bad[both], active[both]), f.grid_used(x_bad[both], active[both])
        redo = np.zeros(active.size, dtype=bool)
        if pld:
            # the ends on different grids (one had to be coarsened): search again on the coarser
            split = ~answered & (h_ok != h_bad)
            base[active[split]] = np.fmax(h_ok, h_bad)[split]
            redo |= split
            for j in np.flatnonzero(~redo & ~answered & ~np.isfinite(eps_bad)):
                raise _Limit("floor" if np.isinf(eps_bad[j]) else "grid", int(active[j]), f"{problem.value(x_bad[j])}")
            # the grid's own effect: both ends again on a grid twice as coarse
            check = np.flatnonzero(~redo)
            if check.size:
                ends = np.concatenate([x_ok[check], x_bad[check[~answered[check]]]])
                which = np.concatenate([check, check[~answered[check]]])
                # one call per end, each the size of the search's calls: a call of both ends at
                # once had twice the configurations, hence programs of its own to compile (a
                # chunk shape of the composition and a discretisation call of more blocks: 2-9 s
                # of a calibration on the loaded 2-core CPU, measured)
                split = check.size
                coarse = np.concatenate([problem.eps_of(problem.value(part), active[at], 2.0 * h_ok[at])[0]
                                         for part, at in ((ends[:split], which[:split]), (ends[split:], which[split:])) if at.size])
                fine = np.concatenate([eps_ok[check], eps_bad[check[~answered[check]]]])
                with np.errstate(invalid="ignore"):
                    moved = np.abs(coarse - fine)
                moved = np.where(np.isfinite(moved), moved, np.inf)
                worst = np.zeros(active.size)
                np.maximum.at(worst, which, moved)
                # and the answer's optimistic eps on its grid (never above the truth): where it is
                # 0 the grid resolves nothing at that delta (issue 38: 4,523,637 steps for a
                # target of 11.33 rested on such a grid), however little a coarser grid moves the
                # pessimistic value. Its distance to the pessimistic one is not asked: the
                # optimistic side's rounding grows like steps x grid (0.5 at 1000 steps on 1e-3)
                acc.optimistic = True
                try:
                    opt, _ = problem.eps_of(problem.value(x_ok[check]), active[check], h_ok[check])
                finally:
                    acc.optimistic = False
                worst[check] = np.where(np.isfinite(opt) & (opt > 0), worst[check], np.inf)
                counts[active[check]] += 2 + (~answered[check])
                unresolved = check[worst[check] > GRID_TOLERANCE * target[active[check]]]
                for j in unresolved:
                    i = active[j]
                    # error about proportional to the grid: aim at a quarter of the tolerance
                    ratio = 4.0 * worst[j] / (GRID_TOLERANCE * target[i])
                    factor = max(2.0, 2.0 ** math.ceil(math.log2(ratio))) if math.isfinite(ratio) else math.inf
                    if h_ok[j] > base[i] or factor > _MAX_REFINE or h_ok[j] / factor < acc.grid * 2.0**-_MAX_REFINE_TOTAL:
                        # coarsened to fit (a finer grid does not), or a refinement beyond the
                        # caps (an optimistic side of 0 asks an unbounded one)
                        raise _Limit("resolution", int(i), f"{h_ok[j]:g}:{worst[j]:.3g}")
                    base[i] = h_ok[j] / factor
                    redo[j] = True
        else:
            for j in np.flatnonzero(~answered & ~np.isfinite(eps_bad)):
                raise _Limit("infinite", int(active[j]), "")
        done = np.flatnonzero(~redo)
        for key, vals in (("x_ok", x_ok), ("x_bad", x_bad), ("eps_ok", eps_ok), ("eps_bad", eps_bad), ("grid", h_ok)):
            out[key][active[done]] = vals[done]
        if np.any(redo):
            # the next round, on its new grid, starts where this one ended (a grid change moves
            # the answer a little): its bracket closes near there, not after a walk from the
            # first guess through values whose PLDs compile programs of their own
            guess = np.array(problem.guess, dtype=np.float64)
            guess[active[redo]] = problem.value(x_ok[redo])
            problem = dataclasses.replace(problem, guess=guess)
        active = active[redo]
    if active.size:
        raise _Limit("rounds", int(active[0]), "")
    out["counts"] = counts
    return out


def _explain(err: _Limit, problem: _Problem, acc: _Accountant, target, delta, fixed: str) -> ValueError:
    """The error for a configuration that hit a limit: which limit, and who can answer."""
    i = err.index
    where = f"configuration {i} (target_epsilon={target[i]:g}, delta={delta[i]:g}, {fixed})"
    lo, hi = problem.limits
    p = problem.parameter
    if err.kind == "anchor" or (err.kind == "never meets" and p == "steps"):  # the PLD's steps search ends at 1 step
        return ValueError(f"even steps=1 exceeds target_epsilon for {where}: no number of steps meets it")
    if err.kind == "never meets":
        if p == "noise_multiplier":
            return ValueError(f"target_epsilon is not reached even with noise_multiplier={hi:g} (the top of the search range) "
                              f"for {where}" + _why_pld(acc))
        return ValueError(f"even sampling_rate={lo:g} (the bottom of the search range) exceeds target_epsilon for {where}"
                          + _why_pld(acc))
    if err.kind == "always meets":
        if p == "noise_multiplier":
            return ValueError(f"target_epsilon is met by every noise_multiplier >= {lo:g} for {where}: the smallest one lies "
                              "below the search range")
        return ValueError(f"every number of steps up to max_steps={int(hi)} meets target_epsilon for {where}; raise max_steps")
    if err.kind == "floor":
        return ValueError(
            f"accountant='pld' cannot certify delta={delta[i]:g} for {where}: where the search went ({p}={err.detail}) its "
            f"pessimistic eps is inf, because delta lies below the PLD's delta floor (the mass it must put at +inf: one "
            f"step's loss beyond its grid and what may lie beyond the composed window, both set by tail_mass={acc.tail:g}); "
            "use accountant='rdp', or a smaller tail_mass in pld_options")
    if err.kind == "grid":
        return ValueError(
            f"accountant='pld' cannot evaluate {p}={err.detail} (where the search went) for {where}: its PLD needs an FFT of more than "
            f"{_max_grid()} points even at value_discretization_interval={_MAX_INTERVAL:g}; use accountant='rdp'")
    if err.kind == "resolution":
        h, moved = err.detail.split(":")
        how = (f"the grid itself moves eps by {float(moved):.3g}" if math.isfinite(float(moved)) else
               "the optimistic eps is 0 (the grid resolves nothing at this delta)")
        return ValueError(
            f"accountant='pld' cannot resolve target_epsilon={target[i]:g} for {where}: on its grid "
            f"(value_discretization_interval={float(h):g}) {how}, more than GRID_TOLERANCE={GRID_TOLERANCE:g} of the target, "
            f"and a grid fine enough needs more than the calibration's caps (an FFT of {_max_grid()} points, a "
            f"{2 ** _MAX_REFINE_TOTAL}-fold refinement); use accountant='rdp'")
    if err.kind == "infinite":
        return ValueError(f"accountant='rdp' gives eps = inf at the rejected end of the search for {where}; no calibration")
    return ValueError(f"the calibration of {where} did not settle after {_MAX_ROUNDS} changes of its PLD grid; use accountant='rdp'")


def _why_pld(acc: _Accountant) -> str:
    return "" if acc.name != "pld" else " (as computed by accountant='pld'; accountant='rdp' may reach it where the PLD's grid cannot)"


def _max_grid() -> int:
    return _CALIBRATION_MAX_GRID


def _fixed_text(fixed_names: dict, shape, index: int) -> str:
    return ", ".join(f"{k}={_validate._fmt(np.broadcast_to(v, shape)[index].item())}" for k, v in fixed_names.items())


def _calibrate(problem: _Problem, acc: _Accountant, shape, target, delta, fixed_names: dict) -> Calibration:
    try:
        res = _solve(problem, acc, target, delta)
    except _Limit as err:
        raise _explain(err, problem, acc, target, delta, _fixed_text(fixed_names, target.shape, err.index)) from None
    value = problem.value(res["x_ok"])
    rejected = np.where(np.isnan(res["x_bad"]), np.nan, problem.value(np.where(np.isnan(res["x_bad"]), 0.0, res["x_bad"])))
    if problem.integer:
        rejected = rejected.astype(np.int64)
    grid = None if acc.name == "rdp" else res["grid"]
    arrays = [value, res["eps_ok"], rejected, res["eps_bad"], target, delta, res["counts"]] + ([grid] if grid is not None else [])
    if shape == ():
        arrays = [a.reshape(()).item() for a in arrays]
    else:
        arrays = [a.reshape(shape) for a in arrays]
    if grid is None:
        arrays.append(None)
    return Calibration(problem.parameter, *arrays[:7], acc.calls, acc.name, arrays[7])


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
    ``accountant="rdp"``; ``pld_options`` (``value_discretization_interval``, ``tail_mass``,
    ``mechanism``) for ``accountant="pld"``, whose grid follows the candidate (module
    docstring). Searches noise multipliers in [0.01, 1e9] and raises if the target is met
    below (or not met at) its ends, or if a limit of the accountant decides instead of the
    target (the error names it and the accountant that can answer).
    """
    shape, target, d, (q, t), acc = _setup(target_epsilon, delta, accountant, adjacency, sampling, orders, pld_options,
                                           (_rates, sampling_rate), (_steps, steps))
    rtol = _validate.in_range("rtol", rtol, 0.0, 0.1, low_open=True)
    # first guess: the zCDP approximation sigma = q sqrt(steps / (2 rho))
    problem = _Problem("noise_multiplier", True, False, _NOISE_RANGE, q * np.sqrt(t / (2.0 * _rho(target, d))),
                       lambda v, idx, h: acc.epsilon(v, q[idx], t[idx], idx, h), 0.5 * math.log1p(rtol))
    if acc.name == "pld":
        problem = _pld_noise_start(problem, acc, target, d, q, t)
    return _calibrate(problem, acc, shape, target, d, {"sampling_rate": q, "steps": t})


_RDP_GUESS_RTOL = 1e-2  # the RDP calibration that starts a PLD one: a start needs no more
_PLD_FIRST_STEP = math.log(1.25)  # from the RDP answer down: x1.25, then x1.56, x2.44, x5.96, ...


def _rdp_applies(acc: _Accountant, q) -> np.ndarray:
    """The configurations (indices into ``q``) the RDP accountant can account for with the PLD
    accountant's options: Gaussian noise and Poisson sampling, at add/remove adjacency or with
    full batches."""
    if acc.mechanism != "gaussian" or acc.sampling != "poisson":
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero((acc.adjacency == "add-remove") | (np.asarray(q) >= 1.0))


def _pld_noise_start(problem: _Problem, acc: _Accountant, target, delta, q, t) -> _Problem:
    """The PLD noise search started at the RDP accountant's answer (a cheap calibration: an RDP
    evaluation takes milliseconds once compiled), with a first step of x1.25 growing x2 in log
    space.

    Why: eps is costly to compute at small noise (a one-step PLD's loss range grows like
    1/sigma^2, and so does its FFT) and the zCDP guess can be far below the answer when the
    noise is small (q = 0.001, 25 steps, eps 1: 0.0245 against 0.535), so the bracket's x2 steps
    up from it computed the PLD at its most expensive points (31 s of a 49 s calibration). The RDP
    answer bounds the exact one from above and the PLD's is close to the exact one (1.45-1.52x
    below the RDP answer at 1 and 25 steps, 1.05-1.07x at 1,000-10,000): the bracket then closes
    after one or two cheap steps. Only the start changes: the answer is the same search's end, as checked as
    ever. Where the RDP accountant does not apply (Laplace noise, fixed-size batches,
    replace-one adjacency with q < 1) the zCDP guess and steps of x2 stay; a configuration of
    a batch that the RDP accountant cannot calibrate keeps the zCDP guess (with the growing
    steps, which reach as far in fewer evaluations)."""
    todo = _rdp_applies(acc, q)
    if not todo.size:
        return problem
    guess = np.array(problem.guess, dtype=np.float64)
    while todo.size:  # a configuration the RDP accountant cannot calibrate keeps the zCDP guess
        rdp = _Accountant("rdp", acc.adjacency, delta[todo], None, "poisson", None)
        qs, ts = q[todo], t[todo]
        guide = dataclasses.replace(problem, guess=guess[todo], tol=0.5 * math.log1p(_RDP_GUESS_RTOL),
                                    eps_of=lambda v, idx, h, rdp=rdp, qs=qs, ts=ts: rdp.epsilon(v, qs[idx], ts[idx], idx, h))
        try:
            guess[todo] = np.exp(_solve(guide, rdp, target[todo], delta[todo])["x_ok"])
            break
        except _Limit as err:
            todo = np.delete(todo, err.index)
    return dataclasses.replace(problem, guess=guess, first_step=_PLD_FIRST_STEP, step_growth=2.0)


def _rdp_meets_at(acc: _Accountant, sigma, q, steps: int, target, delta) -> tuple[np.ndarray, np.ndarray]:
    """(the configurations whose RDP eps after ``steps`` steps is <= the target, that eps): there every
    number of steps up to ``steps`` meets it, whatever the PLD would say (the RDP bound is an
    upper bound on the exact eps, and it grows with the steps). A calibration of steps by the
    PLD asks this first, because its search would otherwise walk up to ``steps`` one PLD at a
    time, compiling a composition per bit length of the step count and refining its grid where
    round-off decides (near 1e10 steps; measured: 21 s for the issue's calibrate_steps(1.0,
    1e-5, 1e6, 0.01), against 0.2 s here). Only where the RDP accountant applies (Gaussian
    noise, Poisson sampling, add/remove adjacency or full batches)."""
    todo = _rdp_applies(acc, q)
    if not todo.size:
        return todo, np.zeros(0)
    rdp = _Accountant("rdp", acc.adjacency, delta, None, "poisson", None)
    eps, _ = rdp.epsilon(sigma[todo], q[todo], np.full(todo.size, steps, dtype=np.float64), todo, None)
    meets = eps <= target[todo]
    return todo[meets], eps[meets]


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
    one step exceeds the target, if ``max_steps`` steps still meet it, or if a limit of the
    accountant decides instead of the target."""
    shape, target, d, (s, q), acc = _setup(target_epsilon, delta, accountant, adjacency, sampling, orders, pld_options,
                                           (_noises, noise_multiplier), (_rates, sampling_rate))
    max_steps = _validate.positive_int("max_steps", max_steps)
    if accountant == "rdp":
        # the per-step RDP does not depend on the number of steps: compute it once
        from .conversions import rdp_to_epsilon

        orders_held, per_step = acc.per_step_rdp(s, q)

        def eps_of(n, idx, h):
            acc.calls += 1
            return rdp_to_epsilon(orders_held, n[:, None] * per_step[idx], d[idx]), np.full(idx.size, math.nan)
    else:
        def eps_of(n, idx, h):
            return acc.epsilon(s[idx], q[idx], n, idx, h)

    problem = _Problem("steps", False, True, (1, max_steps), np.round(_rho(target, d) * 2.0 * s**2 / q**2), eps_of, None,
                       anchor="lowest meets")
    if accountant == "pld":
        problem = _pld_steps_start(problem, target, d, s, q)
        # the RDP bound at max_steps, where the start lies within a factor 4 of it (elsewhere
        # the search stays far below max_steps, and this check would compile RDP programs for
        # nothing: 0.7-1 s on the loaded 2-core CPU)
        near = np.flatnonzero(problem.guess * 4.0 >= max_steps)
        certified, rdp_eps = _rdp_meets_at(acc, s[near], q[near], max_steps, target[near], d[near])
        certified = near[certified]
        if certified.size:
            i = int(certified[0])
            err = _explain(_Limit("always meets", i, str(max_steps)), problem, acc, target, d,
                           _fixed_text({"noise_multiplier": s, "sampling_rate": q}, target.shape, i))
            raise ValueError(f"{err} (the RDP accountant's upper bound certifies it: eps = {rdp_eps[0]:.4g} at max_steps)")
        unresolved = _unresolved_below_start(problem, acc, target)
        if unresolved is not None:
            raise _explain(unresolved, problem, acc, target, d, _fixed_text({"noise_multiplier": s, "sampling_rate": q},
                                                                            target.shape, unresolved.index))
    return _calibrate(problem, acc, shape, target, d, {"noise_multiplier": s, "sampling_rate": q})


def _unresolved_below_start(problem: _Problem, acc: _Accountant, target) -> Optional[_Limit]:
    """The refusal the search would end in, known at its start: where the start's pessimistic
    eps exceeds the target (the answer lies below it) and its optimistic eps is 0 on the asked
    grid, every step count below has an optimistic eps of 0 too (it does not fall as steps are
    added), so the answer's check (:func:`_solve`: an optimistic eps of 0 is a grid that
    resolves nothing at this delta) refuses whatever the search finds. Refused here, before a
    walk down whose PLDs compile programs of their own (issue 38's ``calibrate_steps(1, 1e-5,
    1000.0, 0.01)``: start 7.2e8 steps, refusal at 8.1e7 after 8-14 s; the same error). Asks
    one PLD evaluation at the start, which the search's first one repeats from compiled
    programs. None where nothing is known yet."""
    idx = np.arange(target.size)
    base = np.full(idx.size, acc.grid)
    pess, used = problem.eps_of(problem.value(np.log(problem.guess)), idx, base)
    above = np.flatnonzero(np.isfinite(pess) & (pess > target) & (used == base))
    if not above.size:
        return None
    acc.optimistic = True
    try:
        opt, _ = problem.eps_of(problem.value(np.log(problem.guess[above])), idx[above], base[above])
    finally:
        acc.optimistic = False
    zero = above[opt == 0]
    return _Limit("resolution", int(zero[0]), f"{acc.grid:g}:inf") if zero.size else None


def _pld_steps_start(problem: _Problem, target, delta, sigma, q) -> _Problem:
    """The PLD steps search started at the central-limit estimate of the answer, stepping by
    x1.25, then x1.56, x2.44, ..., without first asking the PLD at steps = 1.

    The estimate: T steps of the Poisson-subsampled Gaussian mechanism are close to mu-GDP
    with mu = q sqrt(T (e^{1/sigma^2} - 1)) (the central limit theorem for noisy SGD of Bu,
    Dong, Long & Su 2020, "Deep learning with Gaussian differential privacy", from Dong, Roth &
    Su 2022, Sec. 5; exact for q = 1), so T = (mu / q)^2 /
    (e^{1/sigma^2} - 1) at the mu whose eps(delta) is the target. It is no bound and needs
    none: the search evaluates the PLD on both sides of the answer as before, and this only
    decides where it starts. Measured against the PLD's answers: 13,729 for 13,631 (sigma 5,
    q 0.01, eps 1, delta 1e-6), 95.2 for 95 (q = 1), 418 for 254 (sigma 1, q 0.01); the
    zCDP guess it replaces gave 8,735, 38.9 and 416, and the RDP answer 11,838, 77 and 4 (RDP
    converts loosely at few steps).

    Why (issue 38: ``calibrate_steps(1, 1e-5, 1000.0, 0.01)`` took 18-32 s, other valid inputs
    7-35 s, with an empty compilation cache): each PLD evaluation at a new FFT length or
    squaring count (the steps' bit length, in fours) compiles its programs, 1-3 s each on the
    loaded 2-core CPU, and the search asked them at steps = 1 (the anchor), then at the zCDP
    guess and at x2 steps from it (1, 416, 208 before the bracket around 254 closed). A
    search that walks down to steps = 1 still evaluates it there (same error as the anchor's)."""
    with np.errstate(divide="ignore", over="ignore"):
        mu = _gdp_mu(target, delta)
        clt = (mu / q) ** 2 / np.expm1(1.0 / sigma**2)
    guess = np.where(np.isfinite(clt), np.clip(np.round(clt), *problem.limits), problem.limits[1])
    return dataclasses.replace(problem, guess=guess, anchor=None, first_step=_PLD_FIRST_STEP, step_growth=2.0)


def _gdp_mu(target, delta) -> np.ndarray:
    """The mu whose Gaussian-DP eps(delta) is ``target`` (:mod:`dpjax.accountants.fdp`)."""
    from .fdp import _mu_requirement

    return _mu_requirement(target, delta)


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
    the target. Raises if even a rate of 1e-12 exceeds it, or if a limit of the accountant
    decides instead of the target."""
    shape, target, d, (s, t), acc = _setup(target_epsilon, delta, accountant, adjacency, sampling, orders, pld_options,
                                           (_noises, noise_multiplier), (_steps, steps))
    rtol = _validate.in_range("rtol", rtol, 0.0, 0.1, low_open=True)
    problem = _Problem("sampling_rate", False, False, (_RATE_MIN, 1.0), np.minimum(s * np.sqrt(2.0 * _rho(target, d) / t), 0.5),
                       lambda v, idx, h: acc.epsilon(s[idx], v, t[idx], idx, h), 0.5 * math.log1p(rtol), anchor="highest answers")
    return _calibrate(problem, acc, shape, target, d, {"noise_multiplier": s, "steps": t})


__all__ = ["ACCOUNTANTS", "GRID_TOLERANCE", "Calibration", "calibrate_noise_multiplier", "calibrate_sampling_rate", "calibrate_steps"]
