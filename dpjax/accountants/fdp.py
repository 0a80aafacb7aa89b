"""f-DP trade-off functions and Gaussian-DP (mu-GDP) summaries of a privacy curve.

Hypothesis-testing privacy (Dong, Roth & Su 2022, "Gaussian differential privacy", JRSS-B;
arXiv:1905.02383). For a rejection rule with type I error alpha, the trade-off function
f(alpha) is the smallest type II error beta an adversary can reach when telling M(D) from
M(D'). The facts used here:

* (eps, delta)-DP is exactly f_{eps,delta}-DP with (DRS Prop. 2.5)
      f_{eps,delta}(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha)),
  symmetric (its own inverse) because (eps, delta)-DP constrains both directions.
* A mechanism that is (eps, delta(eps))-DP for every eps in a set E is f-DP with
  f = sup_{eps in E} f_{eps,delta(eps)} (DRS Prop. 2.12); with E = [0, inf) and the exact
  profile this is the tight trade-off (the primal-dual correspondence, DRS Prop. 2.12 and
  Cor. 2.13). Taking eps >= 0 loses nothing: the two terms of f_{eps,delta} are the
  supporting lines of slope -e^eps and -e^-eps.
* mu-GDP: G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu), the trade-off of N(0, 1) vs N(mu, 1),
  and G_mu dominates a mechanism iff it is (eps, delta_mu(eps))-DP for all eps >= 0 with
  (DRS Cor. 2.13; Balle & Wang 2018, Thm 8)
      delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).

What is computed, and which way each approximation errs:

* :func:`curve_tradeoff` evaluates sup over eps of f_{eps,delta(eps)} with delta(eps) the
  curve's own certified delta (its profile, its RDP curve through the curve's conversion, or
  a PLD), over a finite set of eps: a grid plus a local refinement around the best grid point.
  Each term is a valid trade-off bound, so the result is a valid f for the mechanism (never
  above the true beta). Its slack has two sources: the curve's delta(eps) itself (an RDP
  conversion or a profile rounded to its grid is pessimistic) and the finite eps set (for a
  profile known only on a grid the profile's grid points are the optimum, because its
  certified delta is a step function; for RDP/PLD curves the refinement makes this slack
  negligible, and truncating eps at eps_top costs at most delta(eps_top) <= 1e-15).
* :func:`curve_gdp` returns the smallest mu with delta(eps) <= delta_mu(eps) on a range
  [0, eps_max], certified between grid points by monotonicity (delta(eps) is non-increasing,
  delta_mu decreasing: delta(eps_i) <= delta_mu(eps_{i+1}) covers [eps_i, eps_{i+1}]), the
  grid refined until the certified mu is within ``rtol`` of the largest point-wise
  requirement; beyond eps_max the curve certifies delta <= tail_delta, so its trade-off is
  >= G_mu - tail_delta everywhere, and >= G_mu exactly when tail_delta = 0.

Numerics: delta_mu in log space through the scaled complementary error function
(Phi(-t) = erfcx(t / sqrt 2) e^{-t^2/2} / 2, and e^eps e^{-x0^2/2} = e^{-x1^2/2}), so the
difference of the two Phi terms is a difference of two O(1) numbers, not of two tiny ones.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np
from scipy import special

from .. import _validate

_SQRT2 = math.sqrt(2.0)
_LOG2 = math.log(2.0)
_TAIL_DELTA = 1e-15  # the eps grid of a trade-off reaches eps(1e-15): truncation slack <= 1e-15
_EPS_CAP = 60.0  # ... but never beyond 60 (e^60 alpha >= 1 for every alpha >= 1e-26)
_GRID_POINTS = 801
_GOLDEN_ITERATIONS = 48  # golden section shrinks the bracket by 0.618^48 ~ 1e-10
_MU_BISECTIONS = 64  # log-mu bisection over [1e-320, 1e4]: relative width 754 * 2^-64 ~ 4e-17
_MU_MIN, _MU_MAX = 1e-300, 1e4


# ------------------------------------------------------------------------------------------
# the Gaussian trade-off and its privacy profile
def _check_mu(mu) -> np.ndarray:
    m = np.asarray(mu, dtype=np.float64)
    if np.any(~(m >= 0)):
        raise ValueError(f"mu={mu!r} violates mu >= 0")
    return m


def _log1mexp(x):
    """log(1 - e^x) for x <= 0, elementwise (the two branches of Maechler 2012)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > -_LOG2, np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def _log_gdp_delta_unchecked(mu, eps):
    mu, eps = np.broadcast_arrays(np.asarray(mu, dtype=np.float64), np.asarray(eps, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        safe_mu = np.where((mu > 0) & np.isfinite(mu), mu, 1.0)
        safe_eps = np.where(np.isfinite(eps), eps, 0.0)
        x1 = -safe_eps / safe_mu + safe_mu / 2.0  # delta_mu = Phi(x1) - e^eps Phi(x0), x0 = x1 - mu
        x0 = x1 - safe_mu
        # x1 <= 0: both Phi terms are lower tails; with u = -x1/sqrt2 <= v = -x0/sqrt2,
        # delta = e^{-x1^2/2} (erfcx(u) - erfcx(v)) / 2 (erfcx is decreasing on [0, inf)).
        u, v = -x1 / _SQRT2, -x0 / _SQRT2
        diff = special.erfcx(np.maximum(u, 0.0)) - special.erfcx(np.maximum(v, 0.0))
        tail = -0.5 * x1**2 - _LOG2 + np.log(diff)
        # x1 > 0 (eps < mu^2/2): delta >= Phi(0) - e^{mu^2/2} Phi(-mu) is not small; log-sum form.
        la = special.log_ndtr(x1)
        lb = safe_eps + special.log_ndtr(x0)
        body = la + _log1mexp(np.minimum(lb - la, 0.0))
        out = np.where(x1 <= 0, tail, body)
    out = np.where(mu == 0, -np.inf, out)
    out = np.where(np.isinf(mu) & np.isfinite(eps), 0.0, out)
    out = np.where(np.isinf(eps), -np.inf, out)
    return np.minimum(out, 0.0)


@_validate.arguments(mu="numbers", epsilon="numbers")
def gdp_log_delta(mu, epsilon) -> np.ndarray:
    """log delta_mu(eps) = log(Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)), the privacy
    profile of mu-GDP (Dong, Roth & Su 2022, Cor. 2.13; Balle & Wang 2018, Thm 8), in log space."""
    m = _check_mu(mu)
    e = np.asarray(epsilon, dtype=np.float64)
    if np.any(~(e >= 0)):
        raise ValueError(f"epsilon={epsilon!r} violates epsilon >= 0")
    return _log_gdp_delta_unchecked(m, e)


@_validate.arguments(mu="numbers", epsilon="numbers")
def gdp_delta(mu, epsilon) -> np.ndarray:
    """delta_mu(eps), the privacy profile of mu-GDP; see :func:`gdp_log_delta`."""
    return np.exp(gdp_log_delta(mu, epsilon))


def gdp_epsilon(mu, delta) -> np.ndarray:
    """Exact eps(delta) of mu-GDP (Dong, Roth & Su 2022, Cor. 2.13), vectorised over ``mu`` and
    ``delta`` (0 < delta < 1): bisection on log delta_mu(eps), which is decreasing in eps, to
    the last bit, rounded up (the returned eps certifies delta). mu = inf gives inf, mu = 0 gives 0."""
    mu = np.asarray(mu, dtype=np.float64)
    d = np.asarray(delta, dtype=np.float64)
    if np.any(~((d > 0) & (d < 1))):
        raise ValueError(f"delta={delta!r} violates 0 < delta < 1")
    if np.any(np.isnan(mu)) or np.any(mu < 0):
        raise ValueError(f"mu={mu!r} violates mu >= 0")
    mu, d = np.broadcast_arrays(mu, d)
    log_d = np.log(d)
    finite = np.isfinite(mu)
    m = np.where(finite & (mu > 0), mu, 1.0)
    lo = np.zeros_like(m)
    # zCDP (Bun & Steinke 2016, Prop. 1.3): delta_mu(hi) <= delta at hi = mu^2/2 + mu sqrt(2 log(1/delta))
    # (mu beyond ~1e154 overflows it to inf: eps inf there, which is still a valid answer)
    with np.errstate(over="ignore", invalid="ignore"):
        hi = m * m / 2 + m * np.sqrt(2 * np.log(1 / d)) + 1e-12
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            ok = _log_gdp_delta_unchecked(m, mid) <= log_d
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
    return np.where(finite, np.where(mu == 0, 0.0, hi), np.inf)


@_validate.arguments(mu="numbers", alpha="numbers")
def gdp_tradeoff(mu, alpha) -> np.ndarray:
    """G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu), the trade-off of mu-GDP (DRS Def. 2.7),
    evaluated as Phi(-Phi^{-1}(alpha) - mu) so that small alpha keeps its precision."""
    m = _check_mu(mu)
    a = _check_alpha(alpha)
    with np.errstate(invalid="ignore"):
        out = special.ndtr(-special.ndtri(a) - m)
    return np.where(np.isinf(m), np.where(a == 0, 1.0, 0.0), out)


def _mu_requirement(epsilon, delta) -> np.ndarray:
    """The smallest mu with delta_mu(eps) >= delta, rounded up (64 log-mu bisections keep the
    upper end of the bracket, so delta_mu(result) >= delta always); 0 where delta = 0 and inf
    where no mu <= 1e4 suffices (delta_mu < 1 for every finite mu)."""
    eps, d = np.broadcast_arrays(np.asarray(epsilon, dtype=np.float64), np.asarray(delta, dtype=np.float64))
    eps, d = eps.ravel(), d.ravel()
    out = np.full(eps.shape, np.inf)
    out[d <= 0] = 0.0
    work = (d > 0) & (d < 1)
    if np.any(work):
        e, log_d = eps[work], np.log(d[work])
        lo = np.full(e.shape, math.log(_MU_MIN))
        hi = np.full(e.shape, math.log(_MU_MAX))
        ok_hi = _log_gdp_delta_unchecked(np.exp(hi), e) >= log_d
        ok_lo = _log_gdp_delta_unchecked(np.exp(lo), e) >= log_d
        for _ in range(_MU_BISECTIONS):
            mid = 0.5 * (lo + hi)
            ok = _log_gdp_delta_unchecked(np.exp(mid), e) >= log_d
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
        res = np.where(ok_lo, _MU_MIN, np.exp(hi))
        out[work] = np.where(ok_hi, res, np.inf)
    return out.reshape(np.shape(np.broadcast_arrays(np.asarray(epsilon), np.asarray(delta))[0]))


# ------------------------------------------------------------------------------------------
# trade-off of a curve
def _check_alpha(alpha) -> np.ndarray:
    a = np.asarray(alpha, dtype=np.float64)
    if np.any(~((a >= 0) & (a <= 1))):
        raise ValueError(f"alpha={alpha!r} violates 0 <= alpha <= 1 (alpha is a type I error)")
    return a


def _tradeoff_terms(eps, delta, alpha):
    """f_{eps,delta}(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha))."""
    with np.errstate(over="ignore", invalid="ignore"):
        first = (1.0 - delta) - np.exp(eps) * alpha
        second = np.exp(-eps) * ((1.0 - alpha) - delta)
    return np.maximum(0.0, np.where(np.isnan(first), 0.0, np.maximum(first, second)))


def _batch_shape(curve, conversion) -> tuple:
    return np.shape(curve.delta(0.0, conversion))


def _delta_at(curve, eps, conversion, batch) -> np.ndarray:
    """The curve's delta on a 1-D grid ``eps`` of n points: shape (n,) + batch."""
    eps = np.asarray(eps, dtype=np.float64)
    e = eps.reshape(eps.shape + (1,) * len(batch))  # the grid on its own axis, before the batch axes
    return np.broadcast_to(np.asarray(curve.delta(e, conversion), dtype=np.float64), (eps.shape[0],) + tuple(batch))


def default_epsilon_grid(curve, conversion: str = "balle") -> np.ndarray:
    """The eps grid :func:`curve_tradeoff` starts from: the profile's grid points (where the
    curve has one) and 801 points on [0, eps_top], eps_top = the curve's eps at delta = 1e-15
    (capped at 60), so cutting the sup at eps_top costs at most 1e-15 of beta."""
    parts = [np.zeros(1)]
    if getattr(curve, "has_profile", False):
        parts.append(curve.epsilons)
    with np.errstate(all="ignore"):
        top = np.asarray(curve.epsilon(_TAIL_DELTA, conversion), dtype=np.float64)
    finite = top[np.isfinite(top)]
    eps_top = float(np.max(finite)) if finite.size else _EPS_CAP
    if getattr(curve, "has_profile", False):
        eps_top = max(eps_top, float(curve.epsilons[-1]))
    eps_top = min(max(eps_top, 1e-3), _EPS_CAP)
    # denser near 0, where the tangent slopes e^eps of small-eps points change fastest
    parts.append(eps_top * np.linspace(0.0, 1.0, _GRID_POINTS) ** 1.5)
    return np.unique(np.concatenate(parts))


def curve_tradeoff(curve, alpha, epsilons=None, conversion: str = "balle") -> np.ndarray:
    """beta(alpha) = sup over eps of f_{eps,delta(eps)}(alpha) for the curve's delta(eps); see
    the module docstring for what is computed and which way it errs (never above the true
    trade-off). Output shape: the curve's batch shape + alpha's shape."""
    a = _check_alpha(alpha)
    batch = _batch_shape(curve, conversion)
    if epsilons is None:
        grid = default_epsilon_grid(curve, conversion)
        refine = not (getattr(curve, "has_profile", False) and not getattr(curve, "has_rdp", False))
    else:
        grid = np.asarray(epsilons, dtype=np.float64)
        if grid.ndim != 1 or grid.size == 0 or np.any(~(grid >= 0)) or np.any(~np.isfinite(grid)):
            raise ValueError(f"epsilons={epsilons!r} violates a non-empty 1-D grid of finite values >= 0")
        grid = np.unique(grid)
        refine = False
    deltas = _delta_at(curve, grid, conversion, batch)  # (n,) + batch
    flat_a = a.ravel()
    # values[k, ..., j]: the bound at grid eps k for alpha j
    values = _tradeoff_terms(grid.reshape((-1,) + (1,) * len(batch) + (1,)), deltas[..., None], flat_a)
    best = np.max(values, axis=0)  # batch + (m,)
    if refine and grid.size >= 3:
        k = np.argmax(values, axis=0)
        lo = grid[np.clip(k - 1, 0, grid.size - 1)]
        hi = grid[np.clip(k + 1, 0, grid.size - 1)]
        best = np.maximum(best, _golden_refine(curve, conversion, batch, flat_a, lo, hi))
    return best.reshape(tuple(batch) + a.shape)


def _golden_refine(curve, conversion, batch, alpha, lo, hi):
    """Golden-section search of eps -> f_{eps,delta(eps)}(alpha) on [lo, hi] (arrays batch + (m,)),
    returning the largest value met (every evaluated eps is a valid bound, so no assumption of
    unimodality is needed for soundness, only for tightness)."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0

    def value(eps):
        d = np.asarray(curve.delta(np.moveaxis(eps, -1, 0), conversion), dtype=np.float64)
        d = np.moveaxis(np.broadcast_to(d, np.moveaxis(eps, -1, 0).shape), 0, -1)
        return _tradeoff_terms(eps, d, alpha)

    lo, hi = np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64)
    c = hi - ratio * (hi - lo)
    d = lo + ratio * (hi - lo)
    fc, fd = value(c), value(d)
    best = np.maximum(fc, fd)
    for _ in range(_GOLDEN_ITERATIONS):
        left = fc >= fd  # keep [lo, d]
        hi = np.where(left, d, hi)
        lo = np.where(left, lo, c)
        new_c = hi - ratio * (hi - lo)
        new_d = lo + ratio * (hi - lo)
        probe = np.where(left, new_c, new_d)
        fp = value(probe)
        best = np.maximum(best, fp)
        c, d, fc, fd = (
            np.where(left, new_c, d),
            np.where(left, c, new_d),
            np.where(left, fp, fd),
            np.where(left, fc, fp),
        )
    return best


# ------------------------------------------------------------------------------------------
# the GDP summary of a curve
@dataclasses.dataclass(frozen=True)
class GDPSummary:
    """The tightest mu-GDP that dominates a curve on [0, epsilon_max], and what it means.

    mu: the smallest mu (up to ``rtol``, rounded up) with delta(eps) <= delta_mu(eps) for every
        eps in [0, epsilon_max], certified between grid points (see :func:`curve_gdp`); inf where
        no mu does (e.g. a profile whose first grid point is above 0).
    mu_lower: the largest point-wise requirement met on the grid: the smallest dominating mu
        on the range lies in [mu_lower, mu].
    epsilon_max: the end of the range checked (the curve's eps at ``min_delta``).
    tail_delta: the curve's delta at epsilon_max: beyond the range the curve certifies at most
        this, so its trade-off is >= max(0, G_mu(alpha) - tail_delta) for every alpha.
    dominates: True where mu-GDP dominates the curve on all of [0, inf) (tail_delta = 0).
    binding_epsilon: the eps where the requirement is largest (where the curve is least Gaussian).
    """

    mu: np.ndarray
    mu_lower: np.ndarray
    epsilon_max: np.ndarray
    tail_delta: np.ndarray
    dominates: np.ndarray
    binding_epsilon: np.ndarray

    def tradeoff(self, alpha) -> np.ndarray:
        """max(0, G_mu(alpha) - tail_delta): a trade-off the curve is guaranteed to meet."""
        mu = np.asarray(self.mu)[..., None] if np.ndim(self.mu) else self.mu
        tail = np.asarray(self.tail_delta)[..., None] if np.ndim(self.tail_delta) else self.tail_delta
        a = np.asarray(alpha, dtype=np.float64)
        flat = a.ravel()
        out = np.maximum(0.0, gdp_tradeoff(mu, flat) - tail)
        return out.reshape(np.shape(self.mu) + a.shape)

    def __str__(self) -> str:
        mu = np.asarray(self.mu)
        if mu.ndim:
            return f"GDPSummary(batch of {mu.size}: mu in [{np.min(mu):.4g}, {np.max(mu):.4g}])"
        if self.dominates:
            return f"{float(mu):.6g}-GDP (dominates the curve for every eps >= 0)"
        return (f"{float(mu):.6g}-GDP for eps <= {float(self.epsilon_max):.4g}; beyond, the curve's delta "
                f"<= {float(self.tail_delta):.3g} (trade-off >= G_mu - {float(self.tail_delta):.3g})")


def _certify_scalar(delta_fn: Callable[[np.ndarray], np.ndarray], eps_max: float, extra_points, rtol: float, max_points: int):
    """(mu certified on [0, eps_max], largest point-wise requirement, binding eps) for one
    non-increasing delta_fn; see :func:`curve_gdp`."""
    extra = extra_points[(extra_points >= 0) & (extra_points <= eps_max)]
    pts = np.unique(np.concatenate([np.linspace(0.0, eps_max, 257), extra, [eps_max]]))
    # (eps_j, delta_j) certified implies (eps, delta_j) for every eps >= eps_j: a running
    # minimum keeps each value valid and makes the sequence non-increasing
    d = np.minimum.accumulate(delta_fn(pts))
    point_req = _mu_requirement(pts, d)
    if pts.size == 1:
        return float(point_req[0]), float(point_req[0]), float(pts[0])
    # interval_req[i] covers [pts[i], pts[i+1]]: delta there <= d[i], delta_mu >= delta_mu(pts[i+1])
    interval_req = _mu_requirement(pts[1:], d[:-1])
    for _ in range(60):
        low = float(np.max(point_req))
        bad = interval_req > low * (1.0 + rtol)
        if not np.any(bad) or pts.size + np.count_nonzero(bad) > max_points:
            break
        idx = np.flatnonzero(bad)
        mids = 0.5 * (pts[idx] + pts[idx + 1])
        keep = (mids > pts[idx]) & (mids < pts[idx + 1])
        if not np.any(keep):
            break
        idx, mids = idx[keep], mids[keep]
        d_mid = np.minimum(delta_fn(mids), d[idx])
        interval_req[idx] = _mu_requirement(mids, d[idx])  # the left half of each split interval
        right_half = _mu_requirement(pts[idx + 1], d_mid)
        # every quantity keyed by its point (an interval by its left end; the last point has none)
        order = np.argsort(np.concatenate([pts, mids]), kind="stable")
        pts = np.concatenate([pts, mids])[order]
        d = np.concatenate([d, d_mid])[order]
        point_req = np.concatenate([point_req, _mu_requirement(mids, d_mid)])[order]
        interval_req = np.concatenate([interval_req, [np.inf], right_half])[order][:-1]
    k = int(np.argmax(interval_req))
    return float(interval_req[k]), float(np.max(point_req)), float(pts[k + 1])


def curve_gdp(curve, min_delta: float = 1e-10, conversion: str = "balle", rtol: float = 1e-4, max_points: int = 200_000) -> GDPSummary:
    """The smallest mu such that mu-GDP dominates ``curve`` for every eps whose certified delta
    is >= ``min_delta`` (eps in [0, epsilon_max], epsilon_max = curve.epsilon(min_delta)).

    Certification: on a grid eps_0 = 0 < ... < eps_n = epsilon_max, interval [eps_i, eps_{i+1}]
    is covered when delta(eps_i) <= delta_mu(eps_{i+1}), because the curve's delta is
    non-increasing and delta_mu decreasing in eps; the smallest such mu per interval is found by
    a log-mu bisection rounded up. Intervals whose requirement exceeds the largest point-wise
    requirement by more than ``rtol`` (relative) are halved, up to ``max_points`` grid points.
    """
    # a PrivacyCurve (by its methods: curve imports this module, so not by its class); None used
    # to end in an AttributeError on .delta
    if not all(callable(getattr(curve, m, None)) for m in ("epsilon", "delta")):
        raise _validate.ArgumentKindError(f"curve={_validate._fmt(curve)} violates curve a PrivacyCurve: got {type(curve).__name__}")
    min_delta = _validate.in_range("min_delta", min_delta, 0.0, 1.0, low_open=True, high_open=True)
    rtol = _validate.positive("rtol", rtol)
    max_points = _validate.positive_int("max_points", max_points)
    batch = _batch_shape(curve, conversion)
    eps_max_all = np.broadcast_to(np.asarray(curve.epsilon(min_delta, conversion), dtype=np.float64), batch)
    extra = curve.epsilons if getattr(curve, "has_profile", False) else np.zeros(0)
    if extra.size:
        # a profile's certified delta jumps at its grid points: put the points just left of each
        # jump on the grid so that each step's requirement is resolved at its right end
        extra = np.concatenate([extra, np.nextafter(extra, -np.inf)])
    n = int(np.prod(batch)) if batch else 1
    fields = {k: np.empty(n) for k in ("mu", "mu_lower", "epsilon_max", "tail_delta", "binding_epsilon")}
    for i in range(n):
        index = np.unravel_index(i, batch) if batch else ()
        eps_max = float(eps_max_all[index])
        if not np.isfinite(eps_max):
            # the curve never reaches min_delta: check up to the cap and report its delta there
            eps_max = _EPS_CAP

        def delta_fn(eps, index=index):
            return _delta_at(curve, eps, conversion, batch)[(slice(None),) + tuple(index)]

        mu, mu_low, bind = _certify_scalar(delta_fn, eps_max, extra, rtol, max_points)
        fields["mu"][i], fields["mu_lower"][i], fields["binding_epsilon"][i] = mu, mu_low, bind
        fields["epsilon_max"][i] = eps_max
        fields["tail_delta"][i] = float(delta_fn(np.array([eps_max]))[0])
    shaped = {k: (v.reshape(batch) if batch else np.float64(v[0])) for k, v in fields.items()}
    dominates = np.asarray(shaped["tail_delta"]) == 0.0
    return GDPSummary(dominates=dominates if batch else bool(dominates), **shaped)


__all__ = ["GDPSummary", "curve_gdp", "curve_tradeoff", "default_epsilon_grid", "gdp_delta", "gdp_epsilon", "gdp_log_delta",
           "gdp_tradeoff"]
