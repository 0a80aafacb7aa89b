"""The exact accountant's laws against the coupled chains themselves (issue 3: "the exact
accountant agrees with Monte Carlo from run_coupled on small instances").

Two-dimensional Bayesian linear regression under ULA, replace-one neighbour whose features
differ (so the two Hessians differ and the two chains' covariances too): the closed-form
means and covariances of dpjax.accountants.samplers.exact.ula_law are compared with the empirical
moments of 40,000 coupled pairs, each to 5 standard errors, and the exact tight eps of the
first coordinate with a 95% lower bound from the same chains.
"""
import numpy as np
import pytest

import dpjax
from dpjax import samplers
from dpjax.accountants.samplers import exact
from dpjax.accountants.mechanisms.gaussian_divergence import gaussian_epsilon
from dpjax.estimators import epsilon_lower_bound
from dpjax.models import bayesian_linear_regression, quadratic_form, regression_dataset

K, STEPS, GAMMA = 40_000, (3, 25), 0.01


@pytest.fixture(scope="module")
def setting():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(12, 2))
    y = x @ np.array([1.0, -0.5]) + 0.3 * rng.normal(size=12)
    data = regression_dataset(x, y)
    pair = dpjax.replace_one(data, 5, {"x": np.array([3.0, 2.0]), "y": np.array(-4.0)})
    model = bayesian_linear_regression(noise_precision=2.0, prior_precision=1.0, dim=2)
    res = dpjax.run_coupled(11, model, pair, samplers.ula(GAMMA), num_pairs=K, num_steps=max(STEPS), record_steps=list(STEPS), progress=False)
    laws = []
    for ds in (pair.dataset, pair.neighbour):
        h, g = quadratic_form(model, ds)
        laws.append(exact.ula_law(h, g, GAMMA, list(STEPS)))
    return res, laws


def _check_moments(samples, mean, cov):
    """Sample mean and covariance entries within 5 standard errors (fourth moments of a
    Gaussian: Var(X_i X_j) = S_ii S_jj + S_ij^2)."""
    n = samples.shape[0]
    m_hat = samples.mean(axis=0)
    assert np.all(np.abs(m_hat - mean) <= 5 * np.sqrt(np.diag(cov) / n)), (m_hat, mean)
    c_hat = np.cov(samples, rowvar=False)
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n)
    assert np.all(np.abs(c_hat - cov) <= 5 * se), (c_hat, cov)


def test_exact_ula_laws_match_the_coupled_chains(setting):
    res, ((m1, c1), (m2, c2)) = setting
    assert res.num_nonfinite == 0
    for r in range(len(STEPS)):
        _check_moments(res.positions[r], m1[r], c1[r])
        _check_moments(res.neighbour_positions[r], m2[r], c2[r])
    # the neighbour's covariance differs (its Hessian does): the check above can tell them apart
    assert not np.allclose(c1[-1], c2[-1], rtol=1e-3)


def test_exact_epsilon_is_above_the_chains_lower_bound(setting):
    res, ((m1, c1), (m2, c2)) = setting
    r = len(STEPS) - 1
    sd1, sd2 = np.sqrt(c1[r, 0, 0]), np.sqrt(c2[r, 0, 0])
    exact_eps = max(gaussian_epsilon(m1[r, 0], sd1, m2[r, 0], sd2, 1e-2), gaussian_epsilon(m2[r, 0], sd2, m1[r, 0], sd1, 1e-2))
    lb = epsilon_lower_bound(res.positions[r, :, 0], res.neighbour_positions[r, :, 0], 1e-2, seed=1)
    assert 0 < lb.epsilon <= exact_eps
