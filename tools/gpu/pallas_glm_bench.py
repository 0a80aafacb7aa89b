"""The Pallas GLM kernel against the XLA GLM path and blackjax, in one run (issue 21, item 2).

Workloads (float32, full precision, no TF32):

* ``logistic``: logistic regression d = 20, n = 10,000 synthetic records, uniform batches with
  replacement b = 128, 65,536 pairs: dpjax pair-steps/s (kernel; XLA GLM path) over blackjax
  ``sgld`` chain-steps/s (vmapped over as many chains, a key split per chain per step);
* ``breast-cancer``: the breast-cancer audit's workload (``dpjax reproduce breast-cancer-audit``):
  logistic regression on scikit-learn's 569-record data (455 training records, 30 standardised
  features plus an intercept, d = 31), noisy clipped SGLD with Poisson batches q = 0.05,
  C = 1, 100,000 pairs x 400 steps: seconds of the kernel and of the XLA GLM path (the goal:
  <= 60 s on one H100). Its blackjax row is a *reference only*: blackjax has no Poisson
  batches or per-record clipping, so it runs uniform batches of b = q n = 23 unclipped.

Every rate is a median of ``--repeats`` timed calls after a compiling call, measured in the same
process on the same device. Usage on a GPU machine::

    python tools/gpu/pallas_glm_bench.py --json out.json           # both workloads, full size
    python tools/gpu/pallas_glm_bench.py --pairs 256 --steps 4     # a quick check (CPU: interpret mode, slow)

The kernel is called directly (``dpjax.engine.pallas_glm.advance``), as the runner will once it
dispatches to it; the XLA path is ``dpjax.engine.reference.advance`` with ``GLMGradients``.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np


def _timed(fn, repeats: int) -> tuple[float, float]:
    """(seconds of the first, compiling call; median seconds of ``repeats`` further calls)."""
    start = time.perf_counter()
    jax.block_until_ready(fn())
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return first, statistics.median(times)


def _dpjax_seconds(model, pair, sampler, pairs: int, steps: int, repeats: int, seed: int = 0) -> dict:
    """Seconds of ``steps`` steps of ``pairs`` pairs on the kernel and on the XLA GLM path."""
    from dpjax.engine import pallas_glm, reference, runner
    from dpjax.engine.gradients import provider_for

    dtype = jnp.float32
    reason = pallas_glm.unsupported_reason(model, sampler)
    if reason is not None:
        raise SystemExit(f"the kernel cannot run this workload: {reason}")
    n = pair.dataset.num_slots
    out = {}
    with jax.default_matmul_precision("highest"):
        provider, host = provider_for(model, pair, "glm", dtype, sampler)
        data = jax.device_put(host)
        sampler_arg = runner._sampler_leaves(sampler, dtype)
        _, keys = reference.chain_setup(sampler_arg, jax.random.key(seed), jnp.arange(pairs, dtype=jnp.uint32), num_slots=n)
        state = reference.PairState(jnp.zeros((pairs, model.dim), dtype), jnp.zeros((pairs, model.dim), dtype), jnp.zeros(pairs, dtype), jnp.ones(pairs, bool))
        index = jnp.asarray(pair.index, jnp.int32)
        start, count = jnp.int32(0), jnp.int32(steps)
        kernel = lambda: pallas_glm.advance(sampler_arg, data, index, keys, state, start, count, provider=provider, num_slots=n, mesh=None)
        loop = runner.xla_loop_options(provider, sampler, 1, pairs, n, model.dim, dtype)  # as run_coupled runs the XLA path
        xla = lambda: reference.advance(sampler_arg, data, index, keys.words, keys.batching, state, start, count, provider=provider, num_slots=n,
                                        unroll=runner.default_unroll(), **loop)
        for name, fn in (("kernel", kernel), ("xla_glm", xla)):
            first, median = _timed(fn, repeats)
            out[name] = dict(first_call_s=first, median_s=median, pair_steps_per_s=pairs * steps / median)
        # the two paths' numbers agree (float32 rounding): a benchmark of a wrong kernel is worthless
        a, b = kernel(), xla()
        out["max_abs_position_difference"] = float(jnp.max(jnp.abs(a.position - b.position)))
        out["max_abs_path_loss_difference"] = float(jnp.max(jnp.abs(a.path_loss - b.path_loss)))
    return out


def _blackjax_seconds(x, y, prior_precision: float, step_size: float, temperature: float, chains: int, steps: int, batch_size: int, repeats: int) -> dict:
    """blackjax sgld on logistic regression, vmapped over chains (uniform batches of b)."""
    import blackjax
    from blackjax.sgmcmc.gradients import grad_estimator

    n = x.shape[0]
    data_x, data_y = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)
    grad_fn = grad_estimator(lambda th: -0.5 * prior_precision * jnp.sum(th**2),
                             lambda th, rec: rec[1] * (rec[0] @ th) - jax.nn.softplus(rec[0] @ th), n)
    sgld = blackjax.sgld(grad_fn)

    from dpjax.bench._baselines import uniform_batch_chains

    # blackjax's step size is the Euler gamma = eta / 2
    run = jax.jit(uniform_batch_chains(lambda k, p, idx: sgld.step(k, p, (data_x[idx], data_y[idx]), step_size / 2, temperature),
                                       jnp.zeros((chains, x.shape[1]), jnp.float32), steps, batch_size, n))

    with jax.default_matmul_precision("highest"):
        first, median = _timed(lambda: run(jax.random.key(0)), repeats)
    return dict(first_call_s=first, median_s=median, chain_steps_per_s=chains * steps / median)


def logistic(pairs: int, steps: int, repeats: int) -> dict:
    import dpjax
    from dpjax import samplers
    from dpjax.models.logistic import logistic_regression

    n, d, b, eta = 10_000, 20, 128, 1e-4
    rs = np.random.default_rng(0)
    x = rs.normal(size=(n, d)) / np.sqrt(d)
    truth = rs.normal(size=d)
    y = (rs.uniform(size=n) < 1 / (1 + np.exp(-x @ truth))).astype(np.float64)
    with jax.enable_x64(True):
        pair = dpjax.replace_one(dpjax.make_dataset(x=x, y=y), 0, {"x": x[0] * 3.0, "y": np.array(1.0 - y[0])})
    model = logistic_regression(1.0, d)
    sampler = samplers.sgld(eta, batching="uniform", batch_size=b)
    ours = _dpjax_seconds(model, pair, sampler, pairs, steps, repeats)
    theirs = _blackjax_seconds(x, y, 1.0, eta, 1.0, pairs, steps, b, repeats)
    return dict(workload=f"logistic regression d={d}, n={n}, uniform b={b}, float32", pairs=pairs, steps=steps, dpjax=ours, blackjax=theirs,
                kernel_over_blackjax=ours["kernel"]["pair_steps_per_s"] / theirs["chain_steps_per_s"],
                xla_glm_over_blackjax=ours["xla_glm"]["pair_steps_per_s"] / theirs["chain_steps_per_s"])


def breast_cancer(pairs: int, steps: int, repeats: int) -> dict:
    import dpjax
    from dpjax import samplers
    from dpjax.experiments import breast_cancer_audit as audit
    from dpjax.models.logistic import logistic_regression

    p = audit.DEFAULTS
    data = audit.load_data(p["test_fraction"])
    x = np.concatenate([np.ones((data["x_train"].shape[0], 1)), data["x_train"]], axis=1)  # theta = (b, w) as the audit's model
    y = data["y_train"]
    with jax.enable_x64(True):
        pair = dpjax.add_remove(dpjax.make_dataset(x=x, y=y), 0)
    precision = 1.0 / p["prior_scale"] ** 2
    model = logistic_regression(precision, x.shape[1])
    temperature = audit.temperature_for(p["noise_multiplier"], p["step_size"], p["clip"], p["rate"])
    sampler = samplers.sgld(p["step_size"], batching="poisson", sampling_rate=p["rate"], temperature=temperature, parameterisation="euler", clip_norm=p["clip"])
    ours = _dpjax_seconds(model, pair, sampler, pairs, steps, repeats)
    b = max(1, round(p["rate"] * x.shape[0]))
    theirs = _blackjax_seconds(x, y, precision, p["step_size"], temperature, pairs, steps, b, repeats)
    return dict(workload=f"breast-cancer audit: d={x.shape[1]}, n={x.shape[0]}, Poisson q={p['rate']}, clip C={p['clip']}, float32", pairs=pairs, steps=steps,
                dpjax=ours, blackjax_reference_only=dict(theirs, note=f"uniform b={b}, no clipping: blackjax has neither Poisson batches nor clipping"),
                kernel_seconds=ours["kernel"]["median_s"], xla_glm_seconds=ours["xla_glm"]["median_s"])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=["logistic", "breast-cancer", "both"], default="both")
    parser.add_argument("--pairs", type=int, default=None, help="pairs (default 65,536 logistic; 100,000 breast-cancer)")
    parser.add_argument("--steps", type=int, default=None, help="steps per timed call (default 200 logistic; 400 breast-cancer)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    results = dict(device=str(jax.devices()[0]), backend=jax.default_backend(), jax=jax.__version__, host=platform.node(), rows=[])
    if args.workload in ("logistic", "both"):
        results["rows"].append(logistic(args.pairs or 65_536, args.steps or 200, args.repeats))
    if args.workload in ("breast-cancer", "both"):
        results["rows"].append(breast_cancer(args.pairs or 100_000, args.steps or 400, args.repeats))
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    return results


if __name__ == "__main__":
    main()
