"""Paper 003, Figure 1: private mean estimation by one contaminated-posterior draw (random-walk
Metropolis) against CoinPress (3 and 10 iterations) and a private-quantile clipped mean, at the
zCDP budgets of Table 1's eps_hat.

Table 1's model (:mod:`dpjax.experiments.contamination.mean`): x_i ~ N(30, 8^2) truncated to
[-270, 330], p_n = n^{-1/8}, g = t_5(30, 8) truncated, prior N(40, 40^2), delta_n = 1/(10 n).
Per n, K datasets; per dataset m repetitions of each mechanism give its bias, variance and MSE;
the figure shows boxplots over datasets of log10 MSE per n, as the paper's Figure 1.

* Bayesian: contaminate the records (each replaced by a draw from g with probability p_n;
  ``--contamination per-repetition``, the default, draws a fresh contamination per repetition:
  it is the mechanism's noise; ``once`` contaminates each dataset once and feeds the same
  contaminated records to every method, Algorithm 1's reading), then one posterior draw by
  random-walk Metropolis (:mod:`dpjax.experiments.contamination._rwm`: started at the median,
  proposal sd 2.4 sigma / sqrt(n (1 - p)), ``--chain-steps`` steps, the last state kept). The
  chain's law is checked against the posterior by quadrature (KS, per n).
* CoinPress and the clipped mean (:mod:`dpjax.experiments.contamination._private_mean`), each at rho_n from
  the exact conversion of (eps_hat_n, delta_n) (rho + 2 sqrt(rho log 1/delta) = eps) and from
  the paper's rule (rho = eps^2 / (2 log 1/delta), about twice as much):
  :func:`dpjax.experiments.contamination.theory.zcdp_budget`; and, not in the paper, at the largest
  rho for which these Gaussian compositions are tightly (eps_hat_n, delta_n)-DP (they are
  mu-GDP with mu = sqrt(2 rho)): the zCDP -> (eps, delta) conversion is loose for a Gaussian,
  and the paper's rule lands close to this tight budget (within 0-13% for n >= 1000).

Budgets: ``--budgets dpjax`` (default) uses dpjax's own Table 1 (the full `contamination-mean`
run: the privacy dpjax's estimator attributes to this very sampler), ``paper`` the printed one.

Not given by the paper, so chosen here (flags, recorded in the JSON, with a sensitivity run):
CoinPress's starting interval (default centre 30 +- 300, the data interval; the tail radius at
beta = 0.01 and the budget split 1/4 : 3/4 of the CoinPress authors' experiments), the clipped
mean's range finder (two private quantiles at 5% and 95% by a 10-probe noisy binary search over
the data interval, spending 1/4 of rho), the chain length (100) and what the contamination is.

Run: ``dpjax reproduce contamination-mean-estimation --out DIR [--quick]``.
"""
from __future__ import annotations

import argparse
import functools
import math
import time

import numpy as np

from .._report import stage
from ._arguments import int_list
from .mean import PAPER_EPSILON_HAT, PAPER_N

# dpjax's Table 1 (`dpjax reproduce contamination-mean`, K = 1000, m = 1000, 99% quantile; README)
DPJAX_EPSILON_HAT = [3.20, 1.10, 0.81, 0.52, 0.387, 0.275, 0.189]
QUICK_N = [100, 1000, 5000]
THETA_STAR, SIGMA = 30.0, 8.0
METHODS = ("bayes", "coinpress3", "coinpress10", "clipped")
RULES = ("exact", "paper", "tight")
LABELS = {"bayes": "Bayesian (RWM draw)", "coinpress3": "CoinPress, 3 it.", "coinpress10": "CoinPress, 10 it.",
          "clipped": "quantile + clipped mean", "nonprivate": "sample mean (not private)"}


def _levels(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not two comma-separated levels LOW,HIGH") from None
    if not 0 < lo < hi < 1:
        raise argparse.ArgumentTypeError(f"{text!r} violates 0 < LOW < HIGH < 1")
    return lo, hi


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-values", type=int_list, default=None, help=f"dataset sizes, each one of Table 1's (default: all; --quick {QUICK_N})")
    parser.add_argument("--K", type=int, default=None, help="datasets per n (default 1000, --quick 20)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions of each mechanism per dataset (default 1000, --quick 50)")
    parser.add_argument("--budgets", choices=["dpjax", "paper"], default="dpjax", help="Table 1's eps_hat: dpjax's values (default) or the printed ones")
    parser.add_argument("--contamination", choices=["per-repetition", "once"], default="per-repetition",
                        help="fresh contamination per repetition (the mechanism's noise, default) or once per dataset, seen by every method")
    parser.add_argument("--chain-steps", type=int, default=None, help="random-walk Metropolis steps per draw (default 100, --quick 50)")
    parser.add_argument("--coinpress-centre", type=float, default=30.0, help="CoinPress's starting centre (default 30, the data interval's)")
    parser.add_argument("--coinpress-radius", type=float, default=300.0, help="CoinPress's starting radius (default 300, half the data interval)")
    parser.add_argument("--clip-levels", type=_levels, default=(0.05, 0.95), help="quantile levels of the clipping range (default 0.05,0.95)")
    parser.add_argument("--quantile-fraction", type=float, default=0.25, help="share of rho spent on the two quantiles (default 0.25)")
    parser.add_argument("--search-steps", type=int, default=10, help="noisy binary-search probes per quantile (default 10)")
    parser.add_argument("--check-datasets", type=int, default=None, help="datasets per n in the KS check (default 3, --quick 1)")
    parser.add_argument("--sensitivity-n", type=int, default=1000, help="n of the sensitivity runs (one of Table 1's; default 1000)")
    parser.add_argument("--no-sensitivity", action="store_true", help="skip the sensitivity runs")
    parser.add_argument("--pad-records", action="store_true",
                        help="pad every dataset to the run's largest n: one compile for all n, more compute (for tiny runs)")
    parser.add_argument("--chunk-elements", type=int, default=4_000_000, help="records x chains per compiled batch (memory; default 4e6)")


# --- one n -------------------------------------------------------------------------------------
def _settings(args):
    quick = bool(getattr(args, "quick", False))
    return dict(
        n_values=list(args.n_values) if args.n_values is not None else (QUICK_N if quick else list(PAPER_N)),
        K=args.K if args.K is not None else (20 if quick else 1000),
        reps=args.reps if args.reps is not None else (50 if quick else 1000),
        check_datasets=args.check_datasets if args.check_datasets is not None else (1 if quick else 3),
        pad=bool(args.pad_records),
        chain_steps=args.chain_steps if args.chain_steps is not None else (50 if quick else 100),
    )


def _validate(args, cfg) -> None:
    for n in cfg["n_values"] + ([args.sensitivity_n] if not args.no_sensitivity else []):
        if n not in PAPER_N:
            raise ValueError(f"n={n} violates n in Table 1's sizes {PAPER_N} (the budgets come from Table 1)")
    for name in ("K", "reps"):
        if not (isinstance(cfg[name], int) and cfg[name] >= 2):
            raise ValueError(f"--{name.replace('_', '-')}={cfg[name]} violates an integer >= 2")
    if cfg["check_datasets"] < 0:
        raise ValueError(f"--check-datasets={cfg['check_datasets']} violates >= 0")
    if cfg["chain_steps"] < 1:
        raise ValueError(f"--chain-steps={cfg['chain_steps']} violates >= 1")
    if not args.coinpress_radius > 0:
        raise ValueError(f"--coinpress-radius={args.coinpress_radius} violates > 0")
    if not 0 < args.quantile_fraction < 1:
        raise ValueError(f"--quantile-fraction={args.quantile_fraction} violates 0 < fraction < 1")
    if args.search_steps < 1:
        raise ValueError(f"--search-steps={args.search_steps} violates >= 1")


def _budgets(n, budgets):
    from .theory import zcdp_budget

    from ._private_mean import gaussian_composition_rho

    table = DPJAX_EPSILON_HAT if budgets == "dpjax" else PAPER_EPSILON_HAT
    eps = table[PAPER_N.index(n)]
    delta = 1.0 / (10.0 * n)
    rho = {rule: float(zcdp_budget(eps, delta, rule=rule)) for rule in ("exact", "paper")}
    rho["tight"] = gaussian_composition_rho(eps, delta)
    return eps, delta, rho


@functools.lru_cache(maxsize=None)
def _frequentist_batched(search_steps: int):
    """jit((keys (B, m), x (B, n), params) -> {method: (B, m) estimates}) for CoinPress 3 / 10 and
    the quantile clipped mean; rho and the options are traced, so one compile serves every rule
    and sensitivity variant at a given shape."""
    import jax

    from . import _private_mean as pm

    low, high = THETA_STAR - 300.0, THETA_STAR + 300.0  # the public data interval (Table 1's model)

    def one(key, x, prm):
        k3, k10, kc = jax.random.split(key, 3)
        out = {}
        for name, k, t in (("coinpress3", k3, 3), ("coinpress10", k10, 10)):
            out[name], _ = pm.coinpress_mean(k, x, centre=prm["centre"], radius=prm["radius"], scale=SIGMA,
                                             rho_steps=pm.coinpress_budget(prm["rho"], t), num_valid=prm["num_valid"])
        out["clipped"], _ = pm.quantile_clipped_mean(kc, x, prm["rho"], low=low, high=high, levels=(prm["level_low"], prm["level_high"]),
                                                     quantile_fraction=prm["fraction"], search_steps=search_steps,
                                                     num_valid=prm["num_valid"])
        return out

    return jax.jit(jax.vmap(lambda ks, x, prm: jax.vmap(lambda k: one(k, x, prm))(ks), in_axes=(0, 0, None)))


def record_steps(num_steps: int) -> tuple:
    """The chain steps whose states the KS check compares with the posterior."""
    return tuple(sorted({s for s in (5, 10, 25, 50, num_steps) if s <= num_steps}))


@functools.lru_cache(maxsize=None)
def _bayes_batched(num_steps: int):
    """jit((keys (B, m), x (B, n), p, step, once, num_valid) -> (theta, acceptance, states at
    :func:`record_steps`) over (B, m)): per repetition, contaminate the records (unless ``once``:
    then x is already contaminated) and run a random-walk Metropolis chain. ``once`` is traced,
    so the KS check (many chains on one contaminated dataset) reuses the compiled function."""
    import jax
    import jax.numpy as jnp

    from ...models.contamination import truncated_normal_mean_contamination
    from ._rwm import contaminate_t, rwm_chain

    model = truncated_normal_mean_contamination()
    record = record_steps(num_steps)

    def draw(k, x, p, step, once, num_valid):
        kc, kr = jax.random.split(k)
        fresh = contaminate_t(kc, x, p, location=THETA_STAR, scale=SIGMA, df=5, low=THETA_STAR - 300.0, high=THETA_STAR + 300.0)
        return rwm_chain(kr, model, jnp.where(once, x, fresh), p, step=step, num_steps=num_steps, record_steps=record,
                         num_valid=num_valid)

    inner = lambda ks, x, p, step, once, nv: jax.vmap(lambda k: draw(k, x, p, step, once, nv))(ks)
    return jax.jit(jax.vmap(inner, in_axes=(0, 0, None, None, None, None)))


def _batched_over_datasets(fn, keys, data, batch, *extra):
    """Apply ``fn`` to datasets in batches of ``batch`` (the last one padded, so one shape and
    one compile), concatenating the pytree of (B, m) outputs over the K datasets."""
    import jax

    K = data.shape[0]
    parts = []
    for start in range(0, K, batch):
        idx = np.minimum(np.arange(start, start + batch), K - 1)
        keep = min(batch, K - start)
        parts.append(jax.tree_util.tree_map(lambda a: np.asarray(a)[:keep], fn(keys[idx], data[idx], *extra)))
    return jax.tree_util.tree_map(lambda *a: np.concatenate(a), *parts)


def _padded_size(n, cfg):
    """Records per dataset as compiled: n, or the run's largest n with ``pad`` (one compile for
    the whole run; compiling dominates small runs, padding costs compute at large ones)."""
    return max(cfg["n_values"]) if cfg["pad"] and n <= max(cfg["n_values"]) else n


def _pad(x, width):
    """Pad the last axis of x to ``width`` with theta* (masked out downstream)."""
    import jax.numpy as jnp

    extra = width - x.shape[-1]
    return x if extra == 0 else jnp.concatenate([x, jnp.full(x.shape[:-1] + (extra,), THETA_STAR, x.dtype)], axis=-1)


def _per_dataset_stats(estimates):
    """(K, m) estimates -> bias, variance, MSE per dataset (over the m repetitions)."""
    est = np.asarray(estimates, dtype=float)
    err = est - THETA_STAR
    return dict(bias=err.mean(axis=1), variance=est.var(axis=1), mse=(err**2).mean(axis=1))


def _run_n(n, cfg, args, key, *, variants=None, bayes=True):
    """Everything at one n: returns {method: per-dataset stats} plus diagnostics."""
    import jax
    import jax.numpy as jnp

    from ...models.contamination import truncated_normal_mean_contamination
    from ._rwm import proposal_sd

    model = truncated_normal_mean_contamination()
    p = n ** -0.125
    eps, delta, rho = _budgets(n, args.budgets)
    K, m = cfg["K"], cfg["reps"]
    opts = dict(coinpress_centre=args.coinpress_centre, coinpress_radius=args.coinpress_radius, clip_levels=tuple(args.clip_levels),
                quantile_fraction=args.quantile_fraction, search_steps=args.search_steps)
    k_data, k_cont, k_bayes, k_freq = jax.random.split(key, 4)
    theta_star = jnp.array([THETA_STAR])
    width = _padded_size(n, cfg)
    clean = _pad(jax.vmap(lambda k: model.sample_f(k, theta_star, n))(jax.random.split(k_data, K)), width)  # (K, width)
    once = args.contamination == "once"
    contaminated_once = _pad(jax.vmap(lambda k, x: model.contaminate(k, x, theta_star, p))(jax.random.split(k_cont, K), clean[:, :n]),
                             width) if once else None
    num_valid = jnp.asarray(n)
    seen = contaminated_once if once else clean  # what the frequentist methods see
    step = proposal_sd(SIGMA, n, p)
    out, diag = {}, {}
    batch = max(1, min(K, args.chunk_elements // (m * width)))
    if bayes:
        keys = jax.random.split(k_bayes, K * m).reshape(K, m, -1)
        theta, acc, _ = _batched_over_datasets(_bayes_batched(cfg["chain_steps"]), keys, contaminated_once if once else clean, batch,
                                               jnp.asarray(p), jnp.asarray(step), jnp.asarray(once), num_valid)
        out["bayes"] = _per_dataset_stats(theta)
        diag["acceptance_mean"] = float(acc.mean())
        diag["acceptance_range"] = [float(acc.min()), float(acc.max())]

    freq = _frequentist_batched(args.search_steps)
    for i_rule, rule in enumerate(RULES):
        keys = jax.random.split(jax.random.fold_in(k_freq, i_rule), K * m).reshape(K, m, -1)
        for label, variant in (variants or {"": {}}).items():
            o = {**opts, **variant}
            prm = {k: jnp.asarray(v) for k, v in dict(rho=rho[rule], centre=o["coinpress_centre"], radius=o["coinpress_radius"],
                                                      level_low=o["clip_levels"][0], level_high=o["clip_levels"][1],
                                                      fraction=o["quantile_fraction"], num_valid=n).items()}
            res = _batched_over_datasets(freq, keys, seen, batch, prm)
            for name, est in res.items():
                out[f"{name}{label}_{rule}"] = _per_dataset_stats(est)
    means = np.asarray(jnp.mean(seen[:, :n], axis=1))
    out["nonprivate"] = dict(bias=means - THETA_STAR, variance=np.zeros(K), mse=(means - THETA_STAR) ** 2)
    from ...accountants import analytic_gaussian_epsilon

    # what each rho buys a Gaussian composition, tightly (mu-GDP with mu = sqrt(2 rho))
    tight_eps = {f"tight_epsilon_{r}": analytic_gaussian_epsilon(math.sqrt(2.0 * rho[r]), delta) for r in RULES}
    return out, dict(contamination_rate=p, epsilon=eps, delta=delta, **{f"rho_{r}": rho[r] for r in RULES}, **tight_eps,
                     proposal_sd=step, **diag)


def _convergence_check(n, cfg, args, key):
    """KS of the chain's state (at :func:`record_steps`) against the posterior by quadrature, on
    ``check_datasets`` contaminated datasets, each with B x m chains (the main run's compiled
    batch shape, B = datasets per batch, so nothing new is compiled)."""
    import jax
    import jax.numpy as jnp

    from ...models.contamination import truncated_normal_mean_contamination
    from ._rwm import ks_against_cdf, posterior_by_quadrature, proposal_sd

    model = truncated_normal_mean_contamination()
    p = n ** -0.125
    step = proposal_sd(SIGMA, n, p)
    K, m = cfg["K"], cfg["reps"]
    width = _padded_size(n, cfg)
    batch = max(1, min(K, args.chunk_elements // (m * width)))
    fn = _bayes_batched(cfg["chain_steps"])
    record = record_steps(cfg["chain_steps"])
    rows = []
    for j in range(cfg["check_datasets"]):
        kd, kc = jax.random.split(jax.random.fold_in(key, j))
        x = model.simulate(kd, jnp.array([THETA_STAR]), n, p)
        keys = jax.random.split(kc, batch * m).reshape(batch, m, -1)
        _, acc, kept = fn(keys, jnp.broadcast_to(_pad(x, width), (batch, width)), jnp.asarray(p), jnp.asarray(step), jnp.asarray(True),
                          jnp.asarray(n))
        kept = np.asarray(kept).reshape(batch * m, len(record))
        approx_sd = SIGMA / math.sqrt(n * (1 - p))
        grid, cdf, mean, sd, edge = posterior_by_quadrature(model, _pad(x, width), p, centre=float(jnp.median(x)), half_width=40 * approx_sd,
                                                            num_valid=jnp.asarray(n))
        ks = [ks_against_cdf(kept[:, i], grid, cdf) for i in range(len(record))]
        rows.append(dict(steps=list(record), chains=batch * m, ks_statistic=[k[0] for k in ks], ks_pvalue=[k[1] for k in ks],
                         chain_mean=float(kept[:, -1].mean()), chain_sd=float(kept[:, -1].std()), posterior_mean=float(mean),
                         posterior_sd=float(sd), quadrature_edge_density=float(edge), acceptance=float(np.mean(acc))))
    return rows


def _summary(stats):
    mse = np.asarray(stats["mse"])
    q = np.quantile(mse, [0.25, 0.5, 0.75])
    return dict(median_mse=float(q[1]), mse_quartiles=[float(q[0]), float(q[2])], mean_mse=float(mse.mean()),
                var_mse=float(mse.var()), iqr_log10_mse=float(np.subtract(*np.quantile(np.log10(mse), [0.75, 0.25]))),
                median_abs_bias=float(np.median(np.abs(stats["bias"]))), median_variance=float(np.median(stats["variance"])))


def _claims(results):
    """The paper's qualitative claims, checked on the medians over datasets (per rule)."""
    n = results["n"]
    claims = {}
    for rule in RULES:
        med = {m: np.array([results["summary"][str(k)][m if m == "bayes" else f"{m}_{rule}"]["median_mse"] for k in n]) for m in METHODS}
        iqr = {m: np.array([results["summary"][str(k)][m if m == "bayes" else f"{m}_{rule}"]["iqr_log10_mse"] for k in n]) for m in METHODS}
        best_cp = np.minimum(med["coinpress3"], med["coinpress10"])
        best_other = np.minimum(med["bayes"], med["clipped"])
        ratio = med["bayes"] / med["clipped"]
        big = [i for i, k in enumerate(n) if k >= 1000]
        cp3_drop = (med["coinpress3"][:-1] / med["coinpress3"][1:]).tolist() if len(n) > 1 else []
        cp10_drop = (med["coinpress10"][:-1] / med["coinpress10"][1:]).tolist() if len(n) > 1 else []
        claims[rule] = {
            "coinpress_best": dict(holds_at_n=[k for i, k in enumerate(n) if best_cp[i] < best_other[i]],
                                   best_coinpress_over_best_other=(best_cp / best_other).tolist(),
                                   rule="min median MSE of CoinPress 3/10 below that of the Bayesian draw and the clipped mean"),
            "bayes_comparable_to_clipped_from_1000": dict(
                bayes_over_clipped_median_mse=ratio.tolist(),
                holds=bool(big) and bool(np.all((ratio[big] <= 2.0) & (ratio[big] >= 0.5))),
                rule="median MSE ratio within a factor 2 at every n >= 1000"),
            "coinpress3_plateaus": dict(
                mse_drop_between_consecutive_n_3_iterations=cp3_drop, mse_drop_between_consecutive_n_10_iterations=cp10_drop,
                coinpress3_over_coinpress10=(med["coinpress3"] / med["coinpress10"]).tolist(),
                holds=bool(len(n) > 1 and cp3_drop[-1] < 2.0 and cp10_drop[-1] >= 2.0 * cp3_drop[-1]),
                rule="between the two largest n, 3 iterations' median MSE falls by < 2x while 10 iterations' falls by >= twice as much"),
            "bayes_mse_more_consistent": dict(
                iqr_log10_mse={m: iqr[m].tolist() for m in METHODS},
                holds_at_n=[k for i, k in enumerate(n) if all(iqr["bayes"][i] < iqr[m][i] for m in METHODS if m != "bayes")],
                rule="interquartile range of log10 MSE over datasets smaller for the Bayesian draw than for every other method"),
        }
    return claims


def _sensitivity(cfg, args, key):
    """The choices the paper leaves out, one at a time at n = --sensitivity-n (exact rho)."""
    n = args.sensitivity_n
    small = dict(cfg, K=min(cfg["K"], 20), reps=min(cfg["reps"], 50))
    variants = {
        "_default": {},
        "_prior_start": dict(coinpress_centre=40.0, coinpress_radius=120.0),
        "_radius3000": dict(coinpress_radius=3000.0),
        "_levels01": dict(clip_levels=(0.01, 0.99)),
        "_levels25": dict(clip_levels=(0.25, 0.75)),
        "_fraction10": dict(quantile_fraction=0.1),
        "_fraction50": dict(quantile_fraction=0.5),
    }
    meaning = {"_default": "the defaults", "_prior_start": "CoinPress from 40 +- 120 (prior mean +- 3 prior sd)",
               "_radius3000": "CoinPress from 30 +- 3000", "_levels01": "clipping quantiles 1% / 99%",
               "_levels25": "clipping quantiles 25% / 75%", "_fraction10": "10% of rho on the quantiles",
               "_fraction50": "50% of rho on the quantiles"}
    out, _ = _run_n(n, small, args, key, variants=variants, bayes=False)
    freq = {f"{name}{label}": float(np.median(out[f"{name}{label}_exact"]["mse"]))
            for label in variants for name in ("coinpress3", "coinpress10", "clipped")}
    bayes = {}
    for reading in ("per-repetition", "once"):
        a = argparse.Namespace(**{**vars(args), "contamination": reading})
        o, _ = _run_n(n, small, a, key, variants={"": {}}, bayes=True)
        bayes[reading] = dict(bayes=float(np.median(o["bayes"]["mse"])), clipped=float(np.median(o["clipped_exact"]["mse"])),
                              coinpress10=float(np.median(o["coinpress10_exact"]["mse"])))
    return dict(n=n, K=small["K"], reps=small["reps"], rule="exact", median_mse=freq, variants=meaning, contamination_reading=bayes)


def run(args: argparse.Namespace):
    """Figure 1 with dpjax: returns (results dict, matplotlib figure)."""
    import jax

    cfg = _settings(args)
    _validate(args, cfg)
    t0 = time.perf_counter()
    results = {"n": cfg["n_values"], "summary": {}, "per_dataset_mse": {}, "budgets": {}, "convergence": {}, "seconds": {}}
    with jax.enable_x64(True):
        key = jax.random.PRNGKey(args.seed)
        for n in cfg["n_values"]:
            with stage(f"n = {n:,}: {cfg['K']} datasets x {cfg['reps']} repetitions x 7 mechanisms"):
                start = time.perf_counter()
                out, info = _run_n(n, cfg, args, jax.random.fold_in(key, n))
                check = _convergence_check(n, cfg, args, jax.random.fold_in(key, 10 * n + 1)) if cfg["check_datasets"] else []
                results["seconds"][str(n)] = time.perf_counter() - start
            results["summary"][str(n)] = {name: _summary(stats) for name, stats in out.items()}
            results["per_dataset_mse"][str(n)] = {name: stats["mse"] for name, stats in out.items()}
            results["budgets"][str(n)] = info
            results["convergence"][str(n)] = check
            s = results["summary"][str(n)]
            print(f"n={n:>6}  rho exact {info['rho_exact']:.4g} (paper {info['rho_paper']:.4g}, tight {info['rho_tight']:.4g})  median MSE: "
                  + ", ".join(f"{k} {s[k if k in ('bayes', 'nonprivate') else k + '_exact']['median_mse']:.3g}"
                              for k in (*METHODS, "nonprivate")), flush=True)
        if not args.no_sensitivity:
            with stage(f"sensitivity runs at n = {args.sensitivity_n:,}"):
                results["sensitivity"] = _sensitivity(cfg, args, jax.random.fold_in(key, 7))
    results["claims"] = _claims(results)
    results["total_seconds"] = time.perf_counter() - t0
    results["settings"] = {
        "K": cfg["K"], "reps": cfg["reps"], "quick": bool(getattr(args, "quick", False)), "seed": args.seed,
        "theta_star": THETA_STAR, "sigma": SIGMA, "interval": [THETA_STAR - 300.0, THETA_STAR + 300.0],
        "contamination_rate": "p_n = n^-1/8", "delta": "1/(10 n)",
        "budgets": args.budgets, "epsilon_hat_table": DPJAX_EPSILON_HAT if args.budgets == "dpjax" else PAPER_EPSILON_HAT,
        "epsilon_hat_source": ("dpjax's Table 1 (`dpjax reproduce contamination-mean`, K = 1000)" if args.budgets == "dpjax"
                               else "paper 003, Table 1 as printed"),
        "zcdp_rules": {"exact": "rho + 2 sqrt(rho log(1/delta)) = eps (Bun & Steinke 2016, Prop 1.3)",
                       "paper": "rho = eps^2 / (2 log(1/delta)) (the paper's reading; ~2x the exact rho, i.e. ~sqrt(2) eps_hat-DP)",
                       "tight": "the largest rho whose Gaussian composition (mu-GDP, mu = sqrt(2 rho)) is tightly (eps, delta)-DP "
                                "(Balle & Wang 2018, Thm 8; not in the paper)"},
        "contamination": args.contamination,
        "bayes": f"RWM from the median of the contaminated records, proposal sd 2.4 sigma / sqrt(n (1 - p)), "
                 f"{cfg['chain_steps']} steps, last state kept (chosen here)",
        "coinpress": dict(start_centre=args.coinpress_centre, start_radius=args.coinpress_radius, beta=0.01,
                          budget_split="rho/(4(t-1)) per localisation step, 3 rho/4 for the last (the CoinPress authors' experiments)",
                          known_sd=SIGMA, note="start interval chosen here: the data interval's centre +- half its width"),
        "clipped_mean": dict(levels=list(args.clip_levels), quantile_fraction=args.quantile_fraction, search_steps=args.search_steps,
                             search_interval=[THETA_STAR - 300.0, THETA_STAR + 300.0],
                             note="dpjax's reading of 'private quantile estimation + clipped mean' (Huang, Liang and Yi 2021): "
                                  "two private quantiles by noisy binary search (Gaussian counts), then a Gaussian clipped mean"),
        "neighbouring": "replace one record (paper 003, Definition 1)",
        "check": dict(datasets=cfg["check_datasets"], chains="datasets per compiled batch x reps (per row: chains)",
                      against="the posterior by quadrature (4001 points over the median +- 40 sigma / sqrt(n (1 - p)))"),
    }
    return results, _figure(results)


def _figure(results):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = results["n"]
    fig, axes = plt.subplots(1, 3, figsize=(18, 4.8), sharey=True)
    colours = {"bayes": "C0", "coinpress3": "C1", "coinpress10": "C2", "clipped": "C3"}
    titles = {"exact": "rho: exact zCDP conversion", "paper": "rho: the paper's conversion (~2x)",
              "tight": "rho: tight for a Gaussian composition"}
    for ax, rule in zip(axes, RULES):
        width = 0.18
        for j, method in enumerate(METHODS):
            key = method if method == "bayes" else f"{method}_{rule}"
            data = [np.log10(np.asarray(results["per_dataset_mse"][str(k)][key], float)) for k in n]
            pos = np.arange(len(n)) + (j - 1.5) * width
            bp = ax.boxplot(data, positions=pos, widths=width * 0.9, patch_artist=True, showfliers=False)
            for box in bp["boxes"]:
                box.set_facecolor(colours[method])
                box.set_alpha(0.6)
            ax.plot([], [], color=colours[method], lw=6, alpha=0.6, label=LABELS[method])
        nonpriv = [np.log10(results["summary"][str(k)]["nonprivate"]["median_mse"]) for k in n]
        ax.plot(np.arange(len(n)), nonpriv, "k_", ms=20, label="non-private sample mean (median)")
        ax.set_xticks(np.arange(len(n)))
        ax.set_xticklabels([f"{k:,}" for k in n])
        ax.set_xlabel("n")
        ax.set_title(titles[rule], fontsize=10)
    axes[0].set_ylabel("log10 MSE over repetitions, per dataset")
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle(f"Paper 003, Figure 1: private mean estimation (K = {results['settings']['K']} datasets x "
                 f"{results['settings']['reps']} repetitions; budgets: {results['settings']['budgets']}'s eps_hat)", fontsize=10)
    fig.tight_layout()
    return fig


def headline(results: dict) -> list:
    """Median MSE over datasets per n and method (exact rho), and the claims' verdicts."""
    rows = []
    for n in results["n"]:
        s = results["summary"][str(n)]
        rows.append(dict(quantity=f"n = {n:,}: median MSE Bayes / CP3 / CP10 / clipped (exact rho)", paper="figure only",
                         dpjax=", ".join(f"{s[k if k == 'bayes' else k + '_exact']['median_mse']:.3g}" for k in METHODS)))
    c = results["claims"]["exact"]
    rows.append(dict(quantity="CoinPress best (n where it holds)", paper="all", dpjax=", ".join(str(k) for k in c["coinpress_best"]["holds_at_n"]) or "none"))
    rows.append(dict(quantity="Bayes within 2x of clipped mean for n >= 1000", paper="yes", dpjax="yes" if c["bayes_comparable_to_clipped_from_1000"]["holds"] else "no"))
    rows.append(dict(quantity="3-iteration CoinPress plateaus", paper="yes", dpjax="yes" if c["coinpress3_plateaus"]["holds"] else "no"))
    return rows


def main(argv=None) -> int:
    """``python -m dpjax.experiments.contamination.mean_estimation`` = ``dpjax reproduce contamination-mean-estimation``."""
    import sys

    from ...cli import main as cli_main

    return cli_main(["reproduce", "contamination-mean-estimation", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
