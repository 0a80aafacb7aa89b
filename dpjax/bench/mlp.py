"""``dpjax bench mlp``: coupled pair-steps per second of a neural network with per-record clipping, against two baselines from the same run.

Workload (issue 21, item 4): the 20-64-1 MLP classifier :func:`dpjax.models.mlp_classifier`
(tanh, d = 1,409, prior precision 1) on n synthetic records (x ~ N(0, I_20), labels from a
fixed random network), SGLD with uniform batches of b records, per-record clipping at C,
Welling–Teh step eta, every chain started at the same small random point.

Measured (compiled once, then timed; medians over ``--repeats``):

* ``pair_steps_per_s``: :func:`dpjax.run_coupled` (engine "auto", which takes the "batched"
  path: per chain one fused forward and backward pass of the model's ``weighted_grad_sum``,
  exact ghost norms, clip factors and the clipped sum as two matrix products).
* ``blackjax_chain_steps_per_s``: blackjax's ``sgld`` kernel with its minibatch gradient
  estimator on the same model, vmapped over 2K chains (one chain per side of each pair), a
  per-chain key split every step, batches drawn uniformly; **without clipping** (blackjax has
  none), so it does less work than the clipped chains.
* ``per_example_chain_steps_per_s``: a hand-written DP-SGD-style loop in plain JAX with
  clipping, the textbook way: per-record gradients by vmap(grad) (a b x d tensor per chain per
  step), each clipped to C, summed, plus the prior and the noise, vmapped over 2K chains.

Each rate is also reported per CPU second of this process (``cpu_*``: all of XLA's threads;
on a shared machine the wall clock also counts other processes' time).

A pair-step advances two chains and the path loss; a chain-step one chain. The ratios are
pair-steps/s over chain-steps/s, so 1x means dpjax does twice the baseline's chain work per
second (issue 21's convention) and 0.5x means equal chain throughput.
"""
from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from ._baselines import uniform_batch_chains

NUM_INPUTS, HIDDEN = 20, 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", type=int, default=10_000, help="n (default 10000)")
    parser.add_argument("--pairs", type=int, default=64, help="chain pairs K (default 64; the baselines run 2K chains)")
    parser.add_argument("--steps", type=int, default=20, help="steps T (default 20)")
    parser.add_argument("--batch-size", type=int, default=128, help="b (default 128)")
    parser.add_argument("--clip", type=float, default=1.0, help="per-record clipping norm C (default 1.0)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="(default float32)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats; medians are reported (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the chains (default 0)")


def _problem(n: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, NUM_INPUTS))
    teacher = rng.normal(size=NUM_INPUTS) / np.sqrt(NUM_INPUTS)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-3.0 * np.tanh(x @ teacher)))).astype(np.float64)
    return x, y


def _time_compiled(fn, *args) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call of the compiled ``fn``."""
    compiled = jax.jit(fn).lower(*args).compile()
    jax.block_until_ready(compiled(*args))  # warm
    start, cpu = time.perf_counter(), time.process_time()
    jax.block_until_ready(compiled(*args))
    return time.perf_counter() - start, time.process_time() - cpu


def _blackjax_seconds(model, x, y, eta, theta0, chains, steps, batch_size, seed) -> tuple[float, float]:
    import blackjax
    from blackjax.sgmcmc.gradients import grad_estimator

    n = len(y)
    grad_fn = grad_estimator(model.log_prior, lambda th, rec: model.log_likelihood(th, {"x": rec[0], "y": rec[1]}), n)
    sgld = blackjax.sgld(grad_fn)

    # blackjax's step size is the Euler gamma = eta / 2
    run = uniform_batch_chains(lambda k, p, idx: sgld.step(k, p, (x[idx], y[idx]), eta / 2),
                               jnp.broadcast_to(theta0, (chains,) + theta0.shape), steps, batch_size, n)
    return _time_compiled(run, jax.random.key(seed))


def _per_example_seconds(model, x, y, eta, theta0, chains, steps, batch_size, clip, seed) -> tuple[float, float]:
    n = len(y)
    record_grad = jax.grad(lambda th, xi, yi: -model.log_likelihood(th, {"x": xi, "y": yi}))
    prior_grad = jax.grad(lambda th: -model.log_prior(th))

    def step_chain(k_noise, th, idx):
        grads = jax.vmap(record_grad, in_axes=(None, 0, 0))(th, x[idx], y[idx])  # (b, d)
        norms = jnp.sqrt(jnp.sum(grads**2, axis=1))
        clipped = grads * jnp.minimum(1.0, clip / jnp.maximum(norms, 1e-30))[:, None]
        grad = prior_grad(th) + (n / batch_size) * jnp.sum(clipped, axis=0)
        return th - eta / 2 * grad + jnp.sqrt(eta) * jax.random.normal(k_noise, th.shape, th.dtype)

    run = uniform_batch_chains(step_chain, jnp.broadcast_to(theta0, (chains,) + theta0.shape), steps, batch_size, n)
    return _time_compiled(run, jax.random.key(seed))


def run(args) -> dict:
    import dpjax
    from dpjax import samplers
    from dpjax.models import mlp_classifier, mlp_classifier_dataset

    for name in ("records", "pairs", "steps", "repeats", "batch_size"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')}={getattr(args, name)} must be >= 1")
    if not args.clip > 0:
        raise ValueError(f"--clip={args.clip} must be > 0")
    n, pairs, steps, b = args.records, args.pairs, args.steps, args.batch_size
    dtype = jnp.dtype(args.dtype)
    model = mlp_classifier(1.0, NUM_INPUTS, HIDDEN)
    x, y = _problem(n, args.seed)
    with jax.enable_x64(True):
        dataset = mlp_classifier_dataset(x, y)
        pair = dpjax.replace_one(dataset, 0, {"x": np.full(NUM_INPUTS, 3.0), "y": np.array(1.0 - y[0])})
    eta = 1e-4
    sampler = samplers.sgld(eta, batching="uniform", batch_size=b, clip_norm=args.clip)
    theta0 = 0.1 * np.random.default_rng(args.seed + 1).normal(size=model.dim)

    ours, theirs, per_example = [], [], []
    # CPU seconds of this process as well as wall seconds: on a shared machine the wall clock
    # counts other processes' time, the CPU clock (all of XLA's threads) does not
    ours_cpu, theirs_cpu, per_example_cpu = [], [], []
    nonfinite, engine, compile_seconds = 0, None, None
    for r in range(-1, args.repeats):  # r = -1 compiles, untimed
        seed = args.seed + max(r, 0)
        cpu = time.process_time()
        result = dpjax.run_coupled(seed, model, pair, sampler, num_pairs=pairs, num_steps=steps, init=theta0, dtype=dtype, progress=False, chunk_size=steps)
        cpu = time.process_time() - cpu  # includes the run's setup (keys, data placement): against dpjax
        if r < 0:
            engine, compile_seconds = result.config["engine"], result.config["compile_seconds"]
            continue
        nonfinite += result.num_nonfinite
        ours.append(pairs * steps / result.config["run_seconds"])
        ours_cpu.append(pairs * steps / cpu)
        with jax.enable_x64(dtype == jnp.float64):
            xs, ys, th = jnp.asarray(x, dtype), jnp.asarray(y, dtype), jnp.asarray(theta0, dtype)
            wall, cpu = _blackjax_seconds(model, xs, ys, eta, th, 2 * pairs, steps, b, seed)
            theirs.append(2 * pairs * steps / wall)
            theirs_cpu.append(2 * pairs * steps / cpu)
            wall, cpu = _per_example_seconds(model, xs, ys, eta, th, 2 * pairs, steps, b, args.clip, seed)
            per_example.append(2 * pairs * steps / wall)
            per_example_cpu.append(2 * pairs * steps / cpu)
    pair_rate, blackjax_rate, per_example_rate = (statistics.median(v) for v in (ours, theirs, per_example))
    pair_cpu, blackjax_cpu, per_example_cpu_rate = (statistics.median(v) for v in (ours_cpu, theirs_cpu, per_example_cpu))
    return {
        "model": f"mlp {NUM_INPUTS}-{HIDDEN}-1 (d = {model.dim}), tanh",
        "records": n,
        "pairs": pairs,
        "steps": steps,
        "batch_size": b,
        "clip_norm": args.clip,
        "dtype": str(dtype),
        "repeats": args.repeats,
        "engine": engine,
        "compile_seconds": compile_seconds,
        "pair_steps_per_s": pair_rate,
        "blackjax_chain_steps_per_s": blackjax_rate,
        "per_example_chain_steps_per_s": per_example_rate,
        "pair_over_blackjax": pair_rate / blackjax_rate,
        "pair_over_per_example": pair_rate / per_example_rate,
        "cpu_pair_over_blackjax": pair_cpu / blackjax_cpu,
        "cpu_pair_over_per_example": pair_cpu / per_example_cpu_rate,
        "nonfinite_pairs": nonfinite,
        "pair_steps_per_s_all": ours,
        "blackjax_chain_steps_per_s_all": theirs,
        "per_example_chain_steps_per_s_all": per_example,
        "cpu_pair_steps_per_s_all": ours_cpu,
        "cpu_blackjax_chain_steps_per_s_all": theirs_cpu,
        "cpu_per_example_chain_steps_per_s_all": per_example_cpu,
    }
