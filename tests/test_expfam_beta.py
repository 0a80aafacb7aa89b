"""`dpjax reproduce expfam-beta`: the JSON's calibrations re-checked by an independent brute
force over every dataset and neighbour (scipy betaln directly, not dpjax's Beta helpers)."""
import json
import math

import numpy as np
import pytest
from scipy.special import betaln

from dpjax.cli import main


def worst_case(a, b, n, order, r=1.0, m=1.0):
    """max over k in 0..n and neighbours k +- 1 of D_order(Beta_k || Beta_k'), eq. 14 typed out."""
    best = -1.0
    for k in range(n + 1):
        ap, bp = a / m + r * k, b / m + r * (n - k)
        for kq in (k - 1, k + 1):
            if not 0 <= kq <= n:
                continue
            aq, bq = a / m + r * kq, b / m + r * (n - kq)
            am, bm = order * ap + (1 - order) * aq, order * bp + (1 - order) * bq
            if am <= 0 or bm <= 0:
                return math.inf
            best = max(best, (betaln(am, bm) - order * betaln(ap, bp)) / (order - 1) + betaln(aq, bq))
    return best


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("expfam")
    assert main(["reproduce", "expfam-beta", "--out", str(out), "--quick", "--num-eps", "5"]) == 0
    assert (out / "expfam-beta.png").stat().st_size > 0
    return json.loads((out / "expfam-beta.json").read_text())


def test_headline_reports_the_calibrations(result):
    from dpjax.experiments.expfam import beta as expfam_beta
    from dpjax.experiments._report import headline_table

    rows = expfam_beta.headline(result)
    orders = {r["quantity"].split(" = ")[0]: r["dpjax"] for r in rows if "largest finite order" in r["quantity"]}
    assert sorted(orders.values()) == sorted(p["max_order"] for p in result["priors"].values())
    r_rows = [r["dpjax"] for r in rows if "diffuse r*" in r["quantity"]]
    assert r_rows == [list(p["diffuse_r"].values()) for p in result["priors"].values()]
    assert all(r["paper"] is None for r in rows)  # paper 004 prints figures only
    assert max(len(line) for line in headline_table(rows).splitlines()) <= 100


def test_priors_and_max_order(result):
    assert set(result["priors"]) == {"6,18", "1,2"}
    for text, (a, b) in (("6,18", (6.0, 12.0)), ("1,2", (1.0, 1.0))):
        p = result["priors"][text]
        assert p["beta_parameters"] == [a, b]
        assert p["max_order"] == 1 + min(a, b)
        # Direct sampling at order 15 has no finite guarantee for either prior
        assert p["direct_worst_case_at_order"] == "inf"
        assert worst_case(a, b, 100, 15.0) == math.inf
        assert math.isfinite(worst_case(a, b, 100, p["max_order"] - 1e-3))


@pytest.mark.parametrize("text,ab", [("6,18", (6.0, 12.0)), ("1,2", (1.0, 1.0))])
def test_calibrations_recomputed(result, text, ab):
    a, b = ab
    p = result["priors"][text]
    assert set(p["diffuse_r"]) == {"0.01", "0.1", "0.5", "1"}
    for t_key, r in p["diffuse_r"].items():
        t = float(t_key)
        assert worst_case(a, b, 100, 15.0, r=r) <= t
        assert worst_case(a, b, 100, 15.0, r=r * (1 + 1e-8)) > t
    for t_key, m in p["concentrated_m"].items():
        t = float(t_key)
        assert worst_case(a, b, 100, 15.0, m=m) <= t
        assert worst_case(a, b, 100, 15.0, m=m * (1 + 1e-8)) > t
    # more privacy (smaller eps) needs less data weight / a stronger prior
    rs = [p["diffuse_r"][k] for k in ("0.01", "0.1", "0.5", "1")]
    ms = [p["concentrated_m"][k] for k in ("0.01", "0.1", "0.5", "1")]
    assert rs == sorted(rs) and ms == sorted(ms)


def test_loglik_experiment(result):
    assert [e["rho"] for e in result["loglik"]["6,18"]] == pytest.approx([1 / 3, 1 / 2, 2 / 3])
    assert [e["rho"] for e in result["loglik"]["1,2"]] == pytest.approx([0.2])
    for text, exps in result["loglik"].items():
        a, b = {"6,18": (6.0, 12.0), "1,2": (1.0, 1.0)}[text]
        for e in exps:
            k = len(e["eps"])
            for key in ("diffuse_r", "concentrated_m", "diffuse_loglik", "concentrated_loglik", "diffuse_loglik_se"):
                assert len(e[key]) == k
            # each eps's calibration holds
            for eps, r, m in zip(e["eps"], e["diffuse_r"], e["concentrated_m"]):
                assert worst_case(a, b, 100, 15.0, r=r) <= eps
                assert worst_case(a, b, 100, 15.0, m=m) <= eps
            # the true rho maximises the expected hold-out log-likelihood (5 sigma)
            for mean, se in zip(e["diffuse_loglik"] + e["concentrated_loglik"], e["diffuse_loglik_se"] + e["concentrated_loglik_se"]):
                assert mean <= e["oracle_loglik"] + 5 * se
            assert e["direct_loglik"] <= e["oracle_loglik"] + 5 * e["direct_loglik_se"]
