"""Sweeps: ``dpjax sweep CONFIG.yaml --out DIR``.

A YAML grid / list of configurations (:mod:`.config`), validated up front, run point after
point (:mod:`.runner`) with each point's chain pairs sharded over every device of every process
(:mod:`.chains`, :mod:`.distributed`), into a resumable Parquet results store (:mod:`.store`).

Multi-host: run the same command on every host with ``--coordinator HOST:PORT
--num-processes N --process-id I`` (or ``DPJAX_COORDINATOR``, ``DPJAX_NUM_PROCESSES``,
``DPJAX_PROCESS_ID``); only process 0 writes to ``DIR``.
"""
from __future__ import annotations

import sys
from typing import Any

from .config import ConfigError, expand, load, point_hash
from .store import ResultsStore, load_results

__all__ = ["main", "run_sweep", "run_points", "load_results", "ResultsStore", "ConfigError", "expand", "load", "point_hash"]


def __getattr__(name):  # runner imports jax: keep `dpjax.sweep.config` light
    if name in ("run_sweep", "run_points"):
        from . import runner

        return getattr(runner, name)
    raise AttributeError(name)


def main(args: Any) -> int:
    """Entry point of ``dpjax sweep``: ``args.config``, ``args.out``, and optionally
    ``args.coordinator``, ``args.num_processes``, ``args.process_id``, ``args.no_progress``.

    Returns 0 when every point is complete and computed; 1 when some point failed (its
    quantities could not be computed, or its chains raised: the summary on stderr names each);
    2 for an invalid configuration, multi-process settings or output folder (one line on
    stderr, before any compute)."""
    from . import distributed
    from .store import StoreError, check_output_dir

    try:
        settings = distributed.settings_from(args)
    except ValueError as err:
        print(f"dpjax sweep: {err}", file=sys.stderr)
        return 2
    leader = settings is None or settings[2] == 0
    if leader:  # only process 0 writes: check where before any compute
        try:
            check_output_dir(args.out, create=False)
        except StoreError as err:
            print(f"dpjax sweep: {err}", file=sys.stderr)
            return 2
    distributed.initialize(settings)  # before any JAX computation (building datasets is one)
    from . import runner

    try:
        points, sweep_settings = load(args.config)
        runner.validate(points)
    except ConfigError as err:
        print(f"dpjax sweep: invalid configuration: {err}", file=sys.stderr)
        return 2
    try:
        summary = runner.run_points(
            points,
            args.out,
            checkpoint_every=sweep_settings["checkpoint_every"],
            chunk_size=sweep_settings["chunk_size"],
            progress=not getattr(args, "no_progress", False),
        )
    except StoreError as err:
        print(f"dpjax sweep: {err}", file=sys.stderr)
        return 2
    failed = summary["failed"]
    if distributed.is_leader():
        print(
            f"dpjax sweep: {len(points)} points; {len(summary['completed'])} run, {len(summary['skipped'])} already complete"
            f"{f', {len(failed)} failed' if failed else ''}; results in {args.out}"
        )
        if failed:
            print(f"dpjax sweep: {len(failed)} point(s) failed:", file=sys.stderr)
            for h, reason in failed.items():
                print(f"  {h} {reason}", file=sys.stderr)
    return 1 if failed else 0
