"""Fast first answers: ``dpjax --help`` loads neither JAX nor numpy, and JAX's persistent
compilation cache is on for dpjax's processes (in the user's cache directory, off with
``DPJAX_NO_COMPILATION_CACHE``, a user's own choice kept), shared safely by concurrent
processes, so a second process compiles nothing.

Everything runs in fresh interpreters with folders of their own (the test session itself keeps
the cache off, see conftest.py). Whether a process compiled is read from JAX's compiler log:
it logs each program's persistent-cache hit or miss (at DEBUG level) by name.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Prints one JSON line: what the process computed, and the cache hits and misses JAX logged.
COUNTING = textwrap.dedent(
    """
    import json, logging, sys
    class Count(logging.Handler):
        hits, misses = [], []
        def emit(self, record):
            text = record.getMessage()
            if text.startswith("Persistent compilation cache hit"):
                Count.hits.append(text.split("'")[1])
            elif text.startswith("PERSISTENT COMPILATION CACHE MISS"):
                Count.misses.append(text.split("'")[1])
    compiler_log = logging.getLogger("jax._src.compiler")
    compiler_log.setLevel(logging.DEBUG)
    compiler_log.addHandler(Count())
    """
)

SMALL_PROGRAM = COUNTING + textwrap.dedent(
    """
    import dpjax, jax, jax.numpy as jnp
    @jax.jit
    def program(x):
        return jnp.cumsum(jnp.sin(x) ** 2) @ jnp.cos(x)
    value = float(program(jnp.linspace(0.0, 1.0, 1000)))
    print(json.dumps(dict(value=value, cache_dir=jax.config.jax_compilation_cache_dir,
                          min_seconds=jax.config.jax_persistent_cache_min_compile_time_secs,
                          hits=Count.hits, misses=Count.misses)))
    """
)


def _env(tmp_path: Path, **extra) -> dict:
    """The environment of a fresh user: no JAX or dpjax settings, a home cache under tmp_path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_", "DPJAX_"))}
    env.update(JAX_PLATFORMS="cpu", XDG_CACHE_HOME=str(tmp_path / "home-cache"))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _python(script: str, env: dict, timeout: float = 300) -> dict:
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Error reading persistent compilation cache" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_help_imports_neither_jax_nor_numpy(tmp_path):
    script = textwrap.dedent(
        """
        import contextlib, io, json, sys, time
        start = time.perf_counter()
        from dpjax.cli import main
        with contextlib.redirect_stdout(io.StringIO()) as text:
            try:
                main(["--help"])
            except SystemExit as stop:
                code = stop.code
        print(json.dumps(dict(code=code, seconds=time.perf_counter() - start, help=text.getvalue(),
                              loaded=sorted(m for m in ("jax", "jaxlib", "numpy", "scipy", "pandas", "matplotlib") if m in sys.modules))))
        """
    )
    out = _python(script, _env(tmp_path))
    assert out["code"] == 0 and "reproduce" in out["help"] and "sweep" in out["help"]
    assert out["loaded"] == [], f"`dpjax --help` imported {out['loaded']}"
    for command, flag in ((["demo", "--help"], "--epochs"), (["sweep", "--help"], "--coordinator")):
        proc = subprocess.run([sys.executable, "-m", "dpjax", *command], cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and flag in proc.stdout, proc.stderr[-2000:]  # the command's own flags are listed


def test_import_dpjax_is_lazy_and_its_names_still_resolve(tmp_path):
    script = textwrap.dedent(
        """
        import json, sys
        import dpjax
        lazy = "jax" not in sys.modules
        from dpjax import make_dataset, PrivacyCurve, samplers
        print(json.dumps(dict(lazy=lazy, names=sorted(dpjax.__all__), accountants=dpjax.accountants.__name__,
                              make_dataset=make_dataset.__module__, curve=PrivacyCurve.__module__, samplers=samplers.__name__,
                              in_dir=all(name in dir(dpjax) for name in dpjax.__all__))))
        """
    )
    out = _python(script, _env(tmp_path))
    assert out["lazy"], "import dpjax loaded JAX"
    assert out["make_dataset"] == "dpjax.data" and out["curve"] == "dpjax.accountants.curve" and out["in_dir"]
    assert out["accountants"] == "dpjax.accountants" and out["samplers"] == "dpjax.samplers"
    proc = subprocess.run([sys.executable, "-c", "import dpjax; dpjax.no_such_name"], cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True)
    assert proc.returncode == 1 and "AttributeError: module 'dpjax' has no attribute 'no_such_name'" in proc.stderr


def test_the_library_imports_scipy_stats_only_where_it_is_used(tmp_path):
    """``scipy.stats`` takes ~0.4 s to import (a fifth of ``import dpjax.audit`` here): the
    models, estimators, accountants and audit do not import it; the few functions that use its
    distributions import it when called (the rest take the same quantiles from scipy.special)."""
    script = "import json, sys\nimport dpjax.audit, dpjax.models, dpjax.estimators, dpjax.accountants\n" \
             "print(json.dumps(dict(stats='scipy.stats' in sys.modules)))"
    assert _python(script, _env(tmp_path)) == {"stats": False}


def test_the_cache_is_on_by_default_in_the_users_cache_directory(tmp_path):
    out = _python(SMALL_PROGRAM, _env(tmp_path))
    folder = tmp_path / "home-cache" / "dpjax" / "jax-compilation-cache"
    assert out["cache_dir"] == str(folder) and out["min_seconds"] == 0.0
    assert any(folder.iterdir()), "the compiled program was written"
    # JAX imported before dpjax: configured at once
    before = SMALL_PROGRAM.replace("import dpjax, jax, jax.numpy as jnp", "import jax, jax.numpy as jnp, dpjax")
    assert _python(before, _env(tmp_path))["cache_dir"] == str(folder)


def test_the_cache_is_off_with_the_environment_variable_and_a_users_choice_is_kept(tmp_path):
    off = _python(SMALL_PROGRAM, _env(tmp_path, DPJAX_NO_COMPILATION_CACHE=1))
    assert off["cache_dir"] is None and off["hits"] == []
    assert not (tmp_path / "home-cache").exists(), "nothing written into the user's cache"
    mine = tmp_path / "mine"
    kept = _python(SMALL_PROGRAM, _env(tmp_path, JAX_COMPILATION_CACHE_DIR=mine))
    assert kept["cache_dir"] == str(mine) and kept["min_seconds"] == 1.0, "the user's choice, and JAX's own threshold"
    assert not (tmp_path / "home-cache").exists()


@pytest.mark.slow  # three more fresh interpreters
def test_a_choice_made_in_code_is_kept_and_an_unusable_folder_leaves_the_cache_off(tmp_path):
    mine = tmp_path / "mine"
    set_in_code = SMALL_PROGRAM.replace(
        "import dpjax, jax, jax.numpy as jnp", f"import jax, jax.numpy as jnp\njax.config.update('jax_compilation_cache_dir', {str(mine)!r})\nimport dpjax"
    )
    assert _python(set_in_code, _env(tmp_path))["cache_dir"] == str(mine)
    assert not (tmp_path / "home-cache").exists()
    (tmp_path / "a_file").write_text("x")
    assert _python(SMALL_PROGRAM, _env(tmp_path, DPJAX_COMPILATION_CACHE_DIR=tmp_path / "a_file" / "sub"))["cache_dir"] is None
    assert _python(SMALL_PROGRAM, _env(tmp_path, DPJAX_NO_COMPILATION_CACHE=0))["cache_dir"] is not None, "0 means on"


def test_two_processes_share_a_fresh_cache_then_a_third_compiles_nothing(tmp_path):
    env = _env(tmp_path, DPJAX_COMPILATION_CACHE_DIR=tmp_path / "shared")
    procs = [subprocess.Popen([sys.executable, "-c", SMALL_PROGRAM], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr[-3000:]
        assert "Error reading persistent compilation cache" not in stderr and "Error writing" not in stderr, stderr[-3000:]
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    assert results[0]["value"] == results[1]["value"]
    assert all(r["misses"] for r in results) or any(r["hits"] for r in results)
    warm = _python(SMALL_PROGRAM, env)
    assert warm["value"] == results[0]["value"]
    assert warm["misses"] == [] and "jit_program" in warm["hits"], warm


ACCOUNTANTS = COUNTING + textwrap.dedent(
    """
    from dpjax.accountants import calibrate_noise_multiplier, calibrate_sampling_rate, calibrate_steps, pld_curve
    from dpjax.accountants.composition import pld_plan
    from dpjax.accountants.mechanisms import gaussian
    pld_plan.MAX_CONFIGURATIONS = 0  # the jitted engine (small jobs otherwise run in numpy, compiling nothing)
    gaussian._NUMPY_MAX_ELEMENTS = 0
    answers = [
        pld_curve(1.0, 0.1, 20).epsilon(1e-5),
        calibrate_noise_multiplier(2.0, 1e-5, 0.1, 20).value,
        calibrate_sampling_rate(2.0, 1e-5, 1.0, 20).value,
        calibrate_steps(2.0, 1e-5, 1.0, 0.1).value,
    ]
    print(json.dumps(dict(answers=[float(a) for a in answers], hits=Count.hits, misses=Count.misses)))
    """
)


@pytest.mark.slow  # two interpreters computing PLD curves and three calibrations (~1-3 min loaded)
def test_a_second_process_answers_pld_curve_and_calibrations_without_compiling(tmp_path):
    env = _env(tmp_path)
    cold = _python(ACCOUNTANTS, env, timeout=900)
    assert cold["misses"], "the first process compiled"
    warm = _python(ACCOUNTANTS, env, timeout=900)
    assert warm["misses"] == [], f"the second process compiled {warm['misses'][:5]}"
    assert len(warm["hits"]) >= len(set(cold["misses"]))
    assert warm["answers"] == cold["answers"]
