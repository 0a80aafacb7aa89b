"""The shared runner of paper 003 §4.3 (Figure 2): Algorithm 1's eps_hat for a contaminated
regression over n and d, with and without contamination, the log-scale decay-rate fit and
its extrapolation to n = 1e7 beside Theorem 4's rate, and the sensitivity to the
contamination scale the paper leaves out.

Used by ``contamination-linear``, ``contamination-cauchy`` and ``contamination-logistic``
(:mod:`.linear`, :mod:`.cauchy`, :mod:`.logistic`); the first two are rows of one table,
:data:`FIGURE_2`, whose entry points (flags, run, headline, ``python -m`` main) are written
once in :class:`Figure2Regression`.
Per dimension the result has the layout of the original d = 5 logistic result
(``epsilon_hat_contaminated``, ``epsilon_hat_uncontaminated``, intervals, diagnostics,
per-dataset values); the top level adds ``by_dim``, ``rate_fit``, ``sensitivity`` (g's scale) and
``theta_sensitivity`` (multiples of theta*).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import time

import numpy as np

from .._figures import label_axes
from .._report import stage
from ._arguments import add_batch_options, add_rate_options

PAPER_N = [1000, 3000, 10000, 30000, 100000, 300000, 500000]  # "n from 1,000 to 500,000"; the grid is chosen here
QUICK_N = [1000, 3000, 10000]
QUICK_NUM_DATASETS = 50
THETA_PATTERN = (0.5, -1.0, 1.0, -0.5, 0.25)  # theta* is not printed: chosen here, tiled to length d
DEFAULT_SCALES = {"linear": 1.0, "cauchy": 10.0}
SENSITIVITY_SCALES = {"linear": (0.5, 1.0, 2.0), "cauchy": (2.0, 10.0, 50.0)}
ARMS = ("contaminated", "uncontaminated")


def default_theta_star(dim: int) -> list[float]:
    """The theta* used here for dimension d: (0.5, -1, 1, -0.5, 0.25) tiled to length d."""
    return [THETA_PATTERN[i % len(THETA_PATTERN)] for i in range(dim)]


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not values:
        raise argparse.ArgumentTypeError(f"{text!r} is empty")
    return values


def _float_list(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None


def add_arguments(parser: argparse.ArgumentParser, kind: str) -> None:
    """Flags shared by the linear and Cauchy experiments."""
    parser.add_argument("--n-values", type=_int_list, default=None,
                        help=f"dataset sizes n (default {','.join(map(str, PAPER_N))}; --quick {','.join(map(str, QUICK_N))})")
    parser.add_argument("--dims", type=_int_list, default=[5, 10], help="parameter dimensions d (default 5,10, the paper's)")
    parser.add_argument("--K", type=int, default=None, help=f"simulated datasets per (n, d, arm) (default 1000, --quick {QUICK_NUM_DATASETS})")
    parser.add_argument("--particles", type=int, default=1000, help="importance-sampling particles m per dataset (default 1000)")
    parser.add_argument("--grid-per-axis", type=int, default=None,
                        help="record grid points per covariate axis before refinement (default: 3 for d <= 6, else 2 = the cube's vertices)")
    parser.add_argument("--response-points", type=int, default=41,
                        help="grid points of the compactified response v in [-1, 1], y = theta*.w + 4 tan(pi v/2) (default 41)")
    parser.add_argument("--contamination-scale", type=float, default=DEFAULT_SCALES[kind],
                        help=f"scale of g (not given by the paper; default {DEFAULT_SCALES[kind]:g})")
    parser.add_argument("--sensitivity-scales", type=_float_list, default=list(SENSITIVITY_SCALES[kind]),
                        help="contamination scales for the sensitivity run at the first n and d (empty string: skip)")
    parser.add_argument("--sensitivity-theta-multiples", type=_float_list, default=[0.5, 2.0],
                        help="multiples c of theta* for a sensitivity run with theta* -> c theta* at the first n and d "
                             "(the paper does not print theta*; default 0.5,2; empty string: skip)")
    parser.add_argument("--sensitivity-K", type=int, default=None, help="datasets per sensitivity point (default 200, --quick 20)")
    parser.add_argument("--proposal-scale", type=float, default=2.0, help="importance proposal N(MAP, s^2 H^-1) scale s (default 2)")
    add_rate_options(parser)
    parser.add_argument("--extrapolate-to", type=float, default=1e7, help="largest n of the extrapolated fit (default 1e7)")
    add_batch_options(parser)
    add_merge_argument(parser)


def add_merge_argument(parser: argparse.ArgumentParser) -> None:
    """``--merge``: combine earlier runs' JSON files instead of computing (shared with the logistic experiment)."""
    parser.add_argument("--merge", type=_path_list, default=None, metavar="A.json,B.json",
                        help="combine the JSON files of earlier runs of this experiment (other n, or other d, same settings) "
                             "into one result with the rate fit over all of them, instead of computing; a paper-scale run "
                             "can so be split over jobs or machines")


def _path_list(text: str) -> list[str]:
    paths = [v.strip() for v in text.split(",") if v.strip()]
    if not paths:
        raise argparse.ArgumentTypeError(f"{text!r} names no file")
    return paths


def auto_grid_per_axis(dim: int, other_points: int) -> int:
    """The largest covariate grid in (5, 3, 2) points per axis with at most 5000 records in
    the product with the response's ``other_points``; 2 (the cube's vertices) at worst. The
    refinement (coordinate golden section + projected Newton from the 4 best grid points)
    moves past the grid; at d = 5 grids of 2, 3 and 5 points per axis gave the same
    extremes to 1e-6 on every dataset checked."""
    for points in (5, 3):
        if points ** (dim - 1) * other_points <= 5000:
            return points
    return 2


def estimate_arm(model, theta_star, n, p, args, opt, num_datasets, pad_to, grid_per_axis, quantile, label, dim) -> dict:
    """Algorithm 1 at one (n, d, p): the per-arm record of the result."""
    from ...estimators.contamination import contamination_epsilon

    if p == 0.0 and not model.bounded_without_contamination:
        return dict(epsilon_hat=math.inf, interval=(math.inf, math.inf), interval_confidence=float("nan"), bootstrap_se=float("nan"),
                    contamination_rate=0.0, num_failed=0, seconds=0.0, num_unresolved_tail=0, median_epsilon=math.inf,
                    mean_phi=float("nan"), min_particles_outside_box=0, min_effective_sample_size=float("nan"), epsilons=[],
                    reason="d(x; theta) is unbounded in x without contamination: eps = +inf (not estimated)")
    with stage(f"{model.name}, n = {n:,}, {label}: {num_datasets:,} datasets x {opt('particles'):,} particles"):
        est = contamination_epsilon(
            model, theta_star=theta_star, num_records=n, contamination_rate=p, delta=1.0 / (args.delta_factor * n),
            num_datasets=num_datasets, quantile=quantile, num_particles=opt("particles"), proposal_scale=opt("proposal_scale"),
            seed=args.seed, record_grid_per_axis=grid_per_axis, theta_grid_size=9, dataset_batch=args.dataset_batch,
            pad_records_to=pad_to, progress=args.progress,
        )
    print(f"{model.name} n={n:>7} {label:>14} p={p:.3f}  eps_hat={est.epsilon:.3f}  95% CI [{est.interval[0]:.3f}, {est.interval[1]:.3f}]  "
          f"unresolved tails {est.num_unresolved_tail}  ({est.seconds:.1f} s)", flush=True)
    return arm_record(est, p)


def arm_record(est, p: float) -> dict:
    """One arm's record of a contamination experiment from its ContaminationEstimate."""
    d = est.details
    return dict(
        epsilon_hat=est.epsilon, interval=est.interval, interval_confidence=est.interval_confidence, bootstrap_se=est.bootstrap_se,
        contamination_rate=p, num_failed=est.num_failed, seconds=est.seconds, num_unresolved_tail=est.num_unresolved_tail,
        median_epsilon=float(np.median(est.epsilons)), mean_phi=float(np.mean(d["phi"])),
        min_particles_outside_box=int(np.min(d["num_outside"])), min_effective_sample_size=float(np.min(d["ess"])),
        epsilons=est.epsilons,
    )


def arm_columns(rows, n_values) -> dict:
    """The result's columns (one list per arm and quantity, over n) from per-n rows of arm records."""
    def column(label, key):
        return [r[label][key] for r in rows]

    results = {"n": list(n_values)}
    for label in ARMS:
        results[f"epsilon_hat_{label}"] = column(label, "epsilon_hat")
        results[f"interval_low_{label}"] = [iv[0] for iv in column(label, "interval")]
        results[f"interval_high_{label}"] = [iv[1] for iv in column(label, "interval")]
        results[f"bootstrap_se_{label}"] = column(label, "bootstrap_se")
        results[f"num_failed_{label}"] = column(label, "num_failed")
        results[f"num_unresolved_tail_{label}"] = column(label, "num_unresolved_tail")
        results[f"seconds_{label}"] = column(label, "seconds")
        results[f"diagnostics_{label}"] = {k: column(label, k) for k in (
            "median_epsilon", "mean_phi", "min_particles_outside_box", "min_effective_sample_size")}
        results[f"per_dataset_epsilon_{label}"] = column(label, "epsilons")
    results["contamination_rate"] = column("contaminated", "contamination_rate")
    return results


def assemble(rows, n_values, args, settings) -> dict:
    """The per-dimension result (the layout of the original d = 5 logistic result)."""
    results = arm_columns(rows, n_values)
    reasons = {r["uncontaminated"].get("reason") for r in rows} - {None}
    if reasons:
        results["uncontaminated_reason"] = reasons.pop()
    results["delta"] = [1.0 / (args.delta_factor * n) for n in n_values]
    results["ratio_uncontaminated_over_contaminated"] = [
        u / c for u, c in zip(results["epsilon_hat_uncontaminated"], results["epsilon_hat_contaminated"])]
    results["settings"] = settings
    return results


def fit_rates(per_dim: dict, n_values, args) -> dict:
    """The log-scale fit per (d, arm), its extrapolation, and Theorem 4's rate beside it."""
    from ...estimators.contamination_rate import decay_rate_fit, theorem4_rate

    out = {"theorem4_rate": theorem4_rate(args.rate_exponent),
           "theorem4_q": 1.0 / (2.0 * args.rate_exponent),
           # Lemma 14's eps'_n = 2 (1 - p_n) T psi_n / p_n with a parametric contraction psi_n ~ n^(-1/2)
           # (Bernstein-von Mises) instead of the proof's n^(-1/q): the rate a regular model can reach
           "parametric_rate": -0.5 + args.rate_exponent,
           "note": "Theorem 4 / Appendix C: p_n = n^(-1/(2q)) gives eps_n ~ n^(-1/(2q)) for q > 4; p_n = n^(-1/8) is q = 4, the "
                   "boundary. Fit: OLS of log eps_hat on log n; intervals: bootstrap over the datasets at every n."}
    targets = sorted({float(args.extrapolate_to), 1e5, 1e6})
    for d, res in per_dim.items():
        for label in ARMS:
            per = res[f"per_dataset_epsilon_{label}"]
            if len(n_values) < 2 or any(len(p) == 0 for p in per):
                out[f"d{d}_{label}"] = None
                continue
            fit = decay_rate_fit(n_values, per, quantile=args.quantile, extrapolate_to=targets, bootstrap=1000, seed=args.seed)
            out[f"d{d}_{label}"] = fit.as_dict()
    return out


def run_sensitivity(make_model, args, points, n, num_datasets, grid_per_axis, pad_to) -> dict:
    """eps_hat at one (n, d) for each (theta*, contamination scale) in ``points``: the choices the
    paper leaves out (g's scale; theta*, which it does not print). The datasets are drawn with
    the main run's seed, so the point equal to the main run's settings reproduces its value."""
    rows = []
    p = n ** (-args.rate_exponent)
    opt = lambda name: getattr(args, name)
    for theta_star, scale in points:
        model = make_model(theta_star, scale, args.response_points)
        arm = estimate_arm(model, theta_star, n, p, args, opt, num_datasets, pad_to, grid_per_axis, args.quantile,
                           f"contaminated (scale {scale:g}, theta* {[round(t, 4) for t in theta_star]})", len(theta_star))
        rows.append(dict(contamination_scale=scale, theta_star=list(theta_star), epsilon_hat=arm["epsilon_hat"], interval=arm["interval"],
                         median_epsilon=arm["median_epsilon"], seconds=arm["seconds"]))
    return {"n": n, "dim": len(points[0][0]), "K": num_datasets, "rows": rows}


# per-dimension settings that may differ between merged runs (the rest must be equal)
_MERGE_FREE_SETTINGS = ("K", "quick")


def _per_n_columns(res: dict) -> list[str]:
    """The keys of a per-dimension result that hold one entry per n (lists, or dicts of lists)."""
    size = len(res["n"])
    keys = []
    for key, value in res.items():
        if key in ("n", "settings"):
            continue
        if isinstance(value, list) and len(value) == size:
            keys.append(key)
        elif isinstance(value, dict) and value and all(isinstance(v, list) and len(v) == size for v in value.values()):
            keys.append(key)
    return keys


def datasets_per_n(res: dict) -> list:
    """K at each n of one dimension's result: the run's K, or ``K_by_n`` where merged runs
    differed."""
    settings = res["settings"]
    return list(settings.get("K_by_n", [settings["K"]] * len(res["n"])))


def k_label(res: dict) -> str:
    """K for a title: "1000", or "200/1000" when it differs between n."""
    return "/".join(str(k) for k in sorted(set(datasets_per_n(res))))


def merge_results(kind: str, parts: list[tuple[str, dict]], fit_args: argparse.Namespace) -> dict:
    """One result from several runs of the same experiment (``parts``: (name, result) pairs,
    each as written by ``dpjax reproduce``), per d the union of their n, sorted, and the rate
    fit redone over all of it. Runs must agree on the experiment and on every per-d setting but
    K; an n present twice for one d is an error (nothing is averaged or dropped). K may differ
    between n: the settings then carry ``K_by_n``."""
    if len(parts) < 2:
        raise ValueError(f"--merge names {len(parts)} file(s); merging needs at least two")
    by_dim: dict[str, list] = {}
    for name, res in parts:
        got = res.get("settings", {}).get("kind")
        if got != kind:
            raise ValueError(f"--merge: {name} is a {got!r} result; this experiment is {kind!r}")
        for d, per in res["by_dim"].items():
            by_dim.setdefault(d, []).append((name, per))
    per_dim = {}
    for d, pieces in sorted(by_dim.items(), key=lambda kv: int(kv[0])):
        first_name, first = pieces[0]
        fixed = {k: v for k, v in first["settings"].items() if k not in _MERGE_FREE_SETTINGS}
        # the refit uses this command's --rate-exponent and --quantile: they must be the runs'
        for key, want, flag in (("rate", f"p_n = n^-{fit_args.rate_exponent}", "--rate-exponent"),
                                ("quantile", fit_args.quantile, "--quantile")):
            if key in fixed and fixed[key] != want:
                raise ValueError(f"--merge: d = {d}: {first_name} has {key} {fixed[key]!r}, this command {want!r}; pass the runs' {flag}")
        columns = _per_n_columns(first)
        for name, per in pieces[1:]:
            for k in set(fixed) | {k for k in per["settings"] if k not in _MERGE_FREE_SETTINGS}:
                if per["settings"].get(k) != fixed.get(k):
                    raise ValueError(f"--merge: d = {d}: setting {k!r} is {per['settings'].get(k)!r} in {name} "
                                     f"but {fixed.get(k)!r} in {first_name}; only K may differ")
            if set(_per_n_columns(per)) != set(columns):
                raise ValueError(f"--merge: d = {d}: {name} and {first_name} hold different columns")
        rows = [(n, i, per) for _, per in pieces for i, n in enumerate(per["n"])]
        ns = [n for n, _, _ in rows]
        repeated = sorted({n for n in ns if ns.count(n) > 1})
        if repeated:
            raise ValueError(f"--merge: d = {d}: n = {repeated} appear in more than one file; merge distinct n only")
        rows.sort(key=lambda r: r[0])
        merged = {"n": [n for n, _, _ in rows]}
        for key in columns:
            if isinstance(first[key], dict):
                merged[key] = {sub: [per[key][sub][i] for _, i, per in rows] for sub in first[key]}
            else:
                merged[key] = [per[key][i] for _, i, per in rows]
        for key, value in first.items():  # per-d scalars (e.g. the uncontaminated arm's reason)
            if key not in merged and key != "settings":
                merged[key] = value
        k_by_n = [per["settings"]["K"] for _, _, per in rows]
        settings = dict(first["settings"], K=min(k_by_n) if len(set(k_by_n)) > 1 else k_by_n[0])
        if len(set(k_by_n)) > 1:
            settings["K_by_n"] = k_by_n
        settings["quick"] = any(per["settings"].get("quick", False) for _, per in pieces)
        merged["settings"] = settings
        per_dim[d] = merged
    dims = [int(d) for d in per_dim]
    n_all = sorted({n for res in per_dim.values() for n in res["n"]})
    results = {"dims": dims, "n": n_all, "by_dim": per_dim}
    results["rate_fit"] = fit_rates({}, n_all, fit_args)  # Theorem 4's rate and the note
    for d, res in per_dim.items():  # each d over its own n
        results["rate_fit"].update(fit_rates({d: res}, res["n"], fit_args))
    for key in ("sensitivity", "theta_sensitivity"):
        found = [(name, res[key]) for name, res in parts if key in res]
        if found:  # the first file's, named (a copy: the inputs are not changed)
            results[key] = {**found[0][1], "from": found[0][0]}
    results["total_seconds"] = sum(float(res.get("total_seconds", 0.0)) for _, res in parts)
    first_settings = parts[0][1]["settings"]
    k_all = sorted({k for res in per_dim.values() for k in datasets_per_n(res)})
    results["settings"] = {**first_settings, "K": k_all[0] if len(k_all) == 1 else k_all,
                           "quick": any(res["settings"].get("quick", False) for _, res in parts),
                           "merged_from": [name for name, _ in parts]}
    return results


def load_merge(kind: str, args: argparse.Namespace) -> dict:
    """:func:`merge_results` over the files named by ``--merge`` (the reproduce CLI's JSON)."""
    import json
    from pathlib import Path

    from ...cli import from_jsonable

    parts = []
    for path in args.merge:
        file = Path(path)
        if not file.is_file():
            raise ValueError(f"--merge: {path} is not a file")
        try:
            parts.append((str(path), json.loads(file.read_text())))
        except json.JSONDecodeError as err:
            raise ValueError(f"--merge: {path} is not JSON ({err})") from None
    for name, res in parts:
        if "by_dim" not in res:
            raise ValueError(f"--merge: {name} has no per-dimension results (by_dim): not a run of this experiment with --dims")
    return merge_results(kind, [(name, from_jsonable(res)) for name, res in parts], args)


def run(kind: str, make_model, args: argparse.Namespace, extra_settings: dict) -> dict:
    """The whole experiment for the linear or Cauchy regression (see the module docstring)."""
    if getattr(args, "merge", None):
        return load_merge(kind, args)
    n_values = list(args.n_values or (QUICK_N if args.quick else PAPER_N))
    num_datasets = args.K if args.K is not None else (QUICK_NUM_DATASETS if args.quick else 1000)
    if any(n < 2 for n in n_values):
        raise ValueError(f"--n-values={n_values}: every n must be >= 2")
    if any(d < 2 for d in args.dims):
        raise ValueError(f"--dims={args.dims}: every d must be >= 2 (an intercept and a covariate)")
    if not args.rate_exponent > 0:
        raise ValueError(f"--rate-exponent={args.rate_exponent} violates rate_exponent > 0 (p_n must be < 1)")
    if not args.delta_factor > 0:
        raise ValueError(f"--delta-factor={args.delta_factor} violates delta_factor > 0")
    opt = lambda name: getattr(args, name)
    per_dim = {}
    t_total = time.perf_counter()
    for dim in args.dims:
        theta_star = default_theta_star(dim)
        model = make_model(theta_star, args.contamination_scale, args.response_points)
        per_axis = args.grid_per_axis or auto_grid_per_axis(dim, args.response_points)
        rows = []
        for n in n_values:
            row = {"n": n}
            for label, p in (("contaminated", n ** (-args.rate_exponent)), ("uncontaminated", 0.0)):
                row[label] = estimate_arm(model, theta_star, n, p, args, opt, num_datasets, max(n_values), per_axis, args.quantile, label, dim)
            rows.append(row)
        settings = {
            "K": num_datasets, "particles": args.particles, "quantile": args.quantile, "quick": bool(args.quick), "seed": args.seed,
            "theta_star": theta_star, "dim": dim, "covariates": "w_1 = 1, w_2..w_d ~ U[-1, 1]", "prior": "N(0, 10^2 I)",
            "rate": f"p_n = n^-{args.rate_exponent}", "delta": f"1/({args.delta_factor} n)", "proposal_scale": args.proposal_scale,
            "record_grid_per_axis": per_axis, "response_points": args.response_points, "contamination_scale": args.contamination_scale,
            "box_centre": "MAP",
            "sup_inf": "grid over (v, w) with y = theta*.w + 4 tan(pi v/2), v in [-1, 1] (the ends are the |y| -> infinity limit), "
                       "x the box searched along theta = MAP + t phi sign(w) (9 values of t), then coordinate golden section and "
                       "projected Newton from the 4 best grid points",
            **extra_settings,
        }
        per_dim[str(dim)] = assemble(rows, n_values, args, settings)
    results = {"dims": list(args.dims), "n": n_values, "by_dim": per_dim, "rate_fit": fit_rates(per_dim, n_values, args)}
    k_sens = args.sensitivity_K if args.sensitivity_K is not None else (20 if args.quick else 200)
    dim = args.dims[0]
    theta_star = default_theta_star(dim)
    sweeps = {
        "sensitivity": [(theta_star, scale) for scale in (args.sensitivity_scales or [])],
        "theta_sensitivity": [([c * t for t in theta_star], args.contamination_scale) for c in (args.sensitivity_theta_multiples or [])],
    }
    for key, points in sweeps.items():
        if points:  # the main run's padding, so its compiled code is reused where the model allows
            results[key] = run_sensitivity(make_model, args, points, n_values[0], k_sens,
                                           args.grid_per_axis or auto_grid_per_axis(dim, args.response_points), max(n_values))
            if key == "theta_sensitivity":
                results[key]["multiples"] = list(args.sensitivity_theta_multiples)
    results["total_seconds"] = time.perf_counter() - t_total
    results["settings"] = {"kind": kind, "K": num_datasets, "quick": bool(args.quick), **extra_settings}
    return results


def figure(results, title: str):
    """One panel per d: eps_hat against n (log-log) with and without contamination, the
    quantile intervals, the fitted line extrapolated to the largest target (pale) and
    Theorem 4's slope through the first contaminated point (dotted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = results["dims"]
    fig, axes = plt.subplots(1, len(dims), figsize=(5.5 * len(dims), 4), squeeze=False)
    for ax, d in zip(axes[0], dims):
        draw_panel(ax, results, d, title)
    fig.tight_layout()
    return fig


def draw_panel(ax, results, d, title) -> None:
    res = results["by_dim"][str(d)]
    rate = results["rate_fit"]
    n = np.asarray(res["n"], dtype=float)
    for label, marker, colour in (("contaminated", "o-", "C0"), ("uncontaminated", "s--", "C1")):
        eps = np.asarray(res[f"epsilon_hat_{label}"], dtype=float)
        if not np.all(np.isfinite(eps)):
            ax.plot([], [], marker, color=colour, label=f"{label}: eps = +inf (unbounded d)")
            continue
        lo = np.asarray(res[f"interval_low_{label}"], dtype=float)
        hi = np.asarray(res[f"interval_high_{label}"], dtype=float)
        hi = np.where(np.isfinite(hi), hi, eps)
        ax.errorbar(n, eps, yerr=[eps - lo, hi - eps], fmt=marker, color=colour, capsize=3, label=label)
        fit = rate.get(f"d{d}_{label}")
        if fit and fit["ok"]:
            grid = np.geomspace(n[0], max(fit["extrapolate_to"]), 50)
            ax.plot(grid, np.exp(fit["intercept"]) * grid ** fit["slope"], "-", color=colour, alpha=0.35,
                    label=f"fit n^{fit['slope']:.3f}, extrapolated")
            if label == "contaminated":
                ax.plot(grid, eps[0] * (grid / n[0]) ** rate["theorem4_rate"], ":", color="k", alpha=0.6,
                        label=f"Theorem 4 rate n^{rate['theorem4_rate']:.3f}")
    label_axes(ax, "n", r"$\hat\epsilon_n$  ($\delta_n = 1/(10n)$)",
               f"{title}, d = {d}, K = {k_label(res)}", log="xy", title_size=9, grid=False, legend_size=7)


def headline(results: dict, name: str) -> list:
    """Per d: eps_hat with/without contamination at the smallest and largest n, the fitted
    slope beside Theorem 4's, and the extrapolation to the largest target."""
    rows = []
    rate = results["rate_fit"]
    for d in results["dims"]:
        res = results["by_dim"][str(d)]
        for i in sorted({0, len(res["n"]) - 1}):
            rows.append(dict(quantity=f"{name} d = {d}, n = {res['n'][i]:,}: eps_hat with / without contamination",
                             paper=None, dpjax=f"{res['epsilon_hat_contaminated'][i]:.3g} / {res['epsilon_hat_uncontaminated'][i]:.3g}"))
        fit = rate.get(f"d{d}_contaminated")
        if fit and fit["ok"]:
            lo, hi = fit["slope_interval"]
            rows.append(dict(quantity=f"{name} d = {d}: fitted decay exponent of eps_hat", paper=f"{rate['theorem4_rate']:.3f} (Thm 4, q = 4)",
                             dpjax=fit["slope"], note=f"95% bootstrap interval [{lo:.3f}, {hi:.3f}]"))
            big = max(fit["extrapolate_to"])
            j = fit["extrapolate_to"].index(big)
            elo, ehi = fit["extrapolated_interval"][j]
            rows.append(dict(quantity=f"{name} d = {d}: eps_hat extrapolated to n = {big:.0e}", paper=None, dpjax=fit["extrapolated"][j],
                             note=f"95% bootstrap interval [{elo:.3g}, {ehi:.3g}]"))
    return rows


@dataclasses.dataclass(frozen=True)
class Figure2Regression:
    """What one regression of Figure 2 with an unbounded response (a: linear, c: Cauchy) has
    of its own; its flags, run, figure and headline are this module's, written once.

    ``factory`` names the model in :mod:`dpjax.models.contamination_regression`;
    ``sampling_model`` and ``contamination`` (with ``{scale}``, g's scale) are stated in the
    JSON settings; ``uncontaminated_lower``: the paper's claim that eps_hat without
    contamination is the lower one is checked at every (d, n) (Figure 2c).
    """

    kind: str
    factory: str
    sampling_model: str
    contamination: str
    paper: str
    title: str
    uncontaminated_lower: bool = False

    def make_model(self, theta_star, scale, response_points):
        from ...models import contamination_regression

        return getattr(contamination_regression, self.factory)(theta_star=theta_star, contamination_scale=scale,
                                                               response_points=response_points)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The experiment's flags (:func:`add_arguments`)."""
        add_arguments(parser, self.kind)

    def run(self, args: argparse.Namespace):
        """eps_hat over (d, n) with and without contamination, the rate fit: (results dict, matplotlib figure)."""
        results = run(self.kind, self.make_model, args, {
            "model": self.sampling_model, "contamination": self.contamination.format(scale=args.contamination_scale), "paper": self.paper,
        })
        if self.uncontaminated_lower:
            for res in results["by_dim"].values():
                res["uncontaminated_lower"] = [u < c for u, c in zip(res["epsilon_hat_uncontaminated"], res["epsilon_hat_contaminated"])]
        return results, figure(results, self.title)

    def headline(self, results: dict) -> list:
        """:func:`headline`'s rows, and with ``uncontaminated_lower`` the claim's verdict per d."""
        rows = headline(results, self.kind)
        if self.uncontaminated_lower:
            for d in results["dims"]:
                lower = results["by_dim"][str(d)]["uncontaminated_lower"]
                rows.append(dict(quantity=f"{self.kind} d = {d}: uncontaminated eps_hat lower at n = {', '.join(map(str, results['n']))}",
                                 paper="yes (Fig. 2c)", dpjax=", ".join("yes" if v else "no" for v in lower)))
        return rows

    def main(self, argv=None) -> int:
        """``python -m dpjax.experiments.contamination.KIND`` = ``dpjax reproduce contamination-KIND``."""
        import sys

        from ...cli import main as cli_main

        return cli_main(["reproduce", f"contamination-{self.kind}", *(sys.argv[1:] if argv is None else argv)])


FIGURE_2 = {
    "linear": Figure2Regression("linear", "linear_regression_contamination", "y = theta.w + N(0, 1)",
                                "y replaced by theta*.w + {scale:g} t_5 with probability p_n",
                                "Figure 2a: curves only (values, theta* and g's scale not printed)",
                                "Linear regression, t_5 contamination (paper 003, Fig. 2a)"),
    "cauchy": Figure2Regression("cauchy", "cauchy_regression_contamination", "y = theta.w + Cauchy(0, 1)",
                                "y replaced by Cauchy(0, {scale:g}) with probability p_n",
                                "Figure 2c: the uncontaminated eps_hat is the lower one (values, theta* and lambda not printed)",
                                "Cauchy regression, Cauchy(0, lambda) contamination (paper 003, Fig. 2c)", uncontaminated_lower=True),
}
