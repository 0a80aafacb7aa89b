"""The sweep results store: a Parquet dataset, one self-validating file per completed point.

Layout of ``DIR``::

    DIR/results/<hash>.parquet   rows of one completed point, with a checksum of everything in it
    DIR/timings.jsonl            run metadata, one JSON object per line (never in the result rows)
    DIR/points.jsonl             the resolved configuration of every completed point
    DIR/checkpoints/<hash>.npz   chain state of a point in progress, with its point's identity
    DIR/.lock                    held (flock) by the one process writing to DIR
    DIR/corrupt/                 files found damaged or foreign, moved aside (named in a warning)

Nothing read back is trusted. A point is complete iff its result file reads back, the SHA-256
recorded inside it (Parquet key-value metadata ``dpjax.file_sha256``, written in the same atomic
rename as the rows) matches the column names, types and values and the point's configuration
and timing records, the rows have the row schema below, every row's ``config_hash`` names the
file, and the configuration record hashes (:func:`dpjax.sweep.config.point_hash`) to that name.
Any failure, whatever it is (a truncated file, garbage, one flipped byte anywhere, a checksum
removed and a value edited), means the file is moved to ``DIR/corrupt/`` with a
:class:`StoreWarning` naming it and the reason, and the point is recomputed: never a traceback.
Files written before the whole-file checksum existed (``dpjax.content_sha256`` only, over the
column names and values) are still accepted when that checksum and every structural check hold.
The file carries the point's configuration and timing record (``dpjax.point``,
``dpjax.timing``), so ``points.jsonl`` and ``timings.jsonl`` are derived logs:
:meth:`ResultsStore.open` rebuilds them from the valid result files when they disagree (a kill
between the rename and the append, a torn line, a duplicate). Result files are written without
Parquet column statistics, so no reader that filters on statistics can be misled by a flipped
byte in them.

A checkpoint carries its point's identity (configuration hash and seed, ``dpjax_identity``)
and a SHA-256 of the identity and every array (``dpjax_sha256``). One that does not read back
whole, fails its checksum, lacks either, belongs to another point (a file copied under another
name) or has the wrong arrays or shapes is set aside with a warning, and the point restarts
from step 0.

Every file is written to a temporary name starting with "." in the same folder and moved into
place with ``os.replace`` (atomic on POSIX), after an fsync; temporaries left by a killed
writer are removed by the next :meth:`ResultsStore.open`. One writer at a time: ``open`` takes
an exclusive ``flock`` on ``DIR/.lock`` (released by the kernel if the process dies) and a
second writer is refused with :class:`StoreBusyError` naming the holder. Readers of the
Parquet dataset (``pyarrow.dataset``, ``pandas.read_parquet(DIR/results)``) skip names
starting with "." by default, but they do not check the checksums: :func:`load_results` does,
skipping (and naming) any damaged file.

Row schema: ``config_hash`` (string), the point's parameters as flat columns
(``sampler.step_size``, ``data.n``, ...; see :func:`dpjax.sweep.config.flatten`), ``step``
(int64, the recorded step), ``quantity`` (string), ``argument`` (float64: the delta or eps the
quantity is evaluated at, NaN for none), ``value``, ``lower``, ``upper`` (float64; NaN where a
quantity has no such limit), ``error`` (string: null for a computed row; else why the row's
numbers are NaN, e.g. too few finite chain pairs at that step).
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

ROW_COLUMNS = ("step", "quantity", "argument", "value", "lower", "upper", "error")
# Arrow type names of the columns every result file has (parameter columns vary by sweep)
ROW_TYPES = {"config_hash": "string", "step": "int64", "quantity": "string", "argument": "double", "value": "double",
             "lower": "double", "upper": "double", "error": "string"}
META_FILE_CHECKSUM = b"dpjax.file_sha256"  # over names, types, values and the point and timing records
META_CHECKSUM = b"dpjax.content_sha256"  # over names and values only: what files before file_sha256 carry
META_POINT = b"dpjax.point"
META_TIMING = b"dpjax.timing"
KNOWN_METADATA_KEYS = {META_FILE_CHECKSUM, META_CHECKSUM, META_POINT, META_TIMING, b"ARROW:schema"}
CHECKPOINT_IDENTITY = "dpjax_identity"
CHECKPOINT_CHECKSUM = "dpjax_sha256"


class StoreError(ValueError):
    """The output folder cannot be used (the message names it and the reason)."""


class StoreBusyError(StoreError):
    """Another process holds the store's lock."""


class StoreWarning(UserWarning):
    """A damaged file in the store was found and set aside (the message names it)."""


def _fsync_dir(path: Path) -> None:
    dir_fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


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
    _fsync_dir(path.parent)  # make the rename itself durable


def _append_line(path: Path, record: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, sort_keys=True, default=_json_default) + "\n"
    with open(path, "a+b") as fh:
        # a torn last line (a kill during an append) must not swallow this record
        if fh.tell() > 0:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                line = "\n" + line
        fh.write(line.encode())
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
    """Records of a JSON-lines file; a torn or garbage line (a kill during append) is skipped."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().decode(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            out.append(record)
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


def content_checksum(table) -> str:
    """SHA-256 of a table's column names and values (canonical JSON; floats by repr, so NaN and
    inf included); independent of the Parquet encoding, so it survives the write and read."""
    content = {name: table.column(name).to_pylist() for name in table.column_names}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def file_checksum(table, metadata: Mapping[bytes, bytes]) -> str:
    """SHA-256 of everything a result file says: column names, Arrow types and values (as
    :func:`content_checksum`) and every ``dpjax.*`` key-value metadata entry but this checksum
    itself (the point's configuration and timing records, the content checksum), raw bytes."""
    own = {k.hex(): v.hex() for k, v in metadata.items() if k.startswith(b"dpjax.") and k != META_FILE_CHECKSUM}
    content = {
        "types": [[field.name, str(field.type)] for field in table.schema],
        "columns": {name: table.column(name).to_pylist() for name in table.column_names},
        "metadata": own,
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def checkpoint_checksum(identity: str, arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 of a checkpoint's identity and of every array's name, dtype, shape and bytes."""
    digest = hashlib.sha256(identity.encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"\0{name}\0{array.dtype.str}\0{array.shape}\0".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _checkpoint_identity(config_hash: str, seed: int) -> str:
    return json.dumps({"config_hash": str(config_hash), "seed": int(seed)}, sort_keys=True)


def check_output_dir(out: Any, create: bool = True) -> Path:
    """``out`` as a usable output folder, created if missing (``create=False``: only checked,
    through its nearest existing ancestor); raises :class:`StoreError` with one line naming
    the folder and the reason (empty, an existing file, under a file, not writable)."""
    if out is None or not isinstance(out, (str, os.PathLike)):
        raise StoreError(f"--out={out!r} must be a folder path")
    text = os.fspath(out)
    if not str(text).strip():
        raise StoreError(f"--out={text!r} is empty; give the folder to write the results into")
    root = Path(text)
    if root.exists() and not root.is_dir():
        raise StoreError(f"--out={text!r} is an existing file, not a folder")
    for parent in root.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise StoreError(f"--out={text!r} lies under {str(parent)!r}, which is a file, not a folder")
            if not root.exists() and not os.access(parent, os.W_OK | os.X_OK):
                raise StoreError(f"--out={text!r} cannot be created: {str(parent)!r} is not writable")
            break
    if not create:
        if root.is_dir() and not os.access(root, os.W_OK | os.X_OK):
            raise StoreError(f"--out={text!r}: cannot write in {text!r}: permission denied")
        return root
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(f"--out={text!r} cannot be created: {err.strerror or err}") from None
    for folder in (root, root / "results", root / "checkpoints"):
        if not folder.exists():
            continue
        if not folder.is_dir():
            raise StoreError(f"--out={text!r}: {str(folder)!r} must be a folder but is a file")
        try:
            fd, probe = tempfile.mkstemp(prefix=".dpjax-write-test.", suffix=".tmp", dir=folder)
            os.close(fd)
            os.unlink(probe)
        except OSError as err:
            raise StoreError(f"--out={text!r}: cannot write in {str(folder)!r}: {err.strerror or err}") from None
    return root


class ResultsStore:
    """A sweep's output folder (see the module docstring). Only the leader process writes."""

    def __init__(self, root: str | Path):
        if root is None or not isinstance(root, (str, os.PathLike)) or not str(os.fspath(root)).strip():
            raise StoreError(f"--out={root!r} is empty; give the folder to write the results into")
        self.root = Path(root)
        self.results_dir = self.root / "results"
        self.checkpoint_dir = self.root / "checkpoints"
        self.corrupt_dir = self.root / "corrupt"
        self.timings_path = self.root / "timings.jsonl"
        self.points_path = self.root / "points.jsonl"
        self.lock_path = self.root / ".lock"
        self._lock_fd: Optional[int] = None

    def result_path(self, config_hash: str) -> Path:
        return self.results_dir / f"{config_hash}.parquet"

    def checkpoint_path(self, config_hash: str) -> Path:
        return self.checkpoint_dir / f"{config_hash}.npz"

    # --- one writer ---------------------------------------------------------------------
    def open(self) -> "ResultsStore":
        """Check the folder, take the writer's lock, remove stale temporaries, reconcile the
        logs with the result files. Raises :class:`StoreError` / :class:`StoreBusyError`."""
        import fcntl

        check_output_dir(self.root)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = ""
            try:
                holder = os.pread(fd, 4096, 0).decode(errors="replace").strip()
            except OSError:
                pass
            os.close(fd)
            raise StoreBusyError(
                f"--out={str(self.root)!r} is in use by another dpjax sweep ({holder or 'holder unknown'}); "
                "wait for it to finish, or write to another folder"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {platform.node()} since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
        self._lock_fd = fd
        self.remove_stale_temporaries()
        self.reconcile_logs()
        return self

    def close(self) -> None:
        """Release the writer's lock (the lock file stays: removing it would race a waiter)."""
        if self._lock_fd is not None:
            import fcntl

            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> "ResultsStore":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    def remove_stale_temporaries(self) -> list[Path]:
        """Delete temporaries (".<name>.<random>.tmp") left by a killed writer; only call with
        the lock held (no live writer can own them then)."""
        removed = []
        for folder in (self.root, self.results_dir, self.checkpoint_dir):
            if folder.is_dir():
                for p in folder.glob(".*.tmp"):
                    p.unlink(missing_ok=True)
                    removed.append(p)
        return removed

    # --- results ------------------------------------------------------------------------
    def _set_aside(self, path: Path, reason: str) -> None:
        self.corrupt_dir.mkdir(parents=True, exist_ok=True)
        target = self.corrupt_dir / f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}.{os.getpid()}"
        try:
            os.replace(path, target)
            where = f"moved to {target}"
        except OSError:
            path.unlink(missing_ok=True)
            where = "deleted"
        warnings.warn(f"{path} is damaged ({reason}); {where}", StoreWarning, stacklevel=3)

    def read_point(self, config_hash: str):
        """The point's validated Arrow table (with its metadata), or None if there is no valid
        result file (a damaged one is set aside with a :class:`StoreWarning`)."""
        path = self.result_path(config_hash)
        if not path.is_file():
            return None
        table, reason = _read_validated(path, config_hash)
        if table is None:
            self._set_aside(path, reason + f"; point {config_hash} is recomputed")
        return table

    def is_complete(self, config_hash: str) -> bool:
        return self.read_point(config_hash) is not None

    def write_point(
        self,
        config_hash: str,
        flat_point: Mapping[str, Any],
        types: Mapping[str, Any],
        rows: Sequence[Mapping[str, Any]],
        point: Mapping[str, Any],
        timing: Optional[Mapping[str, Any]] = None,
    ) -> Path:
        """Write a completed point's rows with their checksum, configuration and timing in one
        atomic rename, then append the configuration and timing to the logs."""
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
        columns["error"] = pa.array([r.get("error") for r in rows], pa.string())
        table = pa.table(columns)
        point_record = {"config_hash": config_hash, "point": point}
        timing_record = None if timing is None else {"config_hash": config_hash, **timing}
        meta = {META_CHECKSUM: content_checksum(table).encode(), META_POINT: json.dumps(point_record, sort_keys=True, default=_json_default).encode()}
        if timing_record is not None:
            meta[META_TIMING] = json.dumps(timing_record, sort_keys=True, default=_json_default).encode()
        meta[META_FILE_CHECKSUM] = file_checksum(table, meta).encode()
        table = table.replace_schema_metadata(meta)
        path = self.result_path(config_hash)
        # no column statistics: a reader filtering on them would trust bytes no checksum covers
        _atomic_write(path, lambda tmp: pq.write_table(table, tmp, write_statistics=False))
        _append_line(self.points_path, point_record)
        if timing_record is not None:
            _append_line(self.timings_path, timing_record)
        return path

    def append_timing(self, record: Mapping[str, Any]) -> None:
        _append_line(self.timings_path, record)

    def timings(self) -> list[dict]:
        return read_jsonl(self.timings_path)

    def complete_hashes(self) -> list[str]:
        """Hashes of the valid result files (damaged ones are set aside)."""
        return sorted(self._complete_metadata())

    def _complete_metadata(self) -> dict[str, dict]:
        """hash -> key-value metadata of every valid result file (damaged ones are set aside)."""
        if not self.results_dir.is_dir():
            return {}
        out = {}
        for path in sorted(self.results_dir.glob("*.parquet")):
            if path.name.startswith(".") or not path.is_file():
                continue
            table = self.read_point(path.stem)
            if table is not None:
                out[path.stem] = dict(table.schema.metadata or {})
        return out

    def reconcile_logs(self) -> None:
        """Make points.jsonl and timings.jsonl hold exactly one valid line per complete point
        (from the result files' own metadata where the log lacks it), rewriting a log
        atomically only when it differs: garbage lines, duplicates and lines of points whose
        result file is gone or damaged are dropped. Checkpoints of complete points (a kill
        between the result's rename and the checkpoint's removal) are removed."""
        meta = self._complete_metadata()
        for h in meta:
            self.remove_checkpoint(h)
        for path, key in ((self.points_path, META_POINT), (self.timings_path, META_TIMING)):
            lines = path.read_bytes().decode(errors="replace").splitlines() if path.exists() else []
            kept: dict[str, str] = {}
            for line in lines:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                h = record.get("config_hash") if isinstance(record, dict) else None
                if isinstance(h, str) and h in meta and h not in kept:
                    own = meta[h].get(key)
                    kept[h] = own.decode() if own is not None else line
            for h in meta:
                if h not in kept and meta[h].get(key) is not None:
                    kept[h] = meta[h][key].decode()
            wanted = [kept[h] for h in kept]
            if wanted != lines:
                text = "".join(line + "\n" for line in wanted)
                _atomic_write(path, lambda tmp: Path(tmp).write_text(text))

    # --- checkpoints --------------------------------------------------------------------
    def save_checkpoint(self, config_hash: str, arrays: Mapping[str, np.ndarray], *, seed: int) -> None:
        """Write a point's chain state with its identity (``config_hash``, ``seed``) and a
        checksum of both and of every array."""
        reserved = {CHECKPOINT_IDENTITY, CHECKPOINT_CHECKSUM} & set(arrays)
        if reserved:
            raise ValueError(f"checkpoint arrays {sorted(reserved)} violate the rule that these names are the store's own")
        identity = _checkpoint_identity(config_hash, seed)
        arrays = {name: np.asarray(value) for name, value in arrays.items()}
        members = {**arrays, CHECKPOINT_IDENTITY: np.array(identity), CHECKPOINT_CHECKSUM: np.array(checkpoint_checksum(identity, arrays))}
        path = self.checkpoint_path(config_hash)

        def write(tmp):
            with open(tmp, "wb") as fh:
                np.savez(fh, **members)

        _atomic_write(path, write)

    def load_checkpoint(self, config_hash: str, expect: Optional[Mapping[str, tuple]] = None, *, seed: int) -> Optional[dict]:
        """The saved arrays of point (``config_hash``, ``seed``), or None.

        A checkpoint is set aside with a :class:`StoreWarning` naming it and why, and the point
        restarts from step 0, when it does not read back whole (truncated, garbage, a bad CRC),
        lacks its identity or checksum (written by an older dpjax, or not by the store), fails
        its checksum, names another point or seed (a file copied under another point's name),
        or, given ``expect`` (name -> shape, None for any shape), lacks an array or has another
        shape."""
        path = self.checkpoint_path(config_hash)
        if not path.is_file():
            return None
        arrays, reason = _read_checkpoint(path, config_hash, seed, expect)
        if arrays is None:
            self._set_aside(path, f"{reason}; point {config_hash} restarts from step 0")
        return arrays

    def remove_checkpoint(self, config_hash: str) -> None:
        path = self.checkpoint_path(config_hash)
        if path.exists():
            path.unlink()


def _read_checkpoint(path: Path, config_hash: str, seed: int, expect: Optional[Mapping[str, tuple]]):
    """(arrays, "") if the checkpoint passes every check of :meth:`ResultsStore.load_checkpoint`,
    else (None, reason). Never raises."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}  # reading each member checks its CRC
    except Exception as err:  # zipfile.BadZipFile, EOFError, ValueError, OSError, UnicodeDecodeError, ...
        return None, f"unreadable checkpoint: {type(err).__name__}: {err}"
    identity = arrays.pop(CHECKPOINT_IDENTITY, None)
    recorded = arrays.pop(CHECKPOINT_CHECKSUM, None)
    if any(a is None or a.shape != () or a.dtype.kind != "U" for a in (identity, recorded)):
        return None, "checkpoint carries no identity and checksum (written by an older dpjax or not by a sweep)"
    identity = str(identity)
    if checkpoint_checksum(identity, arrays) != str(recorded):
        return None, "checkpoint does not match its recorded checksum"
    wanted = _checkpoint_identity(config_hash, seed)
    if identity != wanted:
        return None, f"foreign checkpoint: it belongs to {identity}, not to {wanted}"
    for name, shape in (expect or {}).items():
        if name not in arrays:
            return None, f"checkpoint lacks {name!r}"
        if shape is not None and tuple(arrays[name].shape) != tuple(shape):
            return None, f"checkpoint array {name!r} has shape {arrays[name].shape}, expected {tuple(shape)}"
    return arrays, ""


def _read_validated(path: Path, config_hash: Optional[str]):
    """(table, "") if the file passes every check of the module docstring, else (None, reason).
    Never raises: whatever a damaged file makes a reader throw is a reason."""
    try:
        return _validate_result_file(path, config_hash)
    except Exception as err:  # ArrowInvalid, OSError, UnicodeDecodeError, MemoryError, ...
        return None, f"unreadable: {type(err).__name__}: {err}"


def _validate_result_file(path: Path, config_hash: Optional[str]):
    import pyarrow.parquet as pq

    from .config import point_hash

    with pq.ParquetFile(path) as parquet:  # one small file: no dataset layer, no thread pool
        table = parquet.read(use_threads=False)
    meta = dict(table.schema.metadata or {})
    point_record, timing_record = meta.get(META_POINT), meta.get(META_TIMING)
    rows = table.replace_schema_metadata(None)
    unknown = sorted(set(meta) - KNOWN_METADATA_KEYS)
    if unknown:  # e.g. a flipped byte in a key's name: what was meant cannot be told
        return None, f"it carries metadata the store does not write: {unknown[0]!r}"
    if META_FILE_CHECKSUM in meta:
        if file_checksum(rows, meta) != meta[META_FILE_CHECKSUM].decode():
            return None, "its content does not match its recorded checksum"
    elif META_CHECKSUM in meta:  # written before the whole-file checksum: check what it covers
        if content_checksum(rows) != meta[META_CHECKSUM].decode():
            return None, "its content does not match its recorded checksum"
    else:
        return None, "it carries no checksum, so its content cannot be trusted"
    types = {field.name: str(field.type) for field in rows.schema}
    for name, wanted in ROW_TYPES.items():
        if types.get(name) != wanted:
            return None, f"column {name!r} is {types.get(name, 'missing')}, not {wanted}"
    hashes = set(rows.column("config_hash").to_pylist())
    name = config_hash if config_hash is not None else next(iter(hashes), None)
    if hashes - {name}:
        return None, f"rows name config_hash {sorted(map(str, hashes))} but the file is {name}"
    if point_record is None:
        return None, "it carries no point configuration"
    record = json.loads(point_record.decode())
    point = record.get("point") if isinstance(record, dict) else None
    if not isinstance(point, dict) or record.get("config_hash") != name or point_hash(point) != name:
        return None, f"its point configuration does not hash to {name}"
    if timing_record is not None:
        timing = json.loads(timing_record.decode())
        if not isinstance(timing, dict) or timing.get("config_hash") != name:
            return None, f"its timing record is not point {name}'s"
    return table, ""


def load_results(root: str | Path, columns: Optional[Iterable[str]] = None, *, strict: bool = False):
    """All completed points' rows of the store at ``root`` as one pandas DataFrame (files of
    different sweeps with different parameter columns are unified; missing = null).

    ``root`` is the folder given to ``dpjax sweep --out`` (the one holding ``results/``);
    :class:`StoreError` when it is missing, a file, or a folder that is no sweep store. A
    damaged file (any check of the module docstring fails) is skipped with a
    :class:`StoreWarning` naming it and why, and listed in ``df.attrs["damaged_files"]``;
    ``strict=True`` raises :class:`StoreError` naming it instead. Read-only: nothing is
    moved (the next ``dpjax sweep`` on the folder sets damaged files aside and recomputes them).
    ``columns``: names to keep (a name no file has is an error, not a silently absent column).
    """
    import pandas as pd
    import pyarrow as pa

    if columns is not None:
        if isinstance(columns, (str, bytes)) or not isinstance(columns, Iterable):
            raise TypeError(f"columns={columns!r} violates the rule that columns is a list of column names (or None for all)")
        columns = list(columns)
        bad = [c for c in columns if not isinstance(c, str)]
        if bad:
            raise TypeError(f"columns={columns!r} violates the rule that every column name is a string; got {bad[0]!r}")
    if not isinstance(strict, (bool, np.bool_)):
        raise TypeError(f"strict={strict!r} violates the rule that strict is True or False")
    root_path = _store_root(root)
    results = root_path / "results"
    files = sorted(p for p in results.glob("*.parquet") if not p.name.startswith(".")) if results.is_dir() else []
    tables, damaged = [], []
    for f in files:
        table, reason = _read_validated(f, f.stem)
        if table is None:
            if strict:
                raise StoreError(f"{f} is damaged: {reason}")
            damaged.append(str(f))
            warnings.warn(f"load_results: skipping {f}: {reason}", StoreWarning, stacklevel=2)
            continue
        tables.append(table.replace_schema_metadata(None))
    if not tables:
        df = pd.DataFrame(columns=["config_hash", *ROW_COLUMNS] if columns is None else columns)
    else:
        if columns is not None:
            present = set().union(*(t.column_names for t in tables))
            unknown = [c for c in columns if c not in present]
            if unknown:
                raise StoreError(f"columns={columns!r}: no result file in {str(results)!r} has column(s) {unknown}; "
                                 f"the columns are {sorted(present)}")
            tables = [t.select([c for c in columns if c in t.column_names]) for t in tables]
        df = pa.concat_tables(tables, promote_options="permissive").to_pandas()
        if columns is not None:
            df = df[columns]
    df.attrs["damaged_files"] = damaged
    return df


def _store_root(root: Any) -> Path:
    """``root`` as the folder of an existing sweep store; :class:`StoreError` otherwise."""
    if root is None or not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root={root!r} violates the rule that root is the path of a sweep's output folder (dpjax sweep --out DIR)")
    text = os.fspath(root)
    path = Path(text)
    if not str(text).strip():
        raise StoreError(f"root={text!r} is empty; give the sweep's output folder (dpjax sweep --out DIR)")
    if not path.exists():
        raise StoreError(f"root={text!r} does not exist; give the sweep's output folder (dpjax sweep --out DIR)")
    if not path.is_dir():
        raise StoreError(f"root={text!r} is a file, not a sweep's output folder (dpjax sweep --out DIR)")
    if (path / "results").is_dir():
        return path
    if any(p.suffix == ".parquet" and not p.name.startswith(".") for p in path.iterdir()):
        raise StoreError(f"root={text!r} holds the result files themselves; give the folder above it (the one holding results/)")
    if any((path / name).exists() for name in (".lock", "points.jsonl", "timings.jsonl", "checkpoints", "corrupt")):
        return path  # a store in which no point has completed yet
    raise StoreError(f"root={text!r} is no sweep's output folder: it has no results/ folder")
