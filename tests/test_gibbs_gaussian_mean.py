"""`dpjax reproduce gibbs-gaussian-mean`: thresholds recomputed independently in the test
(the formulas typed out; the exact Gaussian mechanism by scipy root finding)."""
import json
import math

import pytest
from scipy import optimize, stats

from dpjax.cli import main


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("gibbs")
    # a shorter ULA run than the default (the test recomputes everything from the JSON's settings)
    assert main(["reproduce", "gibbs-gaussian-mean", "--out", str(out), "--quick", "--mc-steps", "400", "--mc-step-fraction", "0.05", "--mc-n", "20"]) == 0
    assert (out / "gibbs-gaussian-mean.png").stat().st_size > 0
    return json.loads((out / "gibbs-gaussian-mean.json").read_text())


EPS, DELTA, R = 0.1, 1e-3, 1.0
T = math.log(1 / DELTA)


def test_headline_puts_printed_values_beside_dpjax(result):
    from dpjax.experiments.gibbs import gaussian_mean as gibbs_gaussian_mean
    from dpjax.experiments._report import headline_table

    rows = {r["quantity"]: r for r in gibbs_gaussian_mean.headline(result)}
    lsi = rows["(B.8-9): largest private beta / n"]
    assert lsi["paper"] == 1.79e-4 and lsi["dpjax"] == result["beta_over_n_lsi"]["value"]
    assert rows["n from which beta = 1 is private"]["dpjax"] == result["n_for_beta_1"]["value"]
    assert rows["Example 17: beta (Corollary 8)"]["paper"] == 0.012
    certified = [r for q, r in rows.items() if q.startswith("ULA at beta")]
    assert len(certified) == 2 and all(r["paper"] is None for r in certified)
    assert max(len(line) for line in headline_table(rows.values()).splitlines()) <= 100


def test_lsi_threshold(result):
    eta = EPS + 2 * T - 2 * math.sqrt(T * (EPS + T))  # (B.9) as printed
    got = result["beta_over_n_lsi"]
    assert got["value"] == pytest.approx(eta / (2 * R**2), rel=1e-9)
    assert got["paper_printed"] == 1.79e-4
    assert math.floor(got["value"] * 1e6) / 1e6 == pytest.approx(1.79e-4)


def test_exact_threshold_by_scipy(result):
    def hockey(mu):
        return stats.norm.cdf(mu / 2 - EPS / mu) - math.exp(EPS) * stats.norm.cdf(-mu / 2 - EPS / mu)

    mu_star = optimize.brentq(lambda mu: hockey(mu) - DELTA, 1e-3, 5.0, xtol=1e-15)
    assert result["beta_over_n_exact"]["mu_star"] == pytest.approx(mu_star, rel=1e-8)
    # mu = 2 r sqrt(beta/n)  =>  beta/n = mu^2/(4 r^2)
    assert result["beta_over_n_exact"]["value"] == pytest.approx(mu_star**2 / 4, rel=1e-8)
    assert result["n_for_beta_1"]["exact"] == math.ceil(4 / mu_star**2)


def test_n_for_beta_one_and_b7(result):
    eta = EPS + 2 * T - 2 * math.sqrt(T * (EPS + T))
    assert result["n_for_beta_1"]["value"] == math.ceil(2 / eta) == 5567
    assert result["n_for_beta_1"]["paper_printed"] == 5600
    assert result["n_for_beta_1"]["value"] <= 5600  # the printed claim is sufficient
    b7 = result["beta_over_n_b7"]
    assert b7["value"] == pytest.approx(EPS**2 / (8 * math.log(2 / DELTA)), rel=1e-12)
    assert b7["value_at_delta_1e-4"] == pytest.approx(EPS**2 / (8 * math.log(2e4)), rel=1e-12)
    assert round(b7["value_at_delta_1e-4"], 6) == b7["paper_printed"] == 1.26e-4


def test_example17(result):
    ex = result["example17_beta"]
    assert ex["value"] == pytest.approx(EPS / (2 * math.sqrt(1 + 2 * T)), rel=1e-12)
    assert ex["paper_printed"] == 0.012 and math.floor(ex["value"] * 1000) / 1000 == 0.012
    eta = EPS + 2 * T - 2 * math.sqrt(T * (EPS + T))
    assert ex["lsi_exact_inversion"] == pytest.approx(math.sqrt(eta / 2), rel=1e-9)
    assert ex["exact"]["n"] == 10 and ex["exact"]["beta"] > ex["lsi_exact_inversion"] > ex["value"]


def test_inconsistencies_explained(result):
    inc = result["inconsistencies"]
    cross = [i for i in inc if "n >= 15" in i["printed"]][0]["recomputed"]
    eta = EPS + 2 * T - 2 * math.sqrt(T * (EPS + T))
    assert cross["by_B8"] == math.ceil(0.0125 / (eta / 2)) == 70
    assert cross["by_exact_gaussian"] == 16
    assert any("1.26e-4" in i["printed"] for i in inc)
    assert "done" in result["monte_carlo"]


def test_monte_carlo_ula_check(result):
    from scipy import integrate

    mc = result["monte_carlo"]
    assert mc["done"] is True
    n, frac, steps = mc["n"], mc["step_fraction"], mc["steps"]
    for case in mc["cases"]:
        beta = case["beta"]
        prec = n * beta
        gamma = frac / prec
        assert case["step_size"] == pytest.approx(gamma, rel=1e-12)
        a = 1 - gamma * prec
        # ULA's AR(1) law after `steps` from 0, recomputed here; posterior N(+-beta r/P, 1/P)
        m_post = beta * R / prec
        m_ula = m_post * (1 - a**steps)
        sd_ula = math.sqrt(2 * gamma * (1 - a ** (2 * steps)) / (1 - a * a))
        assert case["ula_law"]["means"][0] == pytest.approx(m_ula, rel=1e-9)
        assert case["ula_law"]["sd"] == pytest.approx(sd_ula, rel=1e-12)
        sd_post = 1 / math.sqrt(prec)
        tv, _ = integrate.quad(
            lambda t: 0.5 * abs(stats.norm.pdf(t, m_ula, sd_ula) - stats.norm.pdf(t, m_post, sd_post)),
            m_post - 12 * sd_post, m_post + 12 * sd_post, limit=400, points=[m_post],
        )
        assert case["tv_ula_vs_posterior"] == pytest.approx(tv, rel=1e-5)
        # Prop. 12 holds for the exact ULA pair: its delta at eps is within the corrected delta
        assert case["ula_delta_at_epsilon_exact"] <= case["guarantee"]["delta"]
        # the coupled chains follow the exact law (5 sigma)
        assert all(abs(z) < 5 for z in case["mean_z"] + case["var_z"])
        assert case["num_nonfinite"] == 0
        # empirical lower bounds never exceed the exact values (95% confidence each)
        assert case["empirical_epsilon_lower_bound"] <= case["ula_epsilon_exact_at_guarantee_delta"]
        assert case["empirical_epsilon_lower_bound_at_delta"] <= case["ula_epsilon_exact_at_delta"]
    lsi, bayes = mc["cases"]
    # the LSI-threshold beta is private: its exact posterior eps is below the target
    assert lsi["posterior_epsilon_exact"] <= EPS
    # beta = 1 at n = 20 (< 1212, the exact threshold) is not (0.1, 1e-3)-DP, and the chains show it
    assert bayes["posterior_epsilon_exact"] > EPS
    # the best bound this many pairs allows (expected counts) certifies eps > 0.1; the sampled one
    # is positive
    assert bayes["oracle_lower_bound_at_delta"] > EPS
    assert bayes["empirical_epsilon_lower_bound_at_delta"] > 0
