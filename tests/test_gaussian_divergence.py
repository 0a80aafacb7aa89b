"""Gaussian divergences against mpmath quadrature, 50-digit matrix algebra and closed forms."""
import math

import mpmath as mp
import numpy as np
import pytest

from dpjax.accountants.mechanisms import gaussian_divergence as gd


def _mp_renyi_1d(m1, s1, m2, s2, a, dps=40):
    """D_a by 40-digit quadrature of p^a q^(1-a) (independent of any closed form)."""
    with mp.workdps(dps):
        m1, s1, m2, s2, a = map(mp.mpf, (m1, s1, m2, s2, a))
        f = lambda x: mp.npdf(x, m1, s1) ** a * mp.npdf(x, m2, s2) ** (1 - a)
        lo = min(m1 - 40 * s1, m2 - 40 * s2)
        hi = max(m1 + 40 * s1, m2 + 40 * s2)
        pts = sorted({lo, hi, m1 - 6 * s1, m1, m1 + 6 * s1, m2 - 6 * s2, m2, m2 + 6 * s2})
        val = mp.quad(f, [p for p in pts if lo <= p <= hi])
        return float(mp.log(val) / (a - 1))


def _mp_hockey_1d(m1, s1, m2, s2, eps, dps=40):
    """delta(eps) = int (p - e^eps q)_+ by quadrature, breakpoints from mpmath.polyroots (coefficients highest
    degree first: the order every mpmath >= 1.3 reads)."""
    with mp.workdps(dps):
        m1, s1, m2, s2, eps = map(mp.mpf, (m1, s1, m2, s2, eps))
        # log p - log q - eps = A x^2 + B x + C
        A = 1 / (2 * s2**2) - 1 / (2 * s1**2)
        B = m1 / s1**2 - m2 / s2**2
        C = m2**2 / (2 * s2**2) - m1**2 / (2 * s1**2) + mp.log(s2 / s1) - eps
        roots = [mp.re(r) for r in (mp.polyroots([A, B, C]) if A != 0 else [-C / B]) if abs(mp.im(r)) < mp.mpf(10) ** -20]
        lo = min(m1 - 40 * s1, m2 - 40 * s2)
        hi = max(m1 + 40 * s1, m2 + 40 * s2)
        pts = sorted({lo, hi, m1 - 6 * s1, m1 + 6 * s1, m2 - 6 * s2, m2 + 6 * s2} | {r for r in roots if lo < r < hi})
        f = lambda x: max(mp.npdf(x, m1, s1) - mp.e**eps * mp.npdf(x, m2, s2), 0)
        return float(mp.quad(f, pts))


CASES_1D = [
    (0.0, 1.0, 1.0, 1.0),
    (0.3, 1.3, -0.2, 1.0),
    (2.0, 0.7, 0.0, 1.0),
    (-1.0, 1.0, 0.5, 1.1),
    (1e3, 2.0, 1e3 + 0.5, 2.5),
]


@pytest.mark.parametrize("m1,s1,m2,s2", CASES_1D)
@pytest.mark.parametrize("order", [0.5, 1.5, 2.0, 4.0])
def test_renyi_1d_matches_quadrature(m1, s1, m2, s2, order):
    s_star2 = order * s2**2 + (1 - order) * s1**2
    got = gd.gaussian_renyi(m1, s1**2, m2, s2**2, order)
    if s_star2 <= 0:
        assert got == math.inf
        return
    assert got == pytest.approx(_mp_renyi_1d(m1, s1, m2, s2, order), rel=1e-10, abs=1e-14)


def test_renyi_1d_matches_corrected_formula_not_the_printed_one():
    """NOTES 000 erratum: D = ln(s2/s1) + ln(s2^2/s*^2)/(2(a-1)) + a dm^2/(2 s*^2)."""
    m1, s1, m2, s2, a = 0.4, 1.2, 0.0, 1.0, 3.0
    s_star2 = a * s2**2 + (1 - a) * s1**2
    corrected = math.log(s2 / s1) + math.log(s2**2 / s_star2) / (2 * (a - 1)) + a * (m1 - m2) ** 2 / (2 * s_star2)
    got = gd.gaussian_renyi(m1, s1**2, m2, s2**2, a)
    assert got == pytest.approx(corrected, rel=1e-13)
    assert got == pytest.approx(_mp_renyi_1d(m1, s1, m2, s2, a), rel=1e-10)


def test_renyi_infinite_where_mixed_covariance_not_pd():
    # a s2^2 + (1-a) s1^2 = 3 - 2*2.25 < 0
    assert gd.gaussian_renyi(0.0, 2.25, 0.0, 1.0, 3.0) == math.inf
    out = gd.gaussian_renyi(0.0, 2.25, 0.0, 1.0, [1.5, 3.0])
    assert np.isfinite(out[0]) and out[1] == math.inf


def test_kl_matches_quadrature_and_order_one():
    m1, s1, m2, s2 = 0.3, 1.3, -0.2, 1.0
    with mp.workdps(40):
        f = lambda x: mp.npdf(x, m1, s1) * (mp.log(mp.npdf(x, m1, s1)) - mp.log(mp.npdf(x, m2, s2)))
        ref = float(mp.quad(f, mp.linspace(-60, 60, 61)))
    assert gd.gaussian_kl(m1, s1**2, m2, s2**2) == pytest.approx(ref, rel=1e-12)
    assert gd.gaussian_renyi(m1, s1**2, m2, s2**2, 1.0) == pytest.approx(ref, rel=1e-12)
    # Rényi is continuous at order 1
    assert gd.gaussian_renyi(m1, s1**2, m2, s2**2, 1.0 + 1e-6) == pytest.approx(ref, rel=1e-5)


def _mp_renyi_matrix(m1, c1, m2, c2, a, dps=50):
    """Textbook formula with explicit 50-digit inverses and determinants (independent route)."""
    with mp.workdps(dps):
        M1, M2 = mp.matrix(m1.tolist()), mp.matrix(m2.tolist())
        C1, C2 = mp.matrix(c1.tolist()), mp.matrix(c2.tolist())
        a = mp.mpf(a)
        S = a * C2 + (1 - a) * C1
        d = M1 - M2
        quad = (d.T * mp.inverse(S) * d)[0]
        logdet = mp.log(mp.det(S)) - (1 - a) * mp.log(mp.det(C1)) - a * mp.log(mp.det(C2))
        return float(a / 2 * quad - logdet / (2 * (a - 1)))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("order", [0.5, 2.0, 5.0])
def test_renyi_multivariate_matches_50_digit_formula(seed, order):
    rng = np.random.default_rng(seed)
    d = 4
    x = rng.normal(size=(d, d))
    c2 = x @ x.T + d * np.eye(d)
    y = rng.normal(size=(d, d)) * 0.3
    c1 = c2 + y @ y.T * 0.2
    m1, m2 = rng.normal(size=d), rng.normal(size=d)
    got = gd.gaussian_renyi(m1, c1, m2, c2, order)
    assert got == pytest.approx(_mp_renyi_matrix(m1, c1, m2, c2, order), rel=1e-10)


def test_renyi_nearly_equal_covariances_no_cancellation():
    """Covariances 1e-9 apart: the log-det ratio is O(1e-18); naive slogdet differences lose it."""
    c2 = np.array([[2.0, 0.3], [0.3, 1.0]])
    c1 = c2 * (1 + 1e-9)
    m = np.zeros(2)
    ref = _mp_renyi_matrix(m, c1, m, c2, 3.0, dps=60)
    got = gd.gaussian_renyi(m, c1, m, c2, 3.0)
    assert ref > 0
    assert got == pytest.approx(ref, rel=1e-6)


def test_renyi_diagonal_is_sum_of_univariate():
    m1, m2 = np.array([0.1, -0.5, 2.0]), np.array([0.0, 0.0, 1.0])
    v1, v2 = np.array([1.0, 2.0, 0.5]), np.array([1.2, 1.5, 0.6])
    total = sum(gd.gaussian_renyi(m1[i], v1[i], m2[i], v2[i], 2.5) for i in range(3))
    assert gd.gaussian_renyi(m1, v1, m2, v2, 2.5) == pytest.approx(total, rel=1e-13)


@pytest.mark.parametrize("m1,s1,m2,s2", CASES_1D)
@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0, 2.5])
def test_hockey_stick_matches_quadrature(m1, s1, m2, s2, eps):
    ref = _mp_hockey_1d(m1, s1, m2, s2, eps)
    got = gd.gaussian_hockey_stick(m1, s1, m2, s2, eps)
    assert got == pytest.approx(ref, rel=1e-9, abs=1e-15)


def test_hockey_stick_tiny_delta_in_log_space():
    # delta ~ 1e-40: only a log-space evaluation resolves it
    ref = _mp_hockey_1d(0.0, 1.0, 1.0, 0.9, 40.0, dps=80)
    got = math.exp(gd.gaussian_log_hockey_stick(0.0, 1.0, 1.0, 0.9, 40.0))
    assert 0 < ref < 1e-30
    assert got == pytest.approx(ref, rel=1e-8)


def test_equal_variance_reduces_to_balle_wang():
    with mp.workdps(50):
        _check_balle_wang()


def _check_balle_wang():
    for mu in [0.1, 1.0, 3.0]:
        for eps in [0.0, 0.5, 2.0]:
            bw = float(mp.ncdf(mu / 2 - eps / mu) - mp.e**eps * mp.ncdf(-mu / 2 - eps / mu))
            # rel 1e-10: at mu = 0.1, eps = 2 the two terms agree to 0.5% at Phi(-20), so
            # log_ndtr's ~1e-14 absolute error in logs is amplified ~200x
            assert gd.analytic_gaussian_delta(mu, eps) == pytest.approx(bw, rel=1e-10, abs=1e-300)
            assert gd.gaussian_hockey_stick(mu, 2.0, 0.0, 2.0, 2 * 0 + eps) == pytest.approx(
                float(mp.ncdf(mu / 4 - eps / (mu / 2)) - mp.e**eps * mp.ncdf(-mu / 4 - eps / (mu / 2))), rel=1e-12
            )


@pytest.mark.parametrize("m1,s1,m2,s2", CASES_1D[1:])
@pytest.mark.parametrize("delta", [1e-2, 1e-6])
def test_epsilon_inverts_hockey_stick(m1, s1, m2, s2, delta):
    eps = gd.gaussian_epsilon(m1, s1, m2, s2, delta)
    if eps == 0.0:
        assert gd.gaussian_hockey_stick(m1, s1, m2, s2, 0.0) <= delta
        return
    assert _mp_hockey_1d(m1, s1, m2, s2, eps) == pytest.approx(delta, rel=1e-8)


def test_analytic_epsilon_matches_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution  # noqa: F401  (import check)
    from dp_accounting import pld

    # dp_accounting's connect-the-dots PLD is an upper bound close to the tight value
    sigma = 2.0
    pl = pld.privacy_loss_distribution.from_gaussian_mechanism(sigma, sensitivity=1.0, value_discretization_interval=1e-4)
    eps_pld = pl.get_epsilon_for_delta(1e-5)
    eps = gd.analytic_gaussian_epsilon(0.5, 1e-5)
    assert eps <= eps_pld + 1e-12
    assert eps == pytest.approx(eps_pld, abs=2e-3)
    assert gd.analytic_gaussian_delta(0.5, eps) == pytest.approx(1e-5, rel=1e-9)


def test_errors_name_argument_and_rule():
    with pytest.raises(ValueError, match="order=.*0 < order"):
        gd.gaussian_renyi(0.0, 1.0, 0.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="positive definite"):
        gd.gaussian_renyi([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]], [0.0, 0.0], np.eye(2), 2.0)
    with pytest.raises(ValueError, match="dimensions 2 and 3"):
        gd.gaussian_kl(np.zeros(2), 1.0, np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="expected \\(2, 2\\)"):
        gd.gaussian_kl(np.zeros(2), np.eye(3), np.zeros(2), 1.0)
    with pytest.raises(ValueError, match="sd1=-1.0 violates sd1 > 0"):
        gd.gaussian_hockey_stick(0.0, -1.0, 0.0, 1.0, 0.5)
    with pytest.raises(ValueError, match="delta=1.5 violates 0 < delta < 1"):
        gd.gaussian_epsilon(0.0, 1.0, 1.0, 1.0, 1.5)
    with pytest.raises(ValueError, match="sensitivity_over_sigma=-1"):
        gd.analytic_gaussian_epsilon(-1.0, 1e-5)


@pytest.mark.parametrize("mu,delta", [(1000.0, 1e-300), (30.0, 5e-324), (2000.0, 1e-5)])
def test_analytic_gaussian_epsilon_far_beyond_eps_one_million(mu, delta):
    """eps ~ mu^2 / 2 + mu sqrt(2 log(1/delta)) exceeds 1e6 for mu ~ 1e3: the bracket must keep
    growing (it once stopped at 1e6 and returned inf). Reference: mpmath's root of the
    Balle-Wang delta(eps) at 60 digits."""
    from dpjax.accountants.mechanisms.gaussian_divergence import analytic_gaussian_epsilon

    with mp.workdps(60):
        m = mp.mpf(mu)
        d = lambda e: mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m)
        guess = m**2 / 2 + m * mp.sqrt(2 * mp.log(1 / mp.mpf(delta)))
        ref = mp.findroot(lambda e: mp.log(d(e)) - mp.log(mp.mpf(delta)), guess)
    assert analytic_gaussian_epsilon(mu, delta) == pytest.approx(float(ref), rel=1e-10)
