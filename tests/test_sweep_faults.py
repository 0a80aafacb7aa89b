"""Fault injection on the sweep's results store: a kill at every write, every kind of file the
sweep writes truncated or corrupted, a second writer, and unusable output folders.

The reference is an uninterrupted run of the same tiny sweep (2 points, 40 pairs, 12 steps,
checkpoints every 4 steps). After any fault, a plain rerun must give exactly its rows, with
no duplicated log line, no temporary file and no checkpoint left behind. Everything runs
in-process: a "kill" is a BaseException raised inside a write after leaving what a real kill
would leave (half a temporary file, half a JSON line).

The chains come from a stand-in for ``run_pairs`` with the same contract (deterministic in
(seed, pair, step), checkpoints every ``checkpoint_every`` steps through the store's
callbacks, resumes from what ``load_checkpoint`` returns): the store is under test here, and
compiling the real engine for every one of the ~40 runs would take minutes. The real engine's
bit-identical resume is tested in test_sweep_run.py, and a real kill -9 of ``dpjax sweep`` in
test_sweep_cli.py.
"""
from __future__ import annotations

import json
import os
import types
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _shared import sweep_point
from dpjax.sweep import config as C
from dpjax.sweep import store as S
from dpjax.sweep import runner
from dpjax.sweep.chains import ChainRecord
from dpjax.sweep.runner import run_points
from dpjax.sweep.store import ResultsStore, StoreBusyError, StoreError, StoreWarning, load_results

KEY = ["config_hash", "step", "quantity", "argument"]
CONFIG = {
    "seed": 0,
    "defaults": sweep_point("gaussian-mean", 40, 12, [4, 12], [
        {"name": "epsilon_lower_bound", "delta": 0.01},
        {"name": "epsilon_estimate", "delta": 0.01, "num_bootstrap": 10},
        {"name": "path_delta", "epsilons": [0.5, 1.0]},
    ]),
    "grid": {"seed": [0, 1]},
}
POINTS, _ = C.expand(CONFIG)
HASHES = [C.point_hash(p) for p in POINTS]


class Kill(BaseException):
    """Stands for SIGKILL: not an Exception, so nothing in the sweep catches it."""


def fake_run_pairs(seed, problem, *, num_pairs, num_steps, record_steps, dtype="float64", mesh=None, chunk_size=1000,
                   checkpoint_every=None, load_checkpoint=lambda: None, save_checkpoint=lambda arrays: None, progress=None):
    """x_{t+1} = 0.9 x_t + z(seed, t) on D, and + 0.3 on D'; path loss accumulates. Step size
    1.0 stands for a diverging sampler (every pair overflows after step 6); 0.9 for an engine
    failure (raises)."""
    if problem.sampler.step_size == 0.9:
        raise FloatingPointError("stand-in engine failure")
    steps = np.asarray(record_steps)
    state = dict(step=np.asarray(0), num_recorded=np.asarray(0), position=np.zeros((num_pairs, 1)), neighbour_position=np.zeros((num_pairs, 1)),
                 path_loss=np.zeros(num_pairs), finite=np.ones(num_pairs, bool), rec_position=np.zeros((len(steps), num_pairs, 1)),
                 rec_neighbour_position=np.zeros((len(steps), num_pairs, 1)), rec_path_loss=np.zeros((len(steps), num_pairs)))
    saved = load_checkpoint()
    resumed = 0
    if saved is not None:
        state = {k: np.array(saved[k]) for k in state}
        resumed = int(state["step"])
    t = int(state["step"])
    while True:
        while int(state["num_recorded"]) < len(steps) and steps[int(state["num_recorded"])] == t:
            r = int(state["num_recorded"])
            state["rec_position"][r], state["rec_neighbour_position"][r] = state["position"], state["neighbour_position"]
            state["rec_path_loss"][r] = state["path_loss"]
            state["num_recorded"] = np.asarray(r + 1)
        if t >= num_steps:
            break
        z = np.random.default_rng([seed, t]).standard_normal((num_pairs, 1))
        state["position"] = 0.9 * state["position"] + z
        state["neighbour_position"] = 0.9 * state["neighbour_position"] + z + 0.3
        state["path_loss"] = state["path_loss"] + 0.045 + 0.3 * z[:, 0]
        if problem.sampler.step_size == 1.0 and t >= 6:
            state["position"][:] = np.inf
            state["finite"][:] = False
        t += 1
        state["step"] = np.asarray(t)
        if checkpoint_every and t % checkpoint_every == 0 and t < num_steps:
            while int(state["num_recorded"]) < len(steps) and steps[int(state["num_recorded"])] == t:
                r = int(state["num_recorded"])
                state["rec_position"][r], state["rec_neighbour_position"][r] = state["position"], state["neighbour_position"]
                state["rec_path_loss"][r] = state["path_loss"]
                state["num_recorded"] = np.asarray(r + 1)
            save_checkpoint({k: np.array(v) for k, v in state.items()})
    return ChainRecord(steps.copy(), state["rec_position"], state["rec_neighbour_position"], state["rec_path_loss"], state["finite"],
                       dict(compile_seconds=0.0, run_seconds=0.0, resumed_from_step=resumed, num_devices=1, num_processes=1))


@pytest.fixture(autouse=True)
def stand_in_engine(monkeypatch):
    monkeypatch.setattr(runner, "run_pairs", fake_run_pairs)


def _run(out, **kw):
    return run_points(POINTS, out, checkpoint_every=4, progress=False, **kw)


def _rows(out):
    return load_results(out).sort_values(KEY).reset_index(drop=True)


@pytest.fixture
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    summary = _run(out)
    assert summary["completed"] == HASHES and not summary["failed"]
    return _rows(out)


def _assert_clean(out: Path, reference: pd.DataFrame):
    rows = _rows(out)
    assert not rows.duplicated(KEY).any()
    pd.testing.assert_frame_equal(rows, reference, check_exact=True)
    for log in ("points.jsonl", "timings.jsonl"):
        lines = (out / log).read_text().splitlines()
        hashes = [json.loads(line)["config_hash"] for line in lines]  # every line parses
        assert sorted(hashes) == sorted(HASHES), log  # one line per point, none duplicated
    leftovers = [p for p in out.rglob(".*") if p.name != ".lock"]
    assert leftovers == [], leftovers
    assert not list((out / "checkpoints").glob("*")), "checkpoints are removed once a point completes"


def _write_events(monkeypatch, kill_at=None):
    """Count the store's writes; at event ``kill_at`` leave a half-written file and Kill."""
    events = []
    real_atomic, real_append, real_remove = S._atomic_write, S._append_line, ResultsStore.remove_checkpoint

    def atomic(path, write):
        events.append(("atomic", Path(path).name))
        if len(events) == kill_at:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            (Path(path).parent / f".{Path(path).name}.killed.tmp").write_bytes(b"PAR1 half a file")
            raise Kill
        real_atomic(path, write)

    def append(path, record):
        events.append(("append", Path(path).name))
        if len(events) == kill_at:
            with open(path, "a") as fh:
                fh.write(json.dumps(record)[:20])
            raise Kill
        real_append(path, record)

    def remove(self, config_hash):
        events.append(("remove", config_hash))
        if len(events) == kill_at:
            raise Kill
        real_remove(self, config_hash)

    monkeypatch.setattr(S, "_atomic_write", atomic)
    monkeypatch.setattr(S, "_append_line", append)
    monkeypatch.setattr(ResultsStore, "remove_checkpoint", remove)
    return events


def test_a_kill_at_every_write_then_a_rerun_gives_the_uninterrupted_rows(tmp_path, monkeypatch, reference):
    with monkeypatch.context() as m:
        events = _write_events(m)
        _run(tmp_path / "count")
    kinds = {kind for kind, _ in events}
    assert kinds == {"atomic", "append", "remove"} and len(events) >= 10, events
    for k in range(1, len(events) + 1):
        out = tmp_path / f"kill{k}"
        with monkeypatch.context() as m:
            _write_events(m, kill_at=k)
            with pytest.raises(Kill):
                _run(out)
        with warnings.catch_warnings():
            warnings.simplefilter("error", StoreWarning)  # a kill never leaves a damaged file
            _run(out)
        _assert_clean(out, reference)


def _truncate(path: Path):
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 2)])


def _garbage(path: Path):
    path.write_bytes(os.urandom(max(64, path.stat().st_size)))


def _flip_middle_byte(path: Path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _garbage, _flip_middle_byte])
def test_damaged_result_files_and_logs_are_found_named_and_recomputed(tmp_path, reference, damage):
    out = tmp_path / "out"
    _run(out)
    victim = out / "results" / f"{HASHES[0]}.parquet"
    damage(victim)
    damage(out / "points.jsonl")
    damage(out / "timings.jsonl")
    (out / ".lock").write_bytes(os.urandom(16))
    if damage is _flip_middle_byte:
        # a flip may land where the content is unchanged; corrupt the rows' checksum instead
        S._atomic_write(victim, lambda tmp: _rewrite_with_wrong_checksum(victim, tmp))
    # load_results names the bad file and returns the others instead of failing on all
    with pytest.warns(StoreWarning, match=HASHES[0]):
        partial = load_results(out)
    assert set(partial["config_hash"]) == {HASHES[1]}
    assert partial.attrs["damaged_files"] == [str(victim)]
    with pytest.raises(StoreError, match=HASHES[0]):
        load_results(out, strict=True)
    with pytest.warns(StoreWarning, match=f"{HASHES[0]}.parquet is damaged"):
        summary = _run(out)
    assert summary["completed"] == [HASHES[0]] and summary["skipped"] == [HASHES[1]]
    assert list((out / "corrupt").iterdir()), "the damaged file is kept aside for inspection"
    _assert_clean(out, reference)


def _rewrite_with_wrong_checksum(path: Path, tmp: str):
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception:  # already unreadable: keep it so
        Path(tmp).write_bytes(path.read_bytes())
        return
    meta = dict(table.schema.metadata or {})
    meta[S.META_CHECKSUM] = meta[S.META_FILE_CHECKSUM] = b"0" * 64
    pq.write_table(table.replace_schema_metadata(meta), tmp)


@pytest.mark.parametrize("damage", [_truncate, _garbage, _flip_middle_byte])
def test_a_damaged_checkpoint_is_discarded_with_its_name_and_the_point_restarts(tmp_path, monkeypatch, reference, damage):
    out = tmp_path / "out"
    with monkeypatch.context() as m:
        _write_events(m, kill_at=2)  # the second checkpoint of the first point
        with pytest.raises(Kill):
            _run(out)
    checkpoint = out / "checkpoints" / f"{HASHES[0]}.npz"
    assert checkpoint.is_file()
    damage(checkpoint)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _run(out)
    named = [str(w.message) for w in caught if issubclass(w.category, StoreWarning)]
    if damage is not _flip_middle_byte:  # a flip can land in zip padding and change nothing
        assert named and str(checkpoint) in named[0] and "restarts from step 0" in named[0]
    _assert_clean(out, reference)


def test_a_checkpoint_of_the_wrong_shape_is_discarded(tmp_path, reference):
    out = tmp_path / "out"
    store = ResultsStore(out)
    store.save_checkpoint(HASHES[0], {"step": np.asarray(4), "position": np.zeros((3, 1))}, seed=POINTS[0]["seed"])
    with pytest.warns(StoreWarning, match="restarts from step 0"):
        _run(out)
    _assert_clean(out, reference)


def test_a_second_writer_is_refused_before_any_compute(tmp_path, capsys):
    from dpjax.sweep import main

    out = tmp_path / "out"
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(CONFIG))  # JSON is YAML
    with ResultsStore(out):  # another process (flock conflicts across open file descriptions)
        with pytest.raises(StoreBusyError, match=f"pid {os.getpid()}"):
            ResultsStore(out).open()
        assert main(types.SimpleNamespace(config=str(config), out=str(out), no_progress=True)) == 2
        assert "is in use by another dpjax sweep" in capsys.readouterr().err
        assert not (out / "results").exists(), "nothing computed"
    # once the first writer is gone the folder is usable again
    ResultsStore(out).open().close()


def test_stale_temporaries_are_removed_when_a_writer_opens_the_store(tmp_path):
    out = tmp_path / "out"
    for folder in ("", "results", "checkpoints"):
        (out / folder).mkdir(parents=True, exist_ok=True)
        (out / folder / ".x.npz.abc123.tmp").write_bytes(b"half")
    with ResultsStore(out) as store:
        assert not list(out.rglob("*.tmp"))
        assert store.complete_hashes() == []


def _file(path: Path) -> str:
    path.write_text("x")
    return str(path)


@pytest.mark.parametrize(
    "make_out, message",
    [
        (lambda tmp: "", "is empty"),
        (lambda tmp: _file(tmp / "f"), "is an existing file"),
        (lambda tmp: _file(tmp / "f") + "/sub", "which is a file"),
    ],
)
def test_unusable_output_folders_fail_in_one_line_before_any_compute(tmp_path, capsys, make_out, message):
    from dpjax.sweep import main

    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(CONFIG))
    out = make_out(tmp_path)
    assert main(types.SimpleNamespace(config=str(config), out=out, no_progress=True)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]
    with pytest.raises(StoreError, match=message):
        run_points(POINTS, out, progress=False)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_output_folder_fails_before_any_compute(tmp_path):
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o500)
    try:
        with pytest.raises(StoreError, match="not writable|cannot write|permission"):
            run_points(POINTS, out, progress=False)
    finally:
        out.chmod(0o700)


def test_yaml_numbers_without_a_dot_are_the_numbers_meant(tmp_path):
    import yaml

    text = (
        "defaults:\n  model: {name: gaussian_mean}\n  data: {generator: gaussian, n: 6, record: {x: [3.0]}}\n"
        "  sampler: {name: ula, step_size: 5e-2}\n  num_pairs: 4e1\n  num_steps: 12\n"
        "  quantities: [{name: epsilon_lower_bound, delta: 1e-2}]\n"
    )
    assert yaml.safe_load(text)["defaults"]["quantities"][0]["delta"] == "1e-2"  # PyYAML reads a string
    path = tmp_path / "c.yaml"
    path.write_text(text)
    (point,), _ = C.load(path)
    assert point["quantities"][0]["delta"] == 0.01 and point["sampler"]["step_size"] == 0.05 and point["num_pairs"] == 40
    bad = text.replace("delta: 1e-2", "delta: 1e-2x")
    path.write_text(bad)
    with pytest.raises(C.ConfigError, match=r'quantities\[0\]\.delta="1e-2x": must be a finite number'):
        C.load(path)


def test_a_point_whose_pairs_all_diverge_is_recorded_and_the_sweep_goes_on(tmp_path, capsys):
    from dpjax.sweep import main

    config = json.loads(json.dumps(CONFIG))
    config["grid"] = {"sampler.step_size": [1.0, 0.9, 0.05]}  # diverges, engine fails, fine
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(config))
    points, _ = C.expand(config)
    diverging, broken, fine = (C.point_hash(p) for p in points)
    out = tmp_path / "out"
    for attempt in range(2):  # the rerun reports the same, recomputing nothing recorded
        assert main(types.SimpleNamespace(config=str(path), out=str(out), no_progress=True)) == 1
        err = capsys.readouterr().err
        assert f"{diverging} points[0]: ValueError: only 0 of 40 chain pairs are finite at step 12" in err
        assert f"{broken} points[1]: the chains failed (FloatingPointError: stand-in engine failure)" in err
    df = load_results(out)
    assert set(df["config_hash"]) == {diverging, fine}  # the broken point is retried next time
    rows = df[df["config_hash"] == diverging].set_index(["step", "quantity", "argument"])
    assert rows.loc[(12, "num_nonfinite", np.nan), "value"].item() == 40.0
    assert rows.loc[(4, "num_nonfinite", np.nan), "value"].item() == 0.0
    at_12 = df[(df["config_hash"] == diverging) & (df["step"] == 12) & (df["quantity"] != "num_nonfinite")]
    assert at_12["value"].isna().all() and at_12["error"].str.contains("diverged").all()
    at_4 = df[(df["config_hash"] == diverging) & (df["step"] == 4)]
    assert at_4["error"].isna().all() and np.isfinite(at_4["value"]).all()
    assert df[df["config_hash"] == fine]["error"].isna().all()


def test_closed_form_quantities_that_cannot_apply_fail_before_any_chain():
    from dpjax.sweep.runner import validate

    config = json.loads(json.dumps(CONFIG))
    config["defaults"].update(
        model={"name": "bayesian_linear_regression", "dim": 2},
        data={"generator": "regression", "n": 6, "seed": 2, "record": {"x": [3.0, -3.0], "y": 5.0}},
        quantities=[{"name": "exact_epsilon", "delta": 0.01}],
    )
    points, _ = C.expand(config)
    with pytest.raises(C.ConfigError, match=r"points\[0\]\.quantities\[0\] \(exact_epsilon\): .*needs equal covariances"):
        validate(points)
