"""Multi-host plumbing: jax.distributed start-up, gather to host, broadcast from process 0.

One process per host (or, for tests, several processes on one machine over loopback). Each
process builds the same :class:`jax.sharding.Mesh` over ``jax.devices()`` (all hosts'
devices), the chain pairs are sharded along its "chains" axis, and every collective here is
called by all processes in the same order. Only process 0 (the *leader*) touches the results
store, so decisions that depend on the file system (is a point complete? is there a
checkpoint?) are made by the leader and broadcast, which keeps the processes in step even
without a shared file system.

Settings come from flags (``--coordinator HOST:PORT --num-processes N --process-id I``) or
the environment (``DPJAX_COORDINATOR``, ``DPJAX_NUM_PROCESSES``, ``DPJAX_PROCESS_ID``); with
neither, the run is single-process. On CPU, cross-process collectives use gloo.
"""
from __future__ import annotations

import os
from typing import Any, Optional


ENV_COORDINATOR = "DPJAX_COORDINATOR"
ENV_NUM_PROCESSES = "DPJAX_NUM_PROCESSES"
ENV_PROCESS_ID = "DPJAX_PROCESS_ID"


def settings_from(args: Any = None, environ: Optional[dict] = None) -> Optional[tuple[str, int, int]]:
    """(coordinator, num_processes, process_id) from ``args`` attributes, else the environment;
    None for a single-process run. Raises ``ValueError`` naming a missing or bad setting."""
    environ = os.environ if environ is None else environ
    coordinator = getattr(args, "coordinator", None) or environ.get(ENV_COORDINATOR)
    num = getattr(args, "num_processes", None)
    pid = getattr(args, "process_id", None)
    num = num if num is not None else environ.get(ENV_NUM_PROCESSES)
    pid = pid if pid is not None else environ.get(ENV_PROCESS_ID)
    if coordinator is None and num is None and pid is None:
        return None
    if coordinator is None or num is None or pid is None:
        raise ValueError(
            f"coordinator={coordinator!r}, num_processes={num!r}, process_id={pid!r}: a multi-process run needs all three "
            f"(flags --coordinator --num-processes --process-id or env {ENV_COORDINATOR}, {ENV_NUM_PROCESSES}, {ENV_PROCESS_ID})"
        )
    try:
        num_i, pid_i = int(num), int(pid)
    except (TypeError, ValueError):
        raise ValueError(f"num_processes={num!r} and process_id={pid!r} must be integers") from None
    if num_i < 1 or not 0 <= pid_i < num_i:
        raise ValueError(f"process_id={pid_i} violates 0 <= process_id < num_processes={num_i}")
    if ":" not in str(coordinator):
        raise ValueError(f"coordinator={coordinator!r} must be HOST:PORT, e.g. 10.0.0.1:1234")
    return str(coordinator), num_i, pid_i


def initialize(settings: Optional[tuple[str, int, int]]) -> None:
    """Start jax.distributed (before any JAX computation); a no-op for a single process."""
    if settings is None:
        return
    import jax

    coordinator, num, pid = settings
    # CPU collectives across processes (harmless where the accelerators have their own).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=num, process_id=pid)


# the collectives themselves are the engine's (one implementation for run_coupled and sweeps)
from ..engine.hosts import barrier, from_leader, is_leader, process_count, to_host  # noqa: E402,F401
