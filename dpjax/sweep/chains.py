"""Coupled chain pairs for a sweep point: the engine's one loop, with the sweep's checkpoints.

A sweep point runs exactly what :func:`dpjax.run_coupled` runs: :func:`dpjax.engine.runner.run_pairs`
(same paths, same counter-based randomness, same padding and mesh over all processes' devices).
The sweep adds only its results store: checkpoints saved every ``checkpoint_every`` steps and
resumed bit-identically (step t of pair k depends only on (seed, k, t) and the state).
"""
from __future__ import annotations

from ..engine.runner import CHECKPOINT_KEYS, Recording, default_mesh, run_pairs as _engine_run_pairs
from .build import Problem

ChainRecord = Recording  # steps, positions, neighbour_positions, path_loss, finite, timings

__all__ = ["CHECKPOINT_KEYS", "ChainRecord", "default_mesh", "run_pairs"]


def run_pairs(seed: int, problem: Problem, **options) -> ChainRecord:
    """Run the coupled pairs of ``problem`` (its model, pair, sampler and start ``init``) by
    :func:`dpjax.engine.runner.run_pairs`, whose keywords ``options`` are: ``num_pairs``,
    ``num_steps``, ``record_steps`` (required), ``dtype``, ``mesh``, ``chunk_size``,
    ``checkpoint_every``, ``load_checkpoint``, ``save_checkpoint``, ``progress`` (see the
    module docstring). The sweep's points are validated before they get here."""
    return _engine_run_pairs(seed, problem.model, problem.pair, problem.sampler, init=problem.init, **options)
