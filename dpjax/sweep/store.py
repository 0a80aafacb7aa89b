"""The sweep results store: a Parquet dataset, one file per completed point, written atomically.

Layout of ``DIR``::

    DIR/results/<hash>.parquet   rows of one completed point (the point is complete iff this exists)
    DIR/timings.jsonl            run metadata, one JSON object per line (never in the result rows)
    DIR/points.jsonl             the resolved configuration of every point written so far
    DIR/checkpoints/<hash>.npz   chain state of a point in progress (removed once it completes)

Every file is written to a temporary name starting with "." in the same folder and moved into
place with ``os.replace`` (atomic on POSIX), after an fsync, so a reader (or a rerun after
SIGKILL) sees either the whole file or none: a half-written point is never taken as complete.
Readers of the Parquet dataset (``pyarrow.dataset``, ``pandas.read_parquet(DIR/results)``)
skip names starting with "." by default; :func:`load_results` reads it into a DataFrame.

Row schema: ``config_hash`` (string), the point's parameters as flat columns
(``sampler.step_size``, ``data.n``, ...; see :func:`dpjax.sweep.config.flatten`), ``step``
(int64, the recorded step), ``quantity`` (string), ``argument`` (float64: the delta or eps the
quantity is evaluated at, NaN for none), ``value``, ``lower``, ``upper`` (float64; NaN where a
quantity has no such limit).
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

ROW_COLUMNS = ("step", "quantity", "argument", "value", "lower", "upper")


def _atomic_write(path: Path, write) -> None:
    """Call ``write(tmp_path)``, fsync, then atomically rename onto ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)


def _append_line(path: Path, record: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, sort_keys=True, default=_json_default) + "\n"
    with open(path, "a") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def _json_default(obj):
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def read_jsonl(path: Path) -> list[dict]:
    """Records of a JSON-lines file; a torn last line (a kill during append) is skipped."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def column_types(flat_points: Sequence[Mapping[str, Any]]) -> dict:
    """Arrow type per parameter column over all points (so every file of a sweep shares one
    schema; a parameter absent from a point is a null of the column's type)."""
    import pyarrow as pa

    kinds: dict[str, set] = {}
    for flat in flat_points:
        for k, v in flat.items():
            kinds.setdefault(k, set())
            if v is not None:
                kinds[k].add(type(v))
    types = {}
    for k, seen in kinds.items():
        if seen <= {bool}:
            types[k] = pa.bool_() if seen else pa.float64()
        elif seen <= {int}:
            types[k] = pa.int64()
        elif seen <= {int, float}:
            types[k] = pa.float64()
        else:
            types[k] = pa.string()
    return types


class ResultsStore:
    """A sweep's output folder (see the module docstring). Only the leader process writes."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.results_dir = self.root / "results"
        self.checkpoint_dir = self.root / "checkpoints"
        self.timings_path = self.root / "timings.jsonl"
        self.points_path = self.root / "points.jsonl"

    def result_path(self, config_hash: str) -> Path:
        return self.results_dir / f"{config_hash}.parquet"

    def checkpoint_path(self, config_hash: str) -> Path:
        return self.checkpoint_dir / f"{config_hash}.npz"

    def is_complete(self, config_hash: str) -> bool:
        return self.result_path(config_hash).is_file()

    def write_point(self, config_hash: str, flat_point: Mapping[str, Any], types: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], point: Mapping[str, Any]) -> Path:
        """Write a completed point's rows (atomically) and then record its configuration."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        num = len(rows)
        columns: dict[str, Any] = {"config_hash": pa.array([config_hash] * num, pa.string())}
        for key, typ in types.items():
            columns[key] = pa.array([flat_point.get(key)] * num, typ)
        columns["step"] = pa.array([int(r["step"]) for r in rows], pa.int64())
        columns["quantity"] = pa.array([str(r["quantity"]) for r in rows], pa.string())
        for key in ("argument", "value", "lower", "upper"):
            columns[key] = pa.array([float(r.get(key, np.nan)) for r in rows], pa.float64())
        table = pa.table(columns)
        path = self.result_path(config_hash)
        _atomic_write(path, lambda tmp: pq.write_table(table, tmp))
        _append_line(self.points_path, {"config_hash": config_hash, "point": point})
        return path

    def append_timing(self, record: Mapping[str, Any]) -> None:
        _append_line(self.timings_path, record)

    def timings(self) -> list[dict]:
        return read_jsonl(self.timings_path)

    # --- checkpoints --------------------------------------------------------------------
    def save_checkpoint(self, config_hash: str, arrays: Mapping[str, np.ndarray]) -> None:
        path = self.checkpoint_path(config_hash)

        def write(tmp):
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays)

        _atomic_write(path, write)

    def load_checkpoint(self, config_hash: str) -> Optional[dict]:
        path = self.checkpoint_path(config_hash)
        if not path.is_file():
            return None
        with np.load(path) as data:
            return {k: data[k] for k in data.files}

    def remove_checkpoint(self, config_hash: str) -> None:
        path = self.checkpoint_path(config_hash)
        if path.exists():
            path.unlink()


def load_results(root: str | Path, columns: Optional[Iterable[str]] = None):
    """All completed points' rows of the store at ``root`` as one pandas DataFrame
    (files of different sweeps with different parameter columns are unified; missing = null)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted(p for p in (Path(root) / "results").glob("*.parquet") if not p.name.startswith("."))
    if not files:
        return pd.DataFrame(columns=["config_hash", *ROW_COLUMNS])
    tables = [pq.read_table(f, columns=list(columns) if columns is not None else None) for f in files]
    return pa.concat_tables(tables, promote_options="permissive").to_pandas()
