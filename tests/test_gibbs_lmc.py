"""Paper 002 App. D.2: Dalalyan's schedule, the exact law of LMC on a Gaussian target against a
brute-force recursion and simulation, the exact TV against 2-D quadrature, Monte Carlo and the
1-D hockey-stick divergence, the schedule's TV <= gamma, and the gibbs-lmc experiment end to end
(coupled chains against the exact laws; lower bounds <= exact <= guarantee)."""
import argparse
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpjax.accountants.samplers import lmc
from dpjax.accountants.mechanisms.gaussian_divergence import gaussian_hockey_stick
from dpjax.accountants.mechanisms.gaussian_tv import gaussian_tv
from dpjax.experiments.gibbs import lmc as gl


def _tv_2d_reference(v1, v2):
    """TV of zero-mean 2-D diagonal Gaussians: for each x the set of y where p > q is {y^2 > t} or
    {y^2 < t} (the log-ratio is quadratic in y), integrated in closed form with normal CDFs; then
    quadrature over x. A different decomposition from gaussian_tv's chi-square groups."""
    s1, s2 = np.sqrt(v1), np.sqrt(v2)
    c = 0.5 * (1 / v2[1] - 1 / v1[1])

    def inner(x):
        pa, qa = stats.norm.pdf(x, 0, s1[0]), stats.norm.pdf(x, 0, s2[0])
        # p > q  <=>  c y^2 > r
        r = math.log(qa / pa) + 0.5 * math.log(v1[1] / v2[1])
        mass = lambda s, t, outside: (2 * stats.norm.sf(math.sqrt(t) / s) if outside else 1 - 2 * stats.norm.sf(math.sqrt(t) / s))
        if c > 0:
            t = r / c
            return pa - qa if t <= 0 else pa * mass(s1[1], t, True) - qa * mass(s2[1], t, True)
        t = r / c
        return 0.0 if t <= 0 else pa * mass(s1[1], t, False) - qa * mass(s2[1], t, False)

    lim = 12 * max(s1[0], s2[0])
    return integrate.quad(inner, -lim, lim, limit=400, epsabs=1e-13, epsrel=1e-11)[0]


def test_tv_two_groups_against_a_2d_reference():
    rng = np.random.default_rng(0)
    for _ in range(4):
        v1, v2 = rng.uniform(0.2, 2.0, 2), rng.uniform(0.2, 2.0, 2)
        assert gaussian_tv([0, 0], v1, [0, 0], v2) == pytest.approx(_tv_2d_reference(v1, v2), abs=1e-9)


def test_tv_against_monte_carlo_and_the_one_dimensional_route():
    rng = np.random.default_rng(1)
    v1 = np.array([1.0, 1.0, 1.0, 0.5, 0.5])
    v2 = np.array([1.2, 1.2, 1.2, 0.45, 0.45])
    x = rng.normal(size=(400_000, 5)) * np.sqrt(v1)
    log_ratio = np.sum(stats.norm.logpdf(x, 0, np.sqrt(v2)) - stats.norm.logpdf(x, 0, np.sqrt(v1)), axis=1)
    vals = np.maximum(0.0, 1.0 - np.exp(log_ratio))  # TV = E_P[(1 - q/p)_+]
    assert gaussian_tv(np.zeros(5), v1, np.zeros(5), v2) == pytest.approx(vals.mean(), abs=5 * vals.std() / math.sqrt(vals.size))
    # equal covariances: the 1-D hockey-stick at eps = 0 along the Mahalanobis direction
    m1, m2, v = np.array([0.3, -1.0, 2.0]), np.array([0.1, -0.2, 2.5]), np.array([0.5, 2.0, 1.5])
    delta = float(np.sqrt(np.sum((m1 - m2) ** 2 / v)))
    assert gaussian_tv(m1, v, m2, v) == pytest.approx(gaussian_hockey_stick(0.0, 1.0, delta, 1.0, 0.0), rel=1e-10)
    # tiny differences are resolved, not lost in cancellation: TV ~ 0.242 |dv/v| in 1-D
    assert gaussian_tv([0, 0], [1.0, 1.0], [0, 0], [1.0 + 1e-7, 1.0]) == pytest.approx(0.2420 * 1e-7, rel=1e-3)


def test_tv_bad_input():
    with pytest.raises(ValueError, match="at most two"):
        gaussian_tv(np.zeros(3), [1, 2, 3], np.zeros(3), [1.1, 2.1, 3.1])
    with pytest.raises(ValueError, match="equal means"):
        gaussian_tv([0, 0], [1, 2], [1, 0], [1, 3])
    with pytest.raises(ValueError, match="variances"):
        gaussian_tv([0, 0], [1, 0], [0, 0], [1, 1])


def test_gaussian_lmc_law_against_recursion_and_simulation():
    rng = np.random.default_rng(2)
    h_mat = np.array([[2.0, 0.5], [0.5, 1.0]])
    mu, m0, v0, h = np.array([0.4, -0.3]), np.array([1.0, 1.0]), 0.2, 0.3
    mean, cov = m0.copy(), v0 * np.eye(2)
    a = np.eye(2) - h * h_mat
    for k in range(1, 41):  # brute force: mean' = mean - h H (mean - mu), cov' = A cov A^T + 2h I
        mean = mean - h * h_mat @ (mean - mu)
        cov = a @ cov @ a.T + 2 * h * np.eye(2)
        if k in (1, 7, 40):
            law = lmc.gaussian_lmc_law(h_mat, mu, m0, v0, h, k)
            assert np.allclose(law.mean, mean, rtol=1e-12)
            assert np.allclose(law.eigenvectors @ np.diag(law.variances) @ law.eigenvectors.T, cov, rtol=1e-12)
    # simulation of the chain itself
    x = m0 + math.sqrt(v0) * rng.normal(size=(200_000, 2))
    for _ in range(7):
        x = x - h * (x - mu) @ h_mat + math.sqrt(2 * h) * rng.normal(size=x.shape)
    law = lmc.gaussian_lmc_law(h_mat, mu, m0, v0, h, 7)
    assert np.all(np.abs(x.mean(axis=0) - law.mean) < 5 * np.sqrt(np.diag(np.cov(x.T)) / x.shape[0]))
    with pytest.raises(ValueError, match="h lam < 2"):
        lmc.gaussian_lmc_law(h_mat, mu, m0, v0, 1.0, 3)


@pytest.mark.parametrize("kappa", [1.0, 3.0])
@pytest.mark.parametrize("dim", [2, 5])
def test_the_schedule_reaches_tv_gamma_on_gaussian_targets(kappa, dim):
    """Theorem 21 on quadratic U: the exact TV after T steps from N(theta*, I/M) is <= gamma."""
    m = 2.0
    curv = np.array([m] * ((dim + 1) // 2) + [kappa * m] * (dim // 2))
    mu = np.linspace(-1, 1, dim)
    for gamma in (0.3, 0.05, 0.003):
        for alpha in lmc.ALPHA_CHOICES:
            sch = lmc.dalalyan_schedule(m, kappa * m, dim, gamma, alpha)
            law = lmc.gaussian_lmc_law(np.diag(curv), mu, mu, 1 / (kappa * m), sch.step_size, sch.num_steps)
            var = law.variances[np.argsort(np.argsort(curv, kind="stable"), kind="stable")]
            assert gaussian_tv(law.mean, var, mu, 1 / curv) <= gamma


def test_schedule_formulas_and_bad_input():
    sch = lmc.dalalyan_schedule(1.0, 4.0, 3, 0.1)
    s = (4 * math.log(10) + 3 * math.log(4)) / 2
    assert sch.horizon == pytest.approx(s) and sch.step_size == pytest.approx(0.01 / (16 * s * 3)) and sch.num_steps == math.ceil(s / sch.step_size)
    t21 = lmc.dalalyan_schedule(1.0, 4.0, 3, 0.1, "theorem21")
    assert t21.alpha == pytest.approx((1 + 4 * 3 * s / 0.01) / 2) and t21.step_size == pytest.approx(1 / (4 * t21.alpha))
    assert lmc.lmc_privacy_delta(1.0, 1e-3, 0.01) == pytest.approx(1e-3 + (1 + math.e) * 0.01)
    assert lmc.lmc_privacy_delta(3.0, 1e-3, 0.3) == 1.0
    with pytest.raises(ValueError, match="dim"):
        lmc.dalalyan_schedule(1.0, 2.0, 1, 0.1)
    with pytest.raises(ValueError, match="tv_level"):
        lmc.dalalyan_schedule(1.0, 2.0, 2, 0.5)
    with pytest.raises(ValueError, match="smoothness"):
        lmc.dalalyan_schedule(2.0, 1.0, 2, 0.1)
    with pytest.raises(ValueError, match="alpha"):
        lmc.dalalyan_schedule(1.0, 2.0, 2, 0.1, "printed")


def _args(**over):
    parser = argparse.ArgumentParser()
    gl.add_arguments(parser)
    args = parser.parse_args(["--kappa", "1", "--gammas", "0.25", "--pairs", "300", "--n", "5"])
    args.quick, args.seed = True, 0
    for k, v in over.items():
        setattr(args, k, v)
    return args


def test_gibbs_lmc_end_to_end():
    results, fig = gl.run(_args())
    assert fig is not None and results["all_tv_at_most_gamma"] and results["prop12_exact_tv_holds"]
    case = results["cases"][0]
    ch = case["chains"]
    assert ch["num_nonfinite"] == 0
    # the chains follow the exact LMC law (2 data sets x 2 coordinates x (mean, variance)), family-wise 1e-4
    z_limit = stats.norm.isf(1e-4 / (2 * 8))
    for label in ("D", "D'"):
        assert np.all(np.abs(ch["law_checks"][label]["mean_z"]) < z_limit)
        assert np.all(np.abs(ch["law_checks"][label]["var_z"]) < z_limit)
        assert ch["law_checks"][label]["ks_pvalue_soft_axis"] > 1e-4
    for b in ch["privacy"].values():
        assert b["lower_bounds_below_exact_and_guarantee"]
    # the exact eps of LMC's output at the guarantee's delta is within the guarantee
    assert case["privacy"]["lmc_epsilon_exact_at_guarantee_delta"] <= case["privacy"]["guarantee"]["epsilon"]
    m = results["tv_term_equal_to_delta"]
    assert m["fewest_steps_exact_tv"] < m["schedule_steps"]
    assert gl.headline(results)


@pytest.mark.parametrize("bad, names", [({"gammas": [0.6]}, "gamma"), ({"dim": 1}, "dim"), ({"kappa": 0.5}, "kappa"), ({"delta": 1.5}, "delta")])
def test_gibbs_lmc_bad_arguments(bad, names):
    with pytest.raises(ValueError, match=names):
        gl.run(_args(**bad))
