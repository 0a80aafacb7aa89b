"""Dominating pairs (P, Q) of one mechanism step, as laws of the privacy loss L = log(dP/dQ).

A privacy-loss distribution (PLD) accountant needs, for one step, the law of L under P and
under Q. Every pair here is a pair of one-dimensional distributions whose loss L(x) is a
monotone function of the output x, so

    P(L <= l) = P(x <= x(l)),   Q(L <= l) = Q(x <= x(l)),   x(l) the inverse of L,

and all four tail functions follow from the noise CDF at x(l). Each ``*_tails`` function
returns ``(log P(L > l), log P(L <= l), log Q(L > l), log Q(L <= l))`` at an array of loss
values ``l`` (log-space, so far tails are neither 0 nor 1 by rounding). At an atom of L
(Laplace) the split between "<= l" and "> l" may go either way by rounding; the
discretisation in :mod:`dpjax.accountants.composition.pld` is sound for either (see there).

Units: ``sigma`` (Gaussian) and ``scale`` (Laplace) are the noise's standard deviation /
scale divided by the step's sensitivity under the adjacency in question (dpjax's noise
multiplier, :func:`dpjax.accountants.langevin_noise_multiplier`); records move the
mechanism's output by at most 1 in those units.

The pairs ("kinds") and what they dominate (q the sampling rate; q = 1 is no subsampling):

* ``gaussian_remove``: P = (1-q) N(0, s^2) + q N(1, s^2), Q = N(0, s^2);
  ``gaussian_add``: P = N(0, s^2), Q = (1-q) N(0, s^2) + q N(1, s^2).
  Poisson-subsampled Gaussian under add/remove adjacency: removing a record is dominated by
  the first pair, adding one by the second (Zhu, Dong & Wang 2022, "Optimal accounting of
  differential privacy via characteristic function", Theorem 11; Mironov, Talwar & Zhang 2019
  for the same pair in RDP). Since a neighbouring pair of data sets is fixed for the whole
  run, T steps are dominated by the T-fold composition of one of the two, and the accountant
  reports the larger of the two composed curves. At q = 1 both are N(1, s^2) vs N(0, s^2)
  (either adjacency, in its own units).
* ``gaussian_replace``: P = (1-q) N(0, s^2) + q N(1/2, s^2), Q = (1-q) N(0, s^2) + q N(-1/2, s^2).
  Poisson-subsampled Gaussian under replace-one adjacency (sensitivity = 2C for clip norm C,
  so a record's contribution is at most 1/2 in these units, and the replaced record moves it
  from +1/2 to -1/2): the pair dp_accounting uses for ``REPLACE_ONE`` with Poisson sampling
  (Doroshenko et al. 2022, "Connect the dots", supplementary material). It is realised by
  scalar contributions +C and -C, and it is the worst case when contributions are scalars;
  for vector contributions dpjax, like dp_accounting, assumes the antipodal pair is the worst
  case (tests/test_pld.py checks this numerically against pairs at other angles).
  Symmetric (P(x) = Q(-x)), so one direction suffices.
* ``laplace_remove`` / ``laplace_add``: as the Gaussian pairs with Laplace(0, b) noise
  (scalar queries; Zhu, Dong & Wang 2022, Theorem 11). At q = 1: Lap(1, b) vs Lap(0, b).

Sampling without replacement (a fixed batch of b out of n, rate q = b/n) under replace-one
adjacency is dominated by the tradeoff function C_q(f) = min{f_q, f_q^{-1}}** with
f_q = q f + (1-q) Id (Dong, Roth & Su 2022, "Gaussian differential privacy", Theorem 4.2;
in hockey-stick terms delta(eps) = max of the two directions of the ``*_remove`` pair at every
eps, including negative ones). :mod:`dpjax.accountants.composition.pld` builds that symmetrised PLD from
the ``*_remove`` pair. Under add/remove adjacency a fixed batch size is not defined (the data
set size changes), so that combination is rejected.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special as sps

from .. import _xp

KINDS = ("gaussian_remove", "gaussian_add", "gaussian_replace", "laplace_remove", "laplace_add")
_LOG2 = math.log(2.0)


def _log_mix(log_w0, a0, log_w1, a1):
    """log(w0 e^a0 + w1 e^a1) with log weights (a weight of 0 is log_w = -inf)."""
    xp = _xp.namespace(log_w0, a0, log_w1, a1)
    return xp.logaddexp(log_w0 + a0, log_w1 + a1)


def _log_expm1_plus(l, q):
    """log(expm1(l) + q) = log(e^l - (1 - q)): -inf where l <= log(1 - q)."""
    xp = _xp.namespace(l, q)
    v = xp.expm1(l) + q
    return xp.where(v > 0, xp.log(xp.where(v > 0, v, 1.0)), -xp.inf)


# --- Gaussian ---------------------------------------------------------------------------------
def _gaussian_remove_inverse(l, sigma, q):
    """x with log(1 - q + q exp((2x - 1) / (2 s^2))) = l (-inf below the loss's infimum log(1-q))."""
    xp = _xp.namespace(l, sigma, q)
    log_ratio = _log_expm1_plus(l, q) - xp.log(q)  # (2x - 1)/(2 s^2)
    return sigma**2 * log_ratio + 0.5


_SERIES_FROM = 30.0  # |a| from which the asymptotic series replaces erfc (erfc(30/sqrt 2) ~ 1e-197: still normal)
# (2n - 1)!! (-1)^n for n = 1..7: the series' last omitted term at |a| >= 30 is 2027025 / 30^16 ~ 5e-17
_SERIES_COEFFS = (-1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _normal_small_tail(t):
    """(log P(Z > t), P(Z > t)) for Z ~ N(0, 1) and t >= 0: e = erfc(t/sqrt 2) / 2 directly (one
    erfc and one log: XLA's erfc has relative error ~1e-15 out to t = 30, the same function
    jax's log_ndtr uses there), beyond t = 30 the log from the asymptotic series
    P(Z > t) = phi(t)/t (1 + sum_n (-1)^n (2n-1)!! / t^2n) (Abramowitz & Stegun 26.2.12; the
    linear value there is e, possibly 0 by underflow)."""
    xp = _xp.namespace(t)
    e = 0.5 * _xp.erfc(t * (1.0 / math.sqrt(2.0)))
    far = t >= _SERIES_FROM
    t_far = xp.where(far, t, _SERIES_FROM)
    inv2 = 1.0 / (t_far * t_far)
    series = 0.0
    for c in reversed(_SERIES_COEFFS):
        series = (series + c) * inv2
    ratio = (1.0 + series) / t_far  # P(Z > t) e^{t^2/2} sqrt(2 pi)
    log_e = xp.log(xp.where(far, ratio, e)) + xp.where(far, -0.5 * t_far * t_far - _LOG_SQRT_2PI, 0.0)
    return log_e, e


def _normal_tails(a):
    """(log P(Z > a), log P(Z <= a)) for Z ~ N(0, 1): the smaller tail by
    :func:`_normal_small_tail`, the larger as log1p(-smaller) (accurate since it is <= 1/2)."""
    xp = _xp.namespace(a)
    small, e = _normal_small_tail(xp.abs(a))
    large = xp.log1p(-e)
    return xp.where(a >= 0, small, large), xp.where(a >= 0, large, small)


def _normal_log_cells(a):
    """log P(a_k < Z <= a_{k+1}) for Z ~ N(0, 1) and increasing a (n+1,) -> (n,) (+-inf allowed):
    the difference of the two smaller tails in log space, log(e_hi) + log(-expm1(log e_lo -
    log e_hi)) (no cancellation against 1), and 1 - e(|a_k|) - e(a_{k+1}) for a cell that
    contains 0 (its mass is not small there)."""
    xp = _xp.namespace(a)
    log_e, e = _normal_small_tail(xp.abs(a))
    a_lo, a_hi = a[:-1], a[1:]
    upper = a_lo >= 0  # both ends >= 0: e(a_lo) - e(a_hi)
    straddle = (a_lo < 0) & (a_hi > 0)
    big = xp.where(upper, log_e[:-1], log_e[1:])  # lower cells: e(|a_hi|) - e(|a_lo|)
    small = xp.where(upper, log_e[1:], log_e[:-1])
    d = xp.where(xp.isfinite(small), xp.minimum(small - big, 0.0), -xp.inf)
    value = xp.where(straddle, 1.0 - e[:-1] - e[1:], -xp.expm1(xp.where(xp.isfinite(big), d, -1.0)))
    out = xp.log(xp.maximum(value, 0.0)) + xp.where(straddle, 0.0, big)
    return xp.where(straddle | xp.isfinite(big), out, -xp.inf)


def _gaussian_mixture_tails(x, sigma, q, shift):
    """(log P(X > x), log P(X <= x)) for X ~ (1-q) N(0, s^2) + q N(shift, s^2)."""
    xp = _xp.namespace(x, sigma, q)
    log_a, log_q = xp.log1p(-q), xp.log(q)
    sf0, cdf0 = _normal_tails(x / sigma)
    sf1, cdf1 = _normal_tails((x - shift) / sigma)
    return _log_mix(log_a, sf0, log_q, sf1), _log_mix(log_a, cdf0, log_q, cdf1)


def _gaussian_remove_both(x, sigma, q):
    """The mixture's and N(0, s^2)'s tails at x, sharing the N(0, s^2) component's log_ndtr."""
    xp = _xp.namespace(x, sigma, q)
    log_a, log_q = xp.log1p(-q), xp.log(q)
    sf0, cdf0 = _normal_tails(x / sigma)
    sf1, cdf1 = _normal_tails((x - 1.0) / sigma)
    return _log_mix(log_a, sf0, log_q, sf1), _log_mix(log_a, cdf0, log_q, cdf1), sf0, cdf0


def gaussian_remove_tails(l, sigma, q):
    x = _gaussian_remove_inverse(l, sigma, q)
    return _gaussian_remove_both(x, sigma, q)


def _gaussian_replace_inverse(l, sigma, q):
    """x with L(x) = l for the replace pair, from the quadratic in t = exp(x / (2 s^2)):
    q c t^2 + a (1 - e^l) t - e^l q c = 0, a = 1 - q, c = exp(-1 / (8 s^2)); in log-space
    and in the form without cancellation on each side of l = 0."""
    xp = _xp.namespace(l, sigma, q)
    log_a = xp.log1p(-q)
    log_2qc = _LOG2 + xp.log(q) - 1.0 / (8.0 * sigma**2)
    em = xp.expm1(l)
    log_aem = log_a + xp.log(xp.abs(em))  # log(a |e^l - 1|)
    log_root = 0.5 * xp.logaddexp(2.0 * log_aem, 2.0 * log_2qc + l)  # log sqrt(disc)
    # l >= 0: t = (a em + sqrt(disc)) / (2qc);  l < 0: t = 2qc e^l / (sqrt(disc) - a em)
    log_t = xp.where(l >= 0, xp.logaddexp(log_aem, log_root) - log_2qc, log_2qc + l - xp.logaddexp(log_aem, log_root))
    return 2.0 * sigma**2 * log_t


def _gaussian_component_cells(x, sigma, q):
    """log cell masses of N(0, s^2) and of the mixture (1-q) N(0, s^2) + q N(1, s^2) between
    increasing points x: the mixture's as the mixture of its components' cells (each from its
    own smaller tail: no cancellation where the components' tails differ in size)."""
    xp = _xp.namespace(x, sigma, q)
    c0 = _normal_log_cells(x / sigma)
    c1 = _normal_log_cells((x - 1.0) / sigma)
    return _log_mix(xp.log1p(-q), c0, xp.log(q), c1), c0


def gaussian_remove_cells(l, sigma, q):
    """(log P(l_k < L <= l_{k+1}), log Q(l_k < L <= l_{k+1})) of the remove pair for increasing
    l (n+1,) -> (n,) each: L increasing in x, so the cells are x in (x(l_k), x(l_{k+1})]."""
    return _gaussian_component_cells(_gaussian_remove_inverse(l, sigma, q), sigma, q)


def gaussian_replace_tails(l, sigma, q):
    x = _gaussian_replace_inverse(l, sigma, q)
    p_sf, p_cdf = _gaussian_mixture_tails(x, sigma, q, 0.5)
    q_sf, q_cdf = _gaussian_mixture_tails(x, sigma, q, -0.5)
    return p_sf, p_cdf, q_sf, q_cdf


# --- Laplace ----------------------------------------------------------------------------------
def _laplace_log_cdf(x, b):
    xp = _xp.namespace(x, b)
    return xp.where(x < 0, x / b - _LOG2, xp.log1p(-0.5 * xp.exp(-xp.abs(x) / b)))


def _laplace_tails(x, b, shift):
    return _laplace_log_cdf(shift - x, b), _laplace_log_cdf(x - shift, b)  # (sf, cdf)


def _laplace_remove_threshold(l, b, q):
    """x* with {L_remove <= l} = {x <= x*} (x* = +-inf outside the loss's range [-1/b, 1/b] in
    log-ratio units); L_remove(x) = log(1 - q + q exp((|x| - |x - 1|) / b))."""
    xp = _xp.namespace(l, b, q)
    g = b * (_log_expm1_plus(l, q) - xp.log(q))  # |x| - |x-1| <= g
    return xp.where(g >= 1.0, xp.inf, xp.where(g < -1.0, -xp.inf, 0.5 * (g + 1.0)))


def _laplace_mixture_tails(x, b, q):
    xp = _xp.namespace(x, b, q)
    log_a, log_q = xp.log1p(-q), xp.log(q)
    sf0, cdf0 = _laplace_tails(x, b, 0.0)
    sf1, cdf1 = _laplace_tails(x, b, 1.0)
    return _log_mix(log_a, sf0, log_q, sf1), _log_mix(log_a, cdf0, log_q, cdf1)


def laplace_remove_tails(l, b, q):
    x = _laplace_remove_threshold(l, b, q)
    p_sf, p_cdf = _laplace_mixture_tails(x, b, q)
    q_sf, q_cdf = _laplace_tails(x, b, 0.0)
    return p_sf, p_cdf, q_sf, q_cdf


# --- the add pairs: the remove pairs mirrored ---------------------------------------------------
def mirrored_tails(tails, l, sigma, q, mirrored):
    """``tails`` of the mirrored pair where ``mirrored`` (a bool, traced or not), else ``tails``
    itself. The add pair is the remove pair with P and Q swapped, so its loss is the remove
    pair's negated (L_add(x) = -L_remove(x)): P_add(L_add > l) = Q_remove(L_remove < -l), and
    so on for the other three tails. One compiled program serves both directions (the flag is
    traced); a select copies its operand, so each direction's numbers are those of its own
    formula. At an atom of L (Laplace) "< -l" becomes "<= -l": the split the module docstring
    allows either way."""
    xp = _xp.namespace(l, sigma, q, mirrored)
    p_sf, p_cdf, q_sf, q_cdf = tails(xp.where(mirrored, -l, l), sigma, q)
    return (xp.where(mirrored, q_cdf, p_sf), xp.where(mirrored, q_sf, p_cdf),
            xp.where(mirrored, p_cdf, q_sf), xp.where(mirrored, p_sf, q_cdf))


def mirrored_cells(cells, l, sigma, q, mirrored):
    """``cells`` of the mirrored pair where ``mirrored``, as :func:`mirrored_tails`: the cell
    (l_k, l_{k+1}] of the mirrored loss is the cell [-l_{k+1}, -l_k) of the original one, with
    P and Q swapped, so the cells are evaluated at -l reversed and read back reversed."""
    xp = _xp.namespace(l, sigma, q, mirrored)
    p_cell, q_cell = cells(xp.where(mirrored, -l[::-1], l), sigma, q)
    return xp.where(mirrored, q_cell[::-1], p_cell), xp.where(mirrored, p_cell[::-1], q_cell)


def gaussian_add_tails(l, sigma, q):
    return mirrored_tails(gaussian_remove_tails, l, sigma, q, True)


def gaussian_add_cells(l, sigma, q):
    """As :func:`gaussian_remove_cells` for the add pair (:func:`mirrored_cells`)."""
    return mirrored_cells(gaussian_remove_cells, l, sigma, q, True)


def laplace_add_tails(l, b, q):
    return mirrored_tails(laplace_remove_tails, l, b, q, True)


# each add pair is its remove pair mirrored: the discretisation compiles one program for both
MIRROR_OF = {"gaussian_add": "gaussian_remove", "laplace_add": "laplace_remove"}


def unmirrored(kind: str) -> tuple:
    """(the kind whose functions compute ``kind``, whether they are mirrored)."""
    return (MIRROR_OF[kind], True) if kind in MIRROR_OF else (kind, False)


# cell masses computed directly (cheaper and more accurate than differencing TAILS)
CELLS = {"gaussian_remove": gaussian_remove_cells, "gaussian_add": gaussian_add_cells}

TAILS = {
    "gaussian_remove": gaussian_remove_tails,
    "gaussian_add": gaussian_add_tails,
    "gaussian_replace": gaussian_replace_tails,
    "laplace_remove": laplace_remove_tails,
    "laplace_add": laplace_add_tails,
}


# --- loss ranges (host side, numpy): where to put one step's grid ------------------------------
def _np_gaussian_remove_loss(x, sigma, q):
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log1p(-q), np.log(q) + (2.0 * x - 1.0) / (2.0 * sigma**2))


def loss_range(kind: str, sigma, q, tail_mass):
    """(lowest, highest) loss of one step's grid: P puts at most ``tail_mass`` above the
    highest (that mass goes to +inf on the pessimistic side) and below the lowest (moved up
    to it). Arrays broadcast over configurations."""
    sigma = np.asarray(sigma, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    z = -sps.ndtri(np.asarray(tail_mass, dtype=np.float64) / 2.0)  # N(0,1) mass above z <= tail/2
    with np.errstate(divide="ignore"):
        floor = np.log1p(-q)  # infimum of L_remove (-inf at q = 1)
    if kind == "gaussian_remove":
        lo = np.maximum(_np_gaussian_remove_loss(-z * sigma, sigma, q), floor)
        hi = _np_gaussian_remove_loss(1.0 + z * sigma, sigma, q)
    elif kind == "gaussian_add":
        lo = -_np_gaussian_remove_loss(z * sigma, sigma, q)
        hi = np.minimum(-_np_gaussian_remove_loss(-z * sigma, sigma, q), -floor)
        hi = np.where(q < 1, -floor, hi)  # the supremum -log(1-q) is finite: cover it, no mass to +inf
    elif kind == "gaussian_replace":
        def loss(x):
            with np.errstate(divide="ignore"):
                a = np.log1p(-q)
                num = np.logaddexp(a, np.log(q) + (x - 0.25) / (2.0 * sigma**2))
                den = np.logaddexp(a, np.log(q) + (-x - 0.25) / (2.0 * sigma**2))
            return num - den

        hi = loss(0.5 + z * sigma)
        lo = -hi
    elif kind in ("laplace_remove", "laplace_add"):
        b = sigma
        lmin = np.logaddexp(floor, np.log(q) - 1.0 / b)
        lmax = np.logaddexp(floor, np.log(q) + 1.0 / b)
        lo, hi = (lmin, lmax) if kind == "laplace_remove" else (-lmax, -lmin)
    else:
        raise ValueError(f"kind={kind!r} is not one of {KINDS}")
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def moments_hint(kind: str, sigma, q):
    """A rough scale (standard deviation) of one step's loss under P, for sizing grids only
    (never used in a bound): from the second-order expansion of the loss."""
    sigma = np.asarray(sigma, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if kind.startswith("laplace"):
        return np.minimum(q * np.expm1(1.0 / sigma), 1.0 / sigma) + 1e-12
    # Gaussian mixture: L ~ q (e^{(2x-1)/2s^2} - 1) for small q; variance ~ q^2 (e^{1/s^2} - 1)
    return np.minimum(q * np.sqrt(np.expm1(np.minimum(1.0 / sigma**2, 700.0))), 1.0 / sigma) + 1e-12
