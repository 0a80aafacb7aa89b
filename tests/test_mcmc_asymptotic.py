"""Paper 001 §3.1: grid laws, the AR(1) laws, Prop 3.4's bound, MALA / exact AR(1) pairs, and
the ``mcmc-asymptotic`` experiment. Chains are checked statistically (KS), never by pinned draws."""
from __future__ import annotations

import argparse
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from dpjax.accountants.mechanisms import gaussian_divergence as gd
from dpjax.accountants.samplers import markov_grid as mg
from dpjax.experiments.girsanov import mcmc_convergence as mc
from dpjax.data import replace_one
from dpjax.models.gaussian_mean import gaussian_mean, gaussian_mean_dataset
from dpjax.samplers.mala import exact_ar1, mala, run_metropolis_pair

H, M = 11.0, 0.3  # a Gaussian target N(M, 1/H)


def _grid(dx=0.02):
    return mg.uniform_grid(-9.0, 9.0, int(round(18.0 / dx)) + 1)


# ------------------------------------------------------------------------------------------
# AR(1) laws and the grid
def test_ar1_law_matches_the_recursion():
    for rho, tau in ((0.999, 0.05), (0.78, 0.2), (-0.6, 0.3), (0.0, 1.0)):
        law = mc.ar1_law(rho, tau, 0.4, np.arange(40), mean0=-1.0, var0=2.0)
        m, v = -1.0, 2.0
        for k in range(40):
            assert law.mean[k] == pytest.approx(m, rel=1e-12, abs=1e-14)
            assert law.variance[k] == pytest.approx(v, rel=1e-12)
            m, v = 0.4 + rho * (m - 0.4), rho * rho * v + tau * tau


def test_ula_on_the_grid_matches_the_closed_form():
    gamma = 0.02
    steps = np.array([1, 5, 30])
    rho, tau = mc.ula_ar1_parameters(gamma, H)
    law = mc.ar1_law(rho, tau, M, steps, 0.0, 1.0)
    exact_tv = [gd.gaussian_hockey_stick(law.mean[i], math.sqrt(law.variance[i]), M, 1 / math.sqrt(H), 0.0) for i in range(steps.size)]
    errors = []
    for dx in (0.02, 0.01):
        grid = _grid(dx)
        P, lost = mg.langevin_transition(grid, lambda x: -H * (x - M), gamma)
        assert lost.max() < 1e-12
        masses = mg.propagate(mg.gaussian_masses(grid, 0.0, 1.0), P, steps)
        target = mg.gaussian_masses(grid, M, 1 / math.sqrt(H))
        assert np.allclose(masses.sum(axis=1), 1.0, atol=1e-9)
        errors.append(max(abs(mg.total_variation(masses[i], target) - exact_tv[i]) for i in range(steps.size)))
    # the kink of |p - q| makes the grid TV second order in the spacing
    assert errors[0] < 1e-4 and errors[1] < errors[0] / 3


def test_grid_hockey_stick_and_epsilon_match_the_gaussian_mechanism():
    grid = mg.uniform_grid(-10, 10, 4001)
    p, q = mg.gaussian_masses(grid, 0.0, 1.0), mg.gaussian_masses(grid, 1.5, 1.0)
    eps = np.array([0.0, 0.5, 2.0])
    np.testing.assert_allclose(mg.hockey_stick(p, q, eps), gd.analytic_gaussian_delta(1.5, eps), atol=1e-6)
    assert mg.epsilon(p, q, 1e-3) == pytest.approx(gd.analytic_gaussian_epsilon(1.5, 1e-3), abs=1e-4)
    assert mg.epsilon(p, p, 1e-3) == 0.0


def test_mala_on_the_grid_leaves_the_target_invariant_and_matches_blackjax():
    import blackjax

    grid = _grid(0.02)
    h = 0.02
    P, _ = mg.mala_transition(grid, lambda x: 0.5 * H * (x - M) ** 2, lambda x: H * (x - M), h)
    assert np.all(P >= 0) and np.allclose(P.sum(axis=1), 1.0, atol=1e-12)
    target = mg.gaussian_masses(grid, M, 1 / math.sqrt(H))
    target = target / target.sum()
    assert np.abs(target @ P - target).sum() < 1e-12  # detailed balance holds exactly on the grid
    # the grid law after 4 steps from N(0, 1) against blackjax's MALA (a peer implementation)
    masses = mg.propagate(mg.gaussian_masses(grid, 0.0, 1.0), P, [4])[0]
    kernel = blackjax.mala(lambda x: -0.5 * H * jnp.sum((x - M) ** 2), h)
    with jax.enable_x64(True):

        def chain(key):
            k0, k1 = jax.random.split(key)
            state = kernel.init(jax.random.normal(k0, (1,), jnp.float64))
            state, _ = jax.lax.scan(lambda st, k: (kernel.step(k, st)[0], None), state, jax.random.split(k1, 4))
            return state.position[0]

        draws = np.asarray(jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(2), 3000)))
    cdf = lambda t: np.interp(t, grid.points, np.cumsum(masses) - 0.5 * masses)
    assert stats.kstest(draws, cdf).pvalue > 1e-4


def test_grid_arguments_are_checked():
    with pytest.raises(ValueError, match="size"):
        mg.uniform_grid(0, 1, 2)
    with pytest.raises(ValueError, match="low < high"):
        mg.uniform_grid(1, 0, 10)
    grid = _grid(0.1)
    with pytest.raises(ValueError, match="step_size"):
        mg.langevin_transition(grid, lambda x: -x, 0.0)
    with pytest.raises(ValueError, match="drift"):
        mg.langevin_transition(grid, lambda x: np.full(x.shape, np.nan), 0.1)
    with pytest.raises(ValueError, match="record_steps"):
        mg.propagate(np.ones(grid.points.size), np.eye(grid.points.size), [3, 1])
    with pytest.raises(ValueError, match="delta"):
        mg.epsilon(np.ones(3) / 3, np.ones(3) / 3, 0.0)


# ------------------------------------------------------------------------------------------
# Prop 3.4
def test_prop34_bound_is_below_the_exact_tv_on_random_gaussian_instances():
    rng = np.random.default_rng(0)
    eps = np.linspace(0, 8, 161)
    for _ in range(60):
        mu_post = rng.uniform(0.1, 4.0)  # posterior pair: N(0, 1) vs N(mu_post, 1)
        chain_gap, chain_sd, chain_centre = rng.uniform(0, mu_post), rng.uniform(0.3, 3.0), rng.uniform(-2, 2)
        # the chain on D: N(c, s^2); on D': N(c + gap, s^2)
        post_profile = gd.analytic_gaussian_delta(mu_post, eps)
        chain_profile = gd.analytic_gaussian_delta(chain_gap / chain_sd, eps)
        bound = mc.best_tv_lower_bound(eps, post_profile, chain_profile).bound
        tv = max(gd.gaussian_hockey_stick(chain_centre, chain_sd, 0.0, 1.0, 0.0),
                 gd.gaussian_hockey_stick(chain_centre + chain_gap, chain_sd, mu_post, 1.0, 0.0))
        assert bound <= tv + 1e-12


def test_tv_lower_bound_values_and_errors():
    assert mc.tv_lower_bound(0.0, 0.4, 0.1) == pytest.approx(0.15)
    assert mc.tv_lower_bound(1.0, 0.1, 0.2) == 0.0  # chain less private than the target: nothing
    assert mc.tv_lower_bound(math.log(3), 0.5, 0.1) == pytest.approx(0.4 / 4)
    with pytest.raises(ValueError, match="epsilon"):
        mc.tv_lower_bound(-1.0, 0.1, 0.0)
    with pytest.raises(ValueError, match="chain_delta"):
        mc.tv_lower_bound(1.0, 0.1, 1.5)
    assert float(mc.posterior_delta_from_chain(0.0, 0.1, 0.05)) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="rho"):
        mc.ar1_law(1.0, 0.1, 0.0, [1])
    with pytest.raises(ValueError, match="step_size"):
        mc.ula_ar1_parameters(0.5, 11.0)  # gamma h > 2: unstable


# ------------------------------------------------------------------------------------------
# MALA and exact AR(1) pairs
def _pair(shift=4.0):
    x = np.linspace(-1, 1, 10)
    return gaussian_mean(dim=1, prior_precision=1.0), replace_one(gaussian_mean_dataset(x), 0, {"x": np.array([x[0] + shift])})


def test_exact_ar1_pairs_follow_the_closed_form_and_move_in_lockstep():
    model, pair = _pair()
    rho = 0.78
    init = lambda key: jax.random.normal(key, (1,))
    res = run_metropolis_pair(3, model, pair, exact_ar1(rho), num_pairs=4000, num_steps=7, record_steps=[2, 7], init=init)
    assert res.num_nonfinite == 0 and np.all(res.acceptance == 1.0)
    means = (0.0, 4.0 / 11.0)
    _, tau = mc.exact_ar1_parameters(rho, 11.0)
    for r, k in enumerate(res.steps):
        for which, pos in ((0, res.positions), (1, res.neighbour_positions)):
            law = mc.ar1_law(rho, tau, means[which], [k], 0.0, 1.0)
            assert stats.kstest(pos[r, :, 0], stats.norm(law.mean[0], math.sqrt(law.variance[0])).cdf).pvalue > 1e-4
        # shared start and noise: the pair's gap is the deterministic (1 - rho^k)(m_D - m_D')
        np.testing.assert_allclose(res.positions[r] - res.neighbour_positions[r], -(1 - rho**k) * means[1], atol=1e-12)
    # the run's average (1/N) sum_{n<=N} x_n (paper 001 eq. 7 with f(x) = x) against its closed-form law
    from dpjax.experiments.girsanov.noisy_monte_carlo_bounds import ar1_average_law

    for which, avg in ((0, res.path_mean), (1, res.neighbour_path_mean)):
        law = ar1_average_law(rho, tau, means[which], 7, 0.0, 1.0)
        assert stats.kstest(avg[:, 0], stats.norm(law.mean, math.sqrt(law.variance)).cdf).pvalue > 1e-4


def test_mala_pairs_follow_the_grid_law():
    model, pair = _pair()
    res = run_metropolis_pair(4, model, pair, mala(0.05), num_pairs=3000, num_steps=5, init=np.zeros(1))
    assert 0.5 < res.acceptance.mean() < 1.0
    grid = _grid(0.01)
    start = np.zeros(grid.points.size)
    start[np.argmin(np.abs(grid.points))] = 1.0  # the point start x0 = 0 is a grid point
    for pos, m in ((res.positions, 0.0), (res.neighbour_positions, 4.0 / 11.0)):
        P, _ = mg.mala_transition(grid, lambda x: 0.5 * 11.0 * (x - m) ** 2, lambda x: 11.0 * (x - m), 0.05)
        masses = mg.propagate(start, P, [5])[0]
        cdf = lambda t: np.interp(t, grid.points, np.cumsum(masses))  # atoms at grid points (rejections keep x0)
        assert stats.kstest(pos[-1, :, 0], cdf).pvalue > 1e-4


def test_metropolis_pair_arguments_are_checked():
    model, pair = _pair()
    with pytest.raises(ValueError, match="rho"):
        exact_ar1(1.0)
    with pytest.raises(ValueError, match="step_size"):
        mala(-0.1)
    with pytest.raises(ValueError, match="record_steps"):
        run_metropolis_pair(0, model, pair, mala(0.1), num_pairs=2, num_steps=3, record_steps=[5])
    with pytest.raises(ValueError, match="init"):
        run_metropolis_pair(0, model, pair, mala(0.1), num_pairs=2, num_steps=3, init=np.zeros(2))
    with pytest.raises(ValueError, match="num_pairs"):
        run_metropolis_pair(0, model, pair, mala(0.1), num_pairs=0, num_steps=3)
    from dpjax.models.logistic import logistic_regression

    with pytest.raises(ValueError, match="QuadraticModel"):
        run_metropolis_pair(0, logistic_regression(1.0, 1), pair, exact_ar1(0.5), num_pairs=2, num_steps=1)


# ------------------------------------------------------------------------------------------
# the experiment
def test_mcmc_asymptotic_quick_run_checks_hold():
    from dpjax.experiments.girsanov import mcmc_asymptotic as ex

    parser = argparse.ArgumentParser()
    ex.add_arguments(parser)
    args = parser.parse_args(["--num-steps", "40", "--pairs", "1000", "--mc-steps", "10", "--mc-chains", "exact_ar1", "--grid-spacing", "0.04", "--confidence", "0.999999"])
    args.quick, args.seed = True, 0
    results = ex.compute(args)
    assert all(results["checks"].values()), results["checks"]
    ch = results["chains"]
    # the pi-invariant chains approach the posterior's eps; ULA stays below it (its bias)
    post = results["posterior"]["epsilon_at_delta"]
    assert abs(ch["exact_ar1"]["epsilon"][-1] - post) < 1e-3
    assert abs(ch["mala"]["epsilon"][-1] - post) < 10 * ch["mala"]["refinement_change"]["epsilon"] + 1e-3
    assert ch["ula"]["epsilon"][-1] < post - 0.1 and results["ula_bias"]["tv_limit"] > 0.01
    assert ch["ula"]["first_step_not_private"] is None and ch["exact_ar1"]["first_step_not_private"] is not None
    sens = results["sensitivity_step_size"]
    assert all(a["ula_tv_limit"] < b["ula_tv_limit"] for a, b in zip(sens, sens[1:]))  # ULA's bias grows with the step
    assert all(r["ula_limit_epsilon"] < post for r in sens)
    rows = ex.headline(results)
    assert rows and all({"quantity", "paper", "dpjax"} <= set(r) for r in rows)
    with pytest.raises(ValueError, match="shift"):
        ex.Problem(10, 1.0, 0.0, 0.02)
    with pytest.raises(ValueError, match="step_size"):
        ex.Problem(10, 1.0, 4.0, 0.5)
