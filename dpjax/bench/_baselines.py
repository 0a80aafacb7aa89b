"""What the benchmarks' baselines share: a median timing loop, the flags of an accountant
benchmark over random configurations, and the chain loop of a plain SGLD baseline
(blackjax's, or a hand-written one), written once."""
from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import numpy as np


def median_seconds(fn: Callable[[], Any], repeats: int, *, warm: bool = False) -> tuple[float, Any]:
    """(median wall seconds of ``repeats`` calls of ``fn``, the last call's result); ``warm``:
    one untimed call first (compilation, caches)."""
    if warm:
        fn()
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result


def add_configuration_arguments(parser: argparse.ArgumentParser, *, what: str, repeats: int) -> None:
    """The flags of an accountant benchmark over random configurations (``dpjax bench
    accountant``, ``last-iterate``): how many (``what``), timed repeats with medians reported,
    the delta at which eps is read, and the configurations' seed."""
    parser.add_argument("--configs", type=int, default=1000, help=f"number of random {what} configurations (default 1000)")
    parser.add_argument("--repeats", type=int, default=repeats, help=f"timed repeats of the batched call (medians reported; default {repeats})")
    parser.add_argument("--delta", type=float, default=1e-5, help="delta at which eps is read (default 1e-5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random configurations (default 0)")


def uniform_batch_chains(step_chain: Callable, positions, steps: int, batch_size: int, num_records: int) -> Callable:
    """``run(key)``: the positions of every chain after ``steps`` steps. At step t each chain
    takes its key from fold_in(key, t) split over the chains, draws ``batch_size`` record
    indices uniformly with replacement, and moves by ``step_chain(noise_key, position,
    indices)`` (a blackjax SGLD step, or a hand-written one): the loop the engine's rows are
    timed against."""
    import jax
    import jax.numpy as jnp

    num_chains = positions.shape[0]

    def run(key):
        def one_step(pos, t):
            keys = jax.random.split(jax.random.fold_in(key, t), num_chains)

            def chain(k, p):
                k_batch, k_noise = jax.random.split(k)
                idx = jax.random.randint(k_batch, (batch_size,), 0, num_records)
                return step_chain(k_noise, p, idx)

            return jax.vmap(chain)(keys, pos), None

        return jax.lax.scan(one_step, positions, jnp.arange(steps))[0]

    return run
