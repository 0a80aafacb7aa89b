"""Run a validated sweep point after point into a :class:`~dpjax.sweep.store.ResultsStore`.

Order of work: validate the whole configuration (every point's keys, values and built
objects) before any chain runs; then, per point in configuration order, skip it if its
result file exists, else run its chain pairs (resuming from a checkpoint if one exists),
compute its quantities and write its file atomically. Under jax.distributed every process
runs the same loop; the leader decides skips and checkpoints and alone writes.
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
from .chains import run_pairs
from .config import flatten, load, point_hash
from .quantities import check_quantities, compute_rows
from .store import ResultsStore, column_types


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


def run_points(
    points: Sequence[Mapping[str, Any]],
    out: str | Path,
    *,
    checkpoint_every: Optional[int] = None,
    chunk_size: int = 1000,
    mesh=None,
    progress: bool = True,
) -> dict:
    """Run every incomplete point into ``out``; returns {"completed": [...], "skipped": [...]} hashes."""
    store = ResultsStore(out)
    leader = distributed.is_leader()
    if leader:
        store.root.mkdir(parents=True, exist_ok=True)
    flats = [flatten(p) for p in points]
    types = column_types(flats)
    done: list[str] = []
    skipped: list[str] = []
    show = progress and leader
    outer = None
    if show:
        from tqdm.auto import tqdm

        outer = tqdm(total=len(points), desc="sweep points", unit="point", position=0, file=sys.stderr)
    for i, (point, flat) in enumerate(zip(points, flats)):
        h = point_hash(point)
        complete = bool(distributed.from_leader(np.array([store.is_complete(h) if leader else False], np.int32))[0])
        if complete:
            skipped.append(h)
            if outer is not None:
                outer.update(1)
            continue
        problem = build_checked(point, f"points[{i}]")
        inner = None
        if show:
            from tqdm.auto import tqdm

            inner = tqdm(total=point["num_steps"], desc=f"point {i} {h}", unit="step", position=1, leave=False, file=sys.stderr)
        started = time.time()
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
            load_checkpoint=lambda: store.load_checkpoint(h),
            save_checkpoint=lambda arrays: store.save_checkpoint(h, arrays),
            progress=None if inner is None else inner.update,
        )
        if inner is not None:
            inner.close()
        if leader:
            q_start = time.perf_counter()
            rows = compute_rows(point, problem, record)
            quantities_seconds = time.perf_counter() - q_start
            store.write_point(h, flat, types, rows, point)
            store.remove_checkpoint(h)
            store.append_timing(
                dict(
                    config_hash=h,
                    point_index=i,
                    started_unix=started,
                    finished_unix=time.time(),
                    quantities_seconds=quantities_seconds,
                    host=platform.node(),
                    backend=jax.default_backend(),
                    **record.timings,
                )
            )
        distributed.barrier(f"dpjax-sweep-point-{h}")
        done.append(h)
        if outer is not None:
            outer.update(1)
    if outer is not None:
        outer.close()
    return {"completed": done, "skipped": skipped}


def run_sweep(config_path: str | Path, out: str | Path, *, mesh=None, progress: bool = True) -> dict:
    """Load, validate and run the sweep in ``config_path`` into ``out`` (see :func:`run_points`)."""
    points, settings = load(config_path)
    validate(points)
    return run_points(points, out, checkpoint_every=settings["checkpoint_every"], chunk_size=settings["chunk_size"], mesh=mesh, progress=progress)
