"""Run a validated sweep point after point into a :class:`~dpjax.sweep.store.ResultsStore`.

Order of work: validate the whole configuration (every point's keys, values and built
objects, the closed-form quantities) and the output folder before any chain runs; take the
store's lock; then, per point in configuration order, skip it if its result file is valid,
else run its chain pairs (resuming from a checkpoint if one reads back whole), compute its
quantities and write its file atomically. A point whose quantities fail (e.g. every pair
diverged) is written with its error rows and reported; a point whose chains fail is reported
and left incomplete (retried on the next run); either way the sweep goes on with the rest.
Under jax.distributed every process runs the same loop; the leader decides skips and
checkpoints and alone writes.
"""
from __future__ import annotations

import platform
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import jax
import numpy as np

from . import distributed
from .build import Problem, build
from .chains import CHECKPOINT_KEYS, run_pairs
from .config import flatten, load, point_hash
from .quantities import check_quantities, compute_rows, row_errors
from .store import ResultsStore, StoreError, column_types


def build_checked(point: Mapping[str, Any], where: str) -> Problem:
    """Build a point's problem (float64 data) and run the checks that need it."""
    with jax.enable_x64(True):  # datasets keep float64 (make_dataset goes through jnp)
        problem = build(point, where)
        check_quantities(point, problem, where)
    return problem


def validate(points: Sequence[Mapping[str, Any]]) -> None:
    """Build every point once (raises ConfigError naming the point) before anything runs."""
    for i, point in enumerate(points):
        build_checked(point, f"points[{i}]")


def _checkpoint_shapes(point: Mapping[str, Any], problem: Problem) -> dict:
    """Expected shape of each checkpoint array (None: presence only), so a damaged or foreign
    checkpoint is discarded instead of crashing the resume."""
    k, d, r = point["num_pairs"], problem.model.dim, len(point["record_steps"])
    known = {
        "step": (),
        "num_recorded": (),
        "position": (k, d),
        "neighbour_position": (k, d),
        "path_loss": (k,),
        "finite": (k,),
        "rec_position": (r, k, d),
        "rec_neighbour_position": (r, k, d),
        "rec_path_loss": (r, k),
    }
    return {name: known.get(name) for name in CHECKPOINT_KEYS}


def _open_store(out) -> ResultsStore:
    """The leader opens (checks, locks, cleans) the store; every process learns whether it
    could, so no process is left waiting in a collective."""
    store = ResultsStore(out)
    error = None
    if distributed.is_leader():
        try:
            store.open()
        except StoreError as err:
            error = err
    opened = bool(distributed.from_leader(np.array([error is None], np.int32))[0])
    if not opened:
        raise error if error is not None else StoreError(f"--out={str(out)!r}: process 0 could not open the results store")
    return store


def run_points(
    points: Sequence[Mapping[str, Any]],
    out: str | Path,
    *,
    checkpoint_every: Optional[int] = None,
    chunk_size: int = 1000,
    mesh=None,
    progress: bool = True,
) -> dict:
    """Run every incomplete point into ``out``.

    Returns {"completed": [...], "skipped": [...], "failed": {hash: reason}}: completed points
    were run now; skipped ones were complete already; failed ones either have rows that could
    not be computed (written, with the reasons in their ``error`` column; rerunning does not
    change them) or chains that raised (not written; retried on the next run). Raises
    :class:`~dpjax.sweep.store.StoreError` before any compute when ``out`` cannot be used or
    another process is writing to it.
    """
    store = _open_store(out)
    try:
        return _run_points(store, points, checkpoint_every, chunk_size, mesh, progress)
    finally:
        store.close()


def _run_points(store, points, checkpoint_every, chunk_size, mesh, progress) -> dict:
    leader = distributed.is_leader()
    flats = [flatten(p) for p in points]
    types = column_types(flats)
    done: list[str] = []
    skipped: list[str] = []
    failed: dict[str, str] = {}
    show = progress and leader
    outer = None
    if show:
        from tqdm.auto import tqdm

        outer = tqdm(total=len(points), desc="sweep points", unit="point", position=0, file=sys.stderr)
    for i, (point, flat) in enumerate(zip(points, flats)):
        h = point_hash(point)
        table = store.read_point(h) if leader else None
        complete = bool(distributed.from_leader(np.array([table is not None], np.int32))[0])
        if complete:
            skipped.append(h)
            if table is not None:
                errors = [e for e in dict.fromkeys(table.column("error").to_pylist()) if e] if "error" in table.column_names else []
                if errors:
                    failed[h] = f"points[{i}]: " + "; ".join(errors)
            if outer is not None:
                outer.update(1)
            continue
        problem = build_checked(point, f"points[{i}]")
        inner = None
        if show:
            from tqdm.auto import tqdm

            inner = tqdm(total=point["num_steps"], desc=f"point {i} {h}", unit="step", position=1, leave=False, file=sys.stderr)
        started = time.time()
        expect = _checkpoint_shapes(point, problem)
        try:
            record = run_pairs(
                point["seed"],
                problem,
                num_pairs=point["num_pairs"],
                num_steps=point["num_steps"],
                record_steps=point["record_steps"],
                dtype=point["dtype"],
                mesh=mesh,
                chunk_size=chunk_size,
                checkpoint_every=checkpoint_every,
                # the checkpoint names its point (hash and seed): a foreign one is discarded
                load_checkpoint=lambda: store.load_checkpoint(h, expect, seed=point["seed"]),
                save_checkpoint=lambda arrays: store.save_checkpoint(h, arrays, seed=point["seed"]),
                progress=None if inner is None else inner.update,
            )
        except Exception as err:  # recorded, not fatal: the other points still run
            failed[h] = f"points[{i}]: the chains failed ({type(err).__name__}: {err}); nothing written, the point reruns next time"
            if inner is not None:
                inner.close()
            if outer is not None:
                outer.update(1)
            continue
        if inner is not None:
            inner.close()
        if leader:
            q_start = time.perf_counter()
            rows = compute_rows(point, problem, record)
            quantities_seconds = time.perf_counter() - q_start
            timing = dict(
                point_index=i,
                started_unix=started,
                finished_unix=time.time(),
                quantities_seconds=quantities_seconds,
                host=platform.node(),
                backend=jax.default_backend(),
                **record.timings,
            )
            store.write_point(h, flat, types, rows, point, timing)
            store.remove_checkpoint(h)
            errors = row_errors(rows)
            if errors:
                failed[h] = f"points[{i}]: " + "; ".join(errors)
        distributed.barrier(f"dpjax-sweep-point-{h}")
        done.append(h)
        if outer is not None:
            outer.update(1)
    if outer is not None:
        outer.close()
    return {"completed": done, "skipped": skipped, "failed": failed}


def run_sweep(config_path: str | Path, out: str | Path, *, mesh=None, progress: bool = True) -> dict:
    """Load, validate and run the sweep in ``config_path`` into ``out`` (see :func:`run_points`)."""
    points, settings = load(config_path)
    validate(points)
    return run_points(points, out, checkpoint_every=settings["checkpoint_every"], chunk_size=settings["chunk_size"], mesh=mesh, progress=progress)
