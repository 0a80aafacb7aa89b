"""The harnesses of ``dpjax bench poisson`` and ``dpjax bench real-data`` at tiny sizes: they run,
time both sides of each ratio in the same rounds, and report what BENCHMARKS.md quotes. (The
speeds themselves are benchmarks, not tests.)"""
import argparse

import numpy as np

from dpjax.bench import poisson, real_data


def _args(module, **values):
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    args = parser.parse_args([])
    for k, v in values.items():
        setattr(args, k, v)
    return args


def test_poisson_bench_reports_both_sides_of_the_ratio():
    out = poisson.run(_args(poisson, workloads="numpyro,batched", chains=4, steps=2, repeats=2))
    recognised, batched = out["rows"]
    assert (recognised["engine"], batched["engine"]) == ("glm", "batched")  # the general path has its own row
    for row in (recognised, batched):
        assert row["sampling_rate"] == 32 / 500 and row["batch_size"] == 32
        assert row["uniform_pair_steps_per_s"] > 0 and row["poisson_pair_steps_per_s"] > 0
        assert np.isfinite(row["poisson_over_uniform"]) and row["poisson_over_uniform"] > 0


def test_real_data_bench_reports_the_band_and_its_cost():
    out = real_data.run(_args(real_data, pairs=400, baseline_pairs=200, steps=3))
    small, large = out["rows"]
    assert (small["pairs"], large["pairs"]) == (200, 400)
    for row in (small, large):
        assert row["pairs_per_s"] > 0 and row["wall_seconds"] > 0
        assert "dpjax audit" in row["text"]
        bounds = [v for k, v in row.items() if k.endswith("(bound)")]
        assert bounds and all(b > 0 for b in bounds)  # bounds="auto" gave the sampler's bounds
