"""``dpjax bench last-iterate``: last-iterate curves of many configurations in one batched call.

Draws ``--configs`` random configurations of the update theta' = Pi_K(theta - eta (grad F_B + Z))
(eta uniform in [1e-3, 1.9] with M = 1, m log-uniform in [1e-4, 0.5], sigma uniform in
[0.5, 4], steps log-uniform in [1, 1e6], n = 10,000, Delta = 2, half of them with a diameter
D = 1) and builds one :func:`~dpjax.accountants.last_iterate_curve` (``method="auto"``: the
shifted-interpolation bound and composition) for all of them, then reads eps at ``--delta``.
Rows: full batches; cyclic batches (b = 100); Poisson batches (b = 100) sharing one
(sigma, q), as in a sweep over steps and step sizes, with ``poisson_composition="rdp"`` (the
subsampled-Gaussian RDP of composition is computed once per distinct (sigma, q); the default
also composes by the PLD accountant, a few ms per configuration once compiled). Baseline in the same run: the same curves one
configuration per call, over the first ``--baseline-configs`` configurations (median time per
call x the number of configurations). Times are medians of ``--repeats`` warm repeats.
"""
from __future__ import annotations

import argparse

import numpy as np

from ..accountants import last_iterate_curve
from ._baselines import add_configuration_arguments, median_seconds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_configuration_arguments(parser, what="last-iterate", repeats=5)
    parser.add_argument("--baseline-configs", type=int, default=50, help="configurations timed one per call (baseline)")


def sample_configs(num: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return dict(
        step_size=rng.uniform(1e-3, 1.9, num),
        noise_std=rng.uniform(0.5, 4.0, num),
        steps=np.round(10.0 ** rng.uniform(0.0, 6.0, num)).astype(np.int64),
        strong_convexity=10.0 ** rng.uniform(-4.0, np.log10(0.5), num),
        diameter=np.where(rng.uniform(size=num) < 0.5, 1.0, np.inf),
    )


def run(args) -> dict:
    cfg = sample_configs(args.configs, args.seed)
    common = dict(dataset_size=10_000, gradient_sensitivity=2.0, smoothness=1.0)
    rows = {}
    schemes = {
        "full": dict(),
        "cyclic": dict(batching="cyclic", batch_size=100),
        # RDP composition alone: a sweep's setting (the default adds the PLD accountant, a few ms a configuration)
        "poisson (one sigma, q), RDP composition": dict(batching="poisson", batch_size=100, poisson_composition="rdp"),
    }
    for label, extra in schemes.items():
        kw = dict(cfg)
        if label.startswith("poisson"):
            kw["noise_std"] = np.full(args.configs, 1.5)  # one (sigma, q) for the whole sweep

        def batched(kw=kw, extra=extra):
            curve = last_iterate_curve(kw["step_size"], kw["noise_std"], kw["steps"], strong_convexity=kw["strong_convexity"],
                                       diameter=kw["diameter"], **common, **extra)
            return curve, curve.epsilon(args.delta)

        t_build, _ = median_seconds(lambda: batched()[0], args.repeats, warm=True)
        t_all, (_, eps) = median_seconds(batched, args.repeats, warm=True)
        k = min(args.baseline_configs, args.configs)

        def one_by_one(kw=kw, extra=extra, k=k):
            return [float(last_iterate_curve(kw["step_size"][i], kw["noise_std"][i], int(kw["steps"][i]),
                                             strong_convexity=kw["strong_convexity"][i], diameter=kw["diameter"][i], **common,
                                             **extra).epsilon(args.delta)) for i in range(k)]

        t_loop, loop_eps = median_seconds(one_by_one, 1, warm=True)
        per_call = t_loop / k
        rows[label] = dict(
            batched_curve_s=t_build, batched_curve_and_eps_s=t_all, one_per_call_s=per_call * args.configs,
            speedup=per_call * args.configs / t_all, max_abs_eps_difference=float(np.max(np.abs(np.asarray(loop_eps) - eps[:k]))),
        )
    return dict(configs=args.configs, delta=args.delta, rows=rows)


__all__ = ["add_arguments", "run", "sample_configs"]
