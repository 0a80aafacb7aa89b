"""Gaussian-vs-mixture divergences against 30-digit mpmath quadrature and the full sum."""
import math

import mpmath as mp
import numpy as np
import pytest

from dpjax.accountants.samplers import cyclic_sgld as cs
from dpjax.accountants.mechanisms import gaussian_divergence as gd
from dpjax.accountants.mechanisms import mixture as mx

MIX = mx.equal_weight_mixture([0.3, -0.2, 1.1, 0.5, 0.0], [1.0, 0.8, 1.2, 0.9, 1.05])
SD = 1.0


def _mp_logs(x, mix, sd):
    lg = -((x / sd) ** 2) / 2 - mp.log(sd) - mp.log(2 * mp.pi) / 2
    terms = [mp.mpf(lw) - ((x - m) / s) ** 2 / 2 - mp.log(s) - mp.log(2 * mp.pi) / 2 for m, s, lw in zip(*mix)]
    lm = mp.log(mp.fsum(mp.exp(t) for t in terms))
    return lg, lm


def _mp_hockey(mix, sd, eps, direction):
    """int (p - e^eps q)_+ with breakpoints at roots found by mpmath bisection on a grid."""
    with mp.workdps(30):
        sign = 1 if direction == "gaussian||mixture" else -1

        def f(x):
            lg, lm = _mp_logs(x, mix, sd)
            return sign * (lg - lm) - eps

        grid = [mp.mpf(-30) + k * mp.mpf(60) / 240 for k in range(241)]
        vals = [f(x) for x in grid]
        roots = [mp.findroot(f, (grid[k], grid[k + 1]), solver="anderson") for k in range(240) if (vals[k] > 0) != (vals[k + 1] > 0)]

        def integrand(x):
            lg, lm = _mp_logs(x, mix, sd)
            lp, lq = (lg, lm) if sign > 0 else (lm, lg)
            return max(mp.exp(lp) - mp.exp(eps + lq), 0)

        pts = sorted([mp.mpf(-30), mp.mpf(30), mp.mpf(-5), mp.mpf(0), mp.mpf(5)] + roots)
        return float(mp.quad(integrand, pts))


@pytest.mark.parametrize("direction", ["gaussian||mixture", "mixture||gaussian"])
@pytest.mark.parametrize("eps", [0.0, 0.8])
def test_hockey_stick_matches_mpmath(direction, eps):
    ref = _mp_hockey(MIX, SD, eps, direction)
    assert mx.mixture_hockey_stick(SD, MIX, eps, direction) == pytest.approx(ref, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("direction", ["gaussian||mixture", "mixture||gaussian"])
def test_renyi_matches_mpmath(direction):
    a = 3.0
    with mp.workdps(30):
        def integrand(x):
            lg, lm = _mp_logs(x, MIX, SD)
            return mp.exp(a * lg + (1 - a) * lm) if direction == "gaussian||mixture" else mp.exp(a * lm + (1 - a) * lg)

        ref = float(mp.log(mp.quad(integrand, [-60, -20, -5, 0, 5, 20, 60])) / (a - 1))
    assert mx.mixture_renyi(SD, MIX, a, direction) == pytest.approx(ref, rel=1e-10)


def test_one_component_reduces_to_gaussian_closed_forms():
    mix = mx.equal_weight_mixture([0.7], [1.3])
    for eps in [0.0, 0.5]:
        assert mx.mixture_hockey_stick(1.0, mix, eps) == pytest.approx(gd.gaussian_hockey_stick(0.0, 1.0, 0.7, 1.3, eps), rel=1e-11)
        assert mx.mixture_hockey_stick(1.0, mix, eps, "mixture||gaussian") == pytest.approx(gd.gaussian_hockey_stick(0.7, 1.3, 0.0, 1.0, eps), rel=1e-11)
    assert mx.mixture_renyi(1.0, mix, 2.5) == pytest.approx(gd.gaussian_renyi(0.0, 1.0, 0.7, 1.69, 2.5), rel=1e-11)
    assert mx.mixture_renyi(1.0, mix, 2.5, "mixture||gaussian") == pytest.approx(gd.gaussian_renyi(0.7, 1.69, 0.0, 1.0, 2.5), rel=1e-11)
    eps = mx.mixture_epsilon(1.0, mix, 1e-3)
    ref = max(gd.gaussian_epsilon(0.0, 1.0, 0.7, 1.3, 1e-3), gd.gaussian_epsilon(0.7, 1.3, 0.0, 1.0, 1e-3))
    assert eps == pytest.approx(ref, rel=1e-10)


def test_renyi_infinite_when_tail_diverges():
    mix = mx.equal_weight_mixture([0.0, 0.1], [1.0, 2.0])
    # a/v_max + (1 - a)/v = 4/4 - 3 < 0: the mixture's wide tail makes M||G diverge
    assert mx.mixture_renyi(1.0, mix, 4.0, "mixture||gaussian") == math.inf


def test_epsilon_inverts_hockey_stick():
    eps = mx.mixture_epsilon(SD, MIX, 1e-3, "mixture||gaussian")
    assert _mp_hockey(MIX, SD, eps, "mixture||gaussian") == pytest.approx(1e-3, rel=1e-8)


def test_compressed_family_matches_full_sum():
    """A smooth family over n = 6000 indices whose means sweep ~10 sds (lambda^j-shaped like
    cyclic SGLD's, with varying sds): the compressed mixture vs the full sum."""
    n, sd = 6000, 1.0
    offsets_at = lambda j: 40.0 * (np.exp(-0.3 * np.asarray(j) / n) - 0.87)
    sds_at = lambda j: 1.0 + 0.2 * np.exp(-0.3 * np.asarray(j) / n)
    j = np.arange(n, dtype=np.float64)
    full = mx.equal_weight_mixture(offsets_at(j), sds_at(j))
    comp = mx.compress_smooth_family(offsets_at, sds_at, n, panels=40)
    assert comp.means.size < full.means.size / 5
    x = np.linspace(-60.0, 60.0, 121)
    np.testing.assert_allclose(mx.mixture_logpdf(x, comp), mx.mixture_logpdf(x, full), rtol=0, atol=1e-12)
    e_full = mx.mixture_epsilon(sd, full, 0.01)
    assert mx.mixture_epsilon(sd, comp, 0.01) == pytest.approx(e_full, rel=1e-11)
    assert mx.mixture_renyi(sd, comp, 3.0) == pytest.approx(mx.mixture_renyi(sd, full, 3.0), rel=1e-11)
    check = mx.full_sum_check(sd, comp, full, e_full, 0.01)
    assert check["max_relative_gap"] < 1e-11


def test_cyclic_mixture_compression_matches_full_sum():
    law = cs.epoch_law(cs.CyclicSGLDProblem(n=20000), 25)
    full, comp = law.mixture(compress=False), law.mixture()
    assert comp.means.size < full.means.size
    x = np.linspace(-10.0, 10.0, 41) * math.sqrt(law.variance) + full.means.mean()
    np.testing.assert_allclose(mx.mixture_logpdf(x, comp), mx.mixture_logpdf(x, full), rtol=0, atol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="sum to"):
        mx.mixture_hockey_stick(1.0, mx.GaussianMixture1D(np.zeros(2), np.ones(2), np.zeros(2)), 0.1)
    with pytest.raises(ValueError, match="direction='x'"):
        mx.mixture_hockey_stick(1.0, MIX, 0.1, "x")
    with pytest.raises(ValueError, match="order=0.5 violates 1 < order"):
        mx.mixture_renyi(1.0, MIX, 0.5)
    with pytest.raises(ValueError, match="sd=0.0 violates sd > 0"):
        mx.mixture_epsilon(0.0, MIX, 0.1)


def test_discrete_gauss_rule_is_exact_for_polynomials():
    t, w = mx.discrete_gauss_rule(1000, 8)
    j = np.arange(1000.0)
    assert np.all(w > 0) and w.sum() == pytest.approx(1000.0, rel=1e-14)
    for degree in range(16):
        assert np.sum(w * (t / 1000) ** degree) == pytest.approx(np.sum((j / 1000) ** degree), rel=1e-12)
