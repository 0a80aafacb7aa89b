"""Paper 003, Table 1: eps_hat for private mean estimation under Huber contamination.

x_i ~ N(30, 8^2) truncated to a width-600 interval ([-270, 330], centred at theta* = 30; the
paper gives only the width), each record replaced with probability p_n = n^{-1/8} by a draw
from a Student-t(5) with location 30 and scale 8 truncated to the same interval; prior
N(40, 40^2); delta_n = 1/(10 n); eps_hat is the 99% quantile over K = 1000 simulated datasets
of Algorithm 1's per-dataset estimate (see :mod:`dpjax.estimators.contamination`).

Differences from the paper's procedure, all documented in the JSON's ``settings``: the
posterior is sampled by importance sampling from a widened Laplace approximation (the paper
used random-walk Metropolis for its posterior samples), the sup/inf over records use a grid
plus golden-section refinement, and the potential at the particles is Chebyshev-interpolated
from exact evaluations (its error is reported).

The same result also runs the §4.3 logistic-regression comparison with and without
contamination (d = 5, :mod:`dpjax.experiments.contamination.logistic`; flags prefixed
``--logistic-``; ``--no-logistic`` skips it) and stores it under ``logistic_regression``.

Run: ``dpjax reproduce contamination-mean --out DIR [--quick]`` or
``python -m dpjax.experiments.contamination.mean --quick``.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from .._report import stage
from ._arguments import int_list

PAPER_N = [100, 1000, 2000, 5000, 10000, 20000, 50000]
PAPER_EPSILON_HAT = [2.85, 0.94, 0.72, 0.46, 0.32, 0.26, 0.18]
QUICK_NUM_DATASETS = 300


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-values", type=int_list, default=PAPER_N, help="dataset sizes n (comma-separated; default: Table 1's)")
    parser.add_argument("--K", type=int, default=None, help=f"simulated datasets per n (default 1000, --quick {QUICK_NUM_DATASETS})")
    parser.add_argument("--particles", type=int, default=1000, help="importance-sampling particles m per dataset (default 1000)")
    parser.add_argument("--quantile", type=float, default=0.99, help="reported quantile over datasets (default 0.99)")
    parser.add_argument("--rate-exponent", type=float, default=0.125, help="contamination rate p_n = n^-exponent (default 1/8)")
    parser.add_argument("--delta-factor", type=float, default=10.0, help="delta_n = 1/(factor n) (default 10)")
    parser.add_argument("--width", type=float, default=600.0, help="width of the truncation interval centred at theta* (default 600)")
    parser.add_argument("--proposal-scale", type=float, default=2.0, help="importance proposal N(MAP, s^2 H^-1) scale s (default 2)")
    parser.add_argument("--box-centre", choices=["map", "theta_star"], default="map",
                        help="centre of the L_inf box A_n: the MAP (Algorithm 1's theta-hat, default) or theta*")
    parser.add_argument("--grid", type=int, default=1201, help="record grid points over the interval for the sup/inf (default 1201)")
    parser.add_argument("--interpolation-nodes", type=int, default=32, help="Chebyshev nodes for the potential at the particles; 0 = exact (default 32)")
    parser.add_argument("--dataset-batch", type=int, default=None,
                        help="datasets per compiled batch (default 8 on a CPU, 64 on a GPU or TPU; the results do not depend on it)")
    parser.add_argument("--progress", action="store_true", help="show a progress bar per n")
    parser.add_argument("--no-logistic", action="store_true", help="skip the logistic-regression comparison (paper 003 §4.3)")
    from . import logistic as contamination_logistic

    contamination_logistic.add_arguments(parser, prefix="logistic-")


def run(args: argparse.Namespace):
    """Table 1 with dpjax: returns (results dict, matplotlib figure)."""
    from ...estimators.contamination import contamination_epsilon
    from ...models.contamination import truncated_normal_mean_contamination

    theta_star, sigma = 30.0, 8.0
    n_values = list(args.n_values)
    num_datasets = args.K if args.K is not None else (QUICK_NUM_DATASETS if args.quick else 1000)
    if not args.width > 0:
        raise ValueError(f"--width={args.width} violates width > 0")
    if not args.rate_exponent > 0:
        raise ValueError(f"--rate-exponent={args.rate_exponent} violates rate_exponent > 0 (p_n must be < 1)")
    if not args.delta_factor > 0:
        raise ValueError(f"--delta-factor={args.delta_factor} violates delta_factor > 0")
    model = truncated_normal_mean_contamination(
        sigma=sigma, low=theta_star - args.width / 2, high=theta_star + args.width / 2,
        contamination_df=5.0, contamination_location=theta_star, contamination_scale=sigma, prior_mean=40.0, prior_sd=40.0,
    )
    nodes = args.interpolation_nodes or None
    rows = []
    t_total = time.perf_counter()
    for n in n_values:
        with stage(f"Algorithm 1 at n = {n:,}: {num_datasets:,} datasets x {args.particles:,} particles"):
            est = contamination_epsilon(
                model, theta_star=theta_star, num_records=n, contamination_rate=n ** (-args.rate_exponent),
                delta=1.0 / (args.delta_factor * n), num_datasets=num_datasets, quantile=args.quantile,
                num_particles=args.particles, proposal_scale=args.proposal_scale, seed=args.seed, num_record_grid=args.grid,
                dataset_batch=args.dataset_batch, pad_records_to=max(n_values), interpolation_nodes=nodes, progress=args.progress,
                box_centre=args.box_centre,
            )
        d = est.details
        rows.append(dict(
            n=n, epsilon_hat=est.epsilon, interval=est.interval, interval_confidence=est.interval_confidence,
            bootstrap_se=est.bootstrap_se, contamination_rate=est.contamination_rate, delta=est.delta,
            num_failed=est.num_failed, num_unresolved_tail=est.num_unresolved_tail, seconds=est.seconds,
            median_epsilon=float(np.median(est.epsilons)),
            mean_log_eta=float(np.mean(d["log_eta"])),
            mean_log_a_minus_log_b=float(np.mean(d["log_a"] - d["log_b"])),
            mean_phi=float(np.mean(d["phi"])),
            min_particles_outside_box=int(np.min(d["num_outside"])),
            min_effective_sample_size=float(np.min(d["ess"])),
            max_interpolation_error=float(np.max(d["interpolation_error"])),
            # Newton decrement sqrt(g^T H^-1 g): distance of the returned MAP from the optimum
            # in posterior standard deviations
            max_map_error_in_sd=float(np.max(np.sqrt(np.abs(np.einsum(
                "ki,ki->k", d["map_grad"], np.linalg.solve(d["hessian"], d["map_grad"][..., None])[..., 0]))))),
            epsilons=est.epsilons,
        ))
        print(f"n={n:>6}  p={est.contamination_rate:.3f}  eps_hat={est.epsilon:.3f}  "
              f"95% CI [{est.interval[0]:.3f}, {est.interval[1]:.3f}]  ({est.seconds:.1f} s)", flush=True)
    total = time.perf_counter() - t_total

    paper = {n: e for n, e in zip(PAPER_N, PAPER_EPSILON_HAT)}
    results = {
        "n": n_values,
        "epsilon_hat": [r["epsilon_hat"] for r in rows],
        "paper_epsilon_hat": [paper.get(n) for n in n_values],
        "interval_low": [r["interval"][0] for r in rows],
        "interval_high": [r["interval"][1] for r in rows],
        "interval_confidence": [r["interval_confidence"] for r in rows],
        "bootstrap_se": [r["bootstrap_se"] for r in rows],
        "contamination_rate": [r["contamination_rate"] for r in rows],
        "delta": [r["delta"] for r in rows],
        "num_failed": [r["num_failed"] for r in rows],
        "num_unresolved_tail": [r["num_unresolved_tail"] for r in rows],
        "seconds": [r["seconds"] for r in rows],
        "total_seconds": total,
        "diagnostics": {k: [r[k] for r in rows] for k in (
            "median_epsilon", "mean_log_eta", "mean_log_a_minus_log_b", "mean_phi", "min_particles_outside_box",
            "min_effective_sample_size", "max_interpolation_error", "max_map_error_in_sd")},
        "per_dataset_epsilon": [r["epsilons"] for r in rows],
        "settings": {
            "K": num_datasets, "particles": args.particles, "quantile": args.quantile, "quick": bool(args.quick),
            "seed": args.seed, "theta_star": theta_star, "sigma": sigma,
            "interval": [theta_star - args.width / 2, theta_star + args.width / 2],
            "contamination": "Student-t(5), location 30, scale 8, truncated to the interval",
            "prior": "N(40, 40^2)", "rate": f"p_n = n^-{args.rate_exponent}", "delta": f"1/({args.delta_factor} n)",
            "proposal_scale": args.proposal_scale, "record_grid_points": args.grid,
            "interpolation_nodes": nodes, "box_centre": args.box_centre,
            "sup_inf": "grid over the interval (mixture sums on every 4th point) + golden-section refinement",
            "monte_carlo_error": "interval_low/high: distribution-free order-statistic interval for the quantile "
                                 "(binomial coverage interval_confidence); bootstrap_se: bootstrap sd of the quantile",
        },
    }
    if not getattr(args, "no_logistic", False):
        from . import logistic as contamination_logistic

        results["logistic_regression"], _ = contamination_logistic.run(args, prefix="logistic-")
    return results, _figure(results)


def _figure(results):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = np.asarray(results["n"], dtype=float)
    eps = np.asarray(results["epsilon_hat"])
    lo = np.asarray(results["interval_low"], dtype=float)
    hi = np.asarray(results["interval_high"], dtype=float)
    hi_plot = np.where(np.isfinite(hi), hi, eps)
    logistic = results.get("logistic_regression")
    fig, axes = plt.subplots(1, 2 if logistic else 1, figsize=(11 if logistic else 6, 4), squeeze=False)
    ax = axes[0, 0]
    ax.errorbar(n, eps, yerr=[eps - lo, hi_plot - eps], fmt="o-", capsize=3,
                label=f"dpjax, {results['settings']['quantile']:.0%} quantile over K={results['settings']['K']} (95% CI)")
    paper = [(x, e) for x, e in zip(n, results["paper_epsilon_hat"]) if e is not None]
    if paper:
        ax.plot(*zip(*paper), "s--", label="paper 003, Table 1")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel(r"$\hat\epsilon_n$  ($\delta_n = 1/(10n)$)")
    ax.set_title("Contamination mean estimation (paper 003, Table 1)")
    ax.legend(fontsize=8)
    if logistic:
        from .logistic import draw_panel

        draw_panel(axes[0, 1], logistic)
    fig.tight_layout()
    return fig


def headline(results: dict) -> list:
    """Table 1's eps_hat per n beside the printed values (and the logistic comparison's ratios)."""
    k = results["settings"]["K"]
    rows = [
        dict(quantity=f"eps_hat, n = {n:,}", paper=paper, dpjax=eps,
             note=f"{results['interval_confidence'][i]:.0%} interval [{results['interval_low'][i]:.3g}, {results['interval_high'][i]:.3g}] (K = {k})"
             if i == 0 else None)
        for i, (n, paper, eps) in enumerate(zip(results["n"], results["paper_epsilon_hat"], results["epsilon_hat"]))
    ]
    if results.get("logistic_regression"):
        from .logistic import headline as logistic_headline

        rows.extend(logistic_headline(results["logistic_regression"]))
    return rows


def main(argv=None) -> int:
    """``python -m dpjax.experiments.contamination.mean`` = ``dpjax reproduce contamination-mean``."""
    import sys

    from ...cli import main as cli_main

    return cli_main(["reproduce", "contamination-mean", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
