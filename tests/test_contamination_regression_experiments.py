"""`dpjax reproduce contamination-linear / -cauchy / -logistic` (paper 003 §4.3) at tiny sizes:
the JSON's structure and sanity, the +inf uncontaminated linear arm, the rate fit, the CLI
wiring. The numbers themselves rest on the estimator tests (test_contamination_regression.py:
brute-force numpy Algorithm 1 on one dataset)."""
import argparse
import math

import numpy as np
import pytest

from dpjax.experiments.contamination import _regression as common
from dpjax.experiments.contamination import cauchy as contamination_cauchy, linear as contamination_linear


def tiny_args(module, *extra):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    module.add_arguments(parser)
    return parser.parse_args(["--n-values", "150,300", "--dims", "3", "--K", "4", "--particles", "100", "--dataset-batch", "4", *extra])


@pytest.mark.slow  # one compilation of Algorithm 1 for a regression (~30 s here)
def test_tiny_linear_run_structure_and_infinite_uncontaminated_arm():
    results, fig = contamination_linear.run(tiny_args(contamination_linear, "--sensitivity-scales", "1,2", "--sensitivity-K", "4",
                                                      "--sensitivity-theta-multiples", "1"))
    assert fig is not None and results["dims"] == [3] and results["n"] == [150, 300]
    res = results["by_dim"]["3"]
    assert res["settings"]["theta_star"] == [0.5, -1.0, 1.0] and res["settings"]["contamination_scale"] == 1.0
    eps = np.asarray(res["epsilon_hat_contaminated"])
    assert np.all(np.isfinite(eps)) and np.all(eps > 0) and res["num_failed_contaminated"] == [0, 0]
    for e, per in zip(eps, res["per_dataset_epsilon_contaminated"]):
        assert e == np.sort(per)[math.ceil(0.99 * 4) - 1]
    # without contamination d is unbounded in the response: +inf, said why, never estimated
    assert res["epsilon_hat_uncontaminated"] == [math.inf, math.inf] and "unbounded" in res["uncontaminated_reason"]
    assert res["per_dataset_epsilon_uncontaminated"] == [[], []]
    np.testing.assert_allclose(res["contamination_rate"], [150 ** -0.125, 300 ** -0.125], rtol=1e-15)
    fit = results["rate_fit"]["d3_contaminated"]
    assert fit["ok"] and results["rate_fit"]["d3_uncontaminated"] is None
    np.testing.assert_allclose(fit["slope"], np.polyfit(np.log([150, 300]), np.log(eps), 1)[0], rtol=1e-10)
    assert results["rate_fit"]["theorem4_rate"] == -0.125
    # the sensitivity run reuses the main run's dataset draws: scale 1 is the main run at n = 150
    sens = results["sensitivity"]
    assert [r["contamination_scale"] for r in sens["rows"]] == [1.0, 2.0] and sens["n"] == 150
    assert sens["rows"][0]["epsilon_hat"] == eps[0]
    # so does theta* -> 1 theta*: the theta* sweep rebuilds the model from the scaled theta*
    theta = results["theta_sensitivity"]
    assert theta["multiples"] == [1.0] and theta["rows"][0]["theta_star"] == [0.5, -1.0, 1.0]
    assert theta["rows"][0]["epsilon_hat"] == eps[0]
    rows = contamination_linear.headline(results)
    assert rows[0]["dpjax"].endswith("/ inf") and rows[2]["dpjax"] == fit["slope"]


def test_auto_grid_and_theta_star_choices():
    assert common.default_theta_star(5) == [0.5, -1.0, 1.0, -0.5, 0.25]
    assert common.default_theta_star(10) == [0.5, -1.0, 1.0, -0.5, 0.25] * 2
    # at most 5000 records in the product with the response grid, vertices at worst
    assert common.auto_grid_per_axis(5, 2) == 5 and common.auto_grid_per_axis(5, 41) == 3
    assert common.auto_grid_per_axis(10, 41) == 2 and common.auto_grid_per_axis(10, 2) == 2


def test_argument_errors_and_cli_registration():
    with pytest.raises(ValueError, match=r"--dims=\[1\]: every d must be >= 2"):
        contamination_linear.run(tiny_args(contamination_linear, "--dims", "1"))
    with pytest.raises(ValueError, match=r"--delta-factor=0(\.0)? violates delta_factor > 0"):
        contamination_cauchy.run(tiny_args(contamination_cauchy, "--delta-factor", "0"))
    from dpjax.cli import _add_module_arguments, build_parser

    for name in ("contamination-linear", "contamination-cauchy"):
        argv = ["reproduce", name, "--quick", "--dims", "5", "--contamination-scale", "3"]
        parser = build_parser()
        _add_module_arguments(parser, argv)
        args = parser.parse_args(argv)
        assert args.name == name and args.dims == [5] and args.contamination_scale == 3.0 and args.quick
    argv = ["reproduce", "contamination-logistic"]
    parser = build_parser()
    _add_module_arguments(parser, argv)
    assert parser.parse_args(argv).dims == [5, 10]  # on its own: the paper's two dimensions
    # inside contamination-mean the logistic comparison keeps one d (its theta*'s)
    from dpjax.experiments.contamination import mean as contamination_mean

    parser = argparse.ArgumentParser()
    contamination_mean.add_arguments(parser)
    assert parser.parse_args([]).logistic_dims is None
