"""Sweep configuration: validation errors (key path, value, rule), hashing, flattening; the store."""
from __future__ import annotations

import copy
import types

import numpy as np
import pytest
import yaml

from dpjax.sweep import config as C
from dpjax.sweep import distributed
from dpjax.sweep.store import ResultsStore, column_types, load_results

BASE = {
    "seed": 0,
    "defaults": {
        "model": {"name": "gaussian_mean", "dim": 1},
        "data": {"generator": "gaussian", "n": 10, "record": {"x": [3.0]}},
        "sampler": {"name": "ula", "step_size": 0.05},
        "num_pairs": 100,
        "num_steps": 20,
        "record_steps": [10, 20],
        "quantities": [{"name": "epsilon_lower_bound", "delta": 0.01}],
    },
}


def with_changes(**dotted):
    cfg = copy.deepcopy(BASE)
    for key, value in dotted.items():
        node = cfg
        parts = key.split("__")
        for p in parts[:-1]:
            node = node[p]
        node[parts[-1]] = value
    return cfg


def test_valid_grid_expands_to_cartesian_product_with_resolved_defaults():
    cfg = with_changes()
    cfg["grid"] = {"sampler.step_size": [0.01, 0.02], "data.n": [10, 12]}
    points, settings = C.expand(cfg)
    assert len(points) == 4
    assert {(p["sampler"]["step_size"], p["data"]["n"]) for p in points} == {(0.01, 10), (0.01, 12), (0.02, 10), (0.02, 12)}
    p = points[0]
    assert p["sampler"]["temperature"] == 1.0 and p["sampler"]["parameterisation"] == "euler"
    assert p["data"]["adjacency"] == "replace-one" and p["dtype"] == "float64"
    assert settings == {"checkpoint_every": None, "chunk_size": 1000}


def test_points_times_grid_and_renamed_blocks_replace_defaults():
    cfg = with_changes()
    cfg["points"] = [{}, {"sampler": {"name": "sgld", "step_size": 0.01, "batching": "uniform", "batch_size": 2}}]
    cfg["grid"] = {"seed": [1, 2]}
    points, _ = C.expand(cfg)
    assert [p["sampler"]["name"] for p in points] == ["ula", "ula", "sgld", "sgld"]
    assert points[2]["sampler"]["parameterisation"] == "welling-teh"  # not ULA's euler default
    assert len({C.point_hash(p) for p in points}) == 4


@pytest.mark.parametrize(
    "changes, match",
    [
        (dict(defaults__sampler={"name": "ula", "step_size": -0.1}), r"point\.sampler\.step_size=-0\.1: must be a finite number in \(0\.0, inf\]"),
        (dict(defaults__sampler={"name": "langevin", "step_size": 0.1}), r"point\.sampler\.name=\"langevin\": must be one of \['cyclic-sgld', 'sgld', 'ula'\]"),
        (dict(defaults__sampler={"name": "ula", "step_size": 0.1, "batch_size": 3}), r"point\.sampler\.batch_size=3: unknown key; allowed keys"),
        (dict(defaults__sampler={"name": "ula"}), r"point\.sampler\.step_size is missing"),
        (dict(defaults__sampler={"name": "sgld", "step_size": 0.1, "batching": "poisson"}), r"point\.sampler\.rate is missing"),
        (dict(defaults__sampler={"name": "sgld", "step_size": 0.1, "batching": "uniform"}), r"point\.sampler\.batch_size is missing"),
        (dict(defaults__num_pairs=2), r"point\.num_pairs=2: must be an integer >= 4"),
        (dict(defaults__num_steps=1.5), r"point\.num_steps=1\.5: must be an integer"),
        (dict(defaults__record_steps=[10, 30]), r"point\.record_steps=\[10, 30\]: must be strictly increasing integers in \[0, num_steps=20\]"),
        (dict(defaults__dtype="float16"), r"point\.dtype=\"float16\": must be one of \['float64', 'float32'\]"),
        (dict(defaults__init=[0.0, 1.0]), r"point\.init=\[0\.0, 1\.0\]: must be a list of model\.dim=1 numbers"),
        (dict(defaults__model={"name": "logistic_regression", "dim": 1}), r"point\.data\.generator=\"gaussian\": does not fit model\.name='logistic_regression'"),
        (dict(defaults__data={"generator": "gaussian", "n": 10, "index": 10, "record": {"x": [1.0]}}), r"point\.data\.index=10: must satisfy 0 <= index < data\.n=10"),
        (dict(defaults__data={"generator": "gaussian", "n": 10}), r"point\.data\.record is missing; replace-one adjacency needs"),
        (dict(defaults__data={"generator": "gaussian", "n": 10, "adjacency": "add-remove", "record": {"x": [1.0]}}), r"point\.data\.record=.*must be absent for add-remove"),
        (dict(defaults__quantities=[{"name": "epsilon_lower_bound", "delta": 1.5}]), r"point\.quantities\[0\]\.delta=1\.5: must be a finite number in \(0\.0, 1\.0\)"),
        (dict(defaults__quantities=[{"name": "renyi"}]), r"point\.quantities\[0\]\.name=\"renyi\": must be one of"),
        (dict(defaults__quantities=[]), r"point\.quantities=\[\]: must be a non-empty list"),
        (dict(defaults__quantities=[{"name": "path_delta"}]), r"point\.quantities\[0\]\.epsilons is missing"),
        (dict(defaults__unknown=1), r"point\.unknown=1: unknown key; allowed keys are"),
        (dict(checkpoint_every=0), r"checkpoint_every=0: must be an integer >= 1"),
        (dict(extra={}), r"extra=\{\}: unknown top-level key"),
    ],
)
def test_invalid_values_name_key_path_value_and_rule(changes, match):
    with pytest.raises(C.ConfigError, match=match):
        C.expand(with_changes(**changes))


def test_closed_form_quantities_are_checked_against_sampler_and_model():
    cfg = with_changes(defaults__sampler={"name": "sgld", "step_size": 0.1, "batching": "uniform", "batch_size": 2})
    cfg["defaults"]["quantities"] = [{"name": "exact_epsilon", "delta": 0.01}]
    with pytest.raises(C.ConfigError, match=r"quantities\[0\]\.name=\"exact_epsilon\": needs sampler\.name='ula'"):
        C.expand(cfg)
    cfg = with_changes(defaults__sampler={"name": "ula", "step_size": 0.1, "temperature": 2.0})
    cfg["defaults"]["quantities"] = [{"name": "girsanov_path_epsilon", "delta": 0.01}]
    with pytest.raises(C.ConfigError, match=r"needs sampler\.temperature=1"):
        C.expand(cfg)


def test_grid_errors_name_the_grid_key():
    cfg = with_changes()
    cfg["grid"] = {"sampler.step_size": []}
    with pytest.raises(C.ConfigError, match=r"grid\.sampler\.step_size=\[\]: must be a non-empty list"):
        C.expand(cfg)
    cfg["grid"] = {"sampler.step_size": [0.1, -1.0]}
    with pytest.raises(C.ConfigError, match=r"point\{sampler\.step_size=-1\.0\}\.sampler\.step_size=-1\.0"):
        C.expand(cfg)
    cfg["grid"] = {"solver.tol": [1]}
    with pytest.raises(C.ConfigError, match=r"grid\.solver\.tol=\[1\]: must start with one of"):
        C.expand(cfg)


def test_duplicate_points_are_rejected():
    cfg = with_changes()
    cfg["grid"] = {"sampler.step_size": [0.05, 0.05]}
    with pytest.raises(C.ConfigError, match="resolve to the same configuration"):
        C.expand(cfg)


def test_library_errors_from_building_come_back_with_the_point_path():
    from dpjax.sweep.runner import validate

    cfg = with_changes(defaults__data={"generator": "gaussian", "n": 10, "record": {"x": [1.0, 2.0]}})
    points, _ = C.expand(cfg)
    with pytest.raises(C.ConfigError, match=r"points\[0\]\.data: record\['x'\] has shape \(2,\); it must have shape \(1,\)"):
        validate(points)
    cfg = with_changes(defaults__sampler={"name": "sgld", "step_size": 0.1, "batching": "uniform", "batch_size": 50})
    points, _ = C.expand(cfg)
    with pytest.raises(C.ConfigError, match=r"points\[0\]\.sampler: .*50"):
        validate(points)
    cfg = with_changes(defaults__model={"name": "bayesian_linear_regression", "dim": 1})
    cfg["defaults"]["data"] = {"generator": "regression", "n": 10, "record": {"x": [5.0], "y": 1.0}}
    cfg["defaults"]["quantities"] = [{"name": "girsanov_path_epsilon", "delta": 0.01}]
    points, _ = C.expand(cfg)
    with pytest.raises(C.ConfigError, match=r"points\[0\]\.quantities: girsanov_path_epsilon needs .* equal Hessians"):
        validate(points)


def test_hash_is_canonical_in_key_order_and_number_spelling():
    a = with_changes()
    b = yaml.safe_load(yaml.safe_dump(a, sort_keys=True))
    b["defaults"]["sampler"] = {"step_size": 0.05, "name": "ula", "temperature": 1}  # int 1 == default 1.0
    (pa,), _ = C.expand(a)
    (pb,), _ = C.expand(b)
    assert C.canonical_json(pa) == C.canonical_json(pb)
    assert C.point_hash(pa) == C.point_hash(pb)
    (pc,), _ = C.expand(with_changes(defaults__num_steps=21, defaults__record_steps=[10, 21]))
    assert C.point_hash(pc) != C.point_hash(pa)


def test_flatten_gives_scalar_columns_and_json_for_lists():
    (p,), _ = C.expand(with_changes())
    flat = C.flatten(p)
    assert flat["sampler.step_size"] == 0.05 and flat["model.name"] == "gaussian_mean"
    assert flat["record_steps"] == "[10,20]" and flat["data.record"] == '{"x":[3.0]}'
    assert "quantities" not in flat


def test_load_reports_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(C.ConfigError, match="no such file"):
        C.load(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("defaults: [unclosed\n")
    with pytest.raises(C.ConfigError, match="is not valid YAML"):
        C.load(bad)


def test_main_returns_2_with_the_message_before_any_compute(tmp_path, capsys):
    from dpjax.sweep import main

    cfg = with_changes(defaults__sampler={"name": "ula", "step_size": "fast"})
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    assert main(types.SimpleNamespace(config=str(path), out=str(out))) == 2
    assert 'point.sampler.step_size="fast"' in capsys.readouterr().err
    assert not out.exists()


def test_distributed_settings_from_flags_and_environment():
    assert distributed.settings_from(types.SimpleNamespace(), {}) is None
    env = {"DPJAX_COORDINATOR": "127.0.0.1:1234", "DPJAX_NUM_PROCESSES": "2", "DPJAX_PROCESS_ID": "1"}
    assert distributed.settings_from(None, env) == ("127.0.0.1:1234", 2, 1)
    flags = types.SimpleNamespace(coordinator="h:1", num_processes=4, process_id=3)
    assert distributed.settings_from(flags, env) == ("h:1", 4, 3)
    with pytest.raises(ValueError, match="needs all three"):
        distributed.settings_from(None, {"DPJAX_COORDINATOR": "h:1"})
    with pytest.raises(ValueError, match=r"process_id=2 violates 0 <= process_id < num_processes=2"):
        distributed.settings_from(None, {**env, "DPJAX_PROCESS_ID": "2"})
    with pytest.raises(ValueError, match="must be HOST:PORT"):
        distributed.settings_from(None, {**env, "DPJAX_COORDINATOR": "localhost"})


def test_store_writes_atomically_and_ignores_partial_files(tmp_path):
    store = ResultsStore(tmp_path)
    (p,), _ = C.expand(with_changes())
    h = C.point_hash(p)
    flat = C.flatten(p)
    types_ = column_types([flat])
    # a torn temporary file from a killed writer: not complete, not read
    store.results_dir.mkdir(parents=True)
    (store.results_dir / f".{h}.parquet.abc.tmp").write_bytes(b"PAR1 half written")
    assert not store.is_complete(h)
    assert len(load_results(tmp_path)) == 0
    rows = [dict(step=10, quantity="q", argument=0.1, value=1.5, lower=1.0, upper=np.inf)]
    store.write_point(h, flat, types_, rows, p)
    assert store.is_complete(h)
    df = load_results(tmp_path)
    assert len(df) == 1 and df["config_hash"][0] == h and df["upper"][0] == np.inf and df["sampler.step_size"][0] == 0.05
    assert [f.name for f in store.results_dir.iterdir() if not f.name.startswith(".")] == [f"{h}.parquet"]
    # checkpoints round-trip bit for bit and disappear on removal
    arr = np.random.default_rng(0).standard_normal(5)
    store.save_checkpoint(h, {"step": np.asarray(3), "x": arr}, seed=p["seed"])
    back = store.load_checkpoint(h, seed=p["seed"])
    assert int(back["step"]) == 3 and np.array_equal(back["x"], arr)
    store.remove_checkpoint(h)
    assert store.load_checkpoint(h, seed=p["seed"]) is None
    # a torn JSON line (kill during append) is skipped
    store.append_timing({"config_hash": h, "run_seconds": 1.0})
    with open(store.timings_path, "a") as fh:
        fh.write('{"config_hash": "x", "run_sec')
    assert store.timings() == [{"config_hash": h, "run_seconds": 1.0}]
