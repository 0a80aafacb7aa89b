"""Coupled chain pairs for a sweep point: the engine's one loop, with the sweep's checkpoints.

A sweep point runs exactly what :func:`dpjax.run_coupled` runs: :func:`dpjax.engine.runner.run_pairs`
(same paths, same counter-based randomness, same padding and mesh over all processes' devices).
The sweep adds only its results store: checkpoints saved every ``checkpoint_every`` steps and
resumed bit-identically (step t of pair k depends only on (seed, k, t) and the state).
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
from jax.sharding import Mesh

from ..engine.runner import CHECKPOINT_KEYS, Recording, default_mesh, run_pairs as _engine_run_pairs
from .build import Problem

ChainRecord = Recording  # steps, positions, neighbour_positions, path_loss, finite, timings

__all__ = ["CHECKPOINT_KEYS", "ChainRecord", "default_mesh", "run_pairs"]


def run_pairs(
    seed: int,
    problem: Problem,
    *,
    num_pairs: int,
    num_steps: int,
    record_steps: Sequence[int],
    dtype: str = "float64",
    mesh: Optional[Mesh] = None,
    chunk_size: int = 1000,
    checkpoint_every: Optional[int] = None,
    load_checkpoint: Callable[[], Optional[dict]] = lambda: None,
    save_checkpoint: Callable[[dict], None] = lambda arrays: None,
    progress: Optional[Callable[[int], None]] = None,
) -> ChainRecord:
    """Run ``num_pairs`` coupled pairs of ``problem`` for ``num_steps`` steps (see the module
    docstring and :func:`dpjax.engine.runner.run_pairs`)."""
    return _engine_run_pairs(
        seed, problem.model, problem.pair, problem.sampler,
        num_pairs=num_pairs, num_steps=num_steps, record_steps=np.asarray(record_steps), init=problem.init,
        dtype=dtype, mesh=mesh, chunk_size=chunk_size, checkpoint_every=checkpoint_every,
        load_checkpoint=load_checkpoint, save_checkpoint=save_checkpoint, progress=progress,
    )
