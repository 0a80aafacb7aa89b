"""Every script in tools/gpu/ answers ``--help`` with its usage and exits 0 without doing its
work: a device session is short, so its scripts must say how to call them before anything runs.

Each script runs as it is called on a device machine: a fresh interpreter started in the
repository root, with the repository on PYTHONPATH and $OUT pointing at an empty folder.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
GPU_TOOLS = sorted((ROOT / "tools" / "gpu").glob("*.py"))


@pytest.mark.parametrize("script", GPU_TOOLS, ids=lambda p: p.name)
def test_every_gpu_tool_answers_help(script: pathlib.Path, tmp_path: pathlib.Path):
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, OUT=str(out),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-5000:]
    # usage first: nothing (a measurement, a result line) was printed before the parser answered
    assert done.stdout.startswith("usage:"), done.stdout[:2000]
    assert "Traceback" not in done.stderr, done.stderr[-5000:]
    # a script that ran on would have written its results to $OUT (float32_agreement.py does)
    assert not any(out.iterdir()), sorted(p.name for p in out.iterdir())
