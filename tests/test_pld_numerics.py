"""The PLD accountant's inner numerics (issue 13, item 5: the faster kernels) against independent values.

* the standard normal's log tails (erfc + asymptotic series) against mpmath at 40 digits;
* the Gaussian pairs' cell masses (mixture of the components' cells) against mpmath;
* the blocked Chernoff moment generating functions against an exact log-sum-exp: never below it
  (they feed tail bounds) and within their stated rounding;
* the composition by repeated squaring: its round-off bound R covers the actual error of a
  several-stage composition with odd step counts (direct convolutions as the reference);
* end to end at many steps (where the powers matter most): the exact Gaussian composition
  formula is inside the bracket, and dp_accounting agrees.
"""
from __future__ import annotations

import math

import jax
import mpmath
import numpy as np
import pytest

from dpjax.accountants import pld_curve, pld_epsilons
from dpjax.accountants.composition import pld as pld_module
from dpjax.accountants.composition import pld_pairs
from dpjax.accountants.mechanisms.gaussian_divergence import analytic_gaussian_epsilon

DELTA = 1e-5


def _x64(fn, *args):
    with jax.enable_x64(True):
        out = jax.jit(fn)(*args)
        return jax.tree_util.tree_map(np.asarray, out)


# --- normal tails -----------------------------------------------------------------------------
def test_normal_tails_match_mpmath():
    """log P(Z > a) and log P(Z <= a) on [-45, 45], through the switch to the series at |a| = 30.
    The smaller tail: relative error of its log <= 1e-14 (erfc is accurate to ~1e-15 relatively,
    and the series' first omitted term at |a| >= 30 is 5e-17; measured <= 6e-16). jax's
    log_ndtr, used before, is off by up to ~2e-11 beyond |a| = 20 (a 3-term series). The larger
    tail log1p(-e): absolute error <= 5e-14 (XLA's log1p is accurate to ~3e-14 relatively here,
    measured; the value is at most log 2 in size)."""
    mpmath.mp.dps = 40
    a = np.concatenate([np.linspace(-45.0, 45.0, 91), [-30.0001, -30.0, -29.9999, 29.9999, 30.0, 30.0001, 0.3, -0.7, 1e-9]])
    sf, cdf = _x64(pld_pairs._normal_tails, a)
    ref_sf = np.array([float(mpmath.log(mpmath.ncdf(-mpmath.mpf(x)))) for x in a])
    ref_cdf = np.array([float(mpmath.log(mpmath.ncdf(mpmath.mpf(x)))) for x in a])
    for got, ref in ((sf, ref_sf), (cdf, ref_cdf)):
        small = ref < math.log(0.5)
        assert np.all(np.abs(got - ref)[small] <= 1e-14 * np.abs(ref[small]))
        assert np.all(np.abs(got - ref)[~small] <= 5e-14)


# --- Gaussian cells ---------------------------------------------------------------------------
def _previous_cells(direction, l, sigma, q):
    """The implementation the cells replaced (for comparison): the mixture's and N(0, s^2)'s log
    tails by jax's log_ndtr at the points x(l), differenced cell by cell."""
    import jax.numpy as jnp
    from jax.scipy.special import log_ndtr

    def tails(a):
        small = log_ndtr(-jnp.abs(a))
        large = jnp.log1p(-jnp.exp(small))
        return jnp.where(a >= 0, small, large), jnp.where(a >= 0, large, small)

    x = pld_pairs._gaussian_remove_inverse(l if direction == "remove" else -l, sigma, q)
    sf0, cdf0 = tails(x / sigma)
    sf1, cdf1 = tails((x - 1.0) / sigma)
    mix_sf = jnp.logaddexp(jnp.log1p(-q) + sf0, jnp.log(q) + sf1)
    mix_cdf = jnp.logaddexp(jnp.log1p(-q) + cdf0, jnp.log(q) + cdf1)
    if direction == "remove":
        return pld_module._cell_log_masses(mix_sf, mix_cdf), pld_module._cell_log_masses(sf0, cdf0)
    return pld_module._cell_log_masses(cdf0, sf0), pld_module._cell_log_masses(mix_cdf, mix_sf)  # L_add > l <=> x < x(-l)


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize("sigma,q", [(0.9, 0.02), (0.4, 0.3), (0.25, 0.5)])
def test_gaussian_cells_match_mpmath(direction, sigma, q):
    """P- and Q-mass of the cells (l_k, l_{k+1}] of the loss against the normal CDF at 50 digits,
    at the points x(l) the code computes (the map l -> x is shared with the implementation the
    cells replaced and unchanged; near the loss's infimum log(1-q) its rounding moves a cell's
    mass by up to ~1e-11 relatively in either). Each cell's relative error <= 1e-13 (a few
    roundings of the tails and of the mixture's logaddexp, whose log1p XLA computes to ~3e-14
    relatively, measured); and no larger than the previous implementation's (mixture tails by
    jax's log_ndtr, differenced) + 5e-14, the rounding of those few operations (equal accuracy;
    in the far tail, beyond |a| = 20, the previous log_ndtr was off by up to 2e-11). Cells
    beyond a pair's range must be exactly empty (-inf)."""
    mpmath.mp.dps = 50
    # cells of width >= 0.02 in loss, from below the infimum log(1-q) (empty there) to the far
    # tail (narrower cells difference nearly equal tails: their relative error grows like
    # u / (relative width) in both implementations, e.g. ~1e-12 at a width of 2e-4)
    l = np.array([-0.8, -0.35, -0.3, -0.2, -0.1, -0.05, -0.02, 0.0, 0.02, 0.1, 0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 9.0])
    got = _x64(lambda x: pld_pairs.CELLS[f"gaussian_{direction}"](x, sigma, q), l)
    prev = _x64(lambda x: _previous_cells(direction, x, sigma, q), l)
    x = _x64(lambda v: pld_pairs._gaussian_remove_inverse(v, sigma, q), l if direction == "remove" else -l)
    s = mpmath.mpf(sigma)
    for k in range(l.size - 1):
        # remove: x increasing in l, the cell is (x_k, x_{k+1}]; add: L_add(x) = -L_remove(x), [x_{k+1}, x_k)
        xa, xb = (x[k], x[k + 1]) if direction == "remove" else (x[k + 1], x[k])
        xa, xb = (-mpmath.inf if v == -np.inf else mpmath.mpf(float(v)) for v in (xa, xb))
        c0 = mpmath.ncdf(xb / s) - mpmath.ncdf(xa / s)
        c1 = mpmath.ncdf((xb - 1) / s) - mpmath.ncdf((xa - 1) / s)
        mix = (1 - mpmath.mpf(q)) * c0 + q * c1
        for side, ref in enumerate((mix, c0) if direction == "remove" else (c0, mix)):
            if ref == 0:
                assert got[side][k] == -np.inf, (k, side)
                continue
            log_ref = float(mpmath.log(ref))
            err, err_prev = abs(math.expm1(got[side][k] - log_ref)), abs(math.expm1(prev[side][k] - log_ref))
            assert err <= 1e-13 and err <= err_prev + 5e-14, (k, side, err, err_prev)


# --- Chernoff MGFs ------------------------------------------------------------------------------
def test_chernoff_log_mgf_is_an_upper_bound_within_its_rounding():
    """A discretised remove-pair PMF (zeros, tiny far-tail masses, a padded end): each order's
    T log E[e^{+-lambda L}] is >= the exact value (log-sum-exp in numpy, relative error ~1e-15
    on these sums) and above it by at most the stated rounding slack (T times
    log1p(4 L u + 2^13 u) ~ 2e-12 T) plus 1e-12 for the reference's own rounding. Orders whose
    factors overflow are dropped (inf, sound); at least the lower half must be finite."""
    sigma, q, steps, h = 1.1, 0.05, 37.0, 1e-3
    lo, hi = pld_pairs.loss_range("gaussian_remove", sigma, q, 1e-18)
    k_lo, k_hi = int(np.floor(lo / h)), int(np.ceil(hi / h))
    with jax.enable_x64(True), np.errstate(all="ignore"):  # numpy arguments: numpy (its logs of 0 are -inf)
        pess, _, _, _ = pld_module._discretise_one("gaussian_remove", k_hi - k_lo + 1, h, sigma, q, k_lo)
        pmf = np.concatenate([np.asarray(pess), np.zeros(300)])  # a padded end, as in the batches
    lambdas, lm_pos, lm_neg = _x64(lambda p: pld_module.chernoff_log_mgf(p[None, :], np.array([k_lo]), np.array([steps]), h), pmf)
    losses = (k_lo + np.arange(pmf.size)) * h
    slack = math.log1p(4.0 * pmf.size * pld_module.UNIT_ROUNDOFF + 2.0 ** (pld_module.CHERNOFF_ORDERS + 3) * pld_module.UNIT_ROUNDOFF)
    pos = pmf > 0
    assert np.all(np.isfinite(lm_pos[: pld_module.CHERNOFF_ORDERS // 2])) and np.all(np.isfinite(lm_neg[: pld_module.CHERNOFF_ORDERS // 2]))
    for lam, got_p, got_n in zip(lambdas, lm_pos, lm_neg):
        for sign, got in ((1.0, got_p), (-1.0, got_n)):
            if not np.isfinite(got):
                continue
            e = sign * lam * losses[pos] + np.log(pmf[pos])
            exact = steps * (e.max() + math.log(np.sum(np.exp(e - e.max()))))
            assert got >= exact  # rounded up: never below
            assert got - exact <= steps * slack + 1e-12 * max(1.0, abs(exact))


# --- composition by repeated squaring ----------------------------------------------------------
@pytest.mark.parametrize("library", ["numpy", "jax"])
def test_roundoff_bound_covers_a_several_stage_composition_with_odd_powers(library):
    """Stages with step counts 13 and 6 (binary 1101, 110: every squaring and multiplication
    path; in numpy the stages whose bit is set are multiplied apart), against repeated direct
    convolutions (exact to a few ulps per entry, far below R): the l1 error of the FFT result
    is below the stated bound R, and R is small, in JAX and in numpy (small jobs)."""
    import jax.numpy as jnp

    xp = np if library == "numpy" else jnp
    rng = np.random.default_rng(3)
    a = rng.random(30) ** 3
    b = rng.random(45) ** 5
    a /= a.sum()
    b /= b.sum() * 1.0001  # a little mass at +inf: fin < 1
    exact = np.array([1.0])
    for _ in range(13):
        exact = np.convolve(exact, a)
    for _ in range(6):
        exact = np.convolve(exact, b)
    pmf = np.zeros((2, 45))
    pmf[0, :30], pmf[1] = a, b
    n = 1024
    with jax.enable_x64(True):
        out, inf, tau_up, tau_lo, roundoff = pld_module._compose_one(
            n, 1e-2, xp.asarray(pmf), xp.asarray([0.0, 1e-4 * b.sum()]), xp.zeros(2, np.int64), xp.asarray([13.0, 6.0]),
            xp.asarray([29, 44]), 0, xp.ones(1), xp.ones(1), xp.ones(1))
        assert isinstance(out, np.ndarray) == (library == "numpy")
        out = np.asarray(out)
    assert float(tau_up) == 0.0 and float(tau_lo) == 0.0  # the window holds the whole support
    err = np.sum(np.abs(out[: exact.size] - exact)) + np.sum(np.abs(out[exact.size:]))
    assert err <= float(roundoff)
    assert float(roundoff) < 1e-11


# --- end to end at many steps --------------------------------------------------------------------
def test_many_gaussian_steps_are_bracketed_by_the_exact_formula():
    """1500 steps of a plain Gaussian (sigma = 8): one Gaussian of sigma / sqrt(1500), eps exact
    to ~1e-12 (Balle & Wang 2018); the bracket must contain it, with a gap <= 2 T h (each side
    moves each loss by at most one grid step)."""
    steps, sigma = 1500, 8.0
    lo, hi = pld_curve(sigma, 1.0, steps).pld.epsilon_bracket(DELTA)
    exact = analytic_gaussian_epsilon(math.sqrt(steps) / sigma, DELTA)
    assert lo - 1e-9 <= exact <= hi + 1e-9
    assert hi - lo <= 2 * steps * 1e-4


def test_many_subsampled_steps_match_dp_accounting():
    """1000 and 1900 steps of the Poisson-subsampled Gaussian: dp_accounting's pessimistic
    connect-the-dots value at the same interval (tolerance 2e-4 as in tests/test_pld.py: the
    rigorous round-off term dpjax adds, <= 1e-8 in delta here, moves eps by at most ~1e-4), and
    dp_accounting's value lies inside dpjax's bracket up to that term."""
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    sigma, q, steps = np.array([1.1, 2.5]), np.array([0.01, 0.08]), np.array([1000, 1900])
    res = pld_epsilons(sigma, q, steps, DELTA)
    pess, opt = res.epsilon, res.optimistic_epsilon
    for i in range(sigma.size):
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        acc.compose(dpa.PoissonSampledDpEvent(float(q[i]), dpa.GaussianDpEvent(float(sigma[i]))), int(steps[i]))
        ref = acc.get_epsilon(DELTA)
        assert pess[i] == pytest.approx(ref, abs=2e-4)
        assert opt[i] - 2e-4 <= ref <= pess[i] + 2e-4


# --- the delta profile's recurrence in numpy ----------------------------------------------------
@pytest.mark.parametrize("n, step", [(1, 1e-4), (7, 0.3), (1000, 1e-4), (4097, 0.05), (3000, 2.0)])
def test_numpy_suffix_recurrence_matches_mpmath(n, step):
    """y_k = sum_{i >= k} c_i e^{-(i - k) h} by the doubling passes, against the same sums in
    50-digit arithmetic, on suffix-sum-shaped c (non-increasing, spanning 1e-300..1: the shape
    the profile feeds it), including steps where e^{-shift h} underflows (h = 2: beyond shift
    373). Relative error <= 1e-13 at every k (measured <= 6e-16; the bound is a tree of at most
    13 levels of positive sums)."""
    rng = np.random.default_rng(n)
    c = np.sort(np.exp(rng.uniform(math.log(1e-300), 0.0, size=n)))[::-1]
    got = pld_module._suffix_decayed_np(c[None, :], step)[0]
    with mpmath.workdps(50):
        r = mpmath.exp(-mpmath.mpf(step))
        want, acc = [0.0] * n, mpmath.mpf(0)
        for k in range(n - 1, -1, -1):  # the sequential recurrence, exactly
            acc = mpmath.mpf(float(c[k])) + r * acc
            want[k] = float(acc)
    want = np.array(want)
    assert np.all(np.abs(got - want) <= 1e-13 * want)
