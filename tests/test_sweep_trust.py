"""The sweep store trusts nothing it reads back: every flipped byte of a result file and of a
checkpoint, a checkpoint copied under another point's name, a checksum removed and a value
edited, a missing or wrong folder given to ``load_results``, a binary or ambiguous YAML file.

Fault injection, byte by byte. A result file or checkpoint with one byte XORed with 0xFF must
be either refused (set aside with a warning, the point recomputed from step 0) or read back as
exactly what was written: the same rows, types, configuration and timing records, the same
checkpoint arrays bit for bit. Every byte position is checked that way (a dense stride of them
outside ``-m slow``). Since a refused file makes the point run again from nothing and an
accepted one hands the run exactly the bytes it wrote, the rerun is the uninterrupted run; a
sample of positions (both refused and accepted flips) is rerun in full and compared with the
uninterrupted run's rows to show it.

The chains come from the stand-in engine of test_sweep_faults.py (same contract as
``run_pairs``, deterministic in (seed, pair, step)): the store is under test here.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import types
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpjax.sweep import config as C
from dpjax.sweep import runner
from dpjax.sweep import store as S
from dpjax.sweep.store import ResultsStore, StoreError, StoreWarning, load_results

from test_sweep_faults import CONFIG as TWO_POINT_CONFIG
from test_sweep_faults import KEY, fake_run_pairs

# one point, two recorded steps, two quantities: a 10 kB result file and a 4 kB checkpoint
LEAN = copy.deepcopy(TWO_POINT_CONFIG)
LEAN["grid"] = {"seed": [0, 1]}
LEAN["defaults"]["quantities"] = [{"name": "epsilon_lower_bound", "delta": 0.01}, {"name": "path_delta", "epsilons": [0.5]}]
POINTS, _ = C.expand(LEAN)
HASHES = [C.point_hash(p) for p in POINTS]
VICTIM = HASHES[0]


class Kill(BaseException):
    """Stands for SIGKILL (not an Exception: nothing in the sweep catches it)."""


@pytest.fixture(autouse=True)
def stand_in_engine(monkeypatch):
    monkeypatch.setattr(runner, "run_pairs", fake_run_pairs)


def _run(out):
    return runner.run_points(POINTS, out, checkpoint_every=4, progress=False)


def _rows(out) -> pd.DataFrame:
    return load_results(out).sort_values(KEY).reset_index(drop=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    with pytest.MonkeyPatch.context() as m:
        m.setattr(runner, "run_pairs", fake_run_pairs)
        out = tmp_path_factory.mktemp("reference")
        assert _run(out)["completed"] == HASHES
    return out, _rows(out)


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """A store killed right after the first point's second checkpoint (step 8 of 12)."""
    out = tmp_path_factory.mktemp("interrupted")
    saves = []
    real_save = ResultsStore.save_checkpoint

    def save_then_kill(self, config_hash, arrays, *, seed):
        real_save(self, config_hash, arrays, seed=seed)
        saves.append(config_hash)
        if len(saves) == 2:
            raise Kill

    with pytest.MonkeyPatch.context() as m:
        m.setattr(runner, "run_pairs", fake_run_pairs)
        m.setattr(ResultsStore, "save_checkpoint", save_then_kill)
        with pytest.raises(Kill):
            _run(out)
    checkpoint = ResultsStore(out).checkpoint_path(VICTIM)
    with np.load(checkpoint) as data:
        assert int(data["step"]) == 8
    return out


def _flipped(data: bytes, position: int) -> bytes:
    damaged = bytearray(data)
    damaged[position] ^= 0xFF
    return bytes(damaged)


def _positions(size: int, stride: int) -> list[int]:
    """Every ``stride``-th position plus both ends (the Parquet footer and the zip central
    directory hold the metadata)."""
    return sorted(set(range(0, size, stride)) | set(range(min(96, size))) | set(range(max(0, size - 160), size)))


EVERY_BYTE_OR_A_STRIDE = pytest.mark.parametrize("stride", [pytest.param(1, marks=pytest.mark.slow, id="every-byte"), pytest.param(7, id="every-7th-byte")])


def _describe(table) -> tuple:
    """Everything the store reads from a result file: column types, values, dpjax metadata."""
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if k.startswith(b"dpjax.")}
    return [(f.name, str(f.type)) for f in table.schema], S.content_checksum(table.replace_schema_metadata(None)), meta


class _FlipInPlace:
    """XOR one byte of a file with 0xFF in place (and back): the file keeps its inode and size."""

    def __init__(self, path: Path):
        self.original = path.read_bytes()
        self.fd = os.open(path, os.O_RDWR)

    def flip(self, position: int) -> None:
        os.pwrite(self.fd, bytes([self.original[position] ^ 0xFF]), position)

    def restore(self, position: int) -> None:
        os.pwrite(self.fd, self.original[position : position + 1], position)

    def close(self) -> None:
        os.close(self.fd)


def _check_every_flip_of_a_result_file(out: Path, stride: int) -> dict:
    victim = ResultsStore(out).result_path(VICTIM)
    truth, reason = S._read_validated(victim, VICTIM)
    assert truth is not None, reason
    truth = _describe(truth)
    outcome = {"refused": [], "accepted": []}
    file = _FlipInPlace(victim)
    try:
        for position in _positions(len(file.original), stride):
            file.flip(position)
            table, reason = S._read_validated(victim, VICTIM)  # never raises
            file.restore(position)
            if table is None:
                assert reason, position
                outcome["refused"].append(position)
            else:
                assert _describe(table) == truth, f"a flip of byte {position} was accepted with other content"
                outcome["accepted"].append(position)
    finally:
        file.close()
    assert victim.read_bytes() == file.original
    return outcome


@EVERY_BYTE_OR_A_STRIDE
def test_every_flipped_byte_of_a_result_file_is_refused_or_changes_nothing_read(reference, tmp_path, stride):
    out, rows = reference
    work = tmp_path / "out"
    shutil.copytree(out, work)
    outcome = _check_every_flip_of_a_result_file(work, stride)
    size = ResultsStore(work).result_path(VICTIM).stat().st_size
    assert 24 in outcome["refused"], "the issue's byte 24 (a page header) must be refused"
    # most flips land in values, headers, the schema or the checksummed metadata
    assert len(outcome["refused"]) > len(outcome["accepted"]) > 0, (len(outcome["refused"]), len(outcome["accepted"]), size)

    # the rerun after a sample of refused and accepted flips gives the uninterrupted rows
    sample = outcome["refused"][:: max(1, len(outcome["refused"]) // 8)] + outcome["accepted"][:: max(1, len(outcome["accepted"]) // 3)]
    original = (out / "results" / f"{VICTIM}.parquet").read_bytes()
    for position in sample:
        trial = tmp_path / f"flip{position}"
        shutil.copytree(out, trial)
        (trial / "results" / f"{VICTIM}.parquet").write_bytes(_flipped(original, position))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            partial = load_results(trial)  # names the damaged file, returns the others
            summary = _run(trial)
        named = [str(w.message) for w in caught if issubclass(w.category, StoreWarning)]
        if position in outcome["refused"]:
            assert set(partial["config_hash"]) == {HASHES[1]}, position
            assert summary["completed"] == [VICTIM] and summary["skipped"] == [HASHES[1]], position
            assert any(f"{VICTIM}.parquet is damaged" in m for m in named), (position, named)
            assert list((trial / "corrupt").iterdir()), "the damaged file is kept aside for inspection"
        else:
            assert summary["completed"] == [] and not named, (position, named)
        pd.testing.assert_frame_equal(_rows(trial), rows, check_exact=True)
        assert sorted(json.loads(line)["config_hash"] for line in (trial / "points.jsonl").read_text().splitlines()) == sorted(HASHES)


_PROBLEMS: dict = {}


def _problem(point):
    h = C.point_hash(point)
    if h not in _PROBLEMS:
        _PROBLEMS[h] = runner.build_checked(point, "point")
    return _PROBLEMS[h]


def _arrays(path: Path) -> dict:
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


@EVERY_BYTE_OR_A_STRIDE
def test_every_flipped_byte_of_a_checkpoint_is_refused_or_changes_nothing_read(interrupted, reference, tmp_path, stride):
    _, rows = reference
    work = tmp_path / "out"
    shutil.copytree(interrupted, work)
    store = ResultsStore(work)
    path = store.checkpoint_path(VICTIM)
    point = POINTS[0]
    truth = store.load_checkpoint(VICTIM, seed=point["seed"])
    assert truth is not None and int(truth["step"]) == 8
    refused, accepted = [], []
    expect = runner._checkpoint_shapes(point, _problem(point))
    file = _FlipInPlace(path)
    original = file.original
    try:
        for position in _positions(len(original), stride):
            file.flip(position)
            back, reason = S._read_checkpoint(path, VICTIM, point["seed"], expect)
            file.restore(position)
            if back is None:
                assert reason, position
                refused.append(position)
            else:
                assert sorted(back) == sorted(truth), position
                for name in truth:  # bit for bit, dtype and shape included
                    assert back[name].dtype == truth[name].dtype and back[name].shape == truth[name].shape, (position, name)
                    assert back[name].tobytes() == truth[name].tobytes(), (position, name)
                accepted.append(position)
    finally:
        file.close()
    assert refused and len(refused) > len(accepted), (len(refused), len(accepted), len(original))

    sample = refused[:: max(1, len(refused) // 8)] + accepted[:: max(1, len(accepted) // 2)]
    for position in sample:
        trial = tmp_path / f"flip{position}"
        shutil.copytree(interrupted, trial)
        ResultsStore(trial).checkpoint_path(VICTIM).write_bytes(_flipped(original, position))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            summary = _run(trial)
        assert summary["completed"] == HASHES, position
        named = [str(w.message) for w in caught if issubclass(w.category, StoreWarning)]
        assert bool(named) == (position in refused), (position, named)
        pd.testing.assert_frame_equal(_rows(trial), rows, check_exact=True)
        assert not list((trial / "checkpoints").glob("*"))


def test_a_foreign_checkpoint_is_discarded_with_a_warning_and_the_rows_are_the_uninterrupted_ones(reference, tmp_path):
    """The issue's case: one point's checkpoint copied under another point's name, that
    point's results deleted; the rerun must not resume from the copied step."""
    out, rows = reference
    work = tmp_path / "out"
    shutil.copytree(out, work)
    store = ResultsStore(work)
    state = dict(step=np.asarray(8), num_recorded=np.asarray(1), position=np.ones((40, 1)), neighbour_position=np.ones((40, 1)),
                 path_loss=np.ones(40), finite=np.ones(40, bool), rec_position=np.ones((2, 40, 1)),
                 rec_neighbour_position=np.ones((2, 40, 1)), rec_path_loss=np.ones((2, 40)))
    store.save_checkpoint(HASHES[1], state, seed=POINTS[1]["seed"])
    shutil.copy(store.checkpoint_path(HASHES[1]), store.checkpoint_path(VICTIM))
    store.checkpoint_path(HASHES[1]).unlink()
    store.result_path(VICTIM).unlink()
    with pytest.warns(StoreWarning, match=rf"foreign checkpoint: it belongs to .*{HASHES[1]}.*not to .*{VICTIM}.*restarts from step 0"):
        summary = _run(work)
    assert summary["completed"] == [VICTIM]
    pd.testing.assert_frame_equal(_rows(work), rows, check_exact=True)
    assert list((work / "corrupt").iterdir()), "the foreign checkpoint is kept aside for inspection"


def test_a_checkpoint_of_the_same_point_with_another_seed_or_without_identity_is_discarded(tmp_path):
    store = ResultsStore(tmp_path)
    arrays = {"step": np.asarray(4), "x": np.arange(3.0)}
    store.save_checkpoint(VICTIM, arrays, seed=5)
    with pytest.warns(StoreWarning, match=r'foreign checkpoint: it belongs to \{"config_hash": "\w+", "seed": 5\}'):
        assert store.load_checkpoint(VICTIM, seed=6) is None
    with open(store.checkpoint_path(VICTIM), "wb") as fh:  # what a dpjax before identities wrote
        np.savez(fh, **arrays)
    with pytest.warns(StoreWarning, match="carries no identity and checksum"):
        assert store.load_checkpoint(VICTIM, seed=5) is None
    # arrays edited and the file rewritten whole (valid zip CRCs): the checksum still refuses it
    store.save_checkpoint(VICTIM, arrays, seed=5)
    members = _arrays(store.checkpoint_path(VICTIM))
    members["x"] = members["x"] + 1.0
    with open(store.checkpoint_path(VICTIM), "wb") as fh:
        np.savez(fh, **members)
    with pytest.warns(StoreWarning, match="does not match its recorded checksum"):
        assert store.load_checkpoint(VICTIM, seed=5) is None
    with pytest.raises(ValueError, match="dpjax_identity"):
        store.save_checkpoint(VICTIM, {**arrays, "dpjax_identity": np.asarray(0)}, seed=5)


def _rewrite(path: Path, edit) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    table, meta = edit(table, dict(table.schema.metadata or {}))
    pq.write_table(table.replace_schema_metadata(meta), path)


def _edit_value(table):
    import pyarrow as pa

    values = table.column("value").to_pylist()
    values[0] = 0.0 if values[0] != 0.0 else 1.0
    return table.set_column(table.column_names.index("value"), "value", pa.array(values, pa.float64()))


@pytest.mark.parametrize(
    "edit, reason",
    [
        # the case: the checksum key removed and a value edited
        (lambda t, m: (_edit_value(t), {k: v for k, v in m.items() if not k.endswith(b"sha256")}), "carries no checksum"),
        (lambda t, m: (t, {k: v for k, v in m.items() if not k.endswith(b"sha256")}), "carries no checksum"),
        # only the whole-file checksum removed: the older content checksum still catches the edit
        (lambda t, m: (_edit_value(t), {k: v for k, v in m.items() if k != S.META_FILE_CHECKSUM}), "does not match its recorded checksum"),
        # the configuration record edited: covered by the checksum
        (lambda t, m: (t, {**m, S.META_POINT: m[S.META_POINT].replace(b'"num_pairs": 40', b'"num_pairs": 41')}), "does not match its recorded checksum"),
        # a legacy file (content checksum only) whose configuration record was edited: it no longer hashes to the name
        (lambda t, m: (t, {k: v for k, v in {**m, S.META_POINT: m[S.META_POINT].replace(b'"num_pairs": 40', b'"num_pairs": 41')}.items()
                          if k != S.META_FILE_CHECKSUM}), "does not hash to"),
    ],
)
def test_an_edited_result_file_is_refused_and_recomputed(reference, tmp_path, edit, reason):
    out, rows = reference
    work = tmp_path / "out"
    shutil.copytree(out, work)
    victim = ResultsStore(work).result_path(VICTIM)
    _rewrite(victim, edit)
    with pytest.warns(StoreWarning, match=reason):
        assert set(load_results(work)["config_hash"]) == {HASHES[1]}
    with pytest.raises(StoreError, match=f"{VICTIM}.parquet is damaged: .*{reason}"):
        load_results(work, strict=True)
    with pytest.warns(StoreWarning, match=f"{VICTIM}.parquet is damaged"):
        assert _run(work)["completed"] == [VICTIM]
    pd.testing.assert_frame_equal(_rows(work), rows, check_exact=True)


def test_a_file_from_before_the_whole_file_checksum_is_still_read(reference, tmp_path):
    out, rows = reference
    work = tmp_path / "out"
    shutil.copytree(out, work)
    for h in HASHES:
        _rewrite(ResultsStore(work).result_path(h), lambda t, m: (t, {k: v for k, v in m.items() if k != S.META_FILE_CHECKSUM}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        pd.testing.assert_frame_equal(_rows(work), rows, check_exact=True)
        assert _run(work)["skipped"] == HASHES


def test_a_flipped_byte_no_longer_stops_dpjax_sweep(reference, tmp_path, capsys):
    """The issue's case: byte 24 of a result file XORed with 0xFF made load_results (even
    strict) raise UnicodeDecodeError and `dpjax sweep` exit 1 with a traceback, forever."""
    from dpjax.sweep import main

    out, rows = reference
    work = tmp_path / "out"
    shutil.copytree(out, work)
    victim = ResultsStore(work).result_path(VICTIM)
    victim.write_bytes(_flipped(victim.read_bytes(), 24))
    with pytest.raises(StoreError, match=f"{VICTIM}.parquet is damaged"):
        load_results(work, strict=True)
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(LEAN))
    with pytest.warns(StoreWarning, match=f"{VICTIM}.parquet is damaged"):
        assert main(types.SimpleNamespace(config=str(config), out=str(work), no_progress=True)) == 0
    assert "1 run, 1 already complete" in capsys.readouterr().out
    pd.testing.assert_frame_equal(_rows(work), rows, check_exact=True)


def test_load_results_refuses_what_is_no_store(reference, tmp_path):
    out, _ = reference
    with pytest.raises(StoreError, match=r"root='.*missing' does not exist"):
        load_results(tmp_path / "missing")
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(StoreError, match=r"root='.*a_file' is a file"):
        load_results(tmp_path / "a_file")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match="has no results/ folder"):
        load_results(tmp_path / "empty")
    with pytest.raises(StoreError, match="holds the result files themselves; give the folder above it"):
        load_results(out / "results")
    with pytest.raises(TypeError, match="root=None violates"):
        load_results(None)
    with pytest.raises(TypeError, match="columns='value' violates"):
        load_results(out, columns="value")
    with pytest.raises(StoreError, match=r"has column\(s\) \['valeu'\]"):
        load_results(out, columns=["value", "valeu"])
    with pytest.raises(TypeError, match="strict='yes' violates"):
        load_results(out, strict="yes")
    assert list(load_results(out, columns=["quantity", "value"]).columns) == ["quantity", "value"]
    # a store whose first point has not completed yet is a store with no rows
    ResultsStore(tmp_path / "fresh").open().close()
    assert len(load_results(tmp_path / "fresh")) == 0


@pytest.mark.parametrize(
    "content, message",
    [
        (bytes(range(256)) * 4, r"line 2: is not UTF-8 text \(byte 0x80 at offset 128\)"),
        (b"seed: 0\ndefaults:\n  num_steps: 5\n\xff\xfe\n", r"line 4: is not UTF-8 text"),
        (b"seed: 0\ngrid:\n  seed: [0, 1]\n  seed: [2, 3]\n", r"line 4, column 3: .*found the key 'seed' a second time \(first on line 3\)"),
        (b"seed: 0\nseed: 1\n", r"line 2, column 1: .*found the key 'seed' a second time \(first on line 1\)"),
        (b"seed: 0\n\x00\n", r"line 2: .*the character #x0000 is not allowed in YAML"),
        (b"seed: [0\ngrid: 1\n", r"line 2, column 5: .*expected ',' or '\]'"),
    ],
)
def test_bad_yaml_exits_2_with_the_line(tmp_path, capsys, content, message):
    from dpjax.sweep import main

    path = tmp_path / "c.yaml"
    path.write_bytes(content)
    with pytest.raises(C.ConfigError, match=message):
        C.load(path)
    assert main(types.SimpleNamespace(config=str(path), out=str(tmp_path / "out"), no_progress=True)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0] and str(path) in err[0], err


def test_yaml_merge_keys_may_still_be_overridden(tmp_path):
    text = (
        "defaults: &base\n  model: {name: gaussian_mean}\n  data: {generator: gaussian, n: 6, record: {x: [3.0]}}\n"
        "  sampler: {name: ula, step_size: 0.05}\n  num_pairs: 40\n  num_steps: 12\n"
        "  quantities: [{name: epsilon_lower_bound, delta: 0.01}]\n"
        "points:\n  - <<: *base\n    num_steps: 8\n"
    )
    path = tmp_path / "c.yaml"
    path.write_text(text)
    (point,), _ = C.load(path)
    assert point["num_steps"] == 8
