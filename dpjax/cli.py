"""The ``dpjax`` command: ``demo``, ``reproduce NAME``, ``bench NAME``, ``sweep CONFIG``.

Subcommands are registries of modules so each result lives in its own module:
``dpjax.experiments.<module>`` exposes ``add_arguments(parser)``,
``run(args) -> (results: dict, figure)`` and optionally ``headline(results)`` (see
:mod:`dpjax.experiments._report`); ``dpjax.bench.<module>`` exposes ``add_arguments(parser)``
and ``run(args) -> dict``. Only the chosen module is imported (JAX start-up costs seconds), and
the one-line descriptions in ``--help`` are read from the modules' docstrings without
importing them.

Start-up: ``dpjax --help`` must answer in well under a second, so this module imports only the
standard library at the top (``import dpjax`` itself is lazy, see :mod:`dpjax`); numpy, JAX and
a command's modules are imported when that command runs (or adds its flags). A test runs
``dpjax --help`` in a fresh interpreter and checks that neither jax nor numpy was imported.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import inspect
import json
import math
import re
import sys
import time
import tokenize
from pathlib import Path

# NAME on the command line -> module under dpjax.experiments (a package per paper)
EXPERIMENTS = {
    "sgld-interim": "sgld_interim.figure1",
    "girsanov-quadratic": "girsanov.quadratic",
    "gibbs-gaussian-mean": "gibbs.gaussian_mean",
    "contamination-mean": "contamination.mean",
    "contamination-logistic": "contamination.logistic",
    "contamination-linear": "contamination.linear",
    "contamination-cauchy": "contamination.cauchy",
    "contamination-mean-estimation": "contamination.mean_estimation",
    "expfam-beta": "expfam.beta",
    "mcmc-asymptotic": "girsanov.mcmc_asymptotic",
    "noisy-monte-carlo": "girsanov.noisy_monte_carlo",
    "wasserstein-bound": "sgld_interim.wasserstein_bound",
    "sgld-interim-proof": "sgld_interim.proof",
    "girsanov-double-well": "girsanov.double_well",
    "expfam-glm": "expfam.glm",
    "gibbs-lmc": "gibbs.lmc",
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
    "startup": "startup",
    "first-answers": "first_answers",
    "last-iterate": "last_iterate",
    "audit": "audit",
    "poisson": "poisson",
    "real-data": "real_data",
}


def to_jsonable(obj):
    """Convert numpy/jax scalars and arrays (and nested containers) for ``json.dump``.

    Non-finite floats become the strings "inf", "-inf", "nan" so the file stays valid JSON.
    """
    import numpy as np  # here, not at the top: `dpjax --help` must not pay for it

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


def _module_docstring(path: Path):
    """A module's docstring, read from the first tokens of its source (parsing the whole module
    with ``ast`` for each of two dozen results cost a third of a second of ``--help``)."""
    with open(path, encoding="utf-8") as fh:
        for token in tokenize.generate_tokens(fh.readline):
            if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING):
                continue
            if token.type == tokenize.STRING:
                return inspect.cleandoc(ast.literal_eval(token.string))
            return None
    return None


def _description(package: str, module: str) -> str:
    """The first sentence of a module's docstring, read from its source without importing it
    (so ``--help`` stays fast), with the ``dpjax reproduce NAME``: prefix and RST markup removed."""
    try:
        spec = importlib.util.find_spec(f"dpjax.{package}.{module}")
        doc = _module_docstring(Path(spec.origin)) if spec and spec.origin else None
    except (ImportError, OSError, SyntaxError, ValueError, tokenize.TokenError):
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
_DEMO_PARSER: list = []  # the demo's subparser: dpjax.demo adds its flags when it is chosen


DESCRIPTION = (
    "dpjax measures how much privacy Langevin-type samplers (ULA, noisy SGD, cyclic SGLD) leak: coupled "
    "chain pairs on neighbouring datasets, accountants' bounds, exact values and estimates side by side."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpjax", description=DESCRIPTION, epilog="Run 'dpjax COMMAND --help' for a command's flags.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")

    demo_help = "paper 000's story at reduced n in under a minute: a private posterior, a leaky interim SGLD iterate"
    demo = sub.add_parser("demo", help=demo_help, description=demo_help[:1].upper() + demo_help[1:] + ".")
    demo.set_defaults(func=_cmd_demo)  # its flags are added when it is chosen (it imports numpy)
    _DEMO_PARSER[:] = [demo]

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
    subcommand is read off the command line first: ``dpjax demo ...``, ``dpjax reproduce NAME
    ...`` or ``dpjax bench NAME ...`` (neither the top level nor ``reproduce``/``bench`` take
    options before NAME). Anything else (``--help``, a typo) is left to the full parse, which prints
    help or one clear error.
    """
    if argv[:1] == ["demo"]:  # part of every build: an ImportError here is a real error
        from .demo import add_arguments

        add_arguments(_DEMO_PARSER[0])
        return
    if len(argv) >= 2 and argv[0] in ("reproduce", "bench"):
        command, name = argv[0], argv[1]
    else:
        return
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
    try:
        return int(args.func(args) or 0)
    except ImportError as err:
        package = _missing_package(err)
        if package is None:  # dpjax's own import broke: a bug, keep the traceback
            raise
        command = " ".join(str(part) for part in (args.command, getattr(args, "name", None)) if part)
        advice = "" if "pip install" in str(err) else f"; install it (pip install {package})"
        print(f"dpjax {command}: {err}{advice}", file=sys.stderr)
        return 1


def _missing_package(err: ImportError):
    """The third-party package whose absence caused ``err`` (the error or its cause is a
    ModuleNotFoundError outside dpjax), else None. A missing optional dependency, e.g.
    scikit-learn for the real-data audit, is then one line on stderr, not two tracebacks."""
    seen = err
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError) and seen.name and seen.name.split(".")[0] != "dpjax":
            return seen.name.split(".")[0]
        seen = seen.__cause__ or seen.__context__
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
