"""``dpjax bench contamination``: paper 003's Algorithm 1 on its §4.3 regressions, per dataset,
with the models' closed-form mixture densities against log-space mixing of log f and log g.

For each of the linear (t_5 contamination), Cauchy and logistic regressions, at one (d, n, m),
``contamination_epsilon`` runs ``--datasets`` datasets twice in one process: with the model as
shipped (``mixture_density``: one log per record in the O(n m) potential, linear-space particle
sums in the O(grid m) mixture sup/inf) and with the same model stripped of it (the log-space
path, which is also every user-defined model's path). Each timing is a median over
``--repeats`` after a compiling call; the ratio is log-space / closed form. The largest
per-dataset |eps difference| between the two is reported beside it (they agree to rounding
unless a sup/inf search takes another branch on a rounding-level tie). The device is named: CPU
and GPU figures are different rows.
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from .. import _validate

CASES = {
    # name: (d, n, particles): the per-model sizes of the paper-scale runs' middle
    "linear": (5, 30_000, 1000),
    "cauchy": (10, 1_000, 1000),
    "logistic": (5, 20_000, 2000),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", default=",".join(CASES), help=f"comma-separated subset of {','.join(CASES)}")
    parser.add_argument("--datasets", type=int, default=16, help="datasets per timed call (default 16)")
    parser.add_argument("--n", type=int, default=None, help="records per dataset (default: per model, linear 30000, cauchy 1000, logistic 20000)")
    parser.add_argument("--dim", type=int, default=None, help="parameter dimension d (default: per model, linear 5, cauchy 10, logistic 5)")
    parser.add_argument("--particles", type=int, default=None,
                        help="importance-sampling particles m (default: per model, linear 1000, cauchy 1000, logistic 2000)")
    parser.add_argument("--dataset-batch", type=int, default=None,
                        help="datasets per compiled batch (default 8 on a CPU, 64 on a GPU or TPU)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (medians reported)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated datasets (default 0)")


def _model(name: str, dim: int):
    from ..experiments.contamination._regression import DEFAULT_SCALES, default_theta_star
    from ..models.contamination import logistic_regression_contamination
    from ..models.contamination_regression import cauchy_regression_contamination, linear_regression_contamination

    theta_star = default_theta_star(dim)
    if name == "linear":
        return linear_regression_contamination(theta_star=theta_star, contamination_scale=DEFAULT_SCALES["linear"]), theta_star
    if name == "cauchy":
        return cauchy_regression_contamination(theta_star=theta_star, contamination_scale=DEFAULT_SCALES["cauchy"]), theta_star
    return logistic_regression_contamination(dim=dim), theta_star


def _grid_per_axis(name: str, dim: int) -> int:
    from ..experiments.contamination._regression import auto_grid_per_axis

    return auto_grid_per_axis(dim, 2 if name == "logistic" else 41)


def run(args: argparse.Namespace) -> dict:
    import jax

    from ..estimators.contamination import contamination_epsilon

    names = [v.strip() for v in args.models.split(",") if v.strip()]
    unknown = sorted(set(names) - set(CASES))
    if unknown or not names:
        raise ValueError(f"--models={args.models!r}: {unknown or 'nothing'} not in {sorted(CASES)}")
    # every count must be positive; a size given as 0 is refused, never replaced by the model's
    # default (None: not given)
    for flag in ("datasets", "repeats", "n", "dim", "particles", "dataset_batch"):
        if getattr(args, flag) is not None:
            _validate.positive_int("--" + flag.replace("_", "-"), getattr(args, flag))
    out = {"backend": jax.default_backend(), "device": str(jax.devices()[0]), "datasets": args.datasets, "repeats": args.repeats}
    for name in names:
        dim, n, m = CASES[name]
        dim, n, m = (default if given is None else given for given, default in ((args.dim, dim), (args.n, n), (args.particles, m)))
        shipped, theta_star = _model(name, dim)
        log_space = dataclasses.replace(shipped, mixture_density=None)
        kwargs = dict(theta_star=theta_star, num_records=n, contamination_rate=n ** -0.125, delta=1.0 / (10 * n),
                      num_datasets=args.datasets, num_particles=m, record_grid_per_axis=_grid_per_axis(name, dim),
                      theta_grid_size=2 if name == "logistic" else 9, seed=args.seed, bootstrap=0,
                      dataset_batch=args.dataset_batch)
        times, eps = {}, {}
        for label, model in (("closed_form", shipped), ("log_space", log_space)):
            contamination_epsilon(model, **kwargs)  # compiles
            runs = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                est = contamination_epsilon(model, **kwargs)
                runs.append(time.perf_counter() - t0)
            times[label], eps[label] = float(np.median(runs)), est.epsilons
        out[name] = {
            "dim": dim, "n": n, "particles": m,
            "closed_form_seconds_per_dataset": times["closed_form"] / args.datasets,
            "log_space_seconds_per_dataset": times["log_space"] / args.datasets,
            "speedup": times["log_space"] / times["closed_form"],
            "max_abs_eps_difference": float(np.max(np.abs(eps["closed_form"] - eps["log_space"]))),
        }
    return out
