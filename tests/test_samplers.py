"""Langevin kernels: the update against hand computations, the two parameterisations, schedules,
clipping, validation errors, and linear-Gaussian exactness of the coupled chains.

Exactness: for 1-D Bayesian linear regression (NOTES 000 eq. 4) with a fixed record order,
every iterate is Gaussian with mean m' = a m + b and variance v' = a^2 v + eta (a, b from the
record used). We compare sample means and variances of >= 1e5 chains with the recursion at
5 sigma, where sigma of the sample variance is estimated from the sample's own fourth moment
(Var(s^2) = (mu4 - sigma^4 (K-3)/(K-1)) / K, no Gaussianity assumed).
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import dpjax
from dpjax import samplers
from dpjax.engine import randomness

from _shared import blr_model


def _x64_dataset(**fields):
    with jax.enable_x64(True):
        return dpjax.make_dataset(**fields)


@jax.enable_x64(True)
def test_one_step_matches_hand_computation_and_parameterisations_agree():
    alpha, beta, n, eta, temp = 0.5, 2.0, 4, 0.03, 1.7
    x = np.array([[1.0], [2.0], [-1.0], [0.5]])
    y = np.array([1.0, 0.3, -2.0, 4.0])
    model = blr_model(alpha, beta)
    ds = dpjax.make_dataset(x=x, y=y)
    key = jax.random.key(3)
    theta = 0.4
    wt = samplers.cyclic_sgld(eta, order=np.arange(n), temperature=temp)
    state, info = wt.step(key, wt.init(jnp.array([theta])), model, ds)
    z = float(randomness.normals(randomness.chain_words(key), 0, 1, jnp.float64)[0])  # the documented Philox stream, step 0
    grad = alpha * theta + n * beta * x[0, 0] * (x[0, 0] * theta - y[0])  # record 0 first, scale n/b = n
    expected = theta - eta / 2 * grad + np.sqrt(eta * temp) * z
    np.testing.assert_allclose(state.position[0], expected, rtol=1e-13)
    assert int(state.step) == 1 and float(info.noise[0]) == z
    # Euler form with gamma = eta / 2 and the same temperature is the same chain
    eu = samplers.cyclic_sgld(eta / 2, order=np.arange(n), temperature=temp, parameterisation="euler")
    s1, s2 = wt.init(jnp.array([theta])), eu.init(jnp.array([theta]))
    for _ in range(5):
        s1, _ = wt.step(key, s1, model, ds)
        s2, _ = eu.step(key, s2, model, ds)
    np.testing.assert_allclose(s1.position, s2.position, rtol=1e-13)
    # ULA (full batch) in Euler form: x' = x - gamma grad U + sqrt(2 gamma T) z
    ula = samplers.ula(0.01, temperature=temp)
    st, info = ula.step(key, ula.init(jnp.array([theta])), model, ds)
    grad_u = alpha * theta + beta * np.sum(x[:, 0] * (x[:, 0] * theta - y))
    np.testing.assert_allclose(st.position[0], theta - 0.01 * grad_u + np.sqrt(2 * 0.01 * temp) * z, rtol=1e-13)


@jax.enable_x64(True)
def test_optax_schedule_sets_the_step_size_of_each_step():
    schedule = optax.exponential_decay(init_value=0.1, transition_steps=1, decay_rate=0.5)
    s = samplers.sgld(schedule, batching="full")
    for t in (0, 1, 3):
        drift, noise = s.coefficients(jnp.asarray(t))
        np.testing.assert_allclose(drift, 0.1 * 0.5**t / 2, rtol=1e-12)
        np.testing.assert_allclose(noise, np.sqrt(0.1 * 0.5**t), rtol=1e-12)
    bad = optax.linear_schedule(0.1, -0.1, transition_steps=10)  # reaches 0 at step 5
    with pytest.raises(ValueError, match=r"step_size schedule gives step_size=.* at step 5; it must be > 0"):
        samplers.sgld(bad, batching="full").validate(4, num_steps=8)


@jax.enable_x64(True)
def test_per_record_clipping_clips_each_likelihood_gradient_not_the_prior():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(5, 3)) * 3, rng.normal(size=5) * 3
    model = blr_model(0.7, 1.3, dim=3)
    ds = dpjax.make_dataset(x=x, y=y)
    theta = jnp.asarray(rng.normal(size=3))
    C = 5.0
    s = samplers.ula(0.1, clip_norm=C)
    est = s.potential_grad_estimate(model, ds, theta, s.batching.batch(None, None, 0, 5))
    g = 1.3 * (x @ np.asarray(theta) - y)[:, None] * x  # per-record gradients of -log-lik
    norms = np.linalg.norm(g, axis=1)
    assert np.any(norms > C) and np.any(norms < C)  # the test exercises both branches
    clipped = g * np.minimum(1, C / norms)[:, None]
    np.testing.assert_allclose(est, 0.7 * np.asarray(theta) + clipped.sum(0), rtol=1e-12)


def test_sampler_validation_errors():
    with pytest.raises(ValueError, match=r"step_size=0 violates step_size > 0"):
        samplers.ula(0.0)
    with pytest.raises(ValueError, match=r"step_size=-0.1 violates step_size > 0"):
        samplers.sgld(-0.1, batching="uniform", batch_size=1)
    with pytest.raises(ValueError, match=r"temperature=0 violates temperature > 0"):
        samplers.ula(0.1, temperature=0.0)
    with pytest.raises(ValueError, match=r"clip_norm=-1 violates clip_norm > 0"):
        samplers.ula(0.1, clip_norm=-1.0)
    with pytest.raises(ValueError, match=r"parameterisation='ito' is not one of"):
        samplers.ula(0.1, parameterisation="ito")
    with pytest.raises(ValueError, match=r"batching='minibatch' is not one of"):
        samplers.sgld(0.1, batching="minibatch", batch_size=2)
    with pytest.raises(ValueError, match=r"batch_size=0 violates batch_size a positive integer"):
        samplers.cyclic_sgld(0.1, batch_size=0)


def _honest_moment_check(samples, mean, var, label):
    k = samples.size
    m_hat = samples.mean()
    v_hat = samples.var(ddof=1)
    mu4 = np.mean((samples - m_hat) ** 4)
    sd_var = np.sqrt((mu4 - v_hat**2 * (k - 3) / (k - 1)) / k)
    assert abs(m_hat - mean) < 5 * np.sqrt(v_hat / k), f"{label}: mean {m_hat} vs {mean}"
    assert abs(v_hat - var) < 5 * sd_var, f"{label}: variance {v_hat} vs {var} (sd {sd_var})"


def _recursion(x, y, order, steps, alpha, beta, eta, m0, v0, weights=None):
    """Mean and variance of cyclic SGLD (b = 1, Welling–Teh) along `order` after each step."""
    n = len(x)
    m, v = m0, v0
    out = [(m, v)]
    for t in range(steps):
        i = order[t % n]
        a = 1 - eta / 2 * (alpha + n * beta * x[i] ** 2)
        m, v = a * m + eta / 2 * n * beta * x[i] * y[i], a**2 * v + eta
        out.append((m, v))
    return out


def test_linear_gaussian_exactness_of_coupled_cyclic_chains():
    alpha, beta, eta, K = 1.0, 1.0, 0.05, 100_000
    x = np.array([1.0, 0.5, 2.0, 1.5, -1.0])
    y = np.array([2.0, -1.0, 1.0, 3.0, 0.5])
    n = len(x)
    model = blr_model(alpha, beta)
    ds = _x64_dataset(x=x[:, None], y=y)
    with jax.enable_x64(True):
        pair = dpjax.replace_one(ds, 2, {"x": np.array([-0.7]), "y": np.array(4.0)})
    order = np.array([3, 0, 4, 2, 1])
    sampler = samplers.cyclic_sgld(eta, order=order)
    record = [1, 3, 4, 7, 10, 13]
    res = dpjax.run_coupled(
        1, model, pair, sampler, num_pairs=K, num_steps=13, record_steps=record,
        init=lambda key: jax.random.normal(key, (1,)) / np.sqrt(alpha), progress=False,
    )
    assert res.num_nonfinite == 0
    law_d = _recursion(x, y, order, 13, alpha, beta, eta, 0.0, 1 / alpha)
    xn, yn = x.copy(), y.copy()
    xn[2], yn[2] = -0.7, 4.0
    law_n = _recursion(xn, yn, order, 13, alpha, beta, eta, 0.0, 1 / alpha)
    for r, t in enumerate(record):
        _honest_moment_check(res.positions[r, :, 0], *law_d[t], f"D step {t}")
        _honest_moment_check(res.neighbour_positions[r, :, 0], *law_n[t], f"D' step {t}")
    # the D' law differs from D's after record 2 is used (position 3 of the order): the check has power
    assert abs(law_d[13][0] - law_n[13][0]) > 50 * np.sqrt(law_d[13][1] / K)


def test_linear_gaussian_exactness_of_full_batch_ula():
    alpha, beta, gamma, K, temp = 0.5, 2.0, 0.02, 100_000, 0.8
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=6), rng.normal(size=6)
    model = blr_model(alpha, beta)
    with jax.enable_x64(True):
        pair = dpjax.add_remove(dpjax.make_dataset(x=x[:, None], y=y), 4)
    res = dpjax.run_coupled(
        2, model, pair, samplers.ula(gamma, temperature=temp), num_pairs=K, num_steps=40,
        record_steps=[5, 20, 40], init=np.array([1.5]), progress=False,
    )
    for which, keep, positions in (("D", np.ones(6, bool), res.positions), ("D'", np.arange(6) != 4, res.neighbour_positions)):
        # x' = x - gamma (alpha x + beta sum(x_i^2 x - x_i y_i)) + sqrt(2 gamma T) z
        a = 1 - gamma * (alpha + beta * np.sum(x[keep] ** 2))
        b = gamma * beta * np.sum(x[keep] * y[keep])
        m, v = 1.5, 0.0
        for t in range(1, 41):
            m, v = a * m + b, a**2 * v + 2 * gamma * temp
            if t in res.steps:
                r = list(res.steps).index(t)
                _honest_moment_check(positions[r, :, 0], m, v, f"{which} step {t}")
