"""Exact divergences between a univariate Gaussian and a univariate Gaussian mixture.

This is the law-of-the-iterate comparison of paper 000 (NOTES 000): on D1 the cyclic-SGLD
iterate is one Gaussian, on D2 it is an equal-weight mixture over the position r of the odd
record. Conventions: everything is expressed *relative to the Gaussian's mean* (the caller
passes component offsets, never two large means to subtract), in float64 and log space.

- :func:`mixture_log_hockey_stick` / :func:`mixture_hockey_stick`: delta(eps) in either
  direction. The optimal set {log p - log m > eps} is found by locating the sign changes of
  the smooth log-likelihood ratio on a grid adapted to the components' scales and refining
  each root with Brent's method; then delta = P(S) - e^eps M(S) exactly, with P(S) and M(S)
  sums of normal CDF differences (no x-quadrature: a root error enters delta only at second
  order because the integrand vanishes there).
- :func:`mixture_epsilon`: tight eps(delta), the larger of the two directions by default.
- :func:`mixture_renyi`: D_a by composite Gauss–Legendre quadrature of p^a m^(1-a) in log
  space (logsumexp over components and nodes), on a range grown until the integrand is
  e^-80 below its peak; +inf where the tail makes the integral diverge.
- :func:`compress_smooth_family`: when the components are smooth functions of their index
  (paper 000: they depend on r only through lambda^(n-r)), replace the n-term sum by a
  composite discrete Gauss rule over the index (positive weights, exact for polynomials in
  the index on each block). The result is again a :class:`GaussianMixture1D`; tests check it
  against the full sum.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np
from scipy import optimize, special

from .gaussian_divergence import _log1mexp
from ... import _validate

__all__ = [
    "GaussianMixture1D",
    "equal_weight_mixture",
    "compress_smooth_family",
    "discrete_gauss_rule",
    "full_sum_check",
    "mixture_logpdf",
    "mixture_log_hockey_stick",
    "mixture_hockey_stick",
    "mixture_epsilon",
    "mixture_renyi",
]

_CHUNK = 1 << 22  # components x points per chunk (memory bound ~32 MB per temporary)
_LOG_2PI = math.log(2.0 * math.pi)


class GaussianMixture1D(NamedTuple):
    """sum_k exp(log_weights[k]) N(means[k], sds[k]^2); weights sum to one."""

    means: np.ndarray
    sds: np.ndarray
    log_weights: np.ndarray


def _check_mixture(mix: GaussianMixture1D) -> GaussianMixture1D:
    m = np.atleast_1d(np.asarray(mix.means, dtype=np.float64))
    s = np.atleast_1d(np.asarray(mix.sds, dtype=np.float64))
    lw = np.atleast_1d(np.asarray(mix.log_weights, dtype=np.float64))
    if not (m.shape == s.shape == lw.shape) or m.ndim != 1:
        raise ValueError(f"mixture means, sds and log_weights must be 1-D of one length; got {m.shape}, {s.shape}, {lw.shape}")
    if np.any(~(s > 0)) or np.any(~np.isfinite(s)) or np.any(~np.isfinite(m)):
        raise ValueError("mixture sds must be positive and finite, means finite")
    total = special.logsumexp(lw)
    if not abs(total) < 1e-9:
        raise ValueError(f"mixture weights sum to {math.exp(total)!r}; they must sum to 1")
    return GaussianMixture1D(m, s, lw)


@_validate.arguments(means="array", sds="array")
def equal_weight_mixture(means, sds) -> GaussianMixture1D:
    """The equal-weight mixture (1/n) sum_r N(means[r], sds[r]^2)."""
    m = np.atleast_1d(np.asarray(means, dtype=np.float64))
    s = np.asarray(sds, dtype=np.float64)
    if m.ndim != 1:
        raise ValueError(f"means has shape {m.shape}; means must be a scalar or a 1-D array")
    if s.ndim > 1 or (s.ndim == 1 and s.shape != m.shape):
        raise ValueError(f"sds has shape {s.shape}; sds must be a scalar or a 1-D array of the means' length {m.size}")
    s = np.broadcast_to(s, m.shape).copy()
    return _check_mixture(GaussianMixture1D(m, s, np.full(m.shape, -math.log(m.size))))


@_validate.arguments(size="int", nodes="int")
def discrete_gauss_rule(size: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss quadrature for the counting measure on {0, ..., size-1}: ``nodes`` real nodes and
    positive weights (summing to ``size``) with sum_{j<size} p(j) = sum_i w_i p(t_i) exactly for
    polynomials p of degree <= 2 nodes - 1 (Golub–Welsch on the discrete Chebyshev / Gram
    polynomials: monic recurrence alpha_k = (N-1)/2, beta_k = k^2 (N^2 - k^2) / (4 (4k^2 - 1)))."""
    N, K = int(size), int(nodes)
    if K >= N:
        return np.arange(N, dtype=np.float64), np.ones(N)
    k = np.arange(1, K, dtype=np.float64)
    beta = k * k * (N * N - k * k) / (4.0 * (4.0 * k * k - 1.0))
    jac = np.diag(np.full(K, 0.5 * (N - 1))) + np.diag(np.sqrt(beta), 1) + np.diag(np.sqrt(beta), -1)
    t, vec = np.linalg.eigh(jac)
    return t, N * vec[0] ** 2


def compress_smooth_family(
    offsets_at: Callable[[np.ndarray], np.ndarray],
    sds_at: Callable[[np.ndarray], np.ndarray],
    n: int,
    *,
    panels: int,
    nodes_per_panel: int = 16,
) -> GaussianMixture1D:
    """Equal-weight mixture over j = 0..n-1 of N(offsets_at(j), sds_at(j)^2), compressed.

    Requires the component parameters to be smooth functions of a real index j. The indices
    are cut into ``panels`` consecutive blocks; on each block the sum over its integers is
    replaced by the discrete Gauss rule of :func:`discrete_gauss_rule` (exact for polynomials of
    degree 2 nodes_per_panel - 1 in j, positive weights, no Euler–Maclaurin boundary
    remainder because the rule integrates the counting measure itself). The error is that of
    approximating a component's density, as a function of j, by such a polynomial on a block,
    so blocks must be short compared with the scale on which components move (callers size
    ``panels`` from the spread of the means in units of the smallest sd). Verify against the
    full sum (tests do).
    """
    if n <= panels * nodes_per_panel:
        j = np.arange(n, dtype=np.float64)
        return equal_weight_mixture(offsets_at(j), sds_at(j))
    edges = np.linspace(0, n, panels + 1).round().astype(np.int64)
    js, ws = [], []
    rules: dict = {}
    for lo, hi in zip(edges[:-1], edges[1:]):
        size = int(hi - lo)
        if size not in rules:
            rules[size] = discrete_gauss_rule(size, nodes_per_panel)
        t, w = rules[size]
        js.append(lo + t)
        ws.append(w)
    j_all = np.concatenate(js)
    log_w = np.log(np.concatenate(ws)) - math.log(n)
    log_w -= special.logsumexp(log_w)  # rounding only: the rule's weights sum to n exactly
    return _check_mixture(GaussianMixture1D(offsets_at(j_all), sds_at(j_all), log_w))


@_validate.arguments(x="numbers")
def mixture_logpdf(x, mix: GaussianMixture1D) -> np.ndarray:
    """log m(x) by logsumexp over components, chunked over points."""
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    m, s, lw = mix
    base = lw - np.log(s) - 0.5 * _LOG_2PI
    out = np.empty(x.size)
    step = max(1, _CHUNK // max(1, m.size))
    for i in range(0, x.size, step):
        z = (x[i : i + step, None] - m[None, :]) / s[None, :]
        t = base[None, :] - 0.5 * z * z
        top = np.max(t, axis=1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        out[i : i + step] = np.log(np.sum(np.exp(t - top), axis=1)) + top[:, 0]
    return out


def _gauss_logpdf(x, mean, sd):
    z = (np.asarray(x) - mean) / sd
    return -0.5 * z * z - math.log(sd) - 0.5 * _LOG_2PI


# ------------------------------------------------------------------------------------------
# hockey-stick
def _log_mass_intervals(intervals, means, sds, log_weights) -> float:
    """log sum_k w_k P(N(means_k, sds_k^2) in union of disjoint intervals)."""
    terms = []
    for lo, hi in intervals:
        a = (lo - means) / sds
        b = (hi - means) / sds
        # log(Phi(b) - Phi(a)) per component; flip to the upper tail where a > 0
        flip = a > 0
        aa = np.where(flip, -b, a)
        bb = np.where(flip, -a, b)
        lb = special.log_ndtr(bb)
        la = special.log_ndtr(aa)
        with np.errstate(divide="ignore", invalid="ignore"):
            diff = la - lb
            log1m = np.where(diff > -math.log(2.0), np.log(-np.expm1(diff)), np.log1p(-np.exp(diff)))
        terms.append(log_weights + lb + log1m)
    if not terms:
        return -np.inf
    return float(special.logsumexp(np.concatenate(terms)))


def _grid(mix: GaussianMixture1D, sd: float, margin: float = 40.0, per_sd: float = 4.0, max_points: int = 100_000):
    smin = min(sd, float(np.min(mix.sds)))
    smax = max(sd, float(np.max(mix.sds)))
    lo = min(0.0, float(np.min(mix.means))) - margin * smax
    hi = max(0.0, float(np.max(mix.means))) + margin * smax
    num = int(min(max_points, max(64, math.ceil((hi - lo) / smin * per_sd))))
    return np.linspace(lo, hi, num)


class _LossSetFinder:
    """Roots of L(x) - eps, L = log p - log m (direction "gm") or log m - log p ("mg")."""

    def __init__(self, sd: float, mix: GaussianMixture1D, direction: str):
        self.sd, self.mix, self.sign = sd, mix, (1.0 if direction == "gm" else -1.0)
        self.x = _grid(mix, sd)
        self.L = self.loss(self.x)

    def loss(self, x):
        return self.sign * (_gauss_logpdf(x, 0.0, self.sd) - mixture_logpdf(x, self.mix))

    def intervals(self, eps: float):
        above = self.L > eps
        x = self.x
        cuts = np.flatnonzero(above[1:] != above[:-1])
        f = lambda t: float(self.loss(np.array([t]))[0]) - eps
        roots = []
        for i in cuts:
            try:
                roots.append(optimize.brentq(f, x[i], x[i + 1], xtol=1e-15 * max(1.0, abs(x[i])), rtol=4 * np.finfo(float).eps))
            except ValueError:  # values at the bracket ends changed by rounding: keep the midpoint
                roots.append(0.5 * (x[i] + x[i + 1]))
        bounds = [-np.inf] + roots + [np.inf]
        inside = [bool(above[0])]
        for _ in roots:
            inside.append(not inside[-1])
        return [(bounds[k], bounds[k + 1]) for k in range(len(inside)) if inside[k]]


def _log_hockey(finder: _LossSetFinder, eps: float) -> float:
    intervals = finder.intervals(eps)
    if not intervals:
        return -np.inf
    sd, mix = finder.sd, finder.mix
    log_g = _log_mass_intervals(intervals, np.zeros(1), np.array([sd]), np.zeros(1))
    log_m = _log_mass_intervals(intervals, mix.means, mix.sds, mix.log_weights)
    log_p, log_q = (log_g, log_m) if finder.sign > 0 else (log_m, log_g)
    gap = eps + log_q - log_p
    if not gap < 0:
        return -np.inf
    return log_p + _log1mexp(gap)


def _check_direction(direction: str) -> str:
    if direction not in ("gaussian||mixture", "mixture||gaussian"):
        raise ValueError(f"direction={direction!r} is not one of ['gaussian||mixture', 'mixture||gaussian']")
    return "gm" if direction == "gaussian||mixture" else "mg"


def _check_sd(sd) -> float:
    v = float(sd)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"sd={sd!r} violates sd > 0 (finite)")
    return v


@_validate.arguments(sd="number", epsilon="numbers")
def mixture_log_hockey_stick(sd: float, mix: GaussianMixture1D, epsilon, direction: str = "gaussian||mixture"):
    """log delta(eps) between G = N(0, sd^2) and the mixture ``mix`` (offsets relative to G's mean).

    direction "gaussian||mixture": sup_S G(S) - e^eps M(S); "mixture||gaussian": the reverse.
    """
    finder = _LossSetFinder(_check_sd(sd), _check_mixture(mix), _check_direction(direction))
    eps = np.asarray(epsilon, dtype=np.float64)
    out = np.array([_log_hockey(finder, float(e)) for e in eps.ravel()]).reshape(eps.shape)
    return out if out.ndim else float(out)


@_validate.arguments(sd="number", epsilon="numbers")
def mixture_hockey_stick(sd: float, mix: GaussianMixture1D, epsilon, direction: str = "gaussian||mixture"):
    """delta(eps) between N(0, sd^2) and ``mix``; see :func:`mixture_log_hockey_stick`."""
    out = np.exp(mixture_log_hockey_stick(sd, mix, epsilon, direction))
    return out if np.ndim(out) else float(out)


@_validate.arguments(sd="number", delta="number")
def mixture_epsilon(sd: float, mix: GaussianMixture1D, delta: float, direction: str = "both") -> float:
    """Tight eps at ``delta`` between N(0, sd^2) and ``mix``; "both" = the larger direction."""
    from .gaussian_divergence import _check_delta, _epsilon_from_log_delta

    d = _check_delta(delta)
    sd = _check_sd(sd)
    mix = _check_mixture(mix)
    dirs = ["gm", "mg"] if direction == "both" else [_check_direction(direction)]
    best = 0.0
    for dr in dirs:
        finder = _LossSetFinder(sd, mix, dr)
        best = max(best, _epsilon_from_log_delta(lambda e: _log_hockey(finder, e), d))
    return best


# ------------------------------------------------------------------------------------------
# Rényi
@_validate.arguments(sd="number", order="number", nodes_per_panel="int")
def mixture_renyi(sd: float, mix: GaussianMixture1D, order: float, direction: str = "gaussian||mixture", nodes_per_panel: int = 12) -> float:
    """D_a between N(0, sd^2) and ``mix`` by log-space Gauss–Legendre quadrature in x.

    D_a(P||Q) = log(int p^a q^(1-a)) / (a - 1), a > 1. The integration range starts at the
    components' means +- 10 sd and grows until the log-integrand at both ends is 80 below its
    peak, then zooms onto the part within 80 of the peak; panels are sd_min/2 wide (the
    integrand is smooth on that scale), 12 nodes each.
    """
    sd = _check_sd(sd)
    mix = _check_mixture(mix)
    dr = _check_direction(direction)
    a = float(order)
    if not (a > 1 and math.isfinite(a)):
        raise ValueError(f"order={order!r} violates 1 < order < inf")
    vmax = float(np.max(mix.sds)) ** 2
    v = sd * sd
    # Tail coefficient of log(integrand) ~ -x^2/2 * (a/v_p + (1-a)/v_q) with the widest component.
    tail = a / v + (1 - a) / vmax if dr == "gm" else a / vmax + (1 - a) / v
    if not tail > 0:
        return math.inf

    def log_integrand(x):
        lg = _gauss_logpdf(x, 0.0, sd)
        lm = mixture_logpdf(x, mix)
        return a * lg + (1 - a) * lm if dr == "gm" else a * lm + (1 - a) * lg

    smin = min(sd, float(np.min(mix.sds)))
    smax = max(sd, float(np.max(mix.sds)))
    lo = min(0.0, float(np.min(mix.means))) - 10 * smax
    hi = max(0.0, float(np.max(mix.means))) + 10 * smax
    for _ in range(60):
        xs = np.linspace(lo, hi, 513)
        li = log_integrand(xs)
        peak = float(np.max(li))
        grow_lo, grow_hi = li[0] > peak - 80, li[-1] > peak - 80
        if not (grow_lo or grow_hi):
            break
        width = hi - lo
        lo -= width if grow_lo else 0.0
        hi += width if grow_hi else 0.0
    else:
        return math.inf
    # Zoom onto the cells where the log-integrand is within 80 of the peak (one cell of margin
    # on each side), repeatedly: the integrand is often far narrower than the searched range.
    for _ in range(20):
        xs = np.linspace(lo, hi, 513)
        li = log_integrand(xs)
        keep = np.flatnonzero(li > np.max(li) - 80.0)
        new_lo = xs[max(keep[0] - 1, 0)]
        new_hi = xs[min(keep[-1] + 1, xs.size - 1)]
        if new_hi - new_lo > 0.5 * (hi - lo):
            break
        lo, hi = new_lo, new_hi
    panels = int(min(200_000, max(32, math.ceil((hi - lo) / (0.5 * smin)))))
    xg, wg = np.polynomial.legendre.leggauss(nodes_per_panel)
    edges = np.linspace(lo, hi, panels + 1)
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    xq = (mid[:, None] + half[:, None] * xg[None, :]).ravel()
    lw = np.log((half[:, None] * wg[None, :]).ravel())
    log_int = float(special.logsumexp(lw + log_integrand(xq)))
    return max(0.0, log_int / (a - 1))


@_validate.arguments(sd="number", epsilon="number", delta="number")
def full_sum_check(sd: float, compressed: GaussianMixture1D, full: GaussianMixture1D, epsilon: float, delta: float) -> dict:
    """Recompute delta at ``epsilon`` with every component of ``full`` (the optimal sets are
    located with ``compressed``; a root error enters delta only at second order).

    Returns, per direction, delta from the compressed and from the full mixture, and the
    largest relative gap. Cost: (#components) x (#interval ends) normal CDFs.
    """
    sd = _check_sd(sd)
    compressed, full = _check_mixture(compressed), _check_mixture(full)
    out = {}
    gaps = []
    for name, dr in (("gaussian||mixture", "gm"), ("mixture||gaussian", "mg")):
        finder = _LossSetFinder(sd, compressed, dr)
        d_comp = math.exp(_log_hockey(finder, epsilon))
        finder_full = _LossSetFinder.__new__(_LossSetFinder)
        finder_full.sd, finder_full.mix, finder_full.sign = sd, full, finder.sign
        finder_full.intervals = lambda e, f=finder: f.intervals(e)
        d_full = math.exp(_log_hockey(finder_full, epsilon))
        out[name] = dict(delta_compressed=d_comp, delta_full_sum=d_full)
        if d_full > 0:
            gaps.append(abs(d_comp - d_full) / d_full)
    out["max_relative_gap"] = max(gaps) if gaps else 0.0
    out["target_delta"] = float(delta)
    return out
