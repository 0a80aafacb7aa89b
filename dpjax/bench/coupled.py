"""``dpjax bench coupled``: coupled pair-steps per second against two baselines from the same run.

Workload: paper 000's setting (NOTES 000 eq. 4 and 7) scaled to n records: 1-D Bayesian
linear regression with alpha = 0.1, beta = 1, D = n copies of (x_h, c x_h) with x_h = 1.8,
c = n^1.001, D' = D with record 0 replaced by (x_h/2, c x_h/2), step size
eta = 2 / (alpha + n x_h^2 beta)^2 (Welling–Teh), start at the prior mean, float64.

Measured (compiled once, then timed; medians over ``--repeats``):

* ``pair_steps_per_s``: :func:`dpjax.run_coupled` on the model written as a plain
  :class:`dpjax.Model` (any user model's path: autodiff gradients, engine "reference");
  ``quadratic_pair_steps_per_s``: the same chains with the library's
  :func:`dpjax.models.bayesian_linear_regression` (closed-form tables; engine "auto").
* ``blackjax_chain_steps_per_s``: the straightforward JAX version: blackjax's ``sgld``
  kernel with blackjax's minibatch gradient estimator, vmapped over chains with a
  per-chain key split every step, one dataset, each chain's order a materialised
  ``jax.random.permutation`` (for cyclic; a uniform draw for ``--sampler sgld``).
* ``fused_single_chain_steps_per_s``: a hand-fused loop of the same chains on one dataset:
  the closed-form 1-D update theta <- theta - (eta/2)(alpha theta + n beta x (x theta - y))
  + sqrt(eta) z, vectorised over the chains, with one normal draw per step for all chains.

A pair-step advances two chains (D and D') and the path loss; a chain-step one chain.
"""
from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

ALPHA, BETA, X_H, GAMMA2 = 0.1, 1.0, 1.8, 1.001
SAMPLERS = ("cyclic-sgld", "sgld", "ula")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sampler", choices=SAMPLERS, default="cyclic-sgld", help="the sampler benchmarked (default cyclic-sgld)")
    parser.add_argument("--records", type=int, default=None, help="n (default 1000; 10,000 for --workload logistic)")
    parser.add_argument("--chains", type=int, default=None, help="chain pairs K (default 4096; 2048 for --workload logistic, half for its full batches)")
    parser.add_argument("--steps", type=int, default=None, help="steps T (default 2000; 200 for --workload logistic, a tenth for its full batches)")
    parser.add_argument("--batch-size", type=int, default=None, help="b for sgld / cyclic-sgld (default 1; 128 for --workload logistic)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats; medians are reported (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the chains (default 0)")
    parser.add_argument("--workload", choices=("quadratic", "logistic"), default="quadratic",
                        help="quadratic (default: the rows above) or logistic (issue 21's rows: logistic regression, uniform "
                             "batches / full batch / clipped, float32 and float64, and compile times; see dpjax.bench.logistic)")
    parser.add_argument("--dim", type=int, default=20, help="d of the logistic workload (default 20)")
    parser.add_argument("--compile-dims", type=int, nargs="*", default=[20, 80, 320], help="d of the logistic compile rows (default 20 80 320)")


def _problem(n: int):
    import dpjax

    c = float(n) ** GAMMA2
    model = dpjax.Model(
        lambda th, r: -BETA / 2 * (r["y"] - r["x"] @ th) ** 2,
        lambda th: -ALPHA / 2 * jnp.sum(th**2),
        dim=1,
        name="bayesian-linear-regression-1d",
    )
    x = np.full((n, 1), X_H)
    y = np.full(n, c * X_H)
    with jax.enable_x64(True):
        dataset = dpjax.make_dataset(x=x, y=y)
        pair = dpjax.replace_one(dataset, 0, {"x": np.array([X_H / 2]), "y": np.array(c * X_H / 2)})
    eta = 2.0 / (ALPHA + n * X_H**2 * BETA) ** 2
    return model, pair, x[:, 0], y, eta


def _sampler(name: str, eta: float, batch_size: int):
    from dpjax import samplers

    if name == "cyclic-sgld":
        return samplers.cyclic_sgld(eta, batch_size=batch_size)
    if name == "sgld":
        return samplers.sgld(eta, batching="uniform", batch_size=batch_size)
    return samplers.ula(eta, parameterisation="welling-teh")


def _time_compiled(fn, *args) -> float:
    compiled = jax.jit(fn).lower(*args).compile()
    jax.block_until_ready(compiled(*args))  # warm
    start = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    return time.perf_counter() - start


def _blackjax_seconds(name, x, y, eta, chains, steps, batch_size, seed) -> float:
    import blackjax
    from blackjax.sgmcmc.gradients import grad_estimator

    n = len(x)
    data_x, data_y = jnp.asarray(x), jnp.asarray(y)
    grad_fn = grad_estimator(
        lambda th: -ALPHA / 2 * th**2,
        lambda th, rec: -BETA / 2 * (rec[1] - rec[0] * th) ** 2,
        n,
    )
    sgld = blackjax.sgld(grad_fn)
    b = n if name == "ula" else batch_size

    def run(key):
        positions = jnp.zeros((chains,))
        orders = jax.vmap(lambda k: jax.random.permutation(k, n))(jax.random.split(jax.random.fold_in(key, 1), chains))

        def one_step(pos, t):
            keys = jax.random.split(jax.random.fold_in(key, t), chains)

            def chain(k, p, order):
                k_batch, k_noise = jax.random.split(k)
                if name == "cyclic-sgld":
                    idx = jax.lax.dynamic_slice(order, ((t * b) % n,), (b,))
                elif name == "sgld":
                    idx = jax.random.randint(k_batch, (b,), 0, n)
                else:
                    idx = jnp.arange(n)
                # blackjax's step size is the Euler gamma = eta / 2
                return sgld.step(k_noise, p, (data_x[idx], data_y[idx]), eta / 2)

            return jax.vmap(chain)(keys, pos, orders), None

        return jax.lax.scan(one_step, positions, jnp.arange(steps))[0]

    return _time_compiled(run, jax.random.key(seed))


def _fused_seconds(name, x, y, eta, chains, steps, batch_size, seed) -> float:
    n = len(x)
    data_x, data_y = jnp.asarray(x), jnp.asarray(y)
    b = n if name == "ula" else batch_size

    def run(key):
        theta = jnp.zeros((chains,))
        # (n, K): the records of one step for all chains are one contiguous row
        orders = jax.vmap(lambda k: jax.random.permutation(k, n))(jax.random.split(jax.random.fold_in(key, 1), chains)).T

        def one_step(th, t):
            if name == "cyclic-sgld":
                idx = jax.lax.dynamic_slice_in_dim(orders, (t * b) % n, b, axis=0).T  # (K, b)
            elif name == "sgld":
                idx = jax.random.randint(jax.random.fold_in(key, 2 * t + 1), (chains, b), 0, n)
            else:
                idx = jnp.broadcast_to(jnp.arange(n), (chains, n))
            xi, yi = data_x[idx], data_y[idx]
            grad = ALPHA * th + (n / b) * BETA * jnp.sum(xi * (xi * th[:, None] - yi), axis=1)
            z = jax.random.normal(jax.random.fold_in(key, 2 * t), (chains,))
            return th - eta / 2 * grad + jnp.sqrt(eta) * z, None

        return jax.lax.scan(one_step, theta, jnp.arange(steps))[0]

    return _time_compiled(run, jax.random.key(seed))


def run(args) -> dict:
    import dpjax

    logistic_workload = getattr(args, "workload", "quadratic") == "logistic"
    defaults = dict(records=10_000, chains=2048, steps=200, batch_size=128) if logistic_workload else dict(records=1000, chains=4096, steps=2000, batch_size=1)
    for name, value in defaults.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    if logistic_workload:
        from . import logistic

        for name in ("records", "chains", "steps", "repeats", "dim", "batch_size"):
            if getattr(args, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')}={getattr(args, name)} must be >= 1")
        return logistic.run_rows(args)
    n, chains, steps = args.records, args.chains, args.steps
    for name in ("records", "chains", "steps", "repeats"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name}={getattr(args, name)} must be >= 1")
    from dpjax.models import bayesian_linear_regression

    model, pair, x, y, eta = _problem(n)
    quadratic = bayesian_linear_regression(BETA, ALPHA)
    sampler = _sampler(args.sampler, eta, args.batch_size)
    ours, closed_form, theirs, fused = [], [], [], []
    nonfinite = 0
    engine = None
    for r in range(-1, args.repeats):  # r = -1 compiles, untimed
        seed = args.seed + max(r, 0)
        # engine "reference" named: "auto" now recognises this plain Model as quadratic (engine/detect.py)
        result = dpjax.run_coupled(seed, model, pair, sampler, num_pairs=chains, num_steps=steps, progress=False, chunk_size=steps, engine="reference")
        closed = dpjax.run_coupled(seed, quadratic, pair, sampler, num_pairs=chains, num_steps=steps, progress=False, chunk_size=steps)
        engine = closed.config["engine"]
        if r < 0:
            continue
        nonfinite += result.num_nonfinite + closed.num_nonfinite
        ours.append(chains * steps / result.config["run_seconds"])
        closed_form.append(chains * steps / closed.config["run_seconds"])
        with jax.enable_x64(True):
            theirs.append(chains * steps / _blackjax_seconds(args.sampler, x, y, eta, chains, steps, args.batch_size, args.seed + r))
            fused.append(chains * steps / _fused_seconds(args.sampler, x, y, eta, chains, steps, args.batch_size, args.seed + r))
    pair_rate, quadratic_rate, blackjax_rate, fused_rate = (statistics.median(v) for v in (ours, closed_form, theirs, fused))
    return {
        "sampler": args.sampler,
        "records": n,
        "chains": chains,
        "steps": steps,
        "batch_size": args.batch_size,
        "dtype": "float64",
        "repeats": args.repeats,
        "devices": len(jax.devices()),
        "pair_steps_per_s": pair_rate,
        "quadratic_pair_steps_per_s": quadratic_rate,
        "quadratic_engine": engine,
        "blackjax_chain_steps_per_s": blackjax_rate,
        "fused_single_chain_steps_per_s": fused_rate,
        "pair_over_blackjax": pair_rate / blackjax_rate,
        "quadratic_over_blackjax": quadratic_rate / blackjax_rate,
        "pair_over_fused": pair_rate / fused_rate,
        "pair_steps_per_s_all": ours,
        "quadratic_pair_steps_per_s_all": closed_form,
        "blackjax_chain_steps_per_s_all": theirs,
        "fused_single_chain_steps_per_s_all": fused,
        "nonfinite_pairs": nonfinite,
    }
