import json

import jax
import numpy as np
import pytest

from dpjax.cli import EXPERIMENTS, build_parser, from_jsonable, to_jsonable


def test_to_jsonable_handles_numpy_and_non_finite():
    obj = {"a": np.float64(1.5), "b": np.arange(3), "c": [np.inf, -np.inf, float("nan")], 4: np.int64(2)}
    out = json.loads(json.dumps(to_jsonable(obj)))
    assert out == {"a": 1.5, "b": [0, 1, 2], "c": ["inf", "-inf", "nan"], "4": 2}
    back = from_jsonable(out)  # read back, the non-finite floats are floats again
    assert back["c"][:2] == [np.inf, -np.inf] and np.isnan(back["c"][2]) and back["b"] == [0, 1, 2] and back["a"] == 1.5


def test_parser_lists_every_paper_result():
    parser = build_parser()
    for name in EXPERIMENTS:
        args = parser.parse_args(["reproduce", name, "--out", "x"])
        assert args.name == name and args.out == "x"


def test_unknown_experiment_is_rejected(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["reproduce", "no-such-result"])
    assert "invalid choice" in capsys.readouterr().err


def test_experiment_scripts_cover_every_result_and_run(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    scripts = {p.stem for p in (root / "experiments").glob("*.py")}
    assert scripts == {name.replace("-", "_") for name in EXPERIMENTS}  # one script per result, named after it
    subprocess.run(
        [sys.executable, str(root / "experiments" / "girsanov_quadratic.py"), "--out", str(tmp_path), "--steps", "1,10"],
        check=True, capture_output=True, timeout=300,
    )
    out = json.loads((tmp_path / "girsanov-quadratic.json").read_text())
    assert out["steps"] == [1, 10] and (tmp_path / "girsanov-quadratic.png").exists()


def test_bench_gpu_runs_on_a_cpu_at_tiny_sizes(capsys, monkeypatch):
    """`dpjax bench gpu --json` end to end (the GPU issue's benchmark; here at tiny sizes): one
    JSON line, every requested row measured against blackjax in the same run, and a repeated
    call that compiles nothing."""
    from dpjax.bench import gpu
    from dpjax.cli import main

    tiny = dict(gpu.QUICK, cyclic=[(64, 40)], figure1_pairs=[64], figure1_n=500)
    monkeypatch.setattr(gpu, "QUICK", tiny)
    assert main(["bench", "gpu", "--json", "--quick", "--only", "cyclic", "repeated_call", "figure1_epoch"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    on_gpu = jax.default_backend() == "gpu"  # the suite also runs on GPU machines (the GPU issue)
    assert out["backend"] == jax.default_backend() and out["sizes"] == "quick"
    rows = {r["row"]: r for r in out["rows"]}
    cyclic = rows["cyclic"]
    assert cyclic["engine_general"] == "reference" and cyclic["engine_quadratic"] == ("pallas" if on_gpu else "quadratic")
    assert cyclic["blackjax"] > 0 and cyclic["quadratic_over_blackjax"] == cyclic["dpjax_quadratic"] / cyclic["blackjax"]
    assert rows["repeated_call"]["quadratic"]["compilations_in_repeat"] == 0
    assert rows["repeated_call"]["general"]["compilations_in_repeat"] == 0
    assert rows["figure1_epoch"]["nonfinite"] == 0 and rows["figure1_epoch"]["records"] == 500
    # --steps-multiplier scales the stepping rows' steps (per-call vs per-step cost), nothing else
    assert main(["bench", "gpu", "--json", "--quick", "--only", "cyclic", "--steps-multiplier", "3"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["steps_multiplier"] == 3 and [r["steps"] for r in out["rows"]] == [120]
    with pytest.raises(ValueError, match=r"--steps-multiplier=0 must be >= 1"):
        main(["bench", "gpu", "--json", "--quick", "--steps-multiplier", "0"])


def test_bench_figure1_at_small_n(capsys):
    """The Figure 1 Monte Carlo benchmark end to end at n = 100: the chains' 95% lower bounds
    stay below the exact epoch-end eps (fixed seed)."""
    from dpjax.cli import main

    assert main(["bench", "figure1", "--json", "--n", "100", "--pairs", "3000", "--epochs", "3,12"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["epochs"] == [3, 12] and out["num_nonfinite"] == 0
    assert out["all_lower_bounds_below_exact"]
    assert out["lower_bound_95"][1] > 0.3  # the leak at the peak is detected with 3000 pairs
    peak = int(np.argmax(out["exact_tight_epsilon"]))
    assert out["peak_epoch"] == out["epochs"][peak]
    assert out["lower_bound_share_at_peak"] == out["lower_bound_95"][peak] / out["exact_tight_epsilon"][peak]


def test_bench_contamination_at_tiny_sizes(capsys):
    """Algorithm 1 with and without the closed-form mixture densities, in one process: both
    give the same eps_hat (to rounding) and the ratio is reported per model."""
    from dpjax.cli import main

    # the shapes of test_contamination_cauchy_logistic_experiments.py's Cauchy run (d = 3, n <= 512
    # records, m = 100, 4 datasets a batch): the closed-form path's program is that run's, so
    # whichever runs second loads it from the run's compilation cache
    assert main(["bench", "contamination", "--json", "--models", "cauchy", "--dim", "3", "--n", "200", "--datasets", "4",
                 "--particles", "100", "--dataset-batch", "4", "--repeats", "1"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    row = out["cauchy"]
    assert out["backend"] == jax.default_backend() and (row["dim"], row["n"], row["particles"]) == (3, 200, 100)
    assert row["closed_form_seconds_per_dataset"] > 0 and row["speedup"] == pytest.approx(
        row["log_space_seconds_per_dataset"] / row["closed_form_seconds_per_dataset"])
    assert row["max_abs_eps_difference"] < 1e-6
    with pytest.raises(ValueError, match="not in"):
        main(["bench", "contamination", "--models", "gaussian"])


def test_bench_startup_measures_fresh_processes(capsys):
    """`dpjax bench startup`: `dpjax --help` against the bare interpreter in fresh processes, and
    every task's child script (the PLD curve, the calibration, the first audit) is a program the
    child can run: each compiles as Python with the compile counter and the report around it."""
    from dpjax.bench import startup
    from dpjax.cli import main

    for name, task in startup.TASKS.items():
        compile(startup._COUNT_COMPILES + task + startup._REPORT, name, "exec")
    assert startup._TASK_FLAGS == {"pld": "pld_curve(1.0, 0.05, 300)", "calibrate": "calibrate_noise_multiplier(1.0, 1e-5, 0.01, 1000)",
                                   "audit": "reproduce breast-cancer-audit --quick",
                                   "steps": "calibrate_steps(1.0, 1e-5, 1.0, 0.01)",
                                   "steps-refused": "calibrate_steps(1, 1e-5, 1000.0, 0.01), refused"}
    assert set(startup.TASKS) == set(startup._TASK_FLAGS.values()) and set(startup._IN_ALL) == {"pld", "calibrate", "audit"}
    assert main(["bench", "startup", "--json", "--tasks", "help", "--help-repeats", "1"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["python -c pass (s)"] > 0 and out["dpjax --help (s)"] > 0
    assert out["dpjax --help / python -c pass"] == pytest.approx(out["dpjax --help (s)"] / out["python -c pass (s)"])


def test_bench_first_answers_times_fresh_processes_against_dp_accounting(capsys):
    """`dpjax bench first-answers` at its smallest (two configurations, one round): a fresh dpjax
    process and a fresh dp_accounting one on the same configurations, the ratios of their
    times, no XLA program compiled by dpjax, and dp_accounting's eps in dpjax's bracket."""
    pytest.importorskip("dp_accounting")
    from dpjax.cli import main

    assert main(["bench", "first-answers", "--json", "--configs", "1", "--repeats", "1"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(out["configurations"]) == 2 and out["rounds"] == 1
    assert out["dpjax: XLA programs compiled"] == 0
    assert out["dpjax: dp_accounting's eps in the bracket"] is True
    assert out["dpjax: max |eps - dp_accounting's| / dp_accounting's"] < 1e-6
    assert out["dp_accounting / dpjax, first configuration"] == pytest.approx(
        out["dp_accounting: first configuration (s)"] / out["dpjax: first configuration (s)"])
    assert out["dp_accounting / dpjax, 1 more"] > 0


@pytest.mark.parametrize("flag, value", [("--particles", "0"), ("--dim", "0"), ("--n", "-1"), ("--dataset-batch", "0"),
                                         ("--datasets", "0"), ("--repeats", "0")])
def test_bench_contamination_refuses_a_non_positive_size_by_name(flag, value):
    """A size of 0 is an error naming the flag, before any compute (it used to be replaced by the
    model's default: ``args.particles or m``)."""
    from dpjax.cli import main

    with pytest.raises(ValueError, match=f"{flag}={value} violates {flag} a positive integer"):
        main(["bench", "contamination", "--models", "cauchy", flag, value])


# --- help, descriptions, progress and headline (issue 14) -------------------------------------
import argparse
import sys
import types

from dpjax import cli
from dpjax.cli import BENCHMARKS, main
from dpjax.experiments._report import headline_table

HELP_ARGV = (
    [["--help"], ["reproduce", "--help"], ["bench", "--help"], ["sweep", "--help"], ["demo", "--help"]]
    + [["reproduce", name, "--help"] for name in EXPERIMENTS]
    + [["bench", name, "--help"] for name in BENCHMARKS]
)


@pytest.mark.parametrize("argv", HELP_ARGV, ids=[" ".join(a) for a in HELP_ARGV])
def test_help_prints_help_only(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    captured = capsys.readouterr()
    assert captured.err == "", captured.err
    assert captured.out.startswith("usage: dpjax") and "``" not in captured.out


def _walk(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _walk(sub)


def test_every_subcommand_and_flag_has_a_description():
    parser = cli.build_parser()
    for (command, name), sub in cli._SUBPARSERS.items():
        cli._load(*sub.get_default("_module")).add_arguments(sub)
    cli._add_module_arguments(parser, ["demo"])  # the demo's flags, added when it is chosen
    for p in _walk(parser):
        assert p.description, p.prog
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    assert choice.help, f"{p.prog} {choice.dest}"
            elif not isinstance(action, argparse._HelpAction):
                assert action.help, f"{p.prog}: {action.option_strings or action.dest} has no help"


def test_every_experiment_has_a_headline():
    for name, module in EXPERIMENTS.items():
        assert callable(getattr(cli._load("experiments", module), "headline", None)), name


def test_reproduce_shows_progress_and_ends_with_the_headline(tmp_path, monkeypatch, capsys):
    from dpjax.experiments._report import stage

    fake = types.ModuleType("dpjax.experiments._fake_for_tests")
    fake.add_arguments = lambda parser: parser.add_argument("--size", type=int, default=3, help="a size")

    def run(args):
        with stage("a long step"):
            value = 2.0 * args.size
        return {"value": value}, None

    fake.run = run
    fake.headline = lambda results: [
        dict(quantity="the value", paper=6.0, dpjax=results["value"], note="twice the size"),
        dict(quantity="a value the paper does not print", paper=None, dpjax=float("inf")),
    ]
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setitem(cli.EXPERIMENTS, "fake-for-tests", "_fake_for_tests")
    assert main(["reproduce", "fake-for-tests", "--out", str(tmp_path), "--size", "4"]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("... a long step\n    done in ")
    lines = captured.out.splitlines()
    assert lines[0].startswith(f"wrote {tmp_path / 'fake-for-tests.json'}")
    table = captured.out[captured.out.index("quantity"):]
    assert "the value" in table and "6" in table and "8" in table and "twice the size" in table
    assert "a value the paper does not print" in table and " - " in table and "inf" in table
    assert json.loads((tmp_path / "fake-for-tests.json").read_text()) == {"value": 8.0}


def test_headline_table_checks_its_rows_and_fits_100_columns():
    with pytest.raises(ValueError, match="lacks the keys \\['paper'\\]"):
        headline_table([dict(quantity="q", dpjax=1.0)])
    text = headline_table([dict(quantity="a very long quantity " * 8, paper="not DP", dpjax=101.7, note="a long note " * 20)])
    assert max(len(line) for line in text.splitlines()) <= 100 and "101.7" in text and "not DP" in text
