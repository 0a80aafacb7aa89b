"""`dpjax reproduce contamination-mean` at a tiny size: structure and sanity of the JSON, and
the CLI wiring. The reproduction's numbers themselves rest on the estimator tests
(tests/test_contamination.py: brute-force numpy Algorithm 1 on one dataset)."""
import argparse
import math

import numpy as np
import pytest

from dpjax.experiments.contamination import mean as cm
from dpjax.experiments.contamination._arguments import int_list


def tiny_args(**overrides):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out")
    cm.add_arguments(parser)
    # The compiled batches are those of other runs in the suite, so whichever runs second loads
    # them from the run's compilation cache: Table 1's (m = 500, 601 grid points, 20 datasets a
    # batch, records padded to 1024) is the notebook's (notebooks/paper003_contamination.ipynb),
    # the logistic comparison's (d = 5, n = 200, m = 100, 3 points per axis) is
    # test_contamination_logistic.py's zero-rate run
    args = parser.parse_args(["--n-values", "100,1000", "--K", "40", "--particles", "500", "--grid", "601", "--dataset-batch", "20",
                              "--logistic-n-values", "200", "--logistic-K", "8", "--logistic-particles", "100", "--logistic-grid-per-axis", "3"])
    for k, v in overrides.items():
        setattr(args, k, v)
    return args


@pytest.mark.slow
def test_tiny_reproduction_structure_and_sanity():
    results, fig = cm.run(tiny_args())
    assert fig is not None
    n = results["n"]
    assert n == [100, 1000]
    for key in ("epsilon_hat", "paper_epsilon_hat", "interval_low", "interval_high", "bootstrap_se", "contamination_rate", "delta", "seconds"):
        assert len(results[key]) == len(n), key
    assert results["paper_epsilon_hat"] == [2.85, 0.94]
    np.testing.assert_allclose(results["contamination_rate"], [100 ** -0.125, 1000 ** -0.125], rtol=1e-15)
    np.testing.assert_allclose(results["delta"], [1e-3, 1e-4], rtol=1e-15)
    eps = np.asarray(results["epsilon_hat"])
    assert np.all(np.isfinite(eps)) and np.all(eps > 0)
    assert results["num_failed"] == [0, 0]
    # more data and less contamination still give more privacy here (Table 1's trend)
    assert eps[1] < eps[0]
    # the reported quantile is the order statistic ceil(0.99 K) of the per-dataset values
    for e, per in zip(eps, results["per_dataset_epsilon"]):
        per = np.sort(per)
        assert len(per) == 40
        assert e == per[math.ceil(0.99 * 40) - 1]
    # K = 40 cannot bound a 99% quantile from above at 95%: the interval says so
    assert all(h == math.inf for h in results["interval_high"])
    diag = results["diagnostics"]
    assert max(diag["max_interpolation_error"]) < 1e-6
    assert min(diag["min_particles_outside_box"]) >= 1  # the box is set by resolved tail weight
    assert results["num_unresolved_tail"] == [0, 0]
    assert max(diag["max_map_error_in_sd"]) < 1e-6
    # the logistic-regression comparison (paper 003 §4.3) rides along, both arms at each n
    lr = results["logistic_regression"]
    assert lr["n"] == [200] and lr["settings"]["dim"] == 5 and lr["settings"]["K"] == 8
    np.testing.assert_allclose(lr["contamination_rate"], [200 ** -0.125], rtol=1e-15)
    for arm in ("contaminated", "uncontaminated"):
        assert lr[f"num_failed_{arm}"] == [0]
        per = np.sort(lr[f"per_dataset_epsilon_{arm}"][0])
        assert lr[f"epsilon_hat_{arm}"][0] == per[math.ceil(0.99 * 8) - 1] and np.all(per > 0)
    assert lr["ratio_uncontaminated_over_contaminated"][0] == lr["epsilon_hat_uncontaminated"][0] / lr["epsilon_hat_contaminated"][0]
    # the headline: Table 1's printed values beside dpjax's, then the logistic ratio beside "~4"
    rows = cm.headline(results)
    assert [(r["paper"], r["dpjax"]) for r in rows[:2]] == list(zip(results["paper_epsilon_hat"], results["epsilon_hat"]))
    assert rows[2]["paper"] == "~4" and rows[2]["dpjax"] == lr["ratio_uncontaminated_over_contaminated"][0]
    # dataset k is the same draw whatever K and the padding: a run with K = 20 (same compiled
    # batch shape, so no recompilation) reproduces the first 20 per-dataset values of n = 100
    from dpjax.estimators.contamination import contamination_epsilon

    est = contamination_epsilon(
        cm_model(), theta_star=30.0, num_records=100, contamination_rate=100 ** -0.125, delta=1e-3, num_datasets=20,
        num_particles=500, num_record_grid=601, dataset_batch=20, pad_records_to=1000, interpolation_nodes=32,
    )
    np.testing.assert_array_equal(est.epsilons, results["per_dataset_epsilon"][0][:20])


def cm_model():
    from dpjax.models.contamination import truncated_normal_mean_contamination

    return truncated_normal_mean_contamination()


def test_argument_errors():
    with pytest.raises(ValueError, match=r"--width=-1(\.0)? violates width > 0"):
        cm.run(tiny_args(width=-1.0))
    parser = argparse.ArgumentParser()
    cm.add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--n-values", "100,x"])
    with pytest.raises(argparse.ArgumentTypeError, match="every n must be an integer >= 2"):
        int_list("1,100")


def test_cli_registers_the_experiment():
    from dpjax.cli import _add_module_arguments, build_parser

    argv = ["reproduce", "contamination-mean", "--quick", "--K", "5", "--n-values", "50"]
    parser = build_parser()
    _add_module_arguments(parser, argv)
    args = parser.parse_args(argv)
    assert args.name == "contamination-mean" and args.K == 5 and args.n_values == [50] and args.quick
    argv = ["reproduce", "contamination-logistic", "--K", "5", "--theta-star", "0,1,2"]
    parser = build_parser()
    _add_module_arguments(parser, argv)
    args = parser.parse_args(argv)
    assert args.name == "contamination-logistic" and args.K == 5 and args.theta_star == [0.0, 1.0, 2.0]
