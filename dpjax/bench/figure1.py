"""``dpjax bench figure1``: paper 000's Figure 1 by Monte Carlo with coupled chains.

Cyclic SGLD on the eq. 7 pair at the paper's n = 1,149,019 by default (29 epochs = 3.3e7
steps: the epoch k̇ + 1 that paper 000's Lemma A.4 tests), ``--pairs`` coupled chain pairs,
recording every ``--epochs`` epoch end. Reports pair-steps/s and, at each recorded epoch, the
95% lower bound on eps(delta) measured from the chains beside the exact tight eps (Gaussian vs
n-component mixture, :mod:`dpjax.accountants.samplers.cyclic_sgld`) and the bound's ceiling at this
number of pairs. The baseline of the same run is the exact accountant's time for the same
epochs (the chains are the measurement; the exact curve is what they must stay below).
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

PAPER = dict(n=1149019, c=1165165.0, alpha=0.1, beta=1.0, x_high=1.8)


def _int_list(text: str) -> list:
    return [int(v) for v in text.split(",") if v]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=PAPER["n"], help="records (paper: 1149019)")
    parser.add_argument("--c", type=float, default=None, help="response slope (default: Figure 1's c/n times n)")
    parser.add_argument("--pairs", type=int, default=256, help="coupled chain pairs (default 256)")
    parser.add_argument("--epochs", type=_int_list, default=[5, 10, 15, 20, 25, 29], help="epoch ends to record (default 5,10,15,20,25,29)")
    parser.add_argument("--delta", type=float, default=0.01, help="delta of every eps (default 0.01, paper 000's)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64", help="precision of the chains (default float64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the chains (default 0)")


def run(args) -> dict:
    import jax.numpy as jnp

    from .. import run_coupled
    from ..accountants.samplers import cyclic_sgld as cs
    from ..accountants.mechanisms import mixture as mx
    from ..estimators import epsilon_lower_bound
    from ..experiments.sgld_interim.monte_carlo import eq7_coupled_setup

    epochs = sorted(set(args.epochs))
    if not epochs or epochs[0] < 1:
        raise ValueError(f"--epochs={args.epochs} must be positive epoch numbers")
    if args.pairs < 2:
        raise ValueError(f"--pairs={args.pairs} must be >= 2")
    c = PAPER["c"] / PAPER["n"] * args.n if args.c is None else args.c
    problem, model, pair, sampler, prior = eq7_coupled_setup(args.n, c=c, alpha=PAPER["alpha"], beta=PAPER["beta"], x_high=PAPER["x_high"])

    start = time.perf_counter()
    exact = []
    for e in epochs:
        law = cs.epoch_law(problem, e)
        exact.append(mx.mixture_epsilon(math.sqrt(law.variance), law.mixture(), args.delta))
    exact_seconds = time.perf_counter() - start

    result = run_coupled(
        args.seed, model, pair, sampler, num_pairs=args.pairs, num_steps=epochs[-1] * args.n,
        record_steps=[e * args.n for e in epochs], init=prior, progress=False,
        chunk_size=max(args.n, 100_000), dtype=getattr(jnp, args.dtype),
    )
    fin = result.finite_only()
    lower, ceiling = [], []
    for r, e in enumerate(epochs):
        lb = epsilon_lower_bound(fin.positions[r], fin.neighbour_positions[r], args.delta, 0.95, seed=args.seed + e)
        lower.append(lb.epsilon)
        ceiling.append(lb.resolution_ceiling)
    steps = epochs[-1] * args.n
    return {
        "n": args.n,
        "c": c,
        "pairs": args.pairs,
        "steps": steps,
        "dtype": args.dtype,
        "pair_steps_per_s": args.pairs * steps / result.config["run_seconds"],
        "run_seconds": result.config["run_seconds"],
        "exact_seconds": exact_seconds,
        "epochs": epochs,
        "exact_tight_epsilon": exact,
        "lower_bound_95": lower,
        "lower_bound_ceiling": ceiling,
        "all_lower_bounds_below_exact": bool(np.all(np.array(lower) <= np.array(exact))),
        # the GPU issue's accuracy goal: the bound at the epoch where the exact eps peaks, as a share of it
        "peak_epoch": epochs[int(np.argmax(exact))],
        "lower_bound_share_at_peak": float(lower[int(np.argmax(exact))] / max(exact)),
        "num_nonfinite": result.num_nonfinite,
    }
