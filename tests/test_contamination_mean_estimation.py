"""Paper 003's Figure 1 (`dpjax reproduce contamination-mean-estimation`): the mechanisms checked
against independent computations.

* CoinPress and the quantile clipped mean are Gaussian-mechanism compositions: the budget their
  ledgers spend is recomputed as sum Delta^2 / (2 s^2); each release's sensitivity is checked to
  be attained by a neighbouring dataset (so the noise is calibrated to the true sensitivity); the
  noise sd is measured by Monte Carlo; and the whole mechanism's (eps, delta) is recomputed by
  dp_accounting's PLD accountant from the ledger's noise multipliers.
* The fixed-range clipped mean's MSE against its closed form (scipy quadrature), Monte Carlo.
* The random-walk Metropolis chain's law against the posterior by quadrature (KS), and the
  quadrature itself against scipy.integrate.quad on a numpy log posterior.
* The fast contamination sampler against scipy's t distribution.
(The zCDP conversions are tested in tests/test_contamination_theory.py.)
"""
import argparse
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from dpjax.experiments.contamination import _rwm as rwm
from dpjax.experiments.contamination import _private_mean as pm
from dpjax.experiments.contamination import mean_estimation as cme


def _data(n, seed=0):
    """float64 numpy records (JAX converts them in float64 inside the tests' x64 scopes)."""
    rng = np.random.default_rng(seed)
    return 30.0 + 8.0 * rng.standard_normal(n)


# --- privacy of the frequentist mechanisms -----------------------------------------------------
@pytest.mark.parametrize("steps", [1, 3, 10])
@pytest.mark.parametrize("rho", [0.6, 0.03, 6e-4])
def test_coinpress_spends_exactly_rho(steps, rho):
    with jax.enable_x64(True):
        _, ledger = pm.coinpress_mean(jax.random.PRNGKey(1), _data(500), centre=30.0, radius=300.0, scale=8.0,
                                      rho_steps=pm.coinpress_budget(rho, steps))
        sens, sd = np.asarray(ledger["sensitivity"]), np.asarray(ledger["noise_sd"])
    assert sens.shape == (steps,)
    # recomputed from what was used; float64 rounding of a few products: 1e-12 relative
    np.testing.assert_allclose(np.sum(sens**2 / (2 * sd**2)), rho, rtol=1e-12)
    # the split: 1/4 over the localisation steps, 3/4 on the last (CoinPress authors' experiments)
    per_step = sens**2 / (2 * sd**2)
    if steps > 1:
        np.testing.assert_allclose(per_step[-1], 0.75 * rho, rtol=1e-12)
        np.testing.assert_allclose(per_step[:-1], 0.25 * rho / (steps - 1), rtol=1e-12)


def test_coinpress_sensitivity_is_attained_and_not_exceeded():
    """One step at a fixed (centre, radius): moving one record from below the clip window to
    above it changes the pre-noise clipped mean by exactly the ledger's sensitivity, and no
    replacement changes it by more."""
    n, centre, radius = 200, 25.0, 40.0
    x = np.asarray(_data(n, 3))
    with jax.enable_x64(True):
        one_step = jax.jit(lambda data: pm.coinpress_mean(jax.random.PRNGKey(0), data, centre=centre, radius=radius, scale=8.0,
                                                          rho_steps=jnp.array([0.1]))[1])
        run = lambda data: one_step(jnp.asarray(data))
        base = run(x)
        sens = float(base["sensitivity"][0])
        clip = float(base["clip"][0])
        changes = []
        for value in (centre - 10 * clip, centre - clip, centre, centre + clip, centre + 10 * clip, -270.0, 330.0):
            for i in (0, 7):
                y = x.copy()
                y[i] = value
                changes.append(abs(float(run(y)["clipped_mean"][0]) - float(base["clipped_mean"][0])))
        lo, hi = x.copy(), x.copy()
        lo[0], hi[0] = -1e6, 1e6
        attained = abs(float(run(hi)["clipped_mean"][0]) - float(run(lo)["clipped_mean"][0]))
    np.testing.assert_allclose(sens, 2 * clip / n, rtol=1e-14)
    np.testing.assert_allclose(attained, sens, rtol=1e-9)  # a mean of 200 numbers: rounding ~1e-14 of 30 over 2 clip / n
    assert max(changes) <= sens * (1 + 1e-9)


def test_coinpress_noise_sd_by_monte_carlo():
    """Over 20,000 noise draws on one dataset, the one-step output's sd equals the ledger's
    noise_sd: the sample sd's relative standard error is 1/sqrt(2 N) = 0.5%; tolerance 4 SE."""
    N = 20_000
    x = _data(300, 5)
    with jax.enable_x64(True):
        f = jax.vmap(lambda k: pm.coinpress_mean(k, x, centre=30.0, radius=50.0, scale=8.0, rho_steps=jnp.array([0.02])))
        est, ledger = f(jax.random.split(jax.random.PRNGKey(2), N))
    sd = float(np.asarray(ledger["noise_sd"])[0, 0])
    assert abs(np.std(np.asarray(est)) / sd - 1) < 4 / math.sqrt(2 * N)
    assert abs(np.mean(np.asarray(est)) - float(np.asarray(ledger["clipped_mean"])[0, 0])) < 4 * sd / math.sqrt(N)


@pytest.mark.parametrize("rho", [0.3, 0.003])
def test_quantile_clipped_mean_spends_exactly_rho_and_attains_its_sensitivities(rho):
    n, steps = 400, 10
    x = np.asarray(_data(n, 7))
    with jax.enable_x64(True):
        run = lambda data, key=0: pm.quantile_clipped_mean(jax.random.PRNGKey(key), jnp.asarray(data), rho, low=-270.0, high=330.0,
                                                           levels=(0.05, 0.95), quantile_fraction=0.25, search_steps=steps)
        _, ledger = run(x)
        sens, sd = np.asarray(ledger["sensitivity"]), np.asarray(ledger["noise_sd"])
        assert sens.shape == (2 * steps + 1,)
        np.testing.assert_allclose(np.sum(sens**2 / (2 * sd**2)), rho, rtol=1e-12)
        np.testing.assert_allclose(np.sum(sens[:-1] ** 2 / (2 * sd[:-1] ** 2)), 0.25 * rho, rtol=1e-12)
        # the clipped mean's sensitivity (b - a)/n is attained by moving one record across [a, b]
        a, b = float(ledger["range_low"]), float(ledger["range_high"])
        lo, hi = x.copy(), x.copy()
        lo[0], hi[0] = a - 100.0, b + 100.0
        mean_at = lambda data: float(pm.clipped_mean(jax.random.PRNGKey(0), jnp.asarray(data), a, b, 0.1)[1]["clipped_mean"])
        np.testing.assert_allclose(abs(mean_at(hi) - mean_at(lo)), sens[-1], rtol=1e-9)
        # a count moves by at most 1 when one record is replaced (the quantile probes' sensitivity)
        mid = 31.0
        assert abs(int(np.sum(hi <= mid)) - int(np.sum(lo <= mid))) <= 1 and sens[0] == 1.0


def test_mechanisms_are_eps_hat_dp_by_dp_accounting():
    """End to end with a peer accountant: dp_accounting's PLD accountant composes the ledger's
    Gaussian releases (noise multiplier s_i / Delta_i) and gives eps at delta_n. At the exact
    conversion's rho it is below eps_hat (the zCDP -> (eps, delta) step is loose for a Gaussian);
    at the tight rho it equals eps_hat (up to the PLD's discretisation, 1e-3 here); at the
    paper's rho it exceeds eps_hat at n = 100 and 1000 (where the paper's rule overspends)."""
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    from dpjax.experiments.contamination.theory import zcdp_budget

    def pld_epsilon(ledger, delta):
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        for s, d in zip(np.ravel(ledger["noise_sd"]), np.ravel(ledger["sensitivity"])):
            acc.compose(dp_event.GaussianDpEvent(float(s) / float(d)))
        return acc.get_epsilon(delta)

    for n, eps in ((100, 3.20), (1000, 1.10)):
        delta = 1 / (10 * n)
        x = _data(n, 11)
        rhos = {"exact": float(zcdp_budget(eps, delta, rule="exact")), "paper": float(zcdp_budget(eps, delta, rule="paper")),
                "tight": pm.gaussian_composition_rho(eps, delta)}
        got = {}
        with jax.enable_x64(True):
            for rule, rho in rhos.items():
                _, led_cp = pm.coinpress_mean(jax.random.PRNGKey(0), x, centre=30.0, radius=300.0, scale=8.0, rho_steps=pm.coinpress_budget(rho, 3))
                _, led_cm = pm.quantile_clipped_mean(jax.random.PRNGKey(0), x, rho, low=-270.0, high=330.0)
                got[rule] = (pld_epsilon(led_cp, delta), pld_epsilon(led_cm, delta))
        for e in got["exact"]:
            assert e < 0.8 * eps
        for e in got["tight"]:
            assert abs(e - eps) < 2e-3 * eps  # PLD discretisation (interval 1e-4) and truncation: well under 1e-3 observed
        for e in got["paper"]:
            assert e > 1.05 * eps


# --- utility: the clipped mean's MSE in closed form --------------------------------------------
def test_fixed_range_clipped_mean_mse_matches_its_closed_form():
    """MSE over data and noise = (E clip(X) - theta*)^2 + Var clip(X) / n + s^2, with the moments
    of clip(X), X ~ N(30, 8^2), by scipy quadrature (the truncation at [-270, 330] is 37.5 sd out:
    negligible). Monte Carlo over 40,000 (dataset, noise) pairs; tolerance 4 Monte Carlo SE."""
    n, a, b, rho, N = 40, 22.0, 45.0, 0.5, 40_000
    dens = lambda t: stats.norm.pdf(t, 30.0, 8.0)
    clip = lambda t: min(max(t, a), b)
    pieces = lambda h: sum(integrate.quad(lambda t: h(clip(t)) * dens(t), lo, hi, epsabs=1e-13, epsrel=1e-12)[0]
                           for lo, hi in ((-np.inf, a), (a, b), (b, np.inf)))  # split at the kinks
    m1 = pieces(lambda c: c)
    m2 = pieces(lambda c: (c - m1) ** 2)
    sd = (b - a) / n / math.sqrt(2 * rho)
    closed = (m1 - 30.0) ** 2 + m2 / n + sd**2
    with jax.enable_x64(True):
        kd, kn = jax.random.split(jax.random.PRNGKey(4))
        xs = 30.0 + 8.0 * jax.random.normal(kd, (N, n), dtype=jnp.float64)
        est, _ = jax.vmap(lambda k, x: pm.clipped_mean(k, x, a, b, rho))(jax.random.split(kn, N), xs)
    sq = (np.asarray(est) - 30.0) ** 2
    assert abs(sq.mean() - closed) < 4 * sq.std() / math.sqrt(N)
    assert (m1 - 30.0) ** 2 > 0.05 * closed  # the range is asymmetric: the bias term is tested, not only the variance


# --- the Bayesian draw --------------------------------------------------------------------------
def _numpy_log_posterior(theta, x, p):
    """Table 1's contaminated log posterior written with scipy (independent of the model code)."""
    f = stats.truncnorm.logpdf(x, (-270 - theta) / 8.0, (330 - theta) / 8.0, loc=theta, scale=8.0)
    t_mass = stats.t.cdf(300 / 8.0, 5) - stats.t.cdf(-300 / 8.0, 5)
    g = stats.t.logpdf(x, 5, loc=30.0, scale=8.0) - math.log(t_mass)
    return stats.norm.logpdf(theta, 40.0, 40.0) + np.sum(np.logaddexp(math.log1p(-p) + f, math.log(p) + g))


def _contaminated_dataset(n, seed):
    from dpjax.models.contamination import truncated_normal_mean_contamination

    model = truncated_normal_mean_contamination()
    p = n ** -0.125
    with jax.enable_x64(True):
        x = model.simulate(jax.random.PRNGKey(seed), jnp.array([30.0]), n, p)
    return model, x, p


def test_quadrature_posterior_matches_scipy():
    """posterior_by_quadrature's mean and sd against scipy.integrate.quad on a numpy/scipy log
    posterior: agreement to 1e-6 relative (both are converged quadratures of a smooth density)."""
    n = 150
    model, x, p = _contaminated_dataset(n, 21)
    xn = np.asarray(x)
    with jax.enable_x64(True):
        grid, cdf, mean, sd, edge = (np.asarray(v) for v in rwm.posterior_by_quadrature(model, x, p, centre=float(np.median(xn)), half_width=20.0))
    assert float(edge) < 1e-20
    peak = _numpy_log_posterior(float(mean), xn, p)
    w = lambda t: math.exp(_numpy_log_posterior(t, xn, p) - peak)
    lo, hi = float(mean) - 15 * float(sd), float(mean) + 15 * float(sd)
    z = integrate.quad(w, lo, hi, epsabs=0, epsrel=1e-11, limit=200)[0]
    m = integrate.quad(lambda t: t * w(t), lo, hi, epsabs=0, epsrel=1e-11, limit=200)[0] / z
    v = integrate.quad(lambda t: (t - m) ** 2 * w(t), lo, hi, epsabs=0, epsrel=1e-11, limit=200)[0] / z
    np.testing.assert_allclose(float(mean), m, rtol=1e-6)
    np.testing.assert_allclose(float(sd), math.sqrt(v), rtol=1e-6)


@pytest.mark.parametrize("n, steps", [(100, 50), (1000, 50)])
def test_rwm_last_state_follows_the_posterior(n, steps):
    """2000 independent chains on one contaminated dataset: the last state's empirical law
    against the quadrature CDF. KS statistic below the 0.1% critical value (1.95 / sqrt(N) =
    0.044), and the chains' mean within 4 SE of the posterior mean (fixed seeds)."""
    N = 2000
    model, x, p = _contaminated_dataset(n, 31 + n)
    step = rwm.proposal_sd(8.0, n, p)
    with jax.enable_x64(True):
        last, acc, _ = jax.jit(jax.vmap(lambda k: rwm.rwm_chain(k, model, x, p, step=step, num_steps=steps)))(
            jax.random.split(jax.random.PRNGKey(n), N))
        grid, cdf, mean, sd, _ = rwm.posterior_by_quadrature(model, x, p, centre=float(jnp.median(x)), half_width=40 * 8 / math.sqrt(n * (1 - p)))
        last, acc, grid, cdf, mean, sd = (np.asarray(v) for v in (last, acc, grid, cdf, mean, sd))
    d, _ = rwm.ks_against_cdf(last, grid, cdf)
    assert d < 1.95 / math.sqrt(N)
    assert abs(float(np.mean(last)) - float(mean)) < 4 * float(sd) / math.sqrt(N)
    assert 0.3 < float(np.mean(acc)) < 0.8  # the 2.4-sd proposal gives ~0.45-0.55 in 1-D


def test_padded_records_give_the_same_posterior_and_estimates():
    """Padding a dataset (the --pad-records path) changes nothing: the chain's start (median)
    and its log posterior, and the frequentist estimates, to rounding."""
    model, x, p = _contaminated_dataset(300, 41)
    with jax.enable_x64(True):
        padded = jnp.concatenate([x, jnp.full(201, 30.0)])
        nv = jnp.asarray(300)
        lg, lg_pad = model.log_g(x), model.log_g(padded)
        mask = jnp.arange(501) < 300
        got = [(float(rwm.log_posterior(model, t, x, lg, p)), float(rwm.log_posterior(model, t, padded, lg_pad, p, mask)))
               for t in (25.0, 30.0, 31.5)]
        med = (float(jnp.median(x)), float(rwm.masked_median(padded, nv)))
        est = (float(pm.quantile_clipped_mean(jax.random.PRNGKey(0), x, 0.05, low=-270.0, high=330.0)[0]),
               float(pm.quantile_clipped_mean(jax.random.PRNGKey(0), padded, 0.05, low=-270.0, high=330.0, num_valid=nv)[0]))
    # sums over 300 or 501 terms (201 of them zeros): equal up to summation order
    for a, b in got + [med, est]:
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_contamination_sampler_law():
    """contaminate_t: the replaced fraction is p (binomial, 4 SE) and the replacements follow
    t_5(30, 8) (KS against scipy at the 0.1% level; the truncation at +-37.5 scales removes
    ~1e-7 of the mass, far below the KS resolution)."""
    n, p = 200_000, 0.3
    x = jnp.full(n, 1e3)  # outside the data interval: replaced records are the ones that moved
    with jax.enable_x64(True):
        y = np.asarray(rwm.contaminate_t(jax.random.PRNGKey(9), x, p, location=30.0, scale=8.0, df=5, low=-270.0, high=330.0))
    replaced = y[y != 1e3]
    assert abs(replaced.size / n - p) < 4 * math.sqrt(p * (1 - p) / n)
    d = stats.kstest(replaced, stats.t(5, loc=30.0, scale=8.0).cdf).statistic
    assert d < 1.95 / math.sqrt(replaced.size)
    assert replaced.min() >= -270.0 and replaced.max() <= 330.0


def test_gaussian_composition_rho_is_tight():
    """The tight rho's mu = sqrt(2 rho) gives back eps at delta by dpjax's analytic Gaussian
    (Balle & Wang), and it lies between the exact and the paper's zCDP readings at Table 1's n = 1000."""
    from dpjax.accountants import analytic_gaussian_epsilon
    from dpjax.experiments.contamination.theory import zcdp_budget

    for eps, delta in ((3.2, 1e-3), (1.1, 1e-4), (0.189, 2e-6)):
        rho = pm.gaussian_composition_rho(eps, delta)
        np.testing.assert_allclose(analytic_gaussian_epsilon(math.sqrt(2 * rho), delta), eps, rtol=1e-9)
        assert float(zcdp_budget(eps, delta, rule="exact")) < rho
    assert pm.gaussian_composition_rho(1.1, 1e-4) < float(zcdp_budget(1.1, 1e-4, rule="paper"))
    with pytest.raises(ValueError, match="epsilon"):
        pm.gaussian_composition_rho(0.0, 1e-4)


# --- the experiment end to end (tiny) ------------------------------------------------------------
def _tiny_args(**overrides):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    cme.add_arguments(parser)
    # the sizes of notebooks/paper003_contamination.ipynb's run (K, reps and the chain length fix
    # the compiled shapes), so whichever runs second loads its programs from the run's cache
    args = parser.parse_args(["--n-values", "100,1000", "--K", "8", "--reps", "10", "--chain-steps", "30", "--check-datasets", "1",
                              "--no-sensitivity", "--pad-records"])
    for k, v in overrides.items():
        setattr(args, k, v)
    return args


def test_tiny_run_structure_budgets_and_claims():
    from dpjax.experiments.contamination.theory import zcdp_budget

    results, fig = cme.run(_tiny_args())
    assert fig is not None and results["n"] == [100, 1000]
    for n, eps in ((100, 3.20), (1000, 1.10)):
        b = results["budgets"][str(n)]
        assert b["epsilon"] == eps and b["delta"] == 1 / (10 * n)
        assert b["rho_exact"] == float(zcdp_budget(eps, 1 / (10 * n), rule="exact"))
        assert b["rho_paper"] == float(zcdp_budget(eps, 1 / (10 * n), rule="paper"))
        assert b["rho_exact"] < b["rho_tight"]
        np.testing.assert_allclose(b["tight_epsilon_tight"], eps, rtol=1e-9)
        s = results["summary"][str(n)]
        assert set(s) == {"bayes", "nonprivate"} | {f"{m}_{r}" for m in ("coinpress3", "coinpress10", "clipped") for r in cme.RULES}
        for name, row in s.items():
            assert np.isfinite(row["median_mse"]) and row["median_mse"] >= 0, name
            assert len(results["per_dataset_mse"][str(n)][name]) == 8
        # every private method is worse than the non-private sample mean of the same data
        assert all(s[k]["median_mse"] > s["nonprivate"]["median_mse"] for k in s if k != "nonprivate")
        check = results["convergence"][str(n)][0]
        assert check["chains"] == 8 * 10 and check["quadrature_edge_density"] < 1e-20
    # MSE falls with n for every method (a 10x larger n at a ~10x smaller rho)
    for k in results["summary"]["100"]:
        assert results["summary"]["1000"][k]["median_mse"] < results["summary"]["100"][k]["median_mse"], k
    assert set(results["claims"]) == set(cme.RULES)
    rows = cme.headline(results)
    assert rows[0]["quantity"].startswith("n = 100") and all({"quantity", "paper", "dpjax"} <= set(r) for r in rows)


@pytest.mark.parametrize("bad, names", [({"n_values": [123]}, "n=123"), ({"quantile_fraction": 1.5}, "quantile-fraction")])
def test_bad_arguments_are_rejected_before_compute(bad, names):
    with pytest.raises(ValueError, match=names):
        cme.run(_tiny_args(**bad))


def test_coinpress_budget_needs_a_step():
    with pytest.raises(ValueError, match="steps"):
        pm.coinpress_budget(0.1, 0)
