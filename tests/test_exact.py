"""Exact linear-Gaussian chain laws and privacy vs recursion, chain rule, mpmath, closed forms."""
import math

import mpmath as mp
import numpy as np
import pytest

from dpjax.accountants.samplers import exact as ex
from dpjax.accountants.mechanisms import gaussian_divergence as gd


def _problem(d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(d, d))
    h = x @ x.T / d + np.eye(d)
    g = rng.normal(size=d)
    return h, g


@pytest.mark.parametrize("step_size", [0.05, 0.9])  # 0.9: some gamma h > 1 (oscillating, not contracting)
def test_closed_form_law_matches_recursion(step_size):
    h, g = _problem()
    steps = [0, 1, 7, 40]
    m, c = ex.ula_law(h, g, step_size, steps, mean0=[1.0, -2.0, 0.5], cov0=0.3 * np.eye(3), temperature=0.7)
    mr, cr = ex.propagate([1.0, -2.0, 0.5], 0.3 * np.eye(3), [ex.ula_step_map(h, g, step_size, 0.7)] * 40)
    for i, s in enumerate(steps):
        np.testing.assert_allclose(m[i], mr[s], rtol=1e-11, atol=1e-13 * np.abs(mr[s]).max())
        np.testing.assert_allclose(c[i], cr[s], rtol=1e-11, atol=1e-13 * np.abs(cr[s]).max())


def test_closed_form_small_step_many_steps_matches_mpmath():
    """gamma h = 1e-9 over 1e9 steps: (1 - a^t)/(1 - a) needs 1 - a = gamma h formed directly."""
    h, g, gamma, t = 2.0, 3.0, 5e-10, 10**9
    m, c = ex.ula_law([[h]], [g], gamma, [t], mean0=0.0, cov0=0.0)
    with mp.workdps(50):
        a = 1 - mp.mpf(gamma) * h
        mean = mp.mpf(gamma) * g * (1 - a**t) / (1 - a)
        var = 2 * mp.mpf(gamma) * (1 - a ** (2 * t)) / (1 - a**2)
    assert m[0, 0] == pytest.approx(float(mean), rel=1e-13)
    assert c[0, 0, 0] == pytest.approx(float(var), rel=1e-13)


def test_path_renyi_equals_sum_of_gaussian_mechanism_terms_shift_only():
    h, g = _problem(d=2)
    g2 = g + np.array([0.4, -0.1])
    gamma, T, orders = 0.1, 6, np.array([1.5, 2.0, 8.0])
    curve = ex.exact_path_curve(np.zeros(2), 0.0, [ex.ula_step_map(h, g, gamma)] * T, [ex.ula_step_map(h, g2, gamma)] * T, orders)
    np.testing.assert_allclose(curve.rdp, ex.ula_path_rdp_shift_only(g - g2, gamma, T, orders), rtol=1e-10)
    assert curve.provenance.mode == "exact" and curve.provenance.released == "path"


def test_path_kl_matches_chain_rule_when_hessians_differ():
    """KL of the stacked path = sum_k E_P |Sigma^{-1/2}((A - A') theta_{k-1} + b - b')|^2 / 2
    (chain rule, exact for KL); the expectation uses the law of theta_{k-1} under P."""
    h, g = _problem(d=2, seed=3)
    h2, g2 = h + np.diag([0.3, 0.0]), g + np.array([0.2, 0.1])
    gamma, T = 0.1, 5
    maps1 = [ex.ula_step_map(h, g, gamma)] * T
    maps2 = [ex.ula_step_map(h2, g2, gamma)] * T
    m, c = ex.propagate([0.5, 0.5], 0.2 * np.eye(2), maps1)
    kl = 0.0
    mdiff = maps1[0].slope - maps2[0].slope
    bdiff = maps1[0].offset - maps2[0].offset
    sig = maps1[0].noise_cov[0, 0]
    for k in range(T):
        mean_gap = mdiff @ m[k] + bdiff
        kl += (mean_gap @ mean_gap + np.trace(mdiff @ c[k] @ mdiff.T)) / (2 * sig)
    pm1, pc1 = ex.path_law([0.5, 0.5], 0.2 * np.eye(2), maps1, include_start=True)
    pm2, pc2 = ex.path_law([0.5, 0.5], 0.2 * np.eye(2), maps2, include_start=True)
    assert gd.gaussian_kl(pm1, pc1, pm2, pc2) == pytest.approx(kl, rel=1e-10)
    # not releasing the (random, shared-law) start can only lower the loss
    qm1, qc1 = ex.path_law([0.5, 0.5], 0.2 * np.eye(2), maps1)
    qm2, qc2 = ex.path_law([0.5, 0.5], 0.2 * np.eye(2), maps2)
    assert gd.gaussian_kl(qm1, qc1, qm2, qc2) < kl
    # with a point start the chain rule holds for the path without it
    m0, c0 = ex.propagate([0.5, 0.5], 0.0, maps1)
    kl0 = sum(((mdiff @ m0[k] + bdiff) @ (mdiff @ m0[k] + bdiff) + np.trace(mdiff @ c0[k] @ mdiff.T)) / (2 * sig) for k in range(T))
    rm1, rc1 = ex.path_law([0.5, 0.5], 0.0, maps1)
    rm2, rc2 = ex.path_law([0.5, 0.5], 0.0, maps2)
    assert gd.gaussian_kl(rm1, rc1, rm2, rc2) == pytest.approx(kl0, rel=1e-10)


def test_last_iterate_curve_and_epsilon_1d_match_recursion_laws():
    h1, g1, h2, g2, gamma = 2.0, 1.0, 2.5, 1.3, 0.05
    steps = [1, 10, 100]
    curve = ex.exact_last_iterate_curve([[h1]], [g1], [[h2]], [g2], gamma, steps, [2.0, 4.0])
    eps = ex.exact_last_iterate_epsilon([[h1]], [g1], [[h2]], [g2], gamma, steps, 1e-5)
    m1, c1 = ex.propagate(0.0, 0.0, [ex.ula_step_map([[h1]], [g1], gamma)] * 100)
    m2, c2 = ex.propagate(0.0, 0.0, [ex.ula_step_map([[h2]], [g2], gamma)] * 100)
    for i, s in enumerate(steps):
        for k, a in enumerate([2.0, 4.0]):
            ref = max(gd.gaussian_renyi(m1[s], c1[s], m2[s], c2[s], a), gd.gaussian_renyi(m2[s], c2[s], m1[s], c1[s], a))
            assert curve.rdp[i, k] == pytest.approx(ref, rel=1e-10)
        s1, s2 = math.sqrt(c1[s, 0, 0]), math.sqrt(c2[s, 0, 0])
        ref = max(gd.gaussian_epsilon(m1[s, 0], s1, m2[s, 0], s2, 1e-5), gd.gaussian_epsilon(m2[s, 0], s2, m1[s, 0], s1, 1e-5))
        assert eps[i] == pytest.approx(ref, rel=1e-9)
    assert curve.provenance.mode == "exact" and curve.provenance.released == "last iterate"
    # the exact RDP curve, converted, can only be looser than the exact tight eps
    assert np.all(curve.epsilon(1e-5) >= eps - 1e-12)


def test_equal_covariance_epsilon_is_analytic_gaussian_on_mahalanobis():
    h, g = _problem(d=2)
    g2 = g + np.array([0.3, 0.2])
    eps = ex.exact_last_iterate_epsilon(h, g, h, g2, 0.1, [50], 1e-4)
    m1, c1 = ex.ula_law(h, g, 0.1, [50])
    m2, _ = ex.ula_law(h, g2, 0.1, [50])
    mu = math.sqrt((m1[0] - m2[0]) @ np.linalg.solve(c1[0], m1[0] - m2[0]))
    with mp.workdps(30):  # invert Balle-Wang's delta(eps) in mpmath
        f = lambda e: mp.ncdf(mu / 2 - e / mu) - mp.e**e * mp.ncdf(-mu / 2 - e / mu) - mp.mpf("1e-4")
        ref = float(mp.findroot(f, eps[0]))
    assert eps[0] == pytest.approx(ref, rel=1e-9)


def test_adapter_from_quadratic_model():
    import jax.numpy as jnp

    from dpjax.data import replace_one
    from dpjax.models import quadratic_form
    from dpjax.models.linear_regression import bayesian_linear_regression, regression_dataset

    model = bayesian_linear_regression(noise_precision=1.0, prior_precision=0.5, dim=2)
    data = regression_dataset(jnp.array([[1.0, 0.2], [0.3, -1.0], [0.5, 0.5]]), jnp.array([1.0, 0.0, 2.0]))
    pair = replace_one(data, 1, {"x": np.array([0.1, 0.1]), "y": np.array(3.0)})
    curve = ex.ula_exact_curve_for_pair(model, pair, 0.05, [20], [2.0])
    h1, g1 = quadratic_form(model, pair.dataset)
    h2, g2 = quadratic_form(model, pair.neighbour)
    assert curve.rdp[0, 0] == pytest.approx(ex.exact_last_iterate_curve(h1, g1, h2, g2, 0.05, [20], [2.0]).rdp[0, 0], rel=1e-14)


def test_errors():
    h, g = _problem(d=2)
    with pytest.raises(ValueError, match="step_size=-0.1 violates"):
        ex.ula_law(h, g, -0.1, [1])
    with pytest.raises(ValueError, match="steps=.*integers >= 0"):
        ex.ula_law(h, g, 0.1, [-1])
    with pytest.raises(ValueError, match="expected \\(2, 2\\)"):
        ex.ula_law(np.eye(3), g, 0.1, [1])
    with pytest.raises(ValueError, match="needs equal covariances"):
        ex.exact_last_iterate_epsilon(h, g, h + np.eye(2), g, 0.1, [5], 1e-5)
    with pytest.raises(ValueError, match="degenerate"):
        ex.exact_last_iterate_curve(h, g, h, g, 0.1, [0, 1], [2.0])
    with pytest.raises(ValueError, match="same number of steps"):
        ex.exact_path_curve(0.0, 0.0, [ex.ula_step_map(h, g, 0.1)], [], [2.0])


def test_sgld_fixed_order_maps_reproduce_cyclic_closed_form():
    """Paper 000's cyclic SGLD as per-step quadratic maps (gamma = eta/2, H_k = alpha + n x_k^2 beta,
    g_k = n beta x_k y_k, T = 1) recursed by ``propagate`` vs the epoch-end closed forms."""
    from dpjax.accountants.samplers import cyclic_sgld as cs

    p = cs.CyclicSGLDProblem(n=12, alpha=0.5, beta=1.0, x_high=1.2, x_low=0.5, c=3.0, step_size=0.02)
    quad = lambda x: ([[p.alpha + p.n * x * x * p.beta]], [p.n * p.beta * x * (p.c * x)])
    epochs, r = 3, 5
    maps1 = ex.step_maps_from_quadratics(*zip(*[quad(p.x_high)] * p.n), p.eta / 2) * epochs
    order = [quad(p.x_low if k == r - 1 else p.x_high) for k in range(p.n)]
    maps2 = ex.step_maps_from_quadratics(*zip(*order), p.eta / 2) * epochs
    m1, c1 = ex.propagate(0.0, p.v0, maps1)
    m2, c2 = ex.propagate(0.0, p.v0, maps2)
    law = cs.epoch_law(p, epochs)
    assert m1[-1, 0] == pytest.approx(law.mean, rel=1e-12)
    assert c1[-1, 0, 0] == pytest.approx(law.variance, rel=1e-12)
    assert m2[-1, 0] - m1[-1, 0] == pytest.approx(float(law.offsets(p.n - r)), rel=1e-10)
    assert c2[-1, 0, 0] == pytest.approx(float(law.variances(p.n - r)), rel=1e-12)
    curve = ex.exact_last_iterate_curve_from_maps(0.0, p.v0, maps1, maps2, [p.n, epochs * p.n], [2.0])
    ref = max(gd.gaussian_renyi(m1[-1], c1[-1], m2[-1], c2[-1], 2.0), gd.gaussian_renyi(m2[-1], c2[-1], m1[-1], c1[-1], 2.0))
    assert curve.rdp[1, 0] == pytest.approx(ref, rel=1e-12)
    with pytest.raises(ValueError, match="record_steps=.*violates step <= number of maps"):
        ex.exact_last_iterate_curve_from_maps(0.0, p.v0, maps1, maps2, [1000], [2.0])


def test_profile_matches_hockey_stick_and_is_consistent_with_epsilon():
    h1, g1, h2, g2, gamma = 2.0, 1.0, 2.5, 1.3, 0.05
    eps_grid = np.linspace(0.0, 5.0, 501)
    prof = ex.exact_last_iterate_profile([[h1]], [g1], [[h2]], [g2], gamma, [10], eps_grid)
    eps = ex.exact_last_iterate_epsilon([[h1]], [g1], [[h2]], [g2], gamma, [10], 1e-3)[0]
    # the profile's grid answer rounds the exact eps up to the next grid point
    assert eps <= prof.epsilon(1e-3)[0] <= eps + 0.01 + 1e-12
    assert prof.provenance.mode == "exact"
