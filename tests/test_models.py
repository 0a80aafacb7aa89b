"""Built-in models against independent formulas (scipy densities, closed-form posteriors,
autodiff of the potential), in float64."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from dpjax.data import add_remove, make_dataset
from dpjax.models import (
    bayesian_linear_regression,
    gaussian_mean,
    gaussian_mean_dataset,
    gaussian_mean_posterior,
    gaussian_posterior,
    linear_regression_posterior,
    logistic_regression,
    logistic_regression_dataset,
    quadratic_form,
    regression_dataset,
)


pytestmark = pytest.mark.usefixtures("x64")  # every test here computes in float64 (tests/conftest.py)


def lin_data(n=7, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = x @ rng.normal(size=d) + rng.normal(size=n)
    return regression_dataset(x, y)


def test_linear_regression_densities_match_scipy():
    beta, alpha, d = 2.5, 0.3, 3
    model = bayesian_linear_regression(beta, alpha, dim=d)
    data = lin_data(d=d)
    theta = np.array([0.4, -1.0, 2.0])
    ll = np.asarray(model.record_log_likelihoods(jnp.asarray(theta), data))
    x, y = np.asarray(data["x"]), np.asarray(data["y"])
    np.testing.assert_allclose(ll, stats.norm.logpdf(y, x @ theta, 1 / math.sqrt(beta)), rtol=1e-13)
    lp = float(model.log_prior(jnp.asarray(theta)))
    np.testing.assert_allclose(lp, stats.multivariate_normal.logpdf(theta, np.zeros(d), np.eye(d) / alpha), rtol=1e-13)
    # per-record gradient of -log-lik: -beta (y - x theta) x
    g = np.asarray(model.record_grads(jnp.asarray(theta), data))
    np.testing.assert_allclose(g, -beta * (y - x @ theta)[:, None] * x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "model_fn,data_fn",
    [
        (lambda: bayesian_linear_regression(1.7, 0.4, dim=3), lambda: lin_data(d=3)),
        (lambda: bayesian_linear_regression(1.0, 0.1, dim=1), lambda: lin_data(d=1)),
        (lambda: gaussian_mean(dim=2, prior_precision=0.5, inverse_temperature=3.0),
         lambda: gaussian_mean_dataset(np.random.default_rng(1).normal(size=(6, 2)))),
        (lambda: gaussian_mean(dim=1, prior_precision=0.0, inverse_temperature=0.2),
         lambda: gaussian_mean_dataset(np.random.default_rng(2).normal(size=5))),
    ],
)
def test_quadratic_form_matches_autodiff_of_potential(model_fn, data_fn):
    model, data = model_fn(), data_fn()
    potential = jax.jit(model.potential)
    hessian = jax.jit(jax.hessian(model.potential))
    gradient = jax.jit(model.potential_grad)
    for ds in (data, add_remove(data, 1).neighbour):  # the mask is honoured
        h, g = quadratic_form(model, ds)
        zero = jnp.zeros(model.dim)
        np.testing.assert_allclose(h, np.asarray(hessian(zero, ds)), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, -np.asarray(gradient(zero, ds)), rtol=1e-12, atol=1e-12)
        # the quadratic is exact: U(theta) - U(0) = theta^T H theta / 2 - g^T theta anywhere
        rng = np.random.default_rng(3)
        for _ in range(3):
            theta = rng.normal(size=model.dim) * 3
            du = float(potential(jnp.asarray(theta), ds) - potential(zero, ds))
            np.testing.assert_allclose(du, 0.5 * theta @ h @ theta - g @ theta, rtol=1e-11, atol=1e-11)


def test_linear_regression_posterior_lemma_4_1_one_dimension():
    # paper 000 Lemma 4.1: precision alpha + beta sum x^2, mean beta sum xy / precision
    alpha, beta = 0.1, 1.0
    rng = np.random.default_rng(4)
    x, y = rng.uniform(0.9, 1.8, size=9), rng.normal(size=9)
    data = regression_dataset(x, y)
    model = bayesian_linear_regression(beta, alpha)
    prec = alpha + beta * np.sum(x**2)
    mean, cov = gaussian_posterior(model, data)
    np.testing.assert_allclose(mean, [beta * np.sum(x * y) / prec], rtol=1e-13)
    np.testing.assert_allclose(cov, [[1 / prec]], rtol=1e-13)
    m2, c2 = linear_regression_posterior(beta, alpha, data)
    np.testing.assert_allclose(m2, mean, rtol=1e-13)
    np.testing.assert_allclose(c2, cov, rtol=1e-13)


def test_linear_regression_posterior_multivariate_and_masked():
    model = bayesian_linear_regression(2.0, 0.5, dim=3)
    data = lin_data(n=10, d=3)
    for ds in (data, add_remove(data, 4).neighbour):
        mean, cov = gaussian_posterior(model, ds)
        m2, c2 = linear_regression_posterior(2.0, 0.5, ds)
        np.testing.assert_allclose(mean, m2, rtol=1e-12)
        np.testing.assert_allclose(cov, c2, rtol=1e-12)
        # the mode of the potential is the posterior mean: its gradient vanishes there
        np.testing.assert_allclose(np.asarray(model.potential_grad(jnp.asarray(mean), ds)), 0.0, atol=1e-10)


def test_gaussian_mean_posterior_paper_002_appendix_b():
    beta, lam = 0.7, 0.25
    x = np.random.default_rng(5).normal(size=(8, 2))
    data = gaussian_mean_dataset(x, mask=[1, 1, 1, 0, 1, 1, 1, 1])
    model = gaussian_mean(dim=2, prior_precision=lam, inverse_temperature=beta)
    assert model.likelihood_weight == beta
    n = 7
    expected_mean = beta * (x.sum(axis=0) - x[3]) / (n * beta + lam)
    mean, cov = gaussian_posterior(model, data)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-13)
    np.testing.assert_allclose(cov, np.eye(2) / (n * beta + lam), rtol=1e-13)
    m2, c2 = gaussian_mean_posterior(beta, lam, data)
    np.testing.assert_allclose(m2, expected_mean, rtol=1e-13)
    np.testing.assert_allclose(c2, cov, rtol=1e-13)


def test_gaussian_mean_flat_prior_is_allowed_but_improper_empty_posterior_is_not():
    model = gaussian_mean(dim=1, prior_precision=0.0, inverse_temperature=1.0)
    assert float(model.log_prior(jnp.array([123.0]))) == 0.0
    empty = gaussian_mean_dataset(np.zeros(2), mask=[0, 0])
    with pytest.raises(ValueError, match="positive definite"):
        gaussian_posterior(model, empty)
    with pytest.raises(ValueError, match="improper"):
        gaussian_mean_posterior(1.0, 0.0, empty)


def test_logistic_likelihood_matches_naive_formula_and_is_stable():
    model = logistic_regression(prior_precision=2.0, dim=2)
    rng = np.random.default_rng(6)
    x = rng.normal(size=(10, 2))
    y = (rng.uniform(size=10) < 0.5).astype(float)
    data = logistic_regression_dataset(x, y)
    theta = np.array([0.7, -0.3])
    z = x @ theta
    p = 1 / (1 + np.exp(-z))
    expected = y * np.log(p) + (1 - y) * np.log1p(-p)
    np.testing.assert_allclose(np.asarray(model.record_log_likelihoods(jnp.asarray(theta), data)), expected, rtol=1e-12)
    np.testing.assert_allclose(
        float(model.log_prior(jnp.asarray(theta))),
        stats.multivariate_normal.logpdf(theta, np.zeros(2), np.eye(2) / 2.0), rtol=1e-13)
    # per-record gradient of -log-lik: (sigmoid(z) - y) x
    np.testing.assert_allclose(np.asarray(model.record_grads(jnp.asarray(theta), data)), (p - y)[:, None] * x, rtol=1e-11)
    # huge margins: naive log(sigmoid) gives -inf, log_sigmoid gives -|z| exactly
    far = logistic_regression_dataset(np.array([[1000.0, 0.0], [-1000.0, 0.0]]), np.array([0.0, 1.0]))
    ll = np.asarray(model.record_log_likelihoods(jnp.array([1.0, 0.0]), far))
    np.testing.assert_allclose(ll, [-1000.0, -1000.0], rtol=1e-15)
    grads = np.asarray(model.record_grads(jnp.array([1.0, 0.0]), far))
    assert np.all(np.isfinite(grads))


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: bayesian_linear_regression(0.0, 1.0), r"noise_precision=0 violates noise_precision > 0"),
        (lambda: bayesian_linear_regression(1.0, -1.0), r"prior_precision=-1 violates prior_precision > 0"),
        (lambda: bayesian_linear_regression(1.0, 1.0, dim=0), r"dim=0 violates dim a positive integer"),
        (lambda: bayesian_linear_regression(float("nan"), 1.0), r"noise_precision=nan violates"),
        (lambda: logistic_regression(0.0, 2), r"prior_precision=0 violates prior_precision > 0"),
        (lambda: logistic_regression(1.0, 0), r"dim=0 violates"),
        (lambda: gaussian_mean(dim=1, prior_precision=-0.1), r"prior_precision=-0.1 violates prior_precision >= 0"),
        (lambda: gaussian_mean(dim=1, inverse_temperature=0.0), r"inverse_temperature=0 violates inverse_temperature > 0"),
        (lambda: gaussian_mean(dim=2.5), r"dim=2.5 violates"),
    ],
)
def test_bad_hyperparameters_rejected(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_dataset_checks():
    with pytest.raises(ValueError, match=r"y\[2\]=2.0 violates y in \{0, 1\}"):
        logistic_regression_dataset(np.zeros((3, 1)), np.array([0.0, 1.0, 2.0]))
    model = logistic_regression(1.0, 1)
    bad = make_dataset(x=np.zeros((2, 1)), y=np.array([0.0, -1.0]))
    with pytest.raises(ValueError, match=r"y\[1\]=-1.0 violates y in \{0, 1\}"):
        model.check_dataset(bad)
    with pytest.raises(ValueError, match=r"field 'x' has shape \(2, 1\); it must have shape \(n, 3\)"):
        bayesian_linear_regression(1.0, 1.0, dim=3).check_dataset(lin_data(n=2, d=1))
    with pytest.raises(ValueError, match="field 'y' is missing"):
        bayesian_linear_regression(1.0, 1.0).check_dataset(make_dataset(x=np.zeros((2, 1))))
    with pytest.raises(ValueError, match=r"must have shape \(n, 2\)"):
        quadratic_form(gaussian_mean(dim=2), gaussian_mean_dataset(np.zeros(3)))
    with pytest.raises(TypeError, match="no closed-form quadratic potential"):
        quadratic_form(logistic_regression(1.0, 1), logistic_regression_dataset(np.zeros(2), np.zeros(2)))
    with pytest.raises(ValueError, match=r"x has shape \(2, 2, 2\)"):
        regression_dataset(np.zeros((2, 2, 2)), np.zeros(2))
    with pytest.raises(TypeError, match="must be a dpjax.data.Dataset"):
        model.check_dataset({"x": np.zeros(2)})


def test_tempered_quadratic_model_keeps_its_closed_form():
    model = bayesian_linear_regression(1.0, 0.5, dim=1).tempered(0.25)
    data = lin_data(d=1)
    h, g = quadratic_form(model, data)
    x, y = np.asarray(data["x"])[:, 0], np.asarray(data["y"])
    np.testing.assert_allclose(h, [[0.5 + 0.25 * np.sum(x**2)]], rtol=1e-13)
    np.testing.assert_allclose(g, [0.25 * np.sum(x * y)], rtol=1e-13)
