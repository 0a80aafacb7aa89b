"""Where the engine's numbers live across processes: gather to host, broadcast from process 0.

Under jax.distributed every process runs the same loop over a mesh spanning all hosts' devices;
every function here is a collective that all processes call in the same order (a no-op for a
single process). Only process 0 (the *leader*) reads or writes files, so decisions that depend
on the file system are the leader's and are broadcast.
"""
from __future__ import annotations

import jax
import numpy as np


def process_count() -> int:
    return jax.process_count()


def is_leader() -> bool:
    return jax.process_index() == 0


def to_host(x) -> np.ndarray:
    """The whole (global) array on this host, as numpy."""
    if jax.process_count() == 1:
        return np.asarray(x)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def from_leader(x: np.ndarray) -> np.ndarray:
    """Process 0's value of ``x`` on every process (same shape and dtype everywhere)."""
    if jax.process_count() == 1:
        return np.asarray(x)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.broadcast_one_to_all(np.asarray(x)))


def barrier(name: str) -> None:
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)
