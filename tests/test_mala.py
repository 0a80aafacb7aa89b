"""Preconditioned MALA (dpjax.samplers.mala) with the logistic/ball target of the expfam-glm experiment,
and the experiment end to end at a tiny size.

MALA is checked against exact laws (records x = 0 leave only the prior: N(0, I/m), or N(0, I/m)
truncated to the ball |w| < R, whose |w|^2 is a truncated chi-square) and against
self-normalised importance sampling on a real logistic posterior. All checks are statistical
with a stated error: 5 standard errors from the chains' means. Every MALA call here has the same
shapes and sizes as the experiment's run, so one compilation serves all of them.
"""
import argparse
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import log_expit, logsumexp

from dpjax.experiments.expfam import glm as eg
from dpjax.samplers.mala import chain_diagnostics, mala_sample

SIZES = dict(chains=32, warmup=400, draws=100, thin=4)


def _threshold(num_checks: int) -> float:
    """|t| threshold for z-scores whose standard errors come from 32 chain means: Student-t with
    31 degrees of freedom, family-wise false-alarm probability 1e-4 over ``num_checks`` (Bonferroni)."""
    return float(stats.t.ppf(1 - 1e-4 / (2 * num_checks), SIZES["chains"] - 1))


@pytest.fixture(scope="module")
def wine():
    return eg.load_classification("wine", 0)


def test_mala_gaussian_and_ball_truncated_gaussian(wine):
    x = np.zeros_like(wine[0])
    y = np.zeros_like(wine[1])
    d = x.shape[1]
    configs = [(1.0, 1.0, np.inf), (1.0, 4.0, np.inf), (0.3, 1.0, 1.5), (1.0, 0.25, 2.0), (1.0, 1.0, 3.0), (1.0, 2.0, 9.0), (1.0, 1.0, 1.0)]
    res, _ = eg.sample_posteriors(x, y, configs, seed=3, **SIZES)
    limit = _threshold(len(configs) * (d + 1))
    for i, (_, m, radius) in enumerate(configs):
        sq = np.sum(res.draws[i] ** 2, axis=-1)  # (K, S): m |w|^2 ~ chi2_d, truncated at m R^2
        c = m * radius**2
        f = (lambda k: stats.chi2.cdf(c, k)) if np.isfinite(radius) else (lambda k: 1.0)
        exact_mean = d * f(d + 2) / f(d) / m
        exact_var = d * (d + 2) * f(d + 4) / f(d) / m**2 - exact_mean**2
        if np.isfinite(radius):
            assert np.all(np.linalg.norm(res.draws[i], axis=-1) < radius * (1 + 1e-6))
        se = sq.mean(axis=1).std(ddof=1) / math.sqrt(sq.shape[0])
        assert abs(sq.mean() - exact_mean) < limit * se, (configs[i], sq.mean(), exact_mean, se)
        # power: the band is narrower than half a standard deviation of |w|^2 (a wrong Jacobian
        # for the ball map moves the mean by several)
        assert limit * se < 0.5 * math.sqrt(exact_var), (configs[i], se, exact_var)
        coord_se = res.draws[i].mean(axis=1).std(axis=0, ddof=1) / math.sqrt(res.draws.shape[1])
        assert np.all(np.abs(res.draws[i].mean(axis=(0, 1))) < limit * coord_se)


def test_mala_on_a_logistic_posterior_matches_importance_sampling(wine):
    x, y = wine[0], wine[1]
    rhos = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0]
    res, w_map = eg.sample_posteriors(x, y, [(r, 1.0, np.inf) for r in rhos], seed=5, **SIZES)
    _, chol, _ = eg.laplace(x, y, rhos, np.ones(len(rhos)))
    rng = np.random.default_rng(0)
    limit = _threshold(2 * x.shape[1])
    for i in (1, 4):
        draws = res.draws[i]
        mala_mean = draws.mean(axis=(0, 1))
        mala_se = draws.mean(axis=1).std(axis=0, ddof=1) / math.sqrt(draws.shape[0])
        # self-normalised importance sampling from a Student-t(5) around the Laplace approximation
        t = stats.multivariate_t(loc=w_map[i], shape=1.5 * chol[i] @ chol[i].T, df=5, seed=rng)
        w = t.rvs(40_000)
        z = w @ x.T
        log_target = rhos[i] * np.sum(y * log_expit(z) + (1 - y) * log_expit(-z), axis=1) - 0.5 * np.sum(w * w, axis=1)
        log_wt = log_target - t.logpdf(w)
        wt = np.exp(log_wt - logsumexp(log_wt))
        assert 1.0 / np.sum(wt**2) > 0.2 * w.shape[0]
        is_mean = wt @ w
        is_se = np.sqrt(wt**2 @ (w - is_mean) ** 2)
        z_scores = (mala_mean - is_mean) / np.sqrt(mala_se**2 + is_se**2)
        assert np.all(np.abs(z_scores) < limit), z_scores
    assert np.all(np.abs(res.acceptance - 0.574) < 0.1)


def test_ball_map_round_trip_and_jacobian():
    """to_ball's log-Jacobian against central finite differences of the map (one batched call)."""
    import jax

    rng = np.random.default_rng(1)
    v = rng.normal(size=(4, 3)) * 2
    h = 1e-5
    shifts = np.concatenate([np.zeros((1, 3)), h * np.eye(3), -h * np.eye(3)])  # (7, 3)
    points = (v[:, None, :] + shifts[None]).reshape(-1, 3)
    with jax.enable_x64(True):
        w_all, lj_all = (np.asarray(a) for a in jax.jit(eg.to_ball)(points, 1.7))
        w_inf, lj_inf = (np.asarray(a) for a in jax.jit(eg.to_ball)(v, np.inf))
    w_all = w_all.reshape(4, 7, 3)
    w, log_jac = w_all[:, 0], lj_all.reshape(4, 7)[:, 0]
    assert np.all(np.linalg.norm(w, axis=1) < 1.7)
    assert np.allclose(eg.from_ball(w, 1.7), v, rtol=1e-10)
    jac = (w_all[:, 1:4] - w_all[:, 4:7]).transpose(0, 2, 1) / (2 * h)  # [k, i, j] = d w_i / d v_j
    assert np.allclose(np.linalg.slogdet(jac)[1], log_jac, atol=1e-7)
    assert np.allclose(w_inf, v) and np.all(lj_inf == 0)


def test_mala_bad_input():
    chol = np.eye(2)[None]
    with pytest.raises(ValueError, match="init"):
        mala_sample(0, eg.logistic_log_density, (np.ones(1),) * 3, np.zeros((1, 2)), chol)
    with pytest.raises(ValueError, match="preconditioner_chol"):
        mala_sample(0, eg.logistic_log_density, (np.ones(1),) * 3, np.zeros((1, 2, 2)), np.eye(3)[None])
    with pytest.raises(ValueError, match="num_samples"):
        mala_sample(0, eg.logistic_log_density, (np.ones(1),) * 3, np.zeros((1, 2, 2)), chol, num_samples=0)
    with pytest.raises(ValueError, match="R-hat"):
        chain_diagnostics(np.zeros((1, 1, 10, 2)))


# --- the experiment end to end ---------------------------------------------------------------
def _args(**over):
    parser = argparse.ArgumentParser()
    eg.add_arguments(parser)
    argv = ["--datasets", "wine", "--orders", "10", "--epsilons", "0.1,10", "--splits", "1", "--sensitivity-datasets", "none",
            "--chains", str(SIZES["chains"]), "--warmup", str(SIZES["warmup"]), "--draws", str(SIZES["draws"]), "--thin", str(SIZES["thin"])]
    args = parser.parse_args(argv)
    args.quick, args.seed = True, 0
    for k, v in over.items():
        setattr(args, k, v)
    return args


def test_expfam_glm_runs_and_reports_consistently(wine):
    results, fig = eg.run(_args())
    assert fig is not None
    s = results["settings"]
    entry = results["datasets"]["wine"]
    assert entry["info"]["n_train"] == wine[0].shape[0] and entry["info"]["dim"] == wine[0].shape[1]
    # the calibration in the JSON spends exactly eps at order 10 by Lemma 1 (L = 1)
    for eps in s["epsilons"]:
        cal = results["calibration"][f"10|{eps:g}|diffuse"]
        rdp = 2 * cal["temperature"] ** 2 * 10 / cal["prior_precision"]
        assert rdp <= eps * (1 + 1e-12) and (cal["temperature"] == 1.0 or rdp == pytest.approx(eps, rel=1e-12))
        conc = results["calibration"][f"10|{eps:g}|concentrated"]
        assert 2 * 10 / conc["prior_precision"] <= eps * (1 + 1e-12)
    for mech in eg.MECHANISMS:
        c = entry["curves"][f"10|{mech}"]
        assert all(0 <= e <= 1 for e in c["error"]) and all(v > 0 for v in c["nll"])
        assert len(c["error"]) == 2
    # a private mechanism cannot beat the non-private posterior's NLL by more than noise
    npv = entry["non_private"]
    for mech in eg.MECHANISMS:
        c = entry["curves"][f"10|{mech}"]
        assert c["nll"][0] > npv["nll"] - 5 * math.hypot(c["nll_se"][0], npv["nll_se"])
    claims = {r["claim"] for r in entry["ordering"]}
    assert claims == {"diffuse <= concentrated", "concentrated <= ops", "diffuse <= ops"}
    assert all(r["verdict"] in ("holds", "tie", "fails") for r in entry["ordering"])
    rows = eg.headline(results)
    assert rows and all({"quantity", "paper", "dpjax", "note"} <= set(r) for r in rows)


def test_expfam_glm_bad_arguments():
    with pytest.raises(ValueError, match="prior_precision"):
        eg.run(_args(prior_precision=0.0))
    with pytest.raises(ValueError, match="ops_radius"):
        eg.run(_args(ops_radius=float("inf")))
    with pytest.raises(ValueError, match="splits"):
        eg.run(_args(splits=0))
    with pytest.raises(ValueError, match="orders"):
        eg.run(_args(orders=[0.5]))
    with pytest.raises(ValueError, match="dataset"):
        eg.load_classification("iris", 0)
    parser = argparse.ArgumentParser()
    eg.add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--datasets", "mnist"])


def test_load_classification_preprocessing():
    for name in eg.DATASETS:
        x, y, xt, yt, info = eg.load_classification(name, 1)
        assert np.all(np.linalg.norm(x, axis=1) <= 1 + 1e-12) and np.all(np.linalg.norm(xt, axis=1) <= 1 + 1e-12)
        assert np.all(x[:, -1] == eg.BIAS) and set(np.unique(y)) == {0.0, 1.0}
        assert x.shape[0] == info["n_train"] and xt.shape[0] == info["n_test"] and abs(xt.shape[0] / (x.shape[0] + xt.shape[0]) - 0.2) < 0.01
