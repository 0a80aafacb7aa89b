"""``dpjax bench poisson``: Poisson batches against uniform batches of the same expected size (issue 36).

DP-SGD and every amplified bound assume Poisson batches (each record independently with rate
q = b / n). dpjax draws their members from geometric gaps, gathered in chunks
(:meth:`dpjax.samplers.batching.Poisson.chunk`, :func:`dpjax.engine.reference.poisson_sums`), so a
step costs expected O(q n) like a uniform batch of b, not O(n). Each row times, in one run and
alternating run by run, the same model, data, pairs and steps with

* uniform batches of b (with replacement) — the baseline of the ratio;
* Poisson batches of rate b / n;

and reports pair-steps/s of both and ``poisson_over_uniform`` (the median of each repeat's own
ratio, the two timed back to back: robust to a machine whose speed drifts). Workloads, each on
the engine path ``auto`` picks for it:

* ``logistic``: logistic regression d = 20 (the GLM path), n = 1e3, 1e4, 1e5, b = 128, clipped
  at 0.5, float32 — and beside it blackjax's SGLD with uniform batches of b (unclipped: it has
  no per-record clipping), so the Poisson row reads against a peer too;
* ``numpyro``: a numpyro linear regression (5 features, n = 500, b = 32, clipped at 1) through
  :func:`dpjax.models.from_numpyro` (the general batched path, or the GLM path when the engine
  recognises it);
* ``batched``: the same numpyro regression on the general batched path (``engine="batched"``:
  autodiff of the model's log density over the gathered batch, what a model the engine does
  not recognise as a GLM takes, e.g. an MLP);
* ``quadratic``: Bayesian linear regression d = 5, n = 1e4, b = 128, clipped at 1, on the
  quadratic path (``engine="quadratic"``; ``auto`` takes the GLM path for it at this d).

A pair-step advances two chains and the path loss.
"""
from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

WORKLOADS = ("logistic", "numpyro", "batched", "quadratic")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated, of {', '.join(WORKLOADS)} (default: all)")
    parser.add_argument("--records", default="1000,10000,100000", help="n of the logistic rows (default 1000,10000,100000)")
    parser.add_argument("--chains", type=int, default=2048, help="chain pairs (default 2048)")
    parser.add_argument("--steps", type=int, default=100, help="steps per timed run (default 100)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats of each, alternating (default 5)")


def _timed_pair_steps(model, pair, sampler, chains: int, steps: int, seed: int, engine: str = "auto") -> tuple[float, str]:
    import dpjax

    res = dpjax.run_coupled(seed, model, pair, sampler, num_pairs=chains, num_steps=steps, progress=False, chunk_size=steps, dtype=jnp.float32,
                            engine=engine)
    if res.num_nonfinite:
        raise RuntimeError(f"{res.num_nonfinite} non-finite pairs in a benchmark run: the timing would not be of a working run")
    return chains * steps / res.config["run_seconds"], res.config["engine"]


def _row(name: str, model, pair, batch_size: int, clip, *, chains: int, steps: int, repeats: int, step_size: float, baseline=None,
         engine: str = "auto") -> dict:
    """Poisson (rate b / n) against uniform (b), alternating; ``baseline``: a callable timing a
    peer's run (chain-steps/s) in the same rounds."""
    from dpjax import samplers

    n = pair.dataset.num_slots
    uniform = samplers.sgld(step_size, batching="uniform", batch_size=batch_size, clip_norm=clip)
    poisson = samplers.sgld(step_size, batching="poisson", sampling_rate=batch_size / n, clip_norm=clip)
    times = {"uniform": [], "poisson": [], "peer": []}
    used = None
    for r in range(-1, repeats):  # round -1 compiles
        for label, sampler in (("uniform", uniform), ("poisson", poisson)):
            rate, used = _timed_pair_steps(model, pair, sampler, chains, steps, seed=max(r, 0), engine=engine)
            if r >= 0:
                times[label].append(rate)
        if baseline is not None:
            rate = baseline()
            if r >= 0:
                times["peer"].append(rate)
    row = {"row": name, "records": n, "batch_size": batch_size, "sampling_rate": batch_size / n, "clip_norm": clip, "engine": used, "chains": chains,
           "steps": steps, "uniform_pair_steps_per_s": statistics.median(times["uniform"]),
           "poisson_pair_steps_per_s": statistics.median(times["poisson"]),
           "poisson_over_uniform": statistics.median(p / u for p, u in zip(times["poisson"], times["uniform"]))}
    if times["peer"]:
        row["blackjax_uniform_chain_steps_per_s"] = statistics.median(times["peer"])
        row["poisson_over_blackjax_uniform"] = statistics.median(p / b for p, b in zip(times["poisson"], times["peer"]))
    return row


def _logistic_rows(args) -> list:
    import dpjax
    from . import logistic

    rows = []
    for n in [int(v) for v in args.records.split(",")]:
        x, y = logistic._data(n, 20)
        pair = logistic._pair(x, y)
        model = dpjax.models.logistic_regression(1.0, 20)
        run = logistic._blackjax_run(x, y, args.chains, args.steps, 128, jnp.float32)
        jax.block_until_ready(run(jax.random.key(0)))

        def peer(run=run):
            start = time.perf_counter()
            jax.block_until_ready(run(jax.random.key(1)))
            return args.chains * args.steps / (time.perf_counter() - start)

        rows.append(_row(f"logistic d=20 n={n}", model, pair, 128, logistic.CLIP, chains=args.chains, steps=args.steps, repeats=args.repeats,
                         step_size=logistic.STEP_SIZE, baseline=peer))
    return rows


def numpyro_linear_regression(n: int = 500, features: int = 5, seed: int = 0):
    """(model, replace-one pair): a numpyro linear regression (N(0, 1) weights and intercept,
    noise sd 1) on synthetic data, through :func:`dpjax.models.from_numpyro`; D' replaces record
    0 by an outlier (x = 3 along the first feature, y = 10)."""
    import numpyro
    import numpyro.distributions as dist

    import dpjax
    from dpjax.models import from_numpyro

    rs = np.random.default_rng(seed)
    x = rs.normal(size=(n, features))
    y = x @ rs.normal(size=features) + 0.5 + rs.normal(size=n)

    def regression(x, y=None):
        w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([features]).to_event(1))
        b = numpyro.sample("b", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(x @ w + b, 1.0), obs=y)

    with jax.enable_x64(True):
        data = dpjax.make_dataset(x=x, y=y)
        model = from_numpyro(regression, observed_site="y", example_record=data)
        outlier = np.zeros(features)
        outlier[0] = 3.0
        pair = dpjax.replace_one(data, 0, {"x": outlier, "y": np.array(10.0)})
    return model, pair


def _numpyro_row(args, engine: str = "auto") -> dict:
    model, pair = numpyro_linear_regression()
    name = "numpyro linear regression n=500" + ("" if engine == "auto" else f" ({engine} path)")
    return _row(name, model, pair, 32, 1.0, chains=args.chains, steps=args.steps, repeats=args.repeats, step_size=1e-3, engine=engine)


def _quadratic_row(args) -> dict:
    import dpjax
    from dpjax.models import bayesian_linear_regression

    rs = np.random.default_rng(0)
    n, d = 10_000, 5
    x = rs.normal(size=(n, d))
    y = x @ rs.normal(size=d) + rs.normal(size=n)
    with jax.enable_x64(True):
        data = dpjax.make_dataset(x=x, y=y)
        pair = dpjax.replace_one(data, 0, {"x": np.full(d, 2.0), "y": np.array(8.0)})
    model = bayesian_linear_regression(1.0, 1.0, d)
    return _row(f"quadratic (linear regression) d={d} n={n}", model, pair, 128, 1.0, chains=args.chains, steps=args.steps, repeats=args.repeats,
                step_size=1e-5, engine="quadratic")


def run(args) -> dict:
    chosen = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = sorted(set(chosen) - set(WORKLOADS))
    if unknown:
        raise ValueError(f"--workloads names {unknown}, not among {list(WORKLOADS)}")
    rows = []
    if "logistic" in chosen:
        rows += _logistic_rows(args)
    if "numpyro" in chosen:
        rows.append(_numpyro_row(args))
    if "batched" in chosen:
        rows.append(_numpyro_row(args, engine="batched"))
    if "quadratic" in chosen:
        rows.append(_quadratic_row(args))
    return {"backend": jax.default_backend(), "device": str(jax.devices()[0]), "rows": rows}
