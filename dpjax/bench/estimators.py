"""``dpjax bench estimators``: 1e7 samples per side through the sample-based estimators.

On the Gaussian pair N(0,1) vs N(mu,1) (privacy loss L ~ N(mu^2/2, mu^2) under P), in one
process:

* :func:`epsilon_lower_bound` on ``--samples`` outputs per side held in memory, against two
  baselines measured in the same run: the same call on ``--baseline-samples`` per side, and
  numpy's sort of both full sample arrays (the unavoidable O(n log n) floor of any
  threshold-based plug-in);
* :func:`privacy_loss_profile` streaming ``--samples`` privacy-loss values in chunks of
  ``--chunk`` drawn on the fly (never all in memory), against the same call on
  ``--baseline-samples``; the draw itself is timed separately and reported.

Times are medians over ``--repeats``. Peak resident memory (``resource.getrusage``,
``ru_maxrss``: a high-water mark of the whole process, so it is read after each phase, in
increasing order of size: the streamed path-loss phases first, then the in-memory lower
bound) is reported in MiB. The estimates are reported next to the exact
values (analytic Gaussian mechanism, Balle & Wang 2018) so a run shows correctness too.
"""
from __future__ import annotations

import argparse
import resource
import sys
import warnings

import numpy as np

from ..accountants.mechanisms.gaussian_divergence import analytic_gaussian_delta, analytic_gaussian_epsilon
from ..estimators import epsilon_lower_bound, privacy_loss_profile
from ._baselines import median_seconds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--samples", type=int, default=10_000_000, help="samples per side in the main run")
    parser.add_argument("--baseline-samples", type=int, default=1_000_000, help="samples per side in the baseline run")
    parser.add_argument("--chunk", type=int, default=1_000_000, help="privacy-loss samples per streamed chunk")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (medians reported)")
    parser.add_argument("--mu", type=float, default=1.0, help="mean gap of the Gaussian pair")
    parser.add_argument("--delta", type=float, default=1e-3, help="delta of the eps estimates (default 1e-3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the samples (default 0)")


def _peak_rss_mib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0  # bytes on macOS, KiB on Linux


def _lower_bound_phase(n: int, mu: float, delta: float, repeats: int, seed: int):
    rng = np.random.default_rng(seed)
    p = rng.standard_normal(n)
    q = rng.standard_normal(n) + mu
    t_bound, result = median_seconds(lambda: epsilon_lower_bound(p, q, delta, seed=seed), repeats)
    t_sort, _ = median_seconds(lambda: (np.sort(p), np.sort(q)), repeats)
    return t_bound, t_sort, result


def _stream(n: int, chunk: int, mu: float, seed: int):
    rng = np.random.default_rng(seed)
    for start in range(0, n, chunk):
        yield rng.normal(mu**2 / 2.0, mu, min(chunk, n - start))


def _path_loss_phase(n: int, chunk: int, mu: float, epsilons, orders, repeats: int, seed: int):
    t_draw, _ = median_seconds(lambda: sum(x.size for x in _stream(n, chunk, mu, seed)), repeats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # low-ESS orders are reported, not warned
        t_est, est = median_seconds(lambda: privacy_loss_profile(_stream(n, chunk, mu, seed), epsilons, orders), repeats)
    return t_draw, t_est, est


def run(args) -> dict:
    for name in ("samples", "baseline_samples", "chunk", "repeats"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')}={getattr(args, name)} violates a positive integer")
    mu, delta, repeats = float(args.mu), float(args.delta), int(args.repeats)
    n_big, n_base = int(args.samples), int(args.baseline_samples)
    out: dict = {"mu": mu, "delta": delta, "samples": n_big, "baseline_samples": n_base, "repeats": repeats}
    out["rss_start_mib"] = _peak_rss_mib()

    epsilons = np.linspace(0.0, 4.0, 41)
    orders = np.array([1.5, 2.0, 3.0, 4.0])
    d_base, t_pl_base, _ = _path_loss_phase(n_base, min(args.chunk, n_base), mu, epsilons, orders, repeats, args.seed)
    out["path_loss_baseline_s"] = t_pl_base
    out["path_loss_baseline_draw_s"] = d_base
    d_big, t_pl_big, est = _path_loss_phase(n_big, args.chunk, mu, epsilons, orders, repeats, args.seed + 1)
    out["path_loss_s"] = t_pl_big
    out["path_loss_draw_s"] = d_big
    out["ratio_path_loss_vs_baseline_samples"] = t_pl_big / t_pl_base
    out["path_loss_samples_per_s"] = n_big / max(t_pl_big - d_big, 1e-12)
    exact_delta = analytic_gaussian_delta(mu, epsilons)
    out["path_loss_max_abs_delta_error"] = float(np.max(np.abs(est.delta - exact_delta)))
    out["path_loss_exact_delta_inside_interval"] = bool(np.all((est.delta_lower <= exact_delta) & (exact_delta <= est.delta_upper)))
    out["path_loss_rdp"] = est.rdp
    out["exact_rdp"] = orders * mu**2 / 2.0
    out["path_loss_rdp_interval"] = np.stack([est.rdp_lower, est.rdp_upper], axis=-1)
    out["path_loss_effective_sample_size"] = est.effective_sample_size
    out["rss_after_path_loss_mib"] = _peak_rss_mib()

    true_eps = analytic_gaussian_epsilon(mu, delta)
    out["true_epsilon"] = true_eps
    t_base, t_base_sort, r_base = _lower_bound_phase(n_base, mu, delta, repeats, args.seed)
    out["lower_bound_baseline_s"] = t_base
    out["lower_bound_baseline_eps"] = r_base.epsilon
    out["rss_after_lower_bound_baseline_mib"] = _peak_rss_mib()
    t_big, t_big_sort, r_big = _lower_bound_phase(n_big, mu, delta, repeats, args.seed + 1)
    out["lower_bound_s"] = t_big
    out["lower_bound_eps"] = r_big.epsilon
    out["lower_bound_share_of_truth"] = r_big.epsilon / true_eps
    out["lower_bound_resolution_ceiling"] = r_big.resolution_ceiling
    out["numpy_sort_both_sides_s"] = t_big_sort
    out["ratio_lower_bound_vs_baseline_samples"] = t_big / t_base
    out["ratio_lower_bound_vs_numpy_sort"] = t_big / t_big_sort
    out["rss_after_lower_bound_mib"] = _peak_rss_mib()
    return out
