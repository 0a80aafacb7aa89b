"""`dpjax reproduce contamination-cauchy` and `contamination-logistic --dims` (paper 003 §4.3)
at tiny sizes: both arms finite, the rate fit and the headline. Split from
test_contamination_regression_experiments.py to keep each file's compile time short."""
import argparse

import numpy as np

from dpjax.experiments.contamination import _regression as common
from dpjax.experiments.contamination import cauchy as contamination_cauchy, logistic as contamination_logistic


def tiny_args(module, *extra):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    module.add_arguments(parser)
    return parser.parse_args(["--n-values", "150,300", "--dims", "3", "--K", "4", "--particles", "100", "--dataset-batch", "4", *extra])


def test_tiny_cauchy_run_has_both_arms_finite():
    results, _ = contamination_cauchy.run(tiny_args(contamination_cauchy, "--sensitivity-scales", "", "--sensitivity-theta-multiples", ""))
    res = results["by_dim"]["3"]
    for arm in common.ARMS:
        per = res[f"per_dataset_epsilon_{arm}"]
        assert all(len(p) == 4 and np.all(np.isfinite(p)) and np.all(np.asarray(p) > 0) for p in per)
        assert results["rate_fit"][f"d3_{arm}"]["ok"]
    assert res["uncontaminated_lower"] == [u < c for u, c in zip(res["epsilon_hat_uncontaminated"], res["epsilon_hat_contaminated"])]
    assert "sensitivity" not in results and "theta_sensitivity" not in results
    assert any("uncontaminated eps_hat lower" in r["quantity"] for r in contamination_cauchy.headline(results))


def test_tiny_logistic_with_dims_and_rate_fit():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    contamination_logistic.add_arguments(parser)
    args = parser.parse_args(["--n-values", "150,300", "--dims", "3", "--K", "4", "--particles", "100", "--dataset-batch", "4"])
    results, _ = contamination_logistic.run(args)
    # --dims given: the per-d layout under by_dim even for one d (theta* = the pattern's first 3)
    assert results["dims"] == [3] and set(results["by_dim"]) == {"3"}
    assert results["by_dim"]["3"]["settings"]["theta_star"] == [0.5, -1.0, 1.0]
    for d in ("3",):
        for arm in common.ARMS:
            assert results["rate_fit"][f"d{d}_{arm}"]["ok"]
    rows = contamination_logistic.headline(results)
    assert rows[0]["paper"] == "~4" and any("decay exponent" in r["quantity"] for r in rows)
