"""`dpjax sweep` as a subprocess: kill -9 and resume, device-count and process-count independence."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from _shared import sweep_point
from dpjax.sweep.store import load_results

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "experiments" / "sweeps" / "smoke.yaml"
KEY = ["config_hash", "step", "quantity", "argument"]

TINY = {
    # one SGLD point (batch randomness, d = 2, checkpoints, padding: 30 pairs on 4 devices)
    "seed": 7,
    "checkpoint_every": 10,
    "defaults": sweep_point("regression", 30, 24, [12, 24], [
        {"name": "epsilon_lower_bound", "delta": 0.05},
        {"name": "epsilon_estimate", "delta": 0.05, "num_bootstrap": 20},
        {"name": "path_delta", "epsilons": [0.5, 1.0]},
    ], data={"record": {"x": [2.0, -2.0], "y": 3.0}}, sampler={"name": "sgld", "batching": "uniform", "batch_size": 3}),
}


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "JAX_", "DPJAX_")) or k in ("DPJAX_NO_COMPILATION_CACHE", "DPJAX_COMPILATION_CACHE_DIR")}
    env["JAX_PLATFORMS"] = "cpu"  # the layouts compared are CPU devices and gloo processes, also on a GPU machine
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _sweep_cmd(config, out):
    return [sys.executable, "-m", "dpjax", "sweep", str(config), "--out", str(out)]


def _run(config, out, timeout=240, **env):
    proc = subprocess.run(_sweep_cmd(config, out), cwd=ROOT, env=_env(**env), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _sorted(df):
    return df.sort_values(KEY).reset_index(drop=True)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_kill_9_mid_run_then_rerun_gives_the_uninterrupted_rows(tmp_path):
    cache = dict(JAX_COMPILATION_CACHE_DIR=tmp_path / "jax-cache", JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0)
    _run(SMOKE, tmp_path / "ref", **cache)
    reference = _sorted(load_results(tmp_path / "ref"))
    assert reference["config_hash"].nunique() >= 5

    out = tmp_path / "killed"
    proc = subprocess.Popen(_sweep_cmd(SMOKE, out), cwd=ROOT, env=_env(**cache), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    try:
        while not list((out / "results").glob("*.parquet")):
            assert proc.poll() is None, "the sweep ended before a point file appeared"
            assert time.time() < deadline, "no point file within 240 s"
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    done_before = len(list((out / "results").glob("*.parquet")))
    assert 1 <= done_before < reference["config_hash"].nunique(), "the kill should land mid-sweep"

    rerun = _run(SMOKE, out, **cache)
    assert f"{done_before} already complete" in rerun.stdout
    resumed = _sorted(load_results(out))
    assert not resumed.duplicated(KEY).any()
    pd.testing.assert_frame_equal(resumed, reference)
    assert not any(p for p in (out / "checkpoints").glob("*.npz")), "checkpoints are removed once a point completes"
    assert not [p for p in (out / "results").iterdir() if p.name.startswith(".")], "no temporary files left behind"


@pytest.mark.slow
def test_same_numbers_on_1_device_4_devices_and_2_processes(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    port = _free_port()
    runs = {  # all four processes at once: the two of the 2-process run must overlap anyway
        "one": (tmp_path / "one", _env()),
        "four": (tmp_path / "four", _env(XLA_FLAGS="--xla_force_host_platform_device_count=4")),
    }
    for pid, name in ((0, "two"), (1, "not-written")):
        runs[name] = (tmp_path / name, _env(DPJAX_COORDINATOR=f"127.0.0.1:{port}", DPJAX_NUM_PROCESSES=2, DPJAX_PROCESS_ID=pid))
    procs = {
        name: subprocess.Popen(_sweep_cmd(config, out), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, (out, env) in runs.items()
    }
    outputs = {name: p.communicate(timeout=240) for name, p in procs.items()}
    for name, p in procs.items():
        assert p.returncode == 0, (name, outputs[name][1][-3000:])
    assert "1 points; 1 run" in outputs["two"][0]
    assert not (tmp_path / "not-written").exists(), "only process 0 writes"

    one, four, two = (_sorted(load_results(tmp_path / name)) for name in ("one", "four", "two"))
    assert len(one) == 2 + 2 + 2 + 2 * 2  # num_nonfinite x 2 steps, lower bound x 2, estimate x 2, path delta 2 eps x 2 steps
    pd.testing.assert_frame_equal(four, one, check_exact=True)
    pd.testing.assert_frame_equal(two, one, check_exact=True)
    timings = {name: pd.read_json(tmp_path / name / "timings.jsonl", lines=True) for name in ("one", "four", "two")}
    assert set(timings["one"]["num_devices"]) == {1}
    assert set(timings["four"]["num_devices"]) == {4}
    assert set(timings["two"]["num_devices"]) == {2} and set(timings["two"]["num_processes"]) == {2}
