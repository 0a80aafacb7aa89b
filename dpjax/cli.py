"""The ``dpjax`` command: ``demo``, ``reproduce NAME``, ``bench NAME``, ``sweep CONFIG``.

Subcommands are registries of modules so each result lives in its own module:
``dpjax.experiments.<module>`` exposes ``add_arguments(parser)``,
``run(args) -> (results: dict, figure)`` and optionally ``headline(results)`` (see
:mod:`dpjax.experiments._report`); ``dpjax.bench.<module>`` exposes ``add_arguments(parser)``
and ``run(args) -> dict``. Only the chosen module is imported (JAX start-up costs seconds), and
the one-line descriptions in ``--help`` are read from the modules' docstrings without
importing them.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import math
import re
import sys
import time
from pathlib import Path

import numpy as np

# NAME on the command line -> module under dpjax.experiments
EXPERIMENTS = {
    "sgld-interim": "sgld_interim",
    "girsanov-quadratic": "girsanov_quadratic",
    "gibbs-gaussian-mean": "gibbs_gaussian_mean",
    "contamination-mean": "contamination_mean",
    "contamination-logistic": "contamination_logistic",
    "contamination-linear": "contamination_linear",
    "contamination-cauchy": "contamination_cauchy",
    "contamination-mean-estimation": "contamination_mean_estimation",
    "expfam-beta": "expfam_beta",
    "mcmc-asymptotic": "mcmc_asymptotic",
    "noisy-monte-carlo": "noisy_monte_carlo",
    "wasserstein-bound": "wasserstein_bound",
    "sgld-interim-proof": "sgld_interim_proof",
    "girsanov-double-well": "girsanov_double_well",
    "expfam-glm": "expfam_glm",
    "gibbs-lmc": "gibbs_lmc",
    "breast-cancer-audit": "breast_cancer_audit",
}
BENCHMARKS = {
    "coupled": "coupled",
    "accountant": "accountant",
    "estimators": "estimators",
    "scaling": "scaling",
    "figure1": "figure1",
    "gpu": "gpu",
    "contamination": "contamination",
    "mlp": "mlp",
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


def from_jsonable(obj):
    """The inverse of :func:`to_jsonable` for what ``json.load`` returns: the strings "inf",
    "-inf", "nan" become floats again (an experiment's JSON read back, e.g. by ``--merge``)."""
    if isinstance(obj, dict):
        return {k: from_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [from_jsonable(v) for v in obj]
    if obj in ("inf", "-inf", "nan"):
        return float(obj)
    return obj


def _load(package: str, module: str):
    return importlib.import_module(f"dpjax.{package}.{module}")


def _description(package: str, module: str) -> str:
    """The first sentence of a module's docstring, read from its source without importing it
    (so ``--help`` stays fast), with the ``dpjax reproduce NAME``: prefix and RST markup removed."""
    try:
        spec = importlib.util.find_spec(f"dpjax.{package}.{module}")
        doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text(encoding="utf-8"))) if spec and spec.origin else None
    except (ImportError, OSError, SyntaxError, ValueError):
        doc = None
    if not doc:
        return ""
    text = " ".join(doc.split("\n\n")[0].split())
    text = re.sub(r"^``dpjax (reproduce|bench) [\w-]+``:\s*", "", text)
    text = text.replace("``", "")
    sentence = text
    for match in re.finditer(r"\.\s+(?=[A-Z(])", text):  # a full stop, not the one of "App. B" or "Fig. 1"
        word = re.findall(r"[\w)]+$", text[: match.start()])
        if word and (len(word[0]) >= 4 or word[0][-1] in "0123456789)"):
            sentence = text[: match.start()]
            break
    sentence = sentence.rstrip(".")
    return sentence


def _cmd_reproduce(args) -> int:
    from .experiments._report import headline_table

    module = _load("experiments", EXPERIMENTS[args.name])
    start = time.perf_counter()
    results, figure = module.run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / f"{args.name}.json"
    png_path = out / f"{args.name}.png"
    json_path.write_text(json.dumps(to_jsonable(results), indent=2))
    if figure is not None:
        figure.savefig(png_path, dpi=120, bbox_inches="tight")
    seconds = time.perf_counter() - start
    print(f"wrote {json_path}" + (f" and {png_path}" if figure is not None else "") + f" ({seconds:.0f} s)")
    headline = getattr(module, "headline", None)
    if headline is not None:
        print()
        print(headline_table(headline(results), title=f"{args.name}: the headline numbers (all of them in {json_path})"))
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


DESCRIPTION = (
    "dpjax measures how much privacy Langevin-type samplers (ULA, noisy SGD, cyclic SGLD) leak: coupled "
    "chain pairs on neighbouring datasets, accountants' bounds, exact values and estimates side by side."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpjax", description=DESCRIPTION, epilog="Run 'dpjax COMMAND --help' for a command's flags.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")

    demo_help = "paper 000's story at reduced n in under a minute: a private posterior, a leaky interim SGLD iterate"
    demo = sub.add_parser("demo", help=demo_help, description=demo_help[:1].upper() + demo_help[1:] + ".")
    from .demo import add_arguments as demo_args  # light: the demo imports JAX only when run

    demo_args(demo)
    demo.set_defaults(func=_cmd_demo)

    rep_help = "regenerate a paper result (or the real-data audit): writes OUT/NAME.json and OUT/NAME.png"
    rep = sub.add_parser(
        "reproduce", help=rep_help, description=rep_help[:1].upper() + rep_help[1:] + ", shows progress on stderr, "
        "and ends with the headline numbers beside the paper's. Defaults are the papers' parameters.",
        epilog="Run 'dpjax reproduce NAME --help' for a result's own flags.",
    )
    rep_sub = rep.add_subparsers(dest="name", required=True, metavar="NAME", title="results")
    for name, module_name in EXPERIMENTS.items():
        text = _description("experiments", module_name)
        p = rep_sub.add_parser(name, help=text, description=text)
        p.add_argument("--out", default="out", help="folder for NAME.json and NAME.png (default: out)")
        p.add_argument("--quick", action="store_true", help="smaller Monte Carlo sizes (a minute or less; what the tests run)")
        p.add_argument("--seed", type=int, default=0, help="seed of every random draw (default: 0)")
        p.set_defaults(func=_cmd_reproduce, _module=("experiments", module_name))
        _SUBPARSERS[("reproduce", name)] = p

    bench_help = "benchmarks, each as a ratio against a baseline measured in the same run"
    bench = sub.add_parser("bench", help=bench_help, description=bench_help[:1].upper() + bench_help[1:] + " (results: BENCHMARKS.md).",
                           epilog="Run 'dpjax bench NAME --help' for a benchmark's own flags.")
    bench_sub = bench.add_subparsers(dest="name", required=True, metavar="NAME", title="benchmarks")
    for name, module_name in BENCHMARKS.items():
        text = _description("bench", module_name)
        p = bench_sub.add_parser(name, help=text, description=text)
        p.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
        p.set_defaults(func=_cmd_bench, _module=("bench", module_name))
        _SUBPARSERS[("bench", name)] = p

    sweep_help = "run a configuration grid into a resumable Parquet results store"
    sweep = sub.add_parser("sweep", help=sweep_help, description=sweep_help[:1].upper() + sweep_help[1:] + " (see the README's "
                           "'Scaling out'; experiments/sweeps/smoke.yaml is an example).")
    sweep.add_argument("config", help="the YAML configuration (a grid or a list of points), validated before any compute")
    sweep.add_argument("--out", required=True, help="results folder: DIR/results/*.parquet, DIR/timings.jsonl; rerun to resume")
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
    subcommand is read off the command line first: ``dpjax reproduce NAME ...`` or
    ``dpjax bench NAME ...`` (neither the top level nor ``reproduce``/``bench`` take options
    before NAME). Anything else (``--help``, a typo) is left to the full parse, which prints
    help or one clear error.
    """
    if len(argv) < 2 or argv[0] not in ("reproduce", "bench"):
        return
    command, name = argv[0], argv[1]
    sub = _SUBPARSERS.get((command, name))
    if sub is None:
        return
    module = sub.get_default("_module")
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
