"""Where `pld_epsilons`' time goes on this machine: host (numpy planning, trimming, block
assembly), waiting for the device (time inside the host<-device copies that end each jitted
call), and how many jitted calls and copies one batch takes. The GPU goal of issue 13 (>= 100x
dp_accounting on 1000 configurations) needs the answer before any redesign: a GPU only helps
the device part.

    python tools/gpu/pld_profile.py [--configs 1000] [--interval 1e-4] [--top 25]

Prints one JSON line (wall time; time spent waiting in jax -> numpy conversions, which is
the device's compute plus the copies; the rest, host time) and the top functions by own time. Runs on a CPU too (there "device wait" is the compute itself).
"""
import argparse
import cProfile
import io
import json
import pstats
import sys
import time

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

from dpjax.accountants.composition import pld_accountant
from dpjax.accountants import pld_epsilons  # noqa: E402
from dpjax.bench.accountant import sample_pld_configs  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=1e-4)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sequential-scans", action="store_true", help="the eps query's sequential suffix scans (the CPU's choice) on any backend, to time them against the parallel ones")
    parser.add_argument("--save", default=None, help="write the --configs pessimistic eps to this .npy file, to compare machines")
    parser.add_argument("--budget", choices=("auto", "cpu", "accelerator"), default="auto",
                        help="chunk budget: the backend's (auto), or force one (the host work of the accelerator's on a CPU)")
    args = parser.parse_args(argv)

    if args.budget != "auto":
        budget = pld_accountant.CPU_BUDGET if args.budget == "cpu" else pld_accountant.ACCELERATOR_BUDGET
        pld_accountant.chunk_budget = lambda: budget
    if args.sequential_scans:
        import dataclasses

        chosen = pld_accountant.chunk_budget()
        pld_accountant.chunk_budget = lambda: dataclasses.replace(chosen, parallel_scans=False)
    q, sigma, steps = sample_pld_configs(args.configs, args.seed)
    call = lambda: pld_epsilons(sigma, q, steps, args.delta, value_discretization_interval=args.interval, optimistic=False)
    t0 = time.perf_counter()
    call()  # compiles
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    eps = call().epsilon
    warm = time.perf_counter() - t0

    profiler = cProfile.Profile()
    profiler.enable()
    t0 = time.perf_counter()
    call()
    profiled = time.perf_counter() - t0
    profiler.disable()
    stats = pstats.Stats(profiler)
    # the host waits for the device inside the conversions of jax arrays to numpy (jitted calls
    # are asynchronous; their C++ dispatch does not show in a Python profile)
    wait, conversions, copies = 0.0, 0, 0
    for (_, _, name), (_, ncalls, tottime, _, _) in stats.stats.items():
        if name in ("<built-in method numpy.asarray>", "<built-in method numpy.array>", "__array__", "_value"):
            wait += tottime
            conversions += ncalls  # numpy conversions of host data too
        if name == "_value":  # a jax array's copy to the host
            copies += ncalls
    if args.save:
        np.save(args.save, np.asarray(eps))
    print(json.dumps({
        "backend": jax.default_backend(), "budget": args.budget, "parallel_scans": pld_accountant.chunk_budget().parallel_scans, "device": str(jax.devices()[0]), "configs": args.configs, "interval": args.interval,
        "first_call_s": first, "warm_s": warm, "profiled_s": profiled, "wait_in_conversions_s": wait, "host_s": profiled - wait,
        "conversions": conversions, "device_to_host_copies": copies, "median_eps": float(np.median(eps)),
    }))
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
