"""Rényi DP of the Gaussian mechanism and of the Poisson-subsampled Gaussian mechanism.

Add/remove adjacency, sensitivity 1, noise standard deviation ``noise_multiplier``.

Gaussian mechanism (Mironov 2017, Prop. 7): rdp(a) = a / (2 sigma^2).

Poisson-subsampled Gaussian (Mironov, Talwar, Zhang 2019, "Rényi Differential Privacy of the
Sampled Gaussian Mechanism", Sec. 3): with mu0 = N(0, sigma^2), r(z) = exp((2z - 1)/(2 sigma^2))
the likelihood ratio N(1, sigma^2)/mu0,

    A_a = E_{z ~ mu0} [(1 - q + q r(z))^a],        rdp(a) = log(A_a) / (a - 1).

Numerics (everything in log space, float64):

* Integer orders: A_a = E[exp(K(K-1)/(2 sigma^2))] with K ~ Binomial(a, q), so
  A_a - 1 = sum_{k>=2} P(K=k) expm1(k(k-1)/(2 sigma^2)), a sum of non-negative terms; we
  log-sum-exp those and return log1p(A_a - 1) / (a - 1). No cancellation, so tiny RDP values
  (q = 1e-4, sigma = 20) keep full relative precision.
* Fractional orders: with x(z) = q (r(z) - 1) (so E[x] = 0),
  A_a - 1 = E[f(x)], f(x) = (1 + x)^a - 1 - a x >= 0 (convexity), again a non-negative
  integrand. We integrate it by composite Gauss–Legendre on [-10 sigma, max(a, 2) + 10 sigma],
  the interval that holds the mass of every exponential tilt N(k, sigma^2), 0 <= k <= a, of
  mu0 that the binomial expansion of (1 + x)^a produces. Panels (12 nodes each) are at most
  3 w wide with w = min(sigma, pi sigma^2 / 2): sigma is the width of the Gaussian factor and
  pi sigma^2 the distance from the real axis of the branch points of (1 - q + q r(z))^a,
  which set the convergence rate of Gauss–Legendre. f is evaluated by its Taylor series
  where |x| and a|x| are small (where the closed form would cancel), in closed form
  elsewhere. Integer orders above 4096 also take this route (the binomial sum would need
  a terms). Verified against mpmath to ~1e-13 relative (tests/test_gaussian_rdp.py).
  Unlike the two-sided series of Mironov et al. (Sec. 3.3), which dp_accounting truncates
  and abandons (returning inf) in some regimes, this needs no convergence test.
* Small noise: the panels are sigma^2 wide, so below sigma ~ 0.03 a fractional order would
  need millions of nodes; past _MAX_PANELS panels such an order gets an upper bound instead
  (the chord of the convex log A_a between its integer neighbours, or Jensen's
  1 - q + q e^{a(a-1)/(2 sigma^2)}): bounded time and memory at any sigma > 0, still a bound.
"""
from __future__ import annotations

import functools
import math

import jax
import numpy as np
from scipy.special import gammaln as gammaln_np

from ..._x64 import float64
from ... import _validate
from .. import _xp

_GL_NODES_PER_PANEL = 12
_TAIL_SIGMAS = 10.0  # Gaussian tails beyond 10 sigma carry < e^-50 of the mass
_PANEL_WIDTH = 3.0  # in units of w = min(sigma, pi sigma^2 / 2)
_SERIES_TERMS = 12  # Taylor terms of f(x) beyond x^2, used for |x| <= 0.05 and a|x| <= 1
_SERIES_MAX_X = 0.05
# panel counts are rounded up to one of these (steps of ~1.5x: few compilations, <= 50% waste)
_PANEL_BUCKETS = np.unique(np.round(8 * 1.5 ** np.arange(40)).astype(np.int64))
_MAX_INTEGER_ORDER = 4096  # binomial sum up to here; quadrature above
_TERM_BUCKETS = (64, 1024, _MAX_INTEGER_ORDER)  # binomial terms per order of the integer route's programs
# at most this many (q, sigma, order) elements are computed in numpy, by the same functions
# (dpjax.accountants._xp), not by the jitted kernels: about 100 configurations at the default
# orders (a PLD bracket's RDP fallback, say; 64 took 0.11-0.13 s, sigma in [0.3, 3]), where
# compiling the kernels takes 1.5-2 s on a CPU
_NUMPY_MAX_ELEMENTS = 16384
_MAX_PANELS = 4096  # quadrature panels per element at most; beyond, an upper bound (_log_a_minus_1_upper)
_MAX_TERMS_PER_CHUNK = 1 << 13  # binomial terms per jitted call (cache-sized blocks)
_NODES_PER_CHUNK = 1 << 13  # quadrature nodes per jitted call


# --------------------------------------------------------------------------------------
# validation and broadcasting
# --------------------------------------------------------------------------------------
def _check_inputs(q, noise_multiplier, orders):
    q_np, s_np, a_np = (np.asarray(v, dtype=np.float64) for v in (q, noise_multiplier, orders))
    if np.any(~((q_np >= 0) & (q_np <= 1))):
        raise ValueError(f"q={q!r} violates 0 <= q <= 1 (q is the Poisson sampling rate)")
    if np.any(~((s_np > 0) & np.isfinite(s_np))):
        raise ValueError(f"noise_multiplier={noise_multiplier!r} violates noise_multiplier > 0 (finite)")
    if np.any(~(a_np > 1)):
        raise ValueError(f"orders={orders!r} violate 1 < order <= inf")
    return q_np, s_np, a_np


@float64
@_validate.arguments(noise_multiplier="numbers", orders="array")
def gaussian_rdp(noise_multiplier, orders) -> np.ndarray:
    """RDP of the Gaussian mechanism with sensitivity 1: a / (2 sigma^2) (Mironov 2017, Prop. 7);
    inf at order inf (no pure-DP guarantee).

    Broadcasts ``noise_multiplier`` against ``orders`` like NumPy; returns float64.
    """
    _, s_np, a_np = _check_inputs(0.0, noise_multiplier, orders)
    return a_np / (2.0 * s_np**2)


# --------------------------------------------------------------------------------------
# integer orders: non-negative binomial sum
# --------------------------------------------------------------------------------------
def _log_expm1(y):
    """log(exp(y) - 1) for y > 0, stable for tiny and huge y."""
    xp = _xp.namespace(y)
    return y + xp.log(-xp.expm1(-y))


@functools.lru_cache(maxsize=8)
def _log_factorial_table(n: int) -> np.ndarray:
    """log(k!) for k = 0..n (exact to float64 rounding)."""
    return gammaln_np(np.arange(n + 1, dtype=np.float64) + 1.0)


def _integer_sum(q, sigma, alpha, log_fact, num_terms):
    """log(A_a - 1) for flat arrays with integer a (as floats), 0 < q < 1, a - 1 <= num_terms.

    Terms k = 2 .. num_terms + 1 on a dense axis; those with k > a are masked out.
    ``log_fact[k] = log(k!)``. On numpy or JAX arrays (:func:`_log_a_minus_1_integer` jitted).
    """
    xp = _xp.namespace(q, sigma, alpha)
    k_int = xp.arange(2, num_terms + 2)
    a_int = alpha.astype(xp.int32)[:, None]
    valid = k_int[None, :] <= a_int
    k = k_int.astype(q.dtype)[None, :]
    log_binom = log_fact[a_int] - log_fact[k_int][None, :] - log_fact[xp.where(valid, a_int - k_int, 0)]
    qq, s, a = q[:, None], sigma[:, None], alpha[:, None]
    log_pmf = log_binom + k * xp.log(qq) + (a - k) * xp.log1p(-qq)
    terms = log_pmf + _log_expm1(k * (k - 1.0) / (2.0 * s**2))
    return _xp.logsumexp(xp.where(valid, terms, -xp.inf), axis=-1)


_log_a_minus_1_integer = jax.jit(_integer_sum, static_argnames=("num_terms",))


def _integer_orders(q, sigma, alpha) -> np.ndarray:
    """log(A_a - 1) for flat arrays with integer alpha and 0 < q < 1.

    Every a <= :data:`_MAX_INTEGER_ORDER` (the callers route larger orders to the quadrature).
    Elements are bucketed by the first of :data:`_TERM_BUCKETS` >= a - 1 (the number of
    terms), and the log-factorial table has one length for every bucket: the default orders
    (2..64, 128, ..., 1024) compile two programs, not one per power of two (seven), and a curve
    with new orders compiles nothing. A bucket's dense term axis is mostly masked for its
    smaller orders; at these sizes (at most 8,192 terms a call) that costs microseconds, a
    compilation a second.
    """
    ladder = np.asarray(_TERM_BUCKETS)
    log_fact = _log_factorial_table(int(ladder[-1]) + 1)  # log k! up to the largest bucket's last term k = num_terms + 1
    bucket = ladder[np.searchsorted(ladder, (alpha - 1).astype(np.int64))]
    return _run_bucketed(
        q, sigma, alpha, bucket, pad_order=2.0,
        chunk_for=lambda num_terms: _pow2_floor(max(16, _MAX_TERMS_PER_CHUNK // num_terms)),
        kernel=lambda qs, ss, aa, num_terms: _log_a_minus_1_integer(qs, ss, aa, log_fact, num_terms),
        numpy_kernel=lambda qs, ss, aa, num_terms: _integer_sum(qs, ss, aa, log_fact, num_terms),
    )


def _run_bucketed(q, sigma, alpha, bucket, *, pad_order, chunk_for, kernel, numpy_kernel=None) -> np.ndarray:
    """Apply ``kernel(q, sigma, alpha, b)`` to the elements of each bucket value b in chunks of
    ``chunk_for(b)`` (padded with q = 0.5, sigma = 1, alpha = ``pad_order``), so that each
    bucket compiles once whatever the number of elements (a chunk sized by the count would
    compile a program per power of two of counts). ``numpy_kernel``: the same function on
    numpy arrays, used instead (unpadded) for at most :data:`_NUMPY_MAX_ELEMENTS` elements."""
    out = np.empty(alpha.shape)
    small = numpy_kernel is not None and alpha.size <= _NUMPY_MAX_ELEMENTS
    for b in np.unique(bucket):
        idx = np.flatnonzero(bucket == b)
        chunk = chunk_for(int(b))
        for lo in range(0, idx.size, chunk):
            sel = idx[lo : lo + chunk]
            if small:
                with np.errstate(all="ignore"):  # logs of 0 and exps of -inf are expected (-inf and 0)
                    out[sel] = numpy_kernel(q[sel], sigma[sel], alpha[sel], int(b))
                continue
            pad = chunk - sel.size
            res = kernel(
                np.concatenate([q[sel], np.full(pad, 0.5)]),
                np.concatenate([sigma[sel], np.ones(pad)]),
                np.concatenate([alpha[sel], np.full(pad, pad_order)]),
                int(b),
            )
            out[sel] = np.asarray(res)[: sel.size]
    return out


# --------------------------------------------------------------------------------------
# fractional orders: Gauss–Legendre quadrature of a non-negative integrand
# --------------------------------------------------------------------------------------
_U_MAX = 650.0  # above this e^u (times q, a) could overflow: switch to logarithms


def _log_a_minus_1_integrand(u, q, alpha):
    """log f(x), f(x) = (1 + x)^a - 1 - a x >= 0, x = q expm1(u) > -1, for u = (2z - 1)/(2 s^2).

    Seven transcendental calls per node (this is the hot loop): every branch below shares them.
    """
    xp = _xp.namespace(u, q, alpha)
    big = u > _U_MAX
    e = xp.expm1(xp.minimum(u, _U_MAX))
    log_q = xp.log(q)
    # where e^u would overflow, x = q e^u is carried by its logarithm; it can still be small
    # (q < e^-600, e.g. q = 1e-290), so log1p terms are log-add-exps, not log x
    log_x_big = log_q + u
    x = xp.where(big, xp.exp(xp.minimum(log_x_big, 700.0)), q * e)
    log1p_x = xp.where(big, xp.logaddexp(0.0, log_x_big), xp.log1p(x))
    y = alpha * log1p_x
    log_1p_ax = xp.where(big, xp.logaddexp(0.0, xp.log(alpha) + log_x_big), xp.log1p(alpha * xp.maximum(x, 0.0)))
    # Closed form f = e^y - (1 + a x). For y > 0 (x > 0), factor out e^y:
    #   f = e^y * (-expm1(log(1 + a x) - y)); for y <= 0: f = expm1(y) - a x (moderate terms).
    positive = y > 0
    em = xp.expm1(xp.where(positive, xp.minimum(log_1p_ax - y, 0.0), y))
    closed = xp.where(positive, -em, em - alpha * x)
    # Taylor where the closed form would cancel (|x| small and a|x| <= 1):
    #   f = C(a,2) x^2 [1 + sum_{j>=3} ...], coefficient ratio (a - j) x / (j + 1); Horner.
    use_series = (xp.abs(x) <= _SERIES_MAX_X) & (alpha * xp.abs(x) <= 1.0)
    xs = xp.clip(x, -_SERIES_MAX_X, _SERIES_MAX_X)
    poly = xp.ones_like(xs)
    for j in range(2 + _SERIES_TERMS, 2, -1):
        poly = 1.0 + poly * ((alpha - (j - 1)) / j) * xs
    series = (alpha * (alpha - 1.0) / 2.0) * (xs * xs) * poly
    inner = xp.where(use_series, series, closed)
    return xp.log(inner) + xp.where(use_series | ~positive, 0.0, y)


def _quadrature(q, sigma, alpha, num_panels):
    """log(A_a - 1) for flat arrays (0 < q < 1) by composite Gauss–Legendre, on numpy or JAX
    arrays (:func:`_log_a_minus_1_fractional` jitted)."""
    xp = _xp.namespace(q, sigma, alpha)
    nodes, weights = np.polynomial.legendre.leggauss(_GL_NODES_PER_PANEL)
    t = ((np.arange(num_panels) + 0.5)[:, None] + 0.5 * nodes[None, :]).reshape(-1)  # in panel units
    log_wt = np.tile(np.log(weights), num_panels)
    lo = -_TAIL_SIGMAS * sigma
    hi = xp.maximum(alpha, 2.0) + _TAIL_SIGMAS * sigma
    panel = (hi - lo) / num_panels
    z = lo[:, None] + panel[:, None] * t[None, :]
    s = sigma[:, None]
    u = (2.0 * z - 1.0) / (2.0 * s**2)
    log_phi_w = (
        -0.5 * (z / s) ** 2
        + (xp.log(0.5 * panel) - xp.log(sigma) - 0.5 * math.log(2.0 * math.pi))[:, None]
        + log_wt[None, :]
    )
    return _xp.logsumexp(log_phi_w + _log_a_minus_1_integrand(u, q[:, None], alpha[:, None]), axis=-1)


_log_a_minus_1_fractional = jax.jit(_quadrature, static_argnames=("num_panels",))


def _panels_needed(sigma, alpha) -> np.ndarray:
    width_unit = np.minimum(sigma, 0.5 * np.pi * sigma**2)
    length = np.maximum(alpha, 2.0) + 2 * _TAIL_SIGMAS * sigma
    return np.ceil(length / (_PANEL_WIDTH * width_unit)).astype(np.int64)


def _fractional_orders(q, sigma, alpha) -> np.ndarray:
    """log(A_a - 1) for flat arrays; elements are bucketed by the panel count they need and
    processed in fixed-size chunks (a few hundred kB of nodes: cache-sized, one compilation
    per bucket). Elements that would need more than _MAX_PANELS panels (small noise: the
    integrand's features are sigma^2 wide) get the upper bound of :func:`_log_a_minus_1_upper`
    instead, so any sigma > 0 costs bounded time and memory."""
    need = _panels_needed(sigma, alpha)
    out = np.empty(alpha.shape)
    quad = need <= _MAX_PANELS
    if np.any(quad):
        bucket = _PANEL_BUCKETS[np.searchsorted(_PANEL_BUCKETS, need[quad])]
        out[quad] = _run_bucketed(
            q[quad], sigma[quad], alpha[quad], bucket, pad_order=1.5,
            chunk_for=lambda panels: _pow2_floor(max(16, _NODES_PER_CHUNK // (panels * _GL_NODES_PER_PANEL))),
            kernel=_log_a_minus_1_fractional, numpy_kernel=_quadrature,
        )
    if not np.all(quad):
        out[~quad] = _log_a_minus_1_upper(q[~quad], sigma[~quad], alpha[~quad])
    return out


def _log_a_minus_1_upper(q, sigma, alpha) -> np.ndarray:
    """An upper bound on log(A_a - 1) at orders the quadrature cannot afford (flat arrays,
    0 < q < 1), the smaller of two that always hold:

    * convexity: log A_a is convex in a (Hölder's inequality), so between the integers
      k = floor(a) and k + 1 it lies below the chord (k + 1 - a) log A_k + (a - k) log A_{k+1},
      both ends exact from the binomial sum (log A_1 = 0); for a + 1 <= _MAX_INTEGER_ORDER;
    * Jensen: (1 - q + q r)^a <= 1 - q + q r^a (x^a is convex for a >= 1), so
      A_a <= 1 - q + q E[r^a] = 1 - q + q exp(a (a - 1) / (2 sigma^2)) (Mironov 2017, Prop. 7).

    Both are upper bounds on the RDP, so the curve stays a valid bound (where used, it is no
    longer exact: sigma below about 0.03 at the default fractional orders)."""
    with np.errstate(over="ignore"):
        log_a = np.logaddexp(np.log1p(-q), np.log(q) + alpha * (alpha - 1.0) / (2.0 * sigma**2))
    low = np.floor(alpha)
    chord = low + 1 <= _MAX_INTEGER_ORDER
    if np.any(chord):
        k, qc, sc, ac = low[chord], q[chord], sigma[chord], alpha[chord]
        ends = np.concatenate([k, k + 1])
        at_int = np.zeros(ends.shape)  # log A_1 = 0
        above_one = ends >= 2
        qq, ss = np.concatenate([qc, qc]), np.concatenate([sc, sc])
        at_int[above_one] = np.logaddexp(0.0, _integer_orders(qq[above_one], ss[above_one], ends[above_one]))
        log_lo, log_hi = at_int[: k.size], at_int[k.size :]
        log_a[chord] = np.minimum(log_a[chord], (k + 1 - ac) * log_lo + (ac - k) * log_hi)
    # log(A - 1) = log A + log(1 - e^{-log A}); the bound is rounded up by a relative 1e-12
    with np.errstate(divide="ignore"):
        return np.where(log_a > 0, log_a + np.log(-np.expm1(-log_a)), -np.inf) + 1e-12 * np.abs(log_a)


def _pow2_floor(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


# --------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------
@float64
@_validate.arguments(q="numbers", noise_multiplier="numbers", orders="array")
def subsampled_gaussian_rdp(q, noise_multiplier, orders) -> np.ndarray:
    """RDP of one step of the Poisson-subsampled Gaussian mechanism (add/remove adjacency).

    Each record enters the batch independently with probability ``q``; the batch's sum of
    sensitivity-1 contributions gets N(0, noise_multiplier^2) noise (Mironov, Talwar, Zhang
    2019). ``q``, ``noise_multiplier`` and ``orders`` broadcast like NumPy; integer and
    fractional orders > 1 are both exact to ~1e-12 relative (see the module docstring), except
    fractional orders at small noise (sigma below ~0.03), which get a valid upper bound.
    ``q = 1`` gives the Gaussian RDP a / (2 sigma^2); ``q = 0`` gives 0; order inf gives inf
    (the max divergence of a Gaussian shift is infinite) for q > 0.

    The work is done by jitted JAX kernels on flattened, bucketed inputs; the arguments must
    be concrete (this wrapper decides array sizes from them), so call it outside ``jax.jit``.
    """
    q_np, s_np, a_np = _check_inputs(q, noise_multiplier, orders)
    shape = np.broadcast_shapes(q_np.shape, s_np.shape, a_np.shape)
    qf, sf, af = (np.broadcast_to(v, shape).reshape(-1) for v in (q_np, s_np, a_np))
    log_a_m1 = np.full(qf.shape, -np.inf)
    general = (qf > 0) & (qf < 1) & np.isfinite(af)
    is_int = general & (af == np.round(af)) & (af <= _MAX_INTEGER_ORDER)
    is_frac = general & ~is_int
    if np.any(is_int):
        log_a_m1[is_int] = _integer_orders(qf[is_int], sf[is_int], af[is_int])
    if np.any(is_frac):
        log_a_m1[is_frac] = _fractional_orders(qf[is_frac], sf[is_frac], af[is_frac])
    with np.errstate(over="ignore"):
        rdp = np.logaddexp(0.0, log_a_m1) / (af - 1.0)  # log(A) = log1p(A - 1)
    rdp = np.where(qf == 1, af / (2.0 * sf**2), rdp)
    # order inf (the max divergence): the likelihood ratio 1 - q + q r(z) is unbounded for q > 0
    rdp = np.where(np.isinf(af) & (qf > 0), np.inf, rdp)
    rdp = np.where(qf == 0, 0.0, rdp)
    return rdp.reshape(shape)
