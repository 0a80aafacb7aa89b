"""``dpjax reproduce girsanov-quadratic``: every JSON value recomputed here from paper 001's
printed formulas (and the exact Gaussian laws by recursion), and every bound >= exact."""
import argparse
import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from dpjax.cli import main as cli_main
from dpjax.experiments.girsanov import quadratic as gq

DELTA = 1e-5


def parse(argv):
    parser = argparse.ArgumentParser()
    gq.add_arguments(parser)
    return parser.parse_args(argv)


def exact_by_recursion(gap, gamma, mu, k, beta):
    """RDP/a of N(dm, v) vs N(0, v) for x' = (1 - gamma mu) x + drift + sqrt(2 gamma/beta) z."""
    rho, dm, v = 1 - gamma * mu, 0.0, 0.0
    for _ in range(k):
        dm, v = rho * dm + gap, rho * rho * v + 2 * gamma / beta
    return dm * dm / (2 * v)


def expected_values(c, L, mu, gamma, steps, s, beta):
    """The printed constants C of paper 001 (RDP_a / a = C / 4), written out independently."""
    D = mu - gamma * L**2 / 2
    out = {k: [] for k in (
        "exact_last_rdp_per_order", "exact_path_rdp_per_order", "exact_sgld_last_rdp_per_order",
        "exact_sgld_path_rdp_per_order", "thm52_paper", "thm52_strict", "thm54", "prop46_optimal_window",
        "thm56_paper", "thm56_strict", "thm57_paper", "thm57_strict", "thm57_optimal_window", "thm58",
    )}

    def window(cs, gap, bet, T):
        tau = cs / (L * cs + gap)
        path = bet * gap**2 * T
        if T <= tau:
            return path / 4
        return min(bet * tau * (L * cs + gap + cs / tau) ** 2, path) / 4

    for k in steps:
        T = k * gamma
        out["exact_last_rdp_per_order"].append(exact_by_recursion(2 * c * gamma, gamma, mu, k, 1.0))
        out["exact_path_rdp_per_order"].append(k * (2 * c * gamma) ** 2 / (2 * 2 * gamma))
        out["exact_sgld_last_rdp_per_order"].append(exact_by_recursion(2 * c * gamma / s, gamma, mu, k, beta))
        out["exact_sgld_path_rdp_per_order"].append(k * (2 * c * gamma / s) ** 2 / (2 * 2 * gamma / beta))
        out["thm52_paper"].append(c**2 * (2 * (L + 1) / D + 1) ** 2 / 4)
        out["thm52_strict"].append((2 * c * (L + 1) / D + 2 * c) ** 2 / 4)
        out["thm54"].append(k * gamma * (2 * c) ** 2 / 4)
        out["prop46_optimal_window"].append(window(2 * c / D, 2 * c, 1.0, T))
        out["thm56_paper"].append(beta * c**2 * (2 * (L + 1) / D + 1) ** 2 / 4)
        out["thm56_strict"].append(beta * (2 * c * (L + 1) / D + 2 * c) ** 2 / 4)
        out["thm57_paper"].append(c**2 * beta / s**2 * (2 * (L + 1) / D + 1) ** 2 / 4)
        out["thm57_strict"].append(beta / s**2 * (2 * c * (L + 1) / D + 2 * c) ** 2 / 4)
        out["thm57_optimal_window"].append(window(2 * c / (s * D), 2 * c / s, beta, T))
        out["thm58"].append(beta * (2 * c) ** 2 / s**2 * k * gamma / 4)
    return out


LAST_BOUNDS = {
    "exact_last_rdp_per_order": ("thm52_paper", "thm52_strict", "prop46_optimal_window"),
    "exact_sgld_last_rdp_per_order": ("thm56_paper", "thm56_strict", "thm57_paper", "thm57_strict", "thm57_optimal_window"),
}
PATH_BOUNDS = {"exact_path_rdp_per_order": ("thm54",), "exact_sgld_path_rdp_per_order": ("thm58",)}

CASES = [
    [],  # the defaults: c = 1, mu = L = 1, gamma = 0.1, steps 1, 10, 100, 1000, s = 10
    ["--c", "0.3", "--mu", "2", "--L", "3", "--step-size", "0.3", "--steps", "1,2,5,50", "--order", "5",
     "--batch-size", "3", "--inverse-temperature", "0.5"],
    # gamma mu > 1: the AR(1) coefficient 1 - gamma mu is negative and the gap oscillates
    ["--c", "2", "--mu", "1", "--L", "1", "--step-size", "1.5", "--steps", "1,2,3,4,7", "--batch-size", "1"],
]


@pytest.mark.parametrize("argv", CASES)
def test_every_value_recomputed_and_bounds_dominate(argv):
    args = parse(argv)
    results, fig = gq.run(args)
    assert fig is not None
    steps = results["steps"]
    assert steps == args.steps
    want = expected_values(args.c, args.L, args.mu, args.step_size, steps, args.batch_size, args.inverse_temperature)
    for key, values in want.items():
        assert len(results[key]) == len(steps), key
        np.testing.assert_allclose(results[key], values, rtol=1e-12, atol=0, err_msg=key)

    # bound >= exact everywhere (the path bounds equal the exact path values up to rounding)
    for exact_key, bound_keys in {**LAST_BOUNDS, **PATH_BOUNDS}.items():
        exact = np.array(results[exact_key])
        for key in bound_keys:
            assert np.all(np.array(results[key]) >= exact * (1 - 1e-12)), (key, exact_key)
    for key in ("exact_path_rdp_per_order", "exact_sgld_path_rdp_per_order"):
        last = key.replace("path", "last")
        assert np.all(np.array(results[key]) >= np.array(results[last]) * (1 - 1e-12))
    # the headline reads the largest step count; paper 001 has no experiments to print beside it
    from dpjax.experiments._report import headline_table

    rows = gq.headline(results)
    assert rows[0]["dpjax"] == results["exact_last_rdp_per_order"][-1] and rows[5]["dpjax"] == results["thm54"][-1]
    # paper 001 prints no experiment; its only printed number here is the C4 formula (last row)
    assert all(r["paper"] is None for r in rows[:-1]) and "c (2(L+1)/mu + 1)" in rows[-1]["paper"]
    assert max(len(line) for line in headline_table(rows).splitlines()) <= 100


@pytest.mark.parametrize("argv", CASES[:2])
def test_epsilon_columns(argv):
    args = parse(argv)
    results, _ = gq.run(args)
    eps = results["epsilon_at_delta"]
    assert eps["delta"] == DELTA
    # printed closed forms: C/4 + sqrt(C log 1/delta); Thms 5.7 and 5.8 print C + sqrt(...)
    for key, values in eps["paper_closed_form"].items():
        C = 4 * np.array(results[key])
        head = C if key in ("thm57_paper", "thm58") else C / 4
        np.testing.assert_allclose(values, head + np.sqrt(C * math.log(1 / DELTA)), rtol=1e-12, err_msg=key)
    # exact tight eps: the Balle–Wang (2018) equal-variance Gaussian profile, written out here,
    # must give back delta at the reported eps. RDP_a / a = mu_eff^2 / 2 for such a pair.
    for name, values in eps["exact_tight"].items():
        for per_order, e in zip(results[name + "_rdp_per_order"], values):
            m = math.sqrt(2 * per_order)
            d = norm.cdf(m / 2 - e / m) - math.exp(e) * norm.cdf(-m / 2 - e / m)
            assert d == pytest.approx(DELTA, rel=1e-6)
    # a valid bound never certifies less than the exact tight eps of the worst pair
    from_rdp = eps["from_rdp_curve"]
    for exact_key, bound_keys in {**LAST_BOUNDS, **PATH_BOUNDS}.items():
        tight = np.array(eps["exact_tight"][exact_key.replace("_rdp_per_order", "")])
        for key in bound_keys:
            assert np.all(np.array(from_rdp[key]) >= tight * (1 - 1e-9)), key
            assert np.all(np.array(eps["paper_closed_form"][key]) >= tight * (1 - 1e-9)), key


def test_cli_writes_json_and_png(tmp_path):
    assert cli_main(["reproduce", "girsanov-quadratic", "--out", str(tmp_path), "--steps", "1,10,100"]) == 0
    data = json.loads((tmp_path / "girsanov-quadratic.json").read_text())
    assert data["steps"] == [1, 10, 100]
    for key in ("exact_last_rdp_per_order", "exact_path_rdp_per_order", "thm52_paper", "thm52_strict", "thm54",
                "prop46_optimal_window", "thm56_paper", "thm56_strict", "thm57_paper", "thm57_strict", "thm58"):
        assert len(data[key]) == 3, key
    assert (tmp_path / "girsanov-quadratic.png").stat().st_size > 10_000


def test_bad_arguments_are_rejected():
    with pytest.raises(SystemExit):
        parse(["--steps", "0,10"])
    with pytest.raises(SystemExit):
        parse(["--steps", "ten"])
    with pytest.raises(ValueError, match=r"step_size=0\.3 violates step_size < 2 mu / L\^2 = 0\.2 required by Theorem 5\.2"):
        gq.run(parse(["--mu", "0.4", "--L", "2", "--step-size", "0.3"]))
    with pytest.raises(ValueError, match=r"smoothness=0\.5 violates smoothness >= strong_convexity = 1"):
        gq.run(parse(["--L", "0.5"]))
    with pytest.raises(ValueError, match=r"c=0 violates c > 0"):
        gq.run(parse(["--c", "0"]))
    with pytest.raises(ValueError, match=r"order=1\.0 violates order > 1"):
        gq.run(parse(["--order", "1"]))
    with pytest.raises(ValueError, match=r"batch_size=0 violates batch_size >= 1"):
        gq.run(parse(["--batch-size", "0"]))
