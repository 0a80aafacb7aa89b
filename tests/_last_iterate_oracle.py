"""Exact privacy of the released last iterate on linear losses: the reference the bounds are tested against.

Independent of dpjax's bound code (it imports nothing from dpjax). The instance: 1-D, per-record
losses f_j(theta) = -a_j theta (linear), a deterministic weight decay lam theta^2 / 2 in every
batch loss, the update theta' = theta - eta (grad F_B(theta) + Z), Z ~ N(0, sigma^2), F_B the
batch sum over the normaliser b plus the decay. Then theta' = c theta + eta (sum_B a_j) / b - eta Z
with c = 1 - eta lam, and from a common start the last iterate is, given the differing record's
inclusion indicators I_t,

    theta_T = (common Gaussian part) + u * S,   S = sum_t I_t c^(T-1-t),

u the record's contribution eta a / b. The common part is N(m, v) with v = eta^2 sigma^2
sum_{k<T} c^(2k) on both data sets, so (in units of eta sigma, after removing m)

    D: E_S N(u_D S, V),   D': E_S N(u_D' S, V),   V = sum_{k<T} c^(2k),

with u_D, u_D' the record's contribution on each side over eta sigma (add/remove: 0 and
Delta / (b sigma); replace-one: -Delta / (2 b sigma) and +Delta / (2 b sigma); any pair with
|u_D - u_D'| = Delta / (b sigma) is a valid instance of the bounds' difference-bounded
adjacency). Both sides mix over the same law of S, which is what the batching decides:

* Poisson (rate q): I_t iid Bernoulli(q). Short runs (T <= 16): all 2^T outcomes enumerated.
  Long runs: the characteristic function prod_k (1 - q + q e^(i w u c^k)) times the Gaussian's,
  inverted by FFT; the factors with small |w u c^k| are summed in closed form through the
  Bernoulli cumulant series (radius pi; truncated where the remainder is < 1e-17).
* shuffled (K = n / b batches, a fresh uniform order each epoch, E epochs of K steps): the
  record's batch index in each epoch is uniform and independent: all K^E orders enumerated.
* full / cyclic: S deterministic.

delta(eps) = max over the two directions of integral (p - e^eps q)_+, by the trapezoid rule on a
fine grid (the densities are smooth: a Gaussian of variance V >= 1 convolved with the law of S);
eps(delta) by bisection on it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special


@dataclass(frozen=True)
class Instance:
    """Last-iterate laws in units of eta sigma: D = E N(u_d S, V), D' = E N(u_dp S, V)."""

    values: np.ndarray  # support of S (enumerated) or None with a char-function route
    weights: np.ndarray
    u_d: float
    u_dp: float
    variance: float


def _variance(c: float, steps: int) -> float:
    # sum_{k<T} c^(2k) = (1 - c^(2T)) / (1 - c^2), formed without cancellation
    if c == 1.0:
        return float(steps)
    lc2 = 2.0 * math.log(c)
    return float(math.expm1(steps * lc2) / math.expm1(lc2))


def contributions(rho: float, adjacency: str) -> tuple[float, float]:
    """(u_D, u_D') for a one-use shift rho = Delta / (b sigma)."""
    if adjacency == "add-remove":
        return 0.0, rho
    if adjacency == "replace-one":
        return -rho / 2.0, rho / 2.0
    raise ValueError(adjacency)


def poisson_enumerated(c: float, q: float, steps: int, rho: float, adjacency: str = "add-remove") -> Instance:
    if steps > 16:
        raise ValueError("enumeration is for T <= 16")
    k = np.arange(steps)
    powers = c ** (steps - 1 - k)
    bits = (np.arange(2**steps)[:, None] >> k) & 1
    values = bits @ powers
    count = bits.sum(axis=1)
    weights = np.exp(count * math.log(q) + (steps - count) * math.log1p(-q))
    ud, udp = contributions(rho, adjacency)
    return Instance(values, weights, ud, udp, _variance(c, steps))


def shuffled_enumerated(c: float, batches: int, epochs: int, rho: float, adjacency: str = "add-remove") -> Instance:
    """K = ``batches`` steps per epoch, the record's batch uniform in each epoch (K^E orders)."""
    steps = batches * epochs
    grids = np.meshgrid(*[np.arange(batches)] * epochs, indexing="ij")
    t = np.stack([g.ravel() + e * batches for e, g in enumerate(grids)], axis=-1)
    values = np.sum(c ** (steps - 1 - t), axis=-1)
    weights = np.full(values.shape, float(batches) ** -epochs)
    ud, udp = contributions(rho, adjacency)
    return Instance(values, weights, ud, udp, _variance(c, steps))


def deterministic(c: float, use_steps, steps: int, rho: float, adjacency: str = "add-remove") -> Instance:
    t = np.asarray(use_steps, dtype=np.float64)
    ud, udp = contributions(rho, adjacency)
    return Instance(np.array([np.sum(c ** (steps - 1 - t))]), np.array([1.0]), ud, udp, _variance(c, steps))


def _grid_for(mean_lo, mean_hi, sd, h):
    lo = mean_lo - 40.0 * sd
    hi = mean_hi + 40.0 * sd
    n = int(math.ceil((hi - lo) / h)) + 1
    return lo + h * np.arange(n)


def _mixture_density(x, values, weights, u, variance):
    sd = math.sqrt(variance)
    out = np.zeros_like(x)
    for start in range(0, values.size, 2048):  # chunks: memory of one block
        v = values[start:start + 2048]
        w = weights[start:start + 2048]
        z = (x[:, None] - u * v[None, :]) / sd
        out += np.exp(-0.5 * z * z) @ w
    return out / (sd * math.sqrt(2 * math.pi))


def densities_enumerated(inst: Instance, h: float = 0.02):
    sd = math.sqrt(inst.variance)
    ends = [inst.u_d * inst.values.min(), inst.u_d * inst.values.max(), inst.u_dp * inst.values.min(),
            inst.u_dp * inst.values.max()]
    h = min(h, sd / 20.0)
    x = _grid_for(min(ends), max(ends), sd, h)
    return x, _mixture_density(x, inst.values, inst.weights, inst.u_d, inst.variance), \
        _mixture_density(x, inst.values, inst.weights, inst.u_dp, inst.variance)


# ---- long Poisson runs: the characteristic function ------------------------------------------
def _bernoulli_cumulants(q: float, order: int) -> np.ndarray:
    """kappa_1..kappa_order of Bernoulli(q): kappa_{j+1} = q (1 - q) d kappa_j / dq (polynomials in q)."""
    poly = np.polynomial.Polynomial([0.0, 1.0])  # kappa_1 = q
    qq = np.polynomial.Polynomial([0.0, 1.0, -1.0])  # q (1 - q)
    out = []
    for _ in range(order):
        out.append(poly(q))
        poly = qq * poly.deriv()
    return np.array(out)


def _log_cf_s(omega: np.ndarray, c: float, q: float, steps: int, theta0: float = 0.5, order: int = 40) -> np.ndarray:
    """log E exp(i omega S), S = sum_{k<T} I_k c^k, I_k iid Bernoulli(q).

    Terms with |omega| c^k <= theta0 are summed through the cumulant series
    log(1 - q + q e^{i th}) = sum_j kappa_j (i th)^j / j! (radius of convergence >= pi, so at
    theta0 = 0.5 the terms fall like (0.5/pi)^j: 40 orders leave < 1e-30), their power sums
    sum_k c^(jk) in closed form; the rest are multiplied out exactly."""
    w = np.abs(omega).max()
    if w == 0:
        return np.zeros_like(omega, dtype=np.complex128)
    # exact for k < k0 (|omega| c^k may exceed theta0 there), series from k0 for every omega
    if c == 1.0:
        k0 = steps if w > theta0 else 0
    else:
        k0 = 0 if w <= theta0 else min(steps, int(math.ceil(math.log(theta0 / w) / math.log(c))) + 1)
    out = np.zeros(omega.shape, dtype=np.complex128)
    for start in range(0, k0, 256):
        ks = np.arange(start, min(k0, start + 256))
        th = omega[:, None] * c ** ks[None, :]
        out += np.sum(np.log1p(q * np.expm1(1j * th)), axis=1)
    rest = steps - k0
    if rest > 0:
        kap = _bernoulli_cumulants(q, order)
        lc = math.log(c) if c < 1 else 0.0
        for j in range(1, order + 1):
            # sum_{k=k0}^{T-1} c^(jk)
            if c == 1.0:
                ps = float(rest)
            else:
                ps = math.exp(j * k0 * lc) * (-math.expm1(j * rest * lc)) / (-math.expm1(j * lc))
            out += kap[j - 1] * (1j * omega) ** j / math.factorial(j) * ps
    return out


def densities_poisson_fft(c: float, q: float, steps: int, rho: float, adjacency: str = "add-remove", h: float = None):
    """(x, p_D, p_D') on a uniform grid for a Poisson run of any length (FFT inversion)."""
    return _poisson_fft(c, q, steps, rho, adjacency, h)[:3]


def _poisson_fft(c, q, steps, rho, adjacency, h):
    ud, udp = contributions(rho, adjacency)
    variance = _variance(c, steps)
    sd = math.sqrt(variance)
    geo = float(steps) if c == 1.0 else -math.expm1(steps * math.log(c)) / (1 - c)
    geo2 = variance
    umax = max(abs(ud), abs(udp))
    mean_hi = umax * q * geo
    sd_tot = math.sqrt(variance + umax * umax * q * (1 - q) * geo2)
    if h is None:
        h = sd / 25.0
    lo = -mean_hi - 30.0 * sd_tot - 10 * umax
    hi = mean_hi + 30.0 * sd_tot + 10 * umax
    n = 1 << int(math.ceil(math.log2((hi - lo) / h)))
    x = lo + h * np.arange(n)
    omega = 2 * math.pi * np.fft.fftfreq(n, d=h)
    gauss = -0.5 * variance * omega**2
    live = gauss > -745.0
    dens = []
    cfs = []
    for u in (ud, udp):
        cf = np.zeros(n, dtype=np.complex128)
        log_cf = gauss[live] + (0.0 if u == 0 else _log_cf_s(omega[live] * u, c, q, steps))
        cf[live] = np.exp(log_cf)
        cfs.append(cf)
        # density on the grid: p(x_j) = (1/(n h)) sum_k cf(w_k) e^{-i w_k x_j}, with x_j = lo + j h
        vals = np.fft.fft(cf * np.exp(-1j * omega * lo)) / (n * h)
        dens.append(np.maximum(vals.real, 0.0))
    return x, dens[0], dens[1], omega, cfs


# ---- exact point evaluations (densities and distribution functions at any x) ---------------------
class _EnumeratedLaws:
    """p_D, p_D' and their CDFs in closed form: finite Gaussian mixtures."""

    def __init__(self, inst: Instance):
        self.inst = inst
        self.sd = math.sqrt(inst.variance)
        self.grid = densities_enumerated(inst)

    def _means(self, side):
        return (self.inst.u_d if side == 0 else self.inst.u_dp) * self.inst.values

    def pdf(self, side, x):
        z = (np.atleast_1d(x)[:, None] - self._means(side)[None, :]) / self.sd
        return np.exp(-0.5 * z * z) @ self.inst.weights / (self.sd * math.sqrt(2 * math.pi))

    def cdf(self, side, x):
        z = (np.atleast_1d(x)[:, None] - self._means(side)[None, :]) / self.sd
        return special.ndtr(z) @ self.inst.weights


class _FourierLaws:
    """p_D, p_D' from their characteristic functions on a periodic window [lo, lo + L): the
    density and its antiderivative from lo as trigonometric sums, exact up to the window's
    aliasing (the mass outside it, < 1e-100 here) at any x, not only on the grid."""

    def __init__(self, x, omega, cfs):
        self.grid_x = x
        self.lo = x[0]
        self.length = (x[1] - x[0]) * x.size
        live = [np.abs(cf) > 0 for cf in cfs]
        self.omega = [omega[m] for m in live]
        self.cf = [cf[m] for cf, m in zip(cfs, live)]

    def pdf(self, side, x):
        x = np.atleast_1d(x)
        w, cf = self.omega[side], self.cf[side]
        return (np.exp(-1j * x[:, None] * w[None, :]) @ cf).real / self.length

    def cdf(self, side, x):
        x = np.atleast_1d(x)
        w, cf = self.omega[side], self.cf[side]
        zero = w == 0
        wn, cn = w[~zero], cf[~zero]
        terms = (np.exp(-1j * x[:, None] * wn[None, :]) - np.exp(-1j * self.lo * wn[None, :])) / (-1j * wn[None, :])
        return ((x - self.lo) * cf[zero].real.sum() + (terms @ cn).real) / self.length


def laws_poisson_fft(c: float, q: float, steps: int, rho: float, adjacency: str = "add-remove", h: float = None):
    x, pd, pdp, omega, cfs = _poisson_fft(c, q, steps, rho, adjacency, h)
    laws = _FourierLaws(x, omega, cfs)
    laws.grid = (x, pd, pdp)
    return laws


def laws_enumerated(inst: Instance):
    return _EnumeratedLaws(inst)


# ---- delta(eps) and eps(delta) -----------------------------------------------------------------
def _crossings(laws, e, a_side, b_side):
    """Points where p_a - e p_b changes sign: located on the grid, refined by bisection on the
    exact point densities."""
    x, *dens = laws.grid
    # where both densities are below 1e-13 of their peak the sign is rounding noise (an FFT's
    # 1e-16 ripple): counted as non-positive, which drops at most 1e-13 x peak x the window's
    # width (< 1e-10 here: the tests ask delta >= 1e-6)
    top = max(dens[0].max(), dens[1].max())
    f = np.where(np.maximum(dens[a_side], dens[b_side]) > 1e-13 * top, dens[a_side] - e * dens[b_side], -1.0)
    idx = np.nonzero((f[:-1] > 0) != (f[1:] > 0))[0]
    roots = []
    for i in idx:
        lo, hi = x[i], x[i + 1]
        flo = float(laws.pdf(a_side, lo)[0] - e * laws.pdf(b_side, lo)[0]) > 0
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            fm = float(laws.pdf(a_side, mid)[0] - e * laws.pdf(b_side, mid)[0]) > 0
            if fm == flo:
                lo = mid
            else:
                hi = mid
        roots.append(0.5 * (lo + hi))
    return np.array(roots), f


def _hockey_stick(laws, eps, a_side, b_side):
    """integral (p_a - e^eps p_b)_+ = sum over the intervals where it is positive of
    (P_a - e^eps P_b)(interval), with the exact distribution functions."""
    e = math.exp(eps)
    roots, f = _crossings(laws, e, a_side, b_side)
    x = laws.grid[0]
    edges = np.concatenate([[x[0]], roots, [x[-1]]])
    fa = laws.cdf(a_side, edges)
    fb = laws.cdf(b_side, edges)
    # which intervals are positive: the sign (f > 0) on the grid's first cell, flipping at each root
    # (the roots are exactly the grid's changes of f > 0)
    positive = [bool(f[0] > 0) != bool(k % 2) for k in range(roots.size + 1)]
    total = 0.0
    for k in range(roots.size + 1):
        if positive[k]:
            # each positive interval contributes >= 0 (its integrand is >= 0): clipping removes the
            # distribution functions' rounding (1e-16, amplified by e^eps)
            total += max((fa[k + 1] - fa[k]) - e * (fb[k + 1] - fb[k]), 0.0)
    # the mass outside the window (below x[0] and above x[-1]) is < 1e-100 by construction
    return max(total, 0.0)


def delta_of_laws(laws, eps: float) -> float:
    """delta(eps) = max over the two directions of the hockey-stick divergence (exact up to the
    root finding's 2^-50 of a grid cell)."""
    return max(_hockey_stick(laws, eps, 1, 0), _hockey_stick(laws, eps, 0, 1))


def eps_of_laws(laws, delta: float, hi: float = 25.0) -> float:
    if delta_of_laws(laws, 0.0) <= delta:
        return 0.0
    lo = 0.0
    for _ in range(45):
        mid = 0.5 * (lo + hi)
        if delta_of_laws(laws, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


# ---- delta(eps) and eps(delta) -----------------------------------------------------------------
def delta_of_eps(x, p, q, eps: float) -> float:
    """max of the two directions of integral (p - e^eps q)_+ (trapezoid rule)."""
    h = x[1] - x[0]
    e = math.exp(eps)
    return float(max(_positive_part_integral(p - e * q, h), _positive_part_integral(q - e * p, h)))


def _positive_part_integral(f, h):
    """integral of max(f, 0) from samples of a smooth f: the trapezoid rule on each cell, with a
    cell where f changes sign cut at the linearly interpolated zero (no O(h) kink error)."""
    a, b = f[:-1], f[1:]
    both = (a > 0) & (b > 0)
    cross = (a > 0) != (b > 0)
    total = np.sum(0.5 * (a[both] + b[both])) * h
    pa, pb = a[cross], b[cross]
    pos = np.maximum(pa, pb)
    total += np.sum(0.5 * pos * pos / (np.abs(pa) + np.abs(pb))) * h
    return float(total)


def eps_of_delta(x, p, q, delta: float, hi: float = 60.0) -> float:
    if delta_of_eps(x, p, q, 0.0) <= delta:
        return 0.0
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if delta_of_eps(x, p, q, mid) > delta:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def exact_eps(inst_or_densities, delta: float) -> float:
    if isinstance(inst_or_densities, Instance):
        x, p, q = densities_enumerated(inst_or_densities)
    else:
        x, p, q = inst_or_densities
    return eps_of_delta(x, p, q, delta)


def poisson_exact_eps(c: float, q: float, steps: int, rho: float, delta: float, adjacency: str = "add-remove") -> float:
    """Exact eps(delta) of the last iterate of a Poisson run (enumeration for T <= 12, FFT beyond)."""
    if steps <= 12:
        return eps_of_laws(laws_enumerated(poisson_enumerated(c, q, steps, rho, adjacency)), delta)
    return eps_of_laws(laws_poisson_fft(c, q, steps, rho, adjacency), delta)


def gaussian_delta(mu: float, eps: float) -> float:
    """delta(eps) of N(0,1) vs N(mu,1) (closed form), for the oracle's self-check."""
    return float(special.ndtr(-eps / mu + mu / 2) - math.exp(eps) * special.ndtr(-eps / mu - mu / 2))
