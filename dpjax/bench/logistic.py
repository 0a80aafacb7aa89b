"""Logistic-regression rows of ``dpjax bench coupled --workload logistic`` (issue 21).

Workload: logistic regression (:func:`dpjax.models.logistic_regression`, prior precision 1)
with d features, n records drawn once (x_i ~ N(0, I_d / d), y_i ~ Bernoulli(sigmoid(x_i .
theta*)) for a fixed theta*), D' = D with record 0's label flipped; SGLD with step size 1e-4
(uniform batches of b, or full batches = ULA; optionally per-record clipping), start at 0.

Rows, each a ratio in one run against blackjax's ``sgld`` kernel with its minibatch gradient
estimator (one reverse-mode gradient of the batch's summed log-likelihood per chain), vmapped
over chains with a per-chain key split every step, the same data, batch size and dtype:

* ``b128`` / ``full`` / ``clipped``: dpjax pair-steps/s (``engine="auto"``: the GLM path)
  over blackjax chain-steps/s (blackjax unclipped in every row: it has no per-record
  clipping; the clipped row's cost is dpjax's alone). Medians over ``--repeats``;
  ``pair_over_blackjax_paired``: the median of each repeat's own ratio (the two timed back to
  back), the figure to trust on a machine whose speed drifts.
* ``compile``: seconds to compile one coupled step (the first call of a fresh shape: d = 20,
  80, 320) against the seconds blackjax's step takes to compile.
* ``b128 (general model)`` (float32) and ``compile (general model)`` (the largest d): the same
  logistic regression written as a plain :class:`dpjax.Model`, no GLM declaration, which the
  engine recognises as a GLM (:func:`dpjax.engine.detect.glm_form_of`).

A pair-step advances two chains and the path loss: 1x is twice blackjax's work per second.
"""
from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

STEP_SIZE = 1e-4
CLIP = 0.5


def _data(n: int, d: int, seed: int = 0):
    rs = np.random.default_rng(seed)
    x = rs.normal(size=(n, d)) / np.sqrt(d)
    theta = rs.normal(size=d)
    y = (rs.uniform(size=n) < 1 / (1 + np.exp(-x @ theta))).astype(np.float64)
    return x, y


def _pair(x, y):
    import dpjax

    with jax.enable_x64(True):
        data = dpjax.make_dataset(x=x, y=y)
        return dpjax.replace_one(data, 0, {"x": x[0], "y": np.array(1.0 - y[0])})


def _blackjax_run(x, y, chains: int, steps: int, batch_size, dtype):
    """A jitted blackjax SGLD loop over ``chains`` chains (batch_size None: full batches)."""
    import blackjax
    from blackjax.sgmcmc.gradients import grad_estimator

    n = len(x)
    data_x, data_y = jnp.asarray(x, dtype), jnp.asarray(y, dtype)

    def loglik(th, rec):
        z = jnp.dot(rec[0], th)
        return rec[1] * z - jax.nn.softplus(z)

    sgld = blackjax.sgld(grad_estimator(lambda th: -0.5 * jnp.sum(th**2), loglik, n))

    def run(key):
        def one_step(pos, t):
            keys = jax.random.split(jax.random.fold_in(key, t), chains)

            def chain(k, p):
                k_batch, k_noise = jax.random.split(k)
                if batch_size is None:
                    batch = (data_x, data_y)
                else:
                    idx = jax.random.randint(k_batch, (batch_size,), 0, n)
                    batch = (data_x[idx], data_y[idx])
                return sgld.step(k_noise, p, batch, jnp.asarray(STEP_SIZE, dtype))

            return jax.vmap(chain)(keys, pos), None

        return jax.lax.scan(one_step, jnp.zeros((chains, x.shape[1]), dtype), jnp.arange(steps))[0]

    return jax.jit(run)


def _sampler(row: str, batch_size: int):
    from dpjax import samplers

    if row == "full":
        return samplers.ula(STEP_SIZE)
    return samplers.sgld(STEP_SIZE, batching="uniform", batch_size=batch_size, clip_norm=CLIP if row == "clipped" else None)


def _general_model(d: int):
    """Logistic regression written as a plain ``dpjax.Model`` (no GLM declaration), as a user
    would: the engine must recognise its GLM form (dpjax.engine.detect.glm_form_of)."""
    import dpjax

    def log_likelihood(theta, record):
        z = jnp.dot(record["x"], theta)
        return record["y"] * z - jax.nn.softplus(z)

    return dpjax.Model(log_likelihood=log_likelihood, log_prior=lambda t: -0.5 * jnp.sum(t**2), dim=d, name=f"logistic_general_{d}")


def throughput(row: str, dtype, *, n: int, d: int, chains: int, steps: int, batch_size: int, repeats: int, seed: int = 0,
               form: str = "declared") -> dict:
    """One row: dpjax's and blackjax's medians (alternating, after one untimed compiling call).
    ``form``: "declared" (the library's model, a declared GLM) or "general" (the same model
    written as a plain Model, recognised as a GLM by the engine)."""
    import dpjax

    x, y = _data(n, d, seed)
    pair = _pair(x, y)
    model = dpjax.models.logistic_regression(1.0, d) if form == "declared" else _general_model(d)
    sampler = _sampler(row, batch_size)
    x64 = dtype == "float64"
    jdtype = jnp.float64 if x64 else jnp.float32
    ours, theirs, engine, nonfinite = [], [], None, 0
    with jax.enable_x64(x64):
        blackjax_run = _blackjax_run(x, y, chains, steps, None if row == "full" else batch_size, jdtype)
    for r in range(-1, repeats):
        res = dpjax.run_coupled(seed + max(r, 0), model, pair, sampler, num_pairs=chains, num_steps=steps, progress=False,
                                chunk_size=steps, dtype=jdtype)
        with jax.enable_x64(x64):
            start = time.perf_counter()
            jax.block_until_ready(blackjax_run(jax.random.key(seed + max(r, 0))))
            their_seconds = time.perf_counter() - start
        if r < 0:
            continue
        engine = res.config["engine"]
        nonfinite += res.num_nonfinite
        ours.append(chains * steps / res.config["run_seconds"])
        theirs.append(chains * steps / their_seconds)
    mine, base = statistics.median(ours), statistics.median(theirs)
    # each repeat times dpjax and blackjax back to back: the median of those paired ratios is
    # robust to the machine's speed drifting between repeats (a shared VM's does, by 20-40%)
    paired = statistics.median(a / b for a, b in zip(ours, theirs))
    return {"row": row if form == "declared" else f"{row} (general model)", "dtype": dtype, "records": n, "dim": d, "chains": chains, "steps": steps,
            "batch_size": None if row == "full" else batch_size, "clip_norm": CLIP if row == "clipped" else None, "engine": engine,
            "pair_steps_per_s": mine, "blackjax_chain_steps_per_s": base, "pair_over_blackjax": mine / base,
            "pair_over_blackjax_paired": paired,
            "pair_steps_per_s_all": ours, "blackjax_chain_steps_per_s_all": theirs, "nonfinite_pairs": nonfinite}


def compile_seconds(d: int, *, n: int, batch_size: int, chains: int = 64, form: str = "declared") -> dict:
    """Seconds to compile one coupled step of a fresh shape (dpjax) and blackjax's step
    (``form`` as in :func:`throughput`)."""
    import dpjax

    x, y = _data(n, d)
    # a model object of its own: nothing compiled for another run is reused
    if form == "declared":
        model = dpjax.Model(log_likelihood=dpjax.models.logistic_regression(1.0, d).log_likelihood,
                            log_prior=lambda t: -0.5 * jnp.sum(t**2), dim=d, name=f"logistic_{d}",
                            glm=dpjax.models.logistic_regression(1.0, d).glm)
    else:
        model = _general_model(d)
    res = dpjax.run_coupled(0, model, _pair(x, y), _sampler("b128", batch_size), num_pairs=chains, num_steps=2, progress=False)
    with jax.enable_x64(True):
        fn = _blackjax_run(x, y, chains, 2, batch_size, jnp.float64)
        start = time.perf_counter()
        fn.lower(jax.random.key(0)).compile()
        theirs = time.perf_counter() - start
    ours = res.config["compile_seconds"]
    return {"row": "compile" if form == "declared" else "compile (general model)", "dim": d, "engine": res.config["engine"],
            "compile_seconds": ours, "blackjax_compile_seconds": theirs,
            "compile_over_blackjax": ours / theirs}


def run_rows(args) -> dict:
    """All logistic rows (``dpjax bench coupled --workload logistic``)."""
    n, d, b = args.records, args.dim, args.batch_size
    rows = []
    for dtype in ("float32", "float64"):
        rows.append(throughput("b128", dtype, n=n, d=d, chains=args.chains, steps=args.steps, batch_size=b, repeats=args.repeats))
        rows.append(throughput("clipped", dtype, n=n, d=d, chains=args.chains, steps=args.steps, batch_size=b, repeats=args.repeats))
        rows.append(throughput("full", dtype, n=n, d=d, chains=max(1, args.chains // 2), steps=max(1, args.steps // 10), batch_size=b,
                               repeats=args.repeats))
    # the same model written as a plain Model: recognised as a GLM by the engine (float32 b = 128 and d = 320's compile)
    rows.append(throughput("b128", "float32", n=n, d=d, chains=args.chains, steps=args.steps, batch_size=b, repeats=args.repeats,
                           form="general"))
    for dim in args.compile_dims:
        rows.append(compile_seconds(dim, n=n, batch_size=b))
    rows.append(compile_seconds(max(args.compile_dims), n=n, batch_size=b, form="general"))
    return {"workload": "logistic", "devices": len(jax.devices()), "backend": jax.default_backend(), "rows": rows}
