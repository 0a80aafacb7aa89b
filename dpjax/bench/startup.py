"""``dpjax bench startup``: first answers in fresh processes, with and without JAX's persistent compilation cache.

Every number is the wall-clock time of a fresh Python process (or of one call inside it),
median over ``--repeats`` processes:

* ``dpjax --help`` (``python -m dpjax --help``), against ``python -c pass`` as the baseline: what
  the interpreter itself costs on this machine at this load;
* ``pld_curve(1.0, 0.05, 300).epsilon(1e-5)`` and a first ``calibrate_noise_multiplier(1.0,
  1e-5, 0.01, 1000)``, each in three states of the cache: **off** (``DPJAX_NO_COMPILATION_CACHE=1``:
  what every process paid before the cache), **cold** (an empty cache folder: the first process
  after installing, which also writes the cache) and **warm** (a second process on that folder).
  Each child reports its import time and call time apart, and how many programs JAX compiled
  (persistent-cache misses in JAX's compiler log; 0 means nothing was compiled);
* ``dpjax reproduce breast-cancer-audit --quick`` (issue 21's first-audit goal: data, MAP,
  accountants, 500 coupled pairs and the figure), in the same three states; its answer is the
  PLD's eps at the last step count, which the cache must not change;
* two first ``calibrate_steps`` (issue 38: each must answer or refuse within 10 s with the
  cache off): ``(1.0, 1e-5, 1.0, 0.01)`` (254 steps) and the issue's ``(1, 1e-5, 1000.0,
  0.01)``, which the PLD refuses (answer recorded as 0); not in ``all``: ``--tasks steps``,
  ``--tasks steps-refused``;
* dp_accounting's ``PLDAccountant`` on the same DP-SGD configuration in a fresh process, as
  the peer's reference (it compiles nothing).

Each child also reports its CPU seconds (every thread, from its start: the issue's goals are
stated in CPU time). Ratios are against the "off" process of the same task in the same
invocation.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

_COUNT_COMPILES = textwrap.dedent(
    """
    import json, logging, time
    class _Count(logging.Handler):
        misses = 0
        def emit(self, record):
            if record.getMessage().startswith("PERSISTENT COMPILATION CACHE MISS"):
                _Count.misses += 1
    _log = logging.getLogger("jax._src.compiler")
    _log.setLevel(logging.DEBUG)
    _log.addHandler(_Count())
    """
)


def _accountant_task(function: str, answer: str) -> str:
    """A task's script: import ``function`` from dpjax.accountants, then time ``answer`` (an
    expression, or lines of code that set ``answer``)."""
    body = answer if "\n" in answer else f"answer = {answer}\n"
    return f"start = time.perf_counter()\nfrom dpjax.accountants import {function}\nimported = time.perf_counter()\n{body}"


TASKS = {
    "pld_curve(1.0, 0.05, 300)": _accountant_task("pld_curve", "pld_curve(1.0, 0.05, 300).epsilon(1e-5)"),
    "calibrate_noise_multiplier(1.0, 1e-5, 0.01, 1000)": _accountant_task(
        "calibrate_noise_multiplier", "calibrate_noise_multiplier(1.0, 1e-5, 0.01, 1000).value"),
    "reproduce breast-cancer-audit --quick": textwrap.dedent(
        """
        start = time.perf_counter()
        import contextlib, io, pathlib, tempfile
        from dpjax.cli import main
        imported = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                code = main(["reproduce", "breast-cancer-audit", "--quick", "--out", out])
            if code:
                raise SystemExit(f"the audit exited with {code}")
            answer = json.loads((pathlib.Path(out) / "breast-cancer-audit.json").read_text())["epsilon_upper_pld"][-1]
        """
    ),
    # issue 38 item 7: every calibration answers or refuses within 10 s. The first answers 254
    # steps; the second is the input, which the PLD refuses (its grid resolves nothing
    # at that delta): its answer is recorded as 0, so that the three states must agree on it too
    "calibrate_steps(1.0, 1e-5, 1.0, 0.01)": _accountant_task("calibrate_steps", "calibrate_steps(1.0, 1e-5, 1.0, 0.01).value"),
    "calibrate_steps(1, 1e-5, 1000.0, 0.01), refused": _accountant_task("calibrate_steps", textwrap.dedent(
        """\
        try:
            answer = calibrate_steps(1, 1e-5, 1000.0, 0.01).value
        except ValueError as err:
            if "accountant='rdp'" not in str(err):
                raise
            answer = 0
        """)),
}
_TASK_FLAGS = dict(zip(("pld", "calibrate", "audit", "steps", "steps-refused"), TASKS))  # --tasks NAME -> the task
_IN_ALL = ("pld", "calibrate", "audit")  # what --tasks all measures (the issue-24 set)
_REPORT = ('done = time.perf_counter()\nprint(json.dumps(dict(answer=float(answer), import_s=imported - start, call_s=done - imported, '
           'cpu_s=time.process_time(), compiles=_Count.misses)))\n')

DP_ACCOUNTING = textwrap.dedent(
    """
    import json, time
    start = time.perf_counter()
    from dp_accounting import dp_event, pld
    imported = time.perf_counter()
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_event.PoissonSampledDpEvent(0.05, dp_event.GaussianDpEvent(1.0)), 300)
    answer = accountant.get_epsilon(1e-5)
    done = time.perf_counter()
    print(json.dumps(dict(answer=answer, import_s=imported - start, call_s=done - imported, compiles=0)))
    """
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per measurement (medians reported; default 3)")
    parser.add_argument("--help-repeats", type=int, default=7, help="fresh processes for `dpjax --help` and its baseline (default 7)")
    parser.add_argument("--tasks", default="all", choices=["all", "help", *_TASK_FLAGS], help="what to measure (default all)")


def _environment(**extra) -> dict:
    # a fresh user's settings: none of JAX's or dpjax's (the platform choice is kept)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_", "DPJAX_")) or k == "JAX_PLATFORMS"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _wall(command: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _child(script: str, env: dict) -> dict:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"the benchmark's child process failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = wall
    return out


def _median(rows: list[dict], key: str) -> float:
    return float(statistics.median(r[key] for r in rows))


def run(args) -> dict:
    result: dict = {"machine": f"{os.cpu_count()} CPU cores", "load_average_1min": os.getloadavg()[0]}
    if args.tasks in ("all", "help"):
        env = _environment(DPJAX_NO_COMPILATION_CACHE=1)
        interpreter = [_wall([sys.executable, "-c", "pass"], env) for _ in range(args.help_repeats)]
        helps = [_wall([sys.executable, "-m", "dpjax", "--help"], env) for _ in range(args.help_repeats)]
        result["python -c pass (s)"] = statistics.median(interpreter)
        result["dpjax --help (s)"] = statistics.median(helps)
        result["dpjax --help / python -c pass"] = statistics.median(helps) / statistics.median(interpreter)
    chosen = [_TASK_FLAGS[t] for t in _IN_ALL] if args.tasks == "all" else [_TASK_FLAGS[args.tasks]] if args.tasks in _TASK_FLAGS else []
    for name in chosen:
        script = _COUNT_COMPILES + TASKS[name] + _REPORT
        off, cold, warm = [], [], []
        for _ in range(args.repeats):
            off.append(_child(script, _environment(DPJAX_NO_COMPILATION_CACHE=1)))
            with tempfile.TemporaryDirectory(prefix="dpjax-bench-cache-") as folder:
                env = _environment(DPJAX_COMPILATION_CACHE_DIR=Path(folder) / "cache")
                cold.append(_child(script, env))
                warm.append(_child(script, env))
        answers = {r["answer"] for r in off + cold + warm}
        if len(answers) != 1:
            raise RuntimeError(f"{name}: the cache changed the answer: {sorted(answers)}")
        base = _median(off, "call_s")
        for state, rows in (("off", off), ("cold", cold), ("warm", warm)):
            result[f"{name} [{state}] import (s)"] = _median(rows, "import_s")
            result[f"{name} [{state}] call (s)"] = _median(rows, "call_s")
            result[f"{name} [{state}] process (s)"] = _median(rows, "process_s")
            result[f"{name} [{state}] process CPU (s)"] = _median(rows, "cpu_s")
            result[f"{name} [{state}] programs compiled"] = _median(rows, "compiles")
            result[f"{name} [{state}] call / off call"] = _median(rows, "call_s") / base
        result[f"{name} answer"] = answers.pop()
    if args.tasks in ("all", "pld"):
        try:
            peer = [_child(DP_ACCOUNTING, _environment()) for _ in range(args.repeats)]
        except RuntimeError:  # dp_accounting not installed: the reference row is left out
            peer = []
        if peer:
            result["dp_accounting PLD eps, same configuration: import (s)"] = _median(peer, "import_s")
            result["dp_accounting PLD eps, same configuration: call (s)"] = _median(peer, "call_s")
            result["dp_accounting PLD eps answer"] = peer[0]["answer"]
    result["load_average_1min_after"] = os.getloadavg()[0]
    return result
