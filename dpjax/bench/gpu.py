"""``dpjax bench gpu``: every workload of the GPU engine issue against blackjax, in one run.

Rows (pair-steps/s for dpjax, chain-steps/s for the baseline; a pair-step advances two chains
and the path privacy loss, so a ratio of 1 means dpjax does twice the work in the same time):

* ``cyclic`` — cyclic SGLD, 1-D Bayesian linear regression on paper 000's eq. 7 pair scaled to
  n = 1000 records (:mod:`dpjax.bench.coupled`'s workload), 4,096 and 262,144 pairs, 2,000 steps;
* ``ula`` — full-batch ULA on the same pair, 65,536 pairs, 500 steps;
* ``sgld-b32`` — SGLD with uniform batches of 32, 65,536 pairs, 500 steps;
* ``logistic`` — logistic regression, d = 20, n = 10,000, uniform batches of 128, float32,
  4,096 and 65,536 pairs, 200 steps (a general model: autodiff gradients);
* float32 variants of the linear-regression rows;
* ``repeated_call`` — a first ``run_coupled`` (it compiles) and a second with the same shapes, a
  new seed and a new step size: wall times, stepping times, the second call's overhead (wall
  minus stepping) and how many programs it compiled (0 expected);
* ``figure1_epoch`` — one epoch of paper 000's Figure 1 at n = 1,149,019 with 1,024 and 65,536
  pairs, and the 29 epochs extrapolated from it.

The linear-regression rows run twice: ``dpjax_general`` is the plain :class:`dpjax.Model` that
any user model goes through (autodiff, engine "reference"), ``dpjax_quadratic`` the library's
:func:`dpjax.models.bayesian_linear_regression` (closed-form tables; engine "auto": the Pallas
kernel on a GPU). The baseline is blackjax's ``sgld`` vmapped over chains with a per-chain key
split every step (:func:`dpjax.bench.coupled._blackjax_seconds`). ``--cuda-anchor PATH`` also
runs the hand-written CUDA kernel of ``shared/bench/fused_kernel_limit.py`` on the cyclic rows.

Sizes: the issue's on a GPU; on a CPU (or with ``--quick``) each is scaled down so the test
suite can run the command, and the JSON says which sizes ran.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

FULL = {
    "cyclic": [(4096, 2000), (262_144, 2000)],
    "ula": [(65_536, 500)],
    "sgld-b32": [(65_536, 500)],
    "logistic": [(4096, 200), (65_536, 200)],
    "float32": [(262_144, 2000)],
    "figure1_pairs": [1024, 65_536],
    "records": 1000,
    "logistic_records": 10_000,
    "figure1_n": 1_149_019,
    "glm": {"chains": 65_536, "steps": 200, "full_chains": 8192, "full_steps": 20},
    "compile_dims": [20, 80, 320],
}
QUICK = {
    "cyclic": [(256, 200), (1024, 100)],
    "ula": [(512, 50)],
    "sgld-b32": [(512, 50)],
    "logistic": [(128, 20)],
    "float32": [(1024, 100)],
    "figure1_pairs": [128],
    "records": 1000,
    "logistic_records": 1000,
    "figure1_n": 20_000,
    "glm": {"chains": 512, "steps": 20, "full_chains": 64, "full_steps": 4},
    "compile_dims": [20],
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="small sizes (the default on a CPU)")
    parser.add_argument("--full", action="store_true", help="the issue's sizes even on a CPU")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per measurement; medians (default 3)")
    parser.add_argument("--only", nargs="+", default=None,
                        help="rows to run (cyclic ula sgld-b32 logistic float32 repeated_call figure1_epoch glm compile)")
    parser.add_argument("--cuda-anchor", default=None, help="path of fused_kernel_limit.py to run beside the cyclic rows (needs CuPy and a GPU)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the chains (default 0)")
    parser.add_argument("--steps-multiplier", type=int, default=1,
                        help="multiply the steps of the cyclic, float32, ula, sgld-b32 and logistic rows (default 1): "
                             "rows at 1x, 10x, 100x separate a per-call cost from a per-step one")


def _median_rate(fn, work: int, repeats: int) -> float:
    return statistics.median(work / fn(r) for r in range(repeats))


def _dpjax_rate(model, pair, sampler, pairs: int, steps: int, dtype, repeats: int, seed: int, engine: str) -> tuple[float, str]:
    import dpjax

    engines = []

    def once(r):
        res = dpjax.run_coupled(seed + r, model, pair, sampler, num_pairs=pairs, num_steps=steps, progress=False, chunk_size=steps, dtype=dtype, engine=engine)
        engines.append(res.config["engine"])
        return res.config["run_seconds"]

    once(-1)  # compile
    return _median_rate(once, pairs * steps, repeats), engines[-1]


def _linear_rows(name: str, sizes, sampler_name: str, batch_size: int, dtype_name: str, records: int, repeats: int, seed: int, anchor) -> list:
    import jax
    import jax.numpy as jnp

    from dpjax.models import bayesian_linear_regression

    from . import coupled as bc

    general, pair, x, y, eta = bc._problem(records)
    quadratic = bayesian_linear_regression(bc.BETA, bc.ALPHA)
    sampler = bc._sampler(sampler_name, eta, batch_size)
    dtype = getattr(jnp, dtype_name)
    rows = []
    for pairs, steps in sizes:
        row = {"row": name, "records": records, "pairs": pairs, "steps": steps, "dtype": dtype_name, "sampler": sampler_name, "batch_size": batch_size}
        row["dpjax_general"], row["engine_general"] = _dpjax_rate(general, pair, sampler, pairs, steps, dtype, repeats, seed, "reference")
        row["dpjax_quadratic"], row["engine_quadratic"] = _dpjax_rate(quadratic, pair, sampler, pairs, steps, dtype, repeats, seed, "auto")
        with jax.enable_x64(dtype_name == "float64"):
            bc._blackjax_seconds(sampler_name, x, y, eta, pairs, steps, batch_size, seed)  # compile
            row["blackjax"] = _median_rate(lambda r: bc._blackjax_seconds(sampler_name, x, y, eta, pairs, steps, batch_size, seed + r), pairs * steps, repeats)
        row["general_over_blackjax"] = row["dpjax_general"] / row["blackjax"]
        row["quadratic_over_blackjax"] = row["dpjax_quadratic"] / row["blackjax"]
        if anchor and sampler_name == "cyclic-sgld":
            row["cuda_kernel"] = _cuda_anchor(anchor, records, pairs, steps, 64 if dtype_name == "float64" else 32)
            if isinstance(row["cuda_kernel"], float):
                row["quadratic_over_cuda_kernel"] = row["dpjax_quadratic"] / row["cuda_kernel"]
        rows.append(row)
    return rows


def _cuda_anchor(path: str, n: int, pairs: int, steps: int, bits: int):
    proc = subprocess.run([sys.executable, path, str(n), str(pairs), str(steps), str(bits)], capture_output=True, text=True)
    if proc.returncode != 0:
        return f"failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}"
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["pair_steps_per_s"])


def _logistic_problem(records: int, dim: int, seed: int):
    import jax

    import dpjax
    from dpjax import models

    rs = np.random.default_rng(seed)
    x = rs.normal(size=(records, dim)) / np.sqrt(dim)
    y = (rs.uniform(size=records) < 1 / (1 + np.exp(-x @ np.ones(dim)))).astype(np.float64)
    with jax.enable_x64(True):
        data = models.logistic_regression_dataset(x, y)
        pair = dpjax.replace_one(data, 0, {"x": 3 * np.ones(dim) / np.sqrt(dim), "y": np.array(0.0)})  # an out-of-distribution canary
    return models.logistic_regression(1.0, dim), pair, x, y


def _blackjax_logistic_seconds(x, y, step_size: float, pairs: int, steps: int, batch_size: int, seed: int) -> float:
    import blackjax
    import jax
    import jax.numpy as jnp
    from blackjax.sgmcmc.gradients import grad_estimator

    from ._baselines import uniform_batch_chains
    from .coupled import _time_compiled

    n, dim = x.shape
    data_x, data_y = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)

    def log_lik(theta, record):
        z = record[0] @ theta
        return record[1] * jax.nn.log_sigmoid(z) + (1 - record[1]) * jax.nn.log_sigmoid(-z)

    sgld = blackjax.sgld(grad_estimator(lambda th: -0.5 * jnp.sum(th**2), log_lik, n))

    run = uniform_batch_chains(lambda k, p, idx: sgld.step(k, p, (data_x[idx], data_y[idx]), step_size / 2),
                               jnp.zeros((pairs, dim), jnp.float32), steps, batch_size, n)
    return _time_compiled(run, jax.random.key(seed))


def _logistic_rows(sizes, records: int, repeats: int, seed: int) -> list:
    import jax.numpy as jnp

    from dpjax import samplers

    dim, batch_size, step_size = 20, 128, 1e-4
    model, pair, x, y = _logistic_problem(records, dim, seed)
    sampler = samplers.sgld(step_size, batching="uniform", batch_size=batch_size)
    rows = []
    for pairs, steps in sizes:
        row = {"row": "logistic", "records": records, "dim": dim, "pairs": pairs, "steps": steps, "dtype": "float32", "batch_size": batch_size}
        row["dpjax_general"], row["engine_general"] = _dpjax_rate(model, pair, sampler, pairs, steps, jnp.float32, repeats, seed, "auto")
        _blackjax_logistic_seconds(x, y, step_size, pairs, steps, batch_size, seed)
        row["blackjax"] = _median_rate(lambda r: _blackjax_logistic_seconds(x, y, step_size, pairs, steps, batch_size, seed + r), pairs * steps, repeats)
        row["general_over_blackjax"] = row["dpjax_general"] / row["blackjax"]
        rows.append(row)
    return rows


def _repeated_call(records: int, pairs: int, steps: int, seed: int) -> dict:
    import dpjax
    from dpjax.engine.compiles import count_compilations
    from dpjax.models import bayesian_linear_regression

    from . import coupled as bc

    _, pair, _, _, eta = bc._problem(records)
    model = bayesian_linear_regression(bc.BETA, bc.ALPHA)
    out = {"row": "repeated_call", "records": records, "pairs": pairs, "steps": steps}
    for label, engine in (("quadratic", "auto"), ("general", "reference")):
        m = model if label == "quadratic" else bc._problem(records)[0]
        sampler = dpjax.samplers.cyclic_sgld(eta)
        t0 = time.perf_counter()
        first = dpjax.run_coupled(seed, m, pair, sampler, num_pairs=pairs, num_steps=steps, progress=False, engine=engine)
        first_wall = time.perf_counter() - t0
        with count_compilations() as compiles:
            t0 = time.perf_counter()
            again = dpjax.run_coupled(seed + 1, m, pair, dpjax.samplers.cyclic_sgld(eta * 0.9), num_pairs=pairs, num_steps=steps, progress=False, engine=engine)
            wall = time.perf_counter() - t0
        out[label] = {
            "engine": again.config["engine"],
            "first_call_seconds": first_wall,
            "first_stepping_seconds": first.config["run_seconds"],
            "repeated_call_seconds": wall,
            "repeated_stepping_seconds": again.config["run_seconds"],
            "repeated_overhead_seconds": wall - again.config["run_seconds"],
            "repeated_over_first": wall / first_wall,
            "compilations_in_repeat": compiles.count,
        }
    return out


def _figure1_epoch(n: int, pairs_list, seed: int) -> list:
    from dpjax import run_coupled
    from dpjax.experiments.sgld_interim.monte_carlo import eq7_coupled_setup, figure1_c

    rows = []
    _, model, pair, sampler, prior = eq7_coupled_setup(n, c=figure1_c(n), alpha=0.1, beta=1.0, x_high=1.8)
    for pairs in pairs_list:
        run_coupled(seed, model, pair, sampler, num_pairs=pairs, num_steps=min(n, 1000), init=prior, progress=False)  # compile
        res = run_coupled(seed, model, pair, sampler, num_pairs=pairs, num_steps=n, init=prior, progress=False, chunk_size=n)
        epoch = res.config["run_seconds"]
        rows.append({"row": "figure1_epoch", "records": n, "pairs": pairs, "engine": res.config["engine"], "seconds_per_epoch": epoch,
                     "pair_steps_per_s": pairs * n / epoch, "extrapolated_29_epochs_seconds": 29 * epoch, "nonfinite": res.num_nonfinite})
    return rows


def run(args) -> dict:
    import jax

    for name in ("repeats", "steps_multiplier"):
        if getattr(args, name, 1) < 1:
            raise ValueError(f"--{name.replace('_', '-')}={getattr(args, name)} must be >= 1")
    on_cpu = jax.default_backend() == "cpu"
    quick = args.quick or (on_cpu and not args.full)
    sizes = dict(QUICK if quick else FULL)
    k = getattr(args, "steps_multiplier", 1)
    for row in ("cyclic", "ula", "sgld-b32", "logistic", "float32"):
        sizes[row] = [(pairs, steps * k) for pairs, steps in sizes[row]]
    repeats = 1 if quick else args.repeats
    wanted = set(args.only or ("cyclic", "ula", "sgld-b32", "logistic", "float32", "repeated_call", "figure1_epoch", "glm", "compile"))
    known = {"cyclic", "ula", "sgld-b32", "logistic", "float32", "repeated_call", "figure1_epoch", "glm", "compile"}
    if wanted - known:
        raise ValueError(f"--only={sorted(wanted - known)} names no row; rows: {sorted(known)}")
    rows = []
    records, seed = sizes["records"], args.seed
    if "cyclic" in wanted:
        rows += _linear_rows("cyclic", sizes["cyclic"], "cyclic-sgld", 1, "float64", records, repeats, seed, args.cuda_anchor)
    if "float32" in wanted:
        rows += _linear_rows("cyclic-float32", sizes["float32"], "cyclic-sgld", 1, "float32", records, repeats, seed, args.cuda_anchor)
    if "ula" in wanted:
        rows += _linear_rows("ula", sizes["ula"], "ula", 1, "float64", records, repeats, seed, None)
    if "sgld-b32" in wanted:
        rows += _linear_rows("sgld-b32", sizes["sgld-b32"], "sgld", 32, "float64", records, repeats, seed, None)
    if "logistic" in wanted:
        rows += _logistic_rows(sizes["logistic"], sizes["logistic_records"], repeats, seed)
    if "glm" in wanted or "compile" in wanted:
        from . import logistic as glm_bench  # issue 21's rows: b = 128, full batch, clipped; float32 and float64

        g, n = sizes["glm"], sizes["logistic_records"]
        for dtype in ("float32", "float64") if "glm" in wanted else ():
            for row in ("b128", "clipped"):
                rows.append(glm_bench.throughput(row, dtype, n=n, d=20, chains=g["chains"], steps=g["steps"] * k, batch_size=128, repeats=repeats, seed=seed))
            rows.append(glm_bench.throughput("full", dtype, n=n, d=20, chains=g["full_chains"], steps=g["full_steps"] * k, batch_size=128,
                                             repeats=repeats, seed=seed))
        for dim in sizes["compile_dims"] if "compile" in wanted else ():
            rows.append(glm_bench.compile_seconds(dim, n=n, batch_size=128))
    if "repeated_call" in wanted:
        pairs, steps = (QUICK if quick else FULL)["cyclic"][0]  # the row, whatever --steps-multiplier says
        # a pair count no other row uses, so the first call really compiles
        rows.append(_repeated_call(records, pairs + 64, steps, seed))
    if "figure1_epoch" in wanted:
        rows += _figure1_epoch(sizes["figure1_n"], sizes["figure1_pairs"], seed)
    device = jax.devices()[0]
    return {
        "device": getattr(device, "device_kind", str(device)),
        "backend": jax.default_backend(),
        "jax": jax.__version__,
        "sizes": "quick" if quick else "full",
        "steps_multiplier": k,
        "repeats": repeats,
        "rows": rows,
    }
