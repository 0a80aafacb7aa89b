"""The ``dpjax`` command: ``demo``, ``reproduce NAME``, ``bench NAME``, ``sweep CONFIG``.

Subcommands are registries of modules so each result lives in its own module:
``dpjax.experiments.<module>`` exposes ``add_arguments(parser)`` and
``run(args) -> (results: dict, figure)``; ``dpjax.bench.<module>`` exposes
``add_arguments(parser)`` and ``run(args) -> dict``.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from pathlib import Path

import numpy as np

# NAME on the command line -> module under dpjax.experiments
EXPERIMENTS = {
    "sgld-interim": "sgld_interim",
    "girsanov-quadratic": "girsanov_quadratic",
    "gibbs-gaussian-mean": "gibbs_gaussian_mean",
    "contamination-mean": "contamination_mean",
    "contamination-logistic": "contamination_logistic",
    "expfam-beta": "expfam_beta",
    "mcmc-asymptotic": "mcmc_asymptotic",
    "noisy-monte-carlo": "noisy_monte_carlo",
    "wasserstein-bound": "wasserstein_bound",
    "sgld-interim-proof": "sgld_interim_proof",
    "girsanov-double-well": "girsanov_double_well",
    "expfam-glm": "expfam_glm",
    "gibbs-lmc": "gibbs_lmc",
}
BENCHMARKS = {
    "coupled": "coupled",
    "accountant": "accountant",
    "estimators": "estimators",
    "scaling": "scaling",
    "figure1": "figure1",
    "gpu": "gpu",
}


def to_jsonable(obj):
    """Convert numpy/jax scalars and arrays (and nested containers) for ``json.dump``.

    Non-finite floats become the strings "inf", "-inf", "nan" so the file stays valid JSON.
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "__array__") and not isinstance(obj, (str, bytes)):
        arr = np.asarray(obj)
        return to_jsonable(arr.tolist()) if arr.ndim else to_jsonable(arr.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return to_jsonable(float(obj))
    return obj


def _load(package: str, module: str):
    return importlib.import_module(f"dpjax.{package}.{module}")


def _cmd_reproduce(args) -> int:
    module = _load("experiments", EXPERIMENTS[args.name])
    results, figure = module.run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / f"{args.name}.json"
    png_path = out / f"{args.name}.png"
    json_path.write_text(json.dumps(to_jsonable(results), indent=2))
    if figure is not None:
        figure.savefig(png_path, dpi=120, bbox_inches="tight")
    print(f"wrote {json_path}" + (f" and {png_path}" if figure is not None else ""))
    return 0


def _cmd_bench(args) -> int:
    module = _load("bench", BENCHMARKS[args.name])
    result = module.run(args)
    if args.json:
        print(json.dumps(to_jsonable(result)))
    else:
        for k, v in to_jsonable(result).items():
            print(f"{k:>28}: {v}")
    return 0


def _cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(args)


# (command, name) -> the subparser whose module adds its own flags when it is chosen
_SUBPARSERS: dict = {}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpjax", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="paper 000's story at reduced n: a private posterior, a non-private interim iterate")
    from .demo import add_arguments as demo_args  # light: the demo imports JAX only when run

    demo_args(demo)
    demo.set_defaults(func=_cmd_demo)

    rep = sub.add_parser("reproduce", help="regenerate a paper result: writes OUT/NAME.json and OUT/NAME.png")
    rep_sub = rep.add_subparsers(dest="name", required=True)
    for name, module_name in EXPERIMENTS.items():
        p = rep_sub.add_parser(name)
        p.add_argument("--out", default="out", help="output folder (default: out)")
        p.add_argument("--quick", action="store_true", help="smaller Monte Carlo sizes")
        p.add_argument("--seed", type=int, default=0)
        p.set_defaults(func=_cmd_reproduce, _module=("experiments", module_name))
        _SUBPARSERS[("reproduce", name)] = p

    bench = sub.add_parser("bench", help="benchmarks, each as a ratio against a baseline measured in the same run")
    bench_sub = bench.add_subparsers(dest="name", required=True)
    for name, module_name in BENCHMARKS.items():
        p = bench_sub.add_parser(name)
        p.add_argument("--json", action="store_true", help="print one JSON line")
        p.set_defaults(func=_cmd_bench, _module=("bench", module_name))
        _SUBPARSERS[("bench", name)] = p

    sweep = sub.add_parser("sweep", help="run a configuration grid into a resumable Parquet results store")
    sweep.add_argument("config")
    sweep.add_argument("--out", required=True)
    sweep.add_argument("--coordinator", default=None, help="HOST:PORT of process 0 for a multi-host run (env DPJAX_COORDINATOR)")
    sweep.add_argument("--num-processes", type=int, default=None, help="number of processes (env DPJAX_NUM_PROCESSES)")
    sweep.add_argument("--process-id", type=int, default=None, help="this process's rank; process 0 writes (env DPJAX_PROCESS_ID)")
    sweep.add_argument("--no-progress", action="store_true", help="no progress bars")

    def _cmd_sweep(args) -> int:
        from .sweep import main as sweep_main

        return sweep_main(args)

    sweep.set_defaults(func=_cmd_sweep)
    return parser


def _add_module_arguments(parser: argparse.ArgumentParser, argv) -> None:
    """Import only the chosen result's (or benchmark's) module and let it add its flags.

    Importing every experiment up front costs seconds of JAX start-up per command, so the
    subcommand is found first (help flags held back) and its module loaded then.
    """
    probe = [a for a in argv if a not in ("-h", "--help")]
    try:
        known, _ = parser.parse_known_args(probe)
    except SystemExit:
        return  # let the full parse report the error
    module = getattr(known, "_module", None)
    if module is None:
        return
    sub = _SUBPARSERS[(known.command, known.name)]
    try:
        _load(*module).add_arguments(sub)
    except ImportError as err:  # a result not built in this checkout: say so when asked for
        sub.set_defaults(_missing=str(err))


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    _add_module_arguments(parser, argv)
    args = parser.parse_args(argv)
    missing = getattr(args, "_missing", None)
    if missing:
        parser.error(f"{args.command} {args.name} is not available in this build: {missing}")
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
