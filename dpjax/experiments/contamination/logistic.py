"""Paper 003 §4.3, Figure 2b: eps_hat for Bayesian logistic regression (d = 5 and 10) with
and without contamination, with the decay-rate fit extrapolated to n = 1e7.

Records are (y, w) with w = (1, w_2, ..., w_d), w_j uniform on [-1, 1] (Remark 14: ||W||_inf
<= 1) and y ~ Bernoulli(sigmoid(theta*.w)); contamination replaces y by a Bernoulli(1/2) draw
with probability p_n = n^{-1/8}; prior N(0, 10^2 I); delta_n = 1/(10 n); eps_hat is the 99%
quantile over K simulated datasets of Algorithm 1's per-dataset estimate (see
:mod:`dpjax.estimators.contamination`). Without contamination (p = 0) the likelihood ratio
d(x; theta) is still bounded (binary response, bounded covariates), so Algorithm 1 applies
unchanged; the paper reports that contamination lowers eps_hat "approximately by a factor of
four" (Figure 2b; its values are not printed, nor is theta*).

Not given by the paper, and so flags here: theta* (default (0.5, -1, 1, -0.5, 0.25)), the
number of particles m, and the optimiser for the sup/inf (here: a grid over the record
space and the box's vertices, refined coordinate-wise by golden section; the sup over theta
in an L_inf box of a monotone function of theta.w is at a vertex, so vertices suffice).

Several dimensions (``--dims``, default 5,10 when run on its own; d = 10 uses theta* =
(0.5, -1, 1, -0.5, 0.25) tiled, chosen here): each d gets the layout above under
``by_dim``, plus the log-scale decay-rate fit and its extrapolation beside Theorem 4's rate
(:mod:`._contamination_regression`), over the paper's n range (1e3 to 5e5; ``--quick``: 1e3,
3e3, 1e4 with K = 50). Inside ``contamination-mean`` (flags prefixed ``--logistic-``) it
runs one d, from ``--logistic-theta-star``, as before.

Run: ``dpjax reproduce contamination-logistic --out DIR [--quick]``; it is also part of
``dpjax reproduce contamination-mean``.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from . import _regression as common
from .._report import stage
from ._arguments import int_list

DEFAULT_N = [1000, 2000, 5000, 10000, 20000]
QUICK_N = [1000, 5000]
QUICK_NUM_DATASETS = 100
DEFAULT_THETA_STAR = [0.5, -1.0, 1.0, -0.5, 0.25]


def _float_list(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None


def add_arguments(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """The experiment's flags; ``prefix`` (e.g. "logistic-") lets another experiment embed them."""
    dest = prefix.replace("-", "_")
    parser.add_argument(f"--{prefix}n-values", dest=f"{dest}n_values", type=int_list, default=None,
                        help=f"dataset sizes n (default {','.join(map(str, DEFAULT_N))}; --quick {','.join(map(str, QUICK_N))})")
    parser.add_argument(f"--{prefix}K", dest=f"{dest}K", type=int, default=None,
                        help=f"simulated datasets per n (default 1000, --quick {QUICK_NUM_DATASETS})")
    parser.add_argument(f"--{prefix}theta-star", dest=f"{dest}theta_star", type=_float_list, default=DEFAULT_THETA_STAR,
                        help="true parameter, intercept first; its length is d (default 0.5,-1,1,-0.5,0.25: d = 5)")
    parser.add_argument(f"--{prefix}dims", dest=f"{dest}dims", type=int_list, default=None if prefix else [5, 10],
                        help="dimensions d to run (theta* for a d other than --theta-star's length: 0.5,-1,1,-0.5,0.25 tiled); "
                             + ("default: --logistic-theta-star's d alone" if prefix else "default 5,10 (the paper's)"))
    parser.add_argument(f"--{prefix}particles", dest=f"{dest}particles", type=int, default=2000,
                        help="importance-sampling particles m per dataset (default 2000: in d = 5 the proposal's weights "
                             "degenerate faster, and m = 1000 left ~2%% of datasets at n = 1000 with no particle outside the box)")
    parser.add_argument(f"--{prefix}grid-per-axis", dest=f"{dest}grid_per_axis", type=int, default=None,
                        help="record grid points per covariate axis before refinement (default 5 for d <= 5, 3 up to d = 7, "
                             "else 2 = the cube's vertices)")
    parser.add_argument(f"--{prefix}proposal-scale", dest=f"{dest}proposal_scale", type=float, default=2.0,
                        help="importance proposal N(MAP, s^2 H^-1) scale s (default 2)")
    if not prefix:
        parser.add_argument("--extrapolate-to", type=float, default=1e7, help="largest n of the extrapolated fit (default 1e7)")
        parser.add_argument("--quantile", type=float, default=0.99, help="reported quantile over datasets (default 0.99)")
        parser.add_argument("--rate-exponent", type=float, default=0.125, help="contamination rate p_n = n^-exponent (default 1/8)")
        parser.add_argument("--delta-factor", type=float, default=10.0, help="delta_n = 1/(factor n) (default 10)")
        parser.add_argument("--dataset-batch", type=int, default=None,
                        help="datasets per compiled batch (default 8 on a CPU, 64 on a GPU or TPU; the results do not depend on it)")
        parser.add_argument("--progress", action="store_true", help="show a progress bar per n")
        from ._regression import add_merge_argument

        add_merge_argument(parser)


def run(args: argparse.Namespace, prefix: str = ""):
    """eps_hat with and without contamination: returns (results dict, matplotlib figure).
    One d (no ``--dims``): the single-d layout; several: ``by_dim`` and the rate fit."""
    if not prefix and getattr(args, "merge", None):
        results = common.load_merge("logistic", args)
        return results, common.figure(results, "Logistic regression (paper 003, Fig. 2b)")
    opt = lambda name: getattr(args, prefix.replace("-", "_") + name)
    theta_star = np.asarray(opt("theta_star"), dtype=float)
    if theta_star.ndim != 1 or theta_star.shape[0] < 2 or not np.all(np.isfinite(theta_star)):
        raise ValueError(f"--{prefix}theta-star={opt('theta_star')} must be >= 2 finite numbers (intercept first)")
    dims = getattr(args, prefix.replace("-", "_") + "dims", None)
    if dims is None:
        results = _run_one_dim(args, prefix, theta_star, n_default=QUICK_N if args.quick else DEFAULT_N,
                               k_default=QUICK_NUM_DATASETS if args.quick else 1000)
        return results, _figure(results)
    if any(d < 2 for d in dims):
        raise ValueError(f"--{prefix}dims={dims}: every d must be >= 2 (an intercept and a covariate)")
    n_default = common.QUICK_N if args.quick else common.PAPER_N
    k_default = common.QUICK_NUM_DATASETS if args.quick else 1000
    per_dim = {}
    t0 = time.perf_counter()
    for d in dims:
        ts = theta_star if theta_star.shape[0] == d else np.asarray(common.default_theta_star(d))
        per_dim[str(d)] = _run_one_dim(args, prefix, ts, n_default=n_default, k_default=k_default)
    n_values = per_dim[str(dims[0])]["n"]
    results = {"dims": list(dims), "n": n_values, "by_dim": per_dim}
    fit_args = argparse.Namespace(rate_exponent=args.rate_exponent, extrapolate_to=getattr(args, "extrapolate_to", 1e7),
                                  quantile=args.quantile, seed=args.seed)
    results["rate_fit"] = common.fit_rates(per_dim, n_values, fit_args)
    results["total_seconds"] = time.perf_counter() - t0
    results["settings"] = {"kind": "logistic", "K": per_dim[str(dims[0])]["settings"]["K"], "quick": bool(args.quick),
                           "paper": "Figure 2b: contamination lowers eps_hat about 4x (values and theta* not printed)"}
    return results, common.figure(results, "Logistic regression (paper 003, Fig. 2b)")


def _run_one_dim(args, prefix, theta_star, n_default, k_default) -> dict:
    """The single-d result (the original layout)."""
    from ...estimators.contamination import contamination_epsilon
    from ...models.contamination import logistic_regression_contamination
    from ._regression import arm_columns, arm_record, auto_grid_per_axis

    opt = lambda name: getattr(args, prefix.replace("-", "_") + name)
    n_values = list(opt("n_values") or n_default)
    num_datasets = opt("K") if opt("K") is not None else k_default
    grid_per_axis = opt("grid_per_axis") or auto_grid_per_axis(theta_star.shape[0], 2)
    if not args.rate_exponent > 0:
        raise ValueError(f"--rate-exponent={args.rate_exponent} violates rate_exponent > 0 (p_n must be < 1)")
    if not args.delta_factor > 0:
        raise ValueError(f"--delta-factor={args.delta_factor} violates delta_factor > 0")
    model = logistic_regression_contamination(dim=theta_star.shape[0])
    rows = []
    t_total = time.perf_counter()
    for n in n_values:
        row = {"n": n}
        for label, p in (("contaminated", n ** (-args.rate_exponent)), ("uncontaminated", 0.0)):
            with stage(f"logistic d = {theta_star.shape[0]}, n = {n:,}, {label}: {num_datasets:,} datasets x {opt('particles'):,} particles"):
                est = contamination_epsilon(
                    model, theta_star=theta_star, num_records=n, contamination_rate=p, delta=1.0 / (args.delta_factor * n),
                    num_datasets=num_datasets, quantile=args.quantile, num_particles=opt("particles"),
                    proposal_scale=opt("proposal_scale"), seed=args.seed, record_grid_per_axis=grid_per_axis,
                    theta_grid_size=2, dataset_batch=args.dataset_batch, pad_records_to=max(n_values), progress=args.progress,
                )
            row[label] = arm_record(est, p)
            print(f"logistic d={theta_star.shape[0]} n={n:>6} {label:>14} p={p:.3f}  eps_hat={est.epsilon:.3f}  "
                  f"95% CI [{est.interval[0]:.3f}, {est.interval[1]:.3f}]  unresolved tails {est.num_unresolved_tail}  ({est.seconds:.1f} s)",
                  flush=True)
        rows.append(row)
    total = time.perf_counter() - t_total

    results = arm_columns(rows, n_values)
    results["delta"] = [1.0 / (args.delta_factor * n) for n in n_values]
    results["ratio_uncontaminated_over_contaminated"] = [
        u / c for u, c in zip(results["epsilon_hat_uncontaminated"], results["epsilon_hat_contaminated"])]
    results["total_seconds"] = total
    results["settings"] = {
        "K": num_datasets, "particles": opt("particles"), "quantile": args.quantile, "quick": bool(args.quick),
        "seed": args.seed, "theta_star": theta_star.tolist(), "dim": int(theta_star.shape[0]),
        "covariates": "w_1 = 1, w_2..w_d ~ U[-1, 1]", "contamination": "y replaced by Bernoulli(1/2) with probability p_n",
        "prior": "N(0, 10^2 I)", "rate": f"p_n = n^-{args.rate_exponent}", "delta": f"1/({args.delta_factor} n)",
        "proposal_scale": opt("proposal_scale"), "record_grid_per_axis": grid_per_axis, "box_centre": "MAP",
        "sup_inf": "grid over (y, w); the box searched along theta = MAP + t phi sign(w) from its two extreme vertices "
                   "(log k is monotone in theta.w); coordinate golden section and projected Newton over w and t",
        "paper": "Figure 2b: contamination lowers eps_hat about 4x (values and theta* not printed)",
    }
    return results


def _figure(results):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    draw_panel(ax, results)
    fig.tight_layout()
    return fig


def draw_panel(ax, results) -> None:
    """eps_hat against n with and without contamination, with the quantile intervals."""
    n = np.asarray(results["n"], dtype=float)
    for label, marker in (("contaminated", "o-"), ("uncontaminated", "s--")):
        eps = np.asarray(results[f"epsilon_hat_{label}"])
        lo = np.asarray(results[f"interval_low_{label}"], dtype=float)
        hi = np.asarray(results[f"interval_high_{label}"], dtype=float)
        hi = np.where(np.isfinite(hi), hi, eps)
        ax.errorbar(n, eps, yerr=[eps - lo, hi - eps], fmt=marker, capsize=3, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel(r"$\hat\epsilon_n$  ($\delta_n = 1/(10n)$)")
    ax.set_title(f"Logistic regression d={results['settings']['dim']} (paper 003, Fig. 2b), K={common.k_label(results)}", fontsize=9)
    ax.legend(fontsize=8)


def main(argv=None) -> int:
    """``python -m dpjax.experiments.contamination.logistic`` = ``dpjax reproduce contamination-logistic``."""
    import sys

    from ...cli import main as cli_main

    return cli_main(["reproduce", "contamination-logistic", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())


def headline(results: dict) -> list:
    """The with/without-contamination ratio per n beside the paper's "about four" (Figure 2b);
    with several d, per d, then the rate fit's rows."""
    if "by_dim" in results:
        rows = []
        for d in results["dims"]:
            rows.extend(headline(results["by_dim"][str(d)]))
        return rows + [r for r in common.headline(results, "logistic") if "decay" in r["quantity"] or "extrapolated" in r["quantity"]]
    settings = results["settings"]
    return [
        dict(quantity=f"logistic d = {settings['dim']}, n = {n:,}: eps_hat without / with contamination",
             paper="~4" if i == 0 else None, dpjax=ratio,
             note=f"eps_hat {u:.3g} without, {c:.3g} with (K = {k})")
        for i, (n, ratio, u, c, k) in enumerate(zip(results["n"], results["ratio_uncontaminated_over_contaminated"],
                                                     results["epsilon_hat_uncontaminated"], results["epsilon_hat_contaminated"],
                                                     common.datasets_per_n(results)))
    ]
