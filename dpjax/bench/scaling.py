"""``dpjax bench scaling``: coupled throughput as chains, devices and precision change.

Workload: cyclic SGLD (b = 1) on paper 000's eq. 7 pair at ``--records`` n (1-D Bayesian
linear regression, alpha = 0.1, beta = 1, D = n copies of (x_h, c x_h), c = n^1.001), step
size eta = 2 / (alpha + n x_h^2 beta)^2 as in :mod:`dpjax.bench.coupled`, run by
:func:`dpjax.run_coupled`. Every measurement runs in a fresh subprocess with a forced number
of host devices (``XLA_FLAGS=--xla_force_host_platform_device_count=D``), so the device count
is the only thing that changes; ``pair_steps_per_s`` = pairs x steps / stepping time
(compilation excluded), median over ``--repeats``.

Reported (all from the same invocation):

* ``baseline``: 1 device, float64, ``--chains`` pairs: the reference of every ratio.
* ``chains``: 1 device, float64, K = 1e3, 1e4, ... up to ``--max-chains`` (stops at the first
  size that fails, e.g. out of memory: ``stopped_at``).
* ``devices``: float64, ``--chains`` pairs on 1, 2, 4 forced host devices. On a CPU these
  devices share the host's cores, so they measure sharding overhead, not extra compute.
* ``float32``: 1 device, float32, ``--chains`` pairs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ALPHA, BETA, X_H, GAMMA2 = 0.1, 1.0, 1.8, 1.001


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", type=int, default=1000, help="n (default 1000)")
    parser.add_argument("--chains", type=int, default=10000, help="pairs for the baseline, device and dtype runs (default 1e4)")
    parser.add_argument("--max-chains", type=int, default=100000, help="largest K of the chains sweep (default 1e5)")
    parser.add_argument("--steps", type=int, default=200, help="steps per run (default 200)")
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4], help="forced host device counts (default 1 2 4)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per measurement; medians (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the chains (default 0)")


def measure(records: int, chains: int, steps: int, dtype: str, repeats: int, seed: int) -> dict:
    """Median pair-steps/s of run_coupled in this process (all its devices)."""
    import jax
    import numpy as np

    import dpjax
    from dpjax import models, samplers

    n = records
    c = float(n) ** GAMMA2
    with jax.enable_x64(True):
        dataset = models.regression_dataset(np.full((n, 1), X_H), np.full(n, c * X_H))
        pair = dpjax.replace_one(dataset, 0, {"x": np.array([X_H / 2]), "y": np.array(c * X_H / 2)})
    model = models.bayesian_linear_regression(BETA, ALPHA, dim=1)
    sampler = samplers.cyclic_sgld(2.0 / (ALPHA + n * X_H**2 * BETA) ** 2)
    rates, compile_s = [], []
    for r in range(repeats):
        res = dpjax.run_coupled(seed + r, model, pair, sampler, num_pairs=chains, num_steps=steps, progress=False, dtype=dtype, chunk_size=steps)
        rates.append(chains * steps / res.config["run_seconds"])
        compile_s.append(res.config["compile_seconds"])
    return {
        "pair_steps_per_s": statistics.median(rates),
        "compile_seconds": statistics.median(compile_s),
        "num_devices": len(jax.devices()),
        "chains": chains,
        "dtype": dtype,
        "nonfinite": int(res.num_nonfinite),
    }


def _in_subprocess(devices: int, **job) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    proc = subprocess.run([sys.executable, "-m", "dpjax.bench.scaling", "--worker", json.dumps(job)], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or "").strip().splitlines()[-1:] or ["no output"]
        return {"error": f"exit {proc.returncode}: {tail[0][:300]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(args) -> dict:
    common = dict(records=args.records, steps=args.steps, repeats=args.repeats, seed=args.seed)
    baseline = _in_subprocess(1, chains=args.chains, dtype="float64", **common)
    if "error" in baseline:
        raise RuntimeError(f"baseline measurement failed: {baseline['error']}")
    base = baseline["pair_steps_per_s"]

    def with_ratio(m):
        if "error" not in m:
            m["ratio_to_baseline"] = m["pair_steps_per_s"] / base
        return m

    chains, stopped_at, k = [], None, 1000
    while k <= args.max_chains:
        m = with_ratio(_in_subprocess(1, chains=k, dtype="float64", **common))
        chains.append(m)
        if "error" in m:
            stopped_at = k
            break
        k *= 10
    devices = [with_ratio(_in_subprocess(d, chains=args.chains, dtype="float64", **common)) for d in args.devices]
    float32 = with_ratio(_in_subprocess(1, chains=args.chains, dtype="float32", **common))
    return {
        "workload": f"cyclic SGLD, paper 000 eq. 7 pair, n={args.records}, {args.steps} steps, run_coupled",
        "baseline_1_device_float64": baseline,
        "chains": chains,
        "chains_stopped_at": stopped_at,
        "devices": devices,
        "float32": float32,
        "note": "ratios are pair-steps/s over the baseline from this same invocation; forced host devices share the CPU cores",
    }


if __name__ == "__main__":  # the worker: one measurement, one JSON line on stdout
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        job = json.loads(sys.argv[2])
        print(json.dumps(measure(**job)))
    else:
        parser = argparse.ArgumentParser(prog="python -m dpjax.bench.scaling")
        add_arguments(parser)
        print(json.dumps(run(parser.parse_args())))
