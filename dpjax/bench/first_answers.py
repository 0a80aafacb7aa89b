"""``dpjax bench first-answers``: first PLD answers in fresh processes, dpjax vs dp_accounting (issue 38).

The protocol of issue 38 (item 8): ``--configs`` + 1 random DP-SGD configurations (sigma uniform
in [0.8, 3], q log-uniform in [1e-3, 0.05], T log-uniform in [100, 5000]); in a fresh process
with an empty JAX compilation cache (``DPJAX_NO_COMPILATION_CACHE=1``), after the imports, eps
at delta = 1e-5 of the first (the "first configuration"), then of the others one at a time
(their total: the "ten more"):

* dpjax: ``pld_curve(sigma, q, T).epsilon(1e-5)`` (a kept bracket, both sides; small jobs run
  in numpy, :mod:`dpjax.accountants.composition.pld_numpy`), and the same with the jitted
  engine forced (``--engine``, the path every job took before: it compiles XLA programs);
* dp_accounting: ``PLDAccountant(value_discretization_interval=1e-4)`` (pessimistic),
  ``compose(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), T)``, ``get_epsilon(1e-5)``.

The three kinds of process alternate over ``--repeats`` rounds; medians are reported, with the
ratios dp_accounting / dpjax, how many XLA programs each dpjax process compiled (JAX's
backend-compile events), the imports' times, the machine and its load, and the accuracy:
the largest relative difference between the pessimistic eps of dpjax and dp_accounting, the
largest excess of dp_accounting's over dpjax's pessimistic eps (seen up to 2e-9 relative, on
the jitted engine too: the two discretisations' truncation and rounding), and whether
dp_accounting's eps lies in dpjax's bracket [optimistic, pessimistic] up to 1e-8 relative.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import textwrap

import numpy as np

DPJAX = textwrap.dedent(
    """
    import json, sys, time
    start = time.perf_counter()
    import jax
    from dpjax.accountants import pld_curve
    imported = time.perf_counter()
    compiled = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, seconds, **kw: compiled.append(event) if event == "/jax/core/compile/backend_compile_duration" else None)
    if ENGINE:
        from dpjax.accountants.composition import pld_plan
        from dpjax.accountants.mechanisms import gaussian
        pld_plan.MAX_CONFIGURATIONS = 0
        gaussian._NUMPY_MAX_ELEMENTS = 0
    times, pess, opt = [], [], []
    for sigma, q, steps in CONFIGS:
        t0 = time.perf_counter()
        curve = pld_curve(sigma, q, steps)
        curve.epsilon(1e-5)
        times.append(time.perf_counter() - t0)
        # not timed: the accuracy check's (the PLD's own values, without the RDP fallback)
        pess.append(float(curve.pld.pld_epsilon(1e-5)))
        opt.append(float(curve.pld.epsilon(1e-5, optimistic=True)))
    print(json.dumps(dict(import_s=imported - start, times=times, pess=pess, opt=opt, compiled=len(compiled))))
    """
)

DP_ACCOUNTING = textwrap.dedent(
    """
    import json, time
    start = time.perf_counter()
    from dp_accounting import dp_event, pld
    imported = time.perf_counter()
    times, eps = [], []
    for sigma, q, steps in CONFIGS:
        t0 = time.perf_counter()
        accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
        accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
        eps.append(float(accountant.get_epsilon(1e-5)))
        times.append(time.perf_counter() - t0)
    print(json.dumps(dict(import_s=imported - start, times=times, pess=eps)))
    """
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--configs", type=int, default=10, help="configurations after the first (default 10)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of fresh processes (medians reported; default 3)")
    parser.add_argument("--seed", type=int, default=38, help="seed of the random configurations (default 38)")
    parser.add_argument("--engine", action="store_true", help="also time dpjax with the jitted engine forced (~30 s a round)")


def sample_configs(num: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    sigma = rng.uniform(0.8, 3.0, num)
    q = 10.0 ** rng.uniform(-3.0, np.log10(0.05), num)
    steps = np.round(10.0 ** rng.uniform(2.0, np.log10(5000.0), num)).astype(int)
    return [(float(s), float(r), int(t)) for s, r, t in zip(sigma, q, steps)]


def _environment() -> dict:
    # a fresh user's settings (the platform choice kept), and no compilation cache
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_", "DPJAX_")) or k == "JAX_PLATFORMS"}
    env["DPJAX_NO_COMPILATION_CACHE"] = "1"
    return env


def _child(script: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", script], env=_environment(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the benchmark's child process failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _machine() -> str:
    model = platform.processor() or "CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{os.cpu_count()}-core {model}"


def run(args) -> dict:
    configs = sample_configs(args.configs + 1, args.seed)
    kinds = {"dp_accounting": DP_ACCOUNTING.replace("CONFIGS", repr(configs)),
             "dpjax": DPJAX.replace("CONFIGS", repr(configs)).replace("ENGINE", "False")}
    if args.engine:
        kinds["dpjax, jitted engine"] = DPJAX.replace("CONFIGS", repr(configs)).replace("ENGINE", "True")
    result: dict = {"machine": _machine(), "load_average_1min": os.getloadavg()[0], "configurations": configs}
    rows: dict = {name: [] for name in kinds}
    for _ in range(args.repeats):  # the kinds alternate: each round sees the same load
        for name, script in kinds.items():
            rows[name].append(_child(script))
    peer = rows["dp_accounting"][0]["pess"]
    for name, runs in rows.items():
        first = statistics.median(r["times"][0] for r in runs)
        rest = statistics.median(sum(r["times"][1:]) for r in runs)
        result[f"{name}: import (s)"] = statistics.median(r["import_s"] for r in runs)
        result[f"{name}: first configuration (s)"] = first
        result[f"{name}: {args.configs} more, one at a time (s)"] = rest
        if name != "dp_accounting":
            result[f"{name}: XLA programs compiled"] = statistics.median(r["compiled"] for r in runs)
            pess, opt = np.array(runs[0]["pess"]), np.array(runs[0]["opt"])
            result[f"{name}: max |eps - dp_accounting's| / dp_accounting's"] = float(np.max(np.abs(pess - peer) / np.array(peer)))
            result[f"{name}: max (dp_accounting's eps - pessimistic) / dp_accounting's"] = float(np.max((np.array(peer) - pess) / np.array(peer)))
            result[f"{name}: dp_accounting's eps in the bracket"] = bool(np.all((opt <= peer) & (np.array(peer) <= pess * (1 + 1e-8))))
    base = rows["dp_accounting"]
    for name in kinds:
        if name == "dp_accounting":
            continue
        result[f"dp_accounting / {name}, first configuration"] = (
            result["dp_accounting: first configuration (s)"] / result[f"{name}: first configuration (s)"])
        result[f"dp_accounting / {name}, {args.configs} more"] = (
            result[f"dp_accounting: {args.configs} more, one at a time (s)"] / result[f"{name}: {args.configs} more, one at a time (s)"])
    result["rounds"] = len(base)
    result["load_average_1min_after"] = os.getloadavg()[0]
    return result
