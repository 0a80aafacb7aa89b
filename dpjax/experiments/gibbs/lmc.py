"""``dpjax reproduce gibbs-lmc``: paper 002 App. D.2 — a Gibbs posterior sampled approximately by
Langevin Monte Carlo with Dalalyan's schedule (Theorem 21 / Proposition 13), its privacy
(eps, delta + (1 + e^eps) gamma), checked end to end on a Gaussian case where everything is
exact, and with coupled chains.

Setting (chosen; the paper gives no numbers for D.2). The Gibbs posterior of App. B (loss
|theta - x|^2/2, |x| <= r) in d >= 2 dimensions with an anisotropic Gaussian prior
N(0, diag(1/lambda_j)): U_D(theta) = beta sum_i |theta - x_i|^2/2 + sum_j lambda_j theta_j^2/2,
Hessian diag(n beta + lambda_j), so m = n beta + lambda_min and M = n beta + lambda_max. The first
half of the coordinates is "soft" (lambda_min = 1), the rest "stiff", with lambda_max set so that
M/m = ``--kappa`` (default 2; kappa = 1 is App. B's isotropic case). D has x_1 = r e_1 and n - 1
records drawn uniformly in the ball (seeded); D' has x_1 = -r e_1 (the worst pair: along the
soft axis). beta is the largest temperature at which one posterior sample is exactly
(eps, delta) = (1, 1e-3)-DP (``--epsilon``, ``--delta``; the analytic Gaussian mechanism along the
soft axis), so that the guarantee's delta is the posterior's own; ``--temperature-rule theorem15``
takes Theorem 15's LSI bound instead (lambda -> lambda_min): beta = 0.239 instead of 0.459 here.

For each gamma in ``--gammas``: the schedule (S, h, T) of Proposition 13 (alpha = 1) and of
Theorem 21's printed alpha; LMC from N(theta*_D, I/M) (theta*_D the minimiser of U_D) is an AR(1)
chain per axis, so its law after every step is an exact Gaussian:

- the exact TV to the Gibbs posterior at T (:mod:`dpjax.accountants.mechanisms.gaussian_tv`), checked <=
  gamma, along the chain, and the first step at which it is <= gamma (the schedule's overshoot);
- Proposition 12 with the exact TV: the exact delta_LMC(eps) of the output pair against
  delta_post(eps) + (1 + e^eps) TV on a grid of eps;
- the guarantee (eps, delta + (1 + e^eps) gamma) against the exact eps_LMC at that delta;
- coupled chains (``dpjax.run_coupled``, ULA in the Euler form = Dalalyan's LMC) on (D, D')
  started at theta*_D + N(0, I/M); run_coupled shares a pair's start, so D''s chain is corrected
  by the exact propagated offset (I - hH)^T (theta*_D - theta*_D') to be LMC from D''s own start
  (exact here: both potentials have the Hessian H). Their outputs against the exact laws
  (z-scores of means and variances, a KS test on the soft axis), and 95% lower confidence bounds
  on eps at the guarantees' deltas, which must not exceed the exact eps_LMC nor the guarantee.

The exact TV is also tabulated for kappa in {1, 2, 10}, d in {2, 4, 10} and gamma down to 1e-3
(horizons up to ~1e9 steps: closed form), the sensitivity to the unstated choices.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from ...accountants.posterior import gibbs as gb
from ...accountants.samplers import lmc
from ...accountants.mechanisms.gaussian_divergence import analytic_gaussian_delta, analytic_gaussian_epsilon
from ...accountants.mechanisms.gaussian_tv import gaussian_tv
from .._report import stage

DEFAULT_GAMMAS = (0.2, 0.1, 0.05)
QUICK_GAMMAS = (0.2,)
SENSITIVITY_KAPPAS = (1.0, 2.0, 10.0)
SENSITIVITY_DIMS = (2, 4, 10)
SENSITIVITY_GAMMAS = (0.3, 0.1, 0.03, 0.01, 0.003, 0.001)


def _floats(text: str) -> list[float]:
    try:
        vals = [float(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None
    if not vals:
        raise argparse.ArgumentTypeError(f"{text!r} is empty")
    return vals


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--epsilon", type=float, default=1.0, help="the Gibbs posterior's eps target (default 1)")
    parser.add_argument("--delta", type=float, default=1e-3, help="its delta (default 1e-3)")
    parser.add_argument("--n", type=int, default=10, help="records (default 10)")
    parser.add_argument("--radius", type=float, default=1.0, help="r, the bound on |x| (paper: 1)")
    parser.add_argument("--dim", type=int, default=2, help="d >= 2 (default 2)")
    parser.add_argument("--kappa", type=float, default=2.0, help="condition number M/m of U (default 2; 1 = App. B's isotropic case)")
    parser.add_argument("--gammas", type=_floats, default=None, help="TV levels (default 0.2,0.1,0.05; --quick 0.2)")
    parser.add_argument("--temperature-rule", choices=("exact", "theorem15"), default="exact",
                        help="beta: the largest with the posterior exactly (eps, delta)-DP (default), or by Theorem 15's LSI bound")
    parser.add_argument("--pairs", type=int, default=None, help="coupled chain pairs per gamma (default 2000; --quick 400)")
    parser.add_argument("--no-chains", action="store_true", help="exact computations only")


class Problem:
    """The Gaussian Gibbs posterior of the module docstring, for one (n, r, d, kappa, eps, delta)."""

    def __init__(self, n, radius, dim, kappa, epsilon, delta, seed, temperature_rule="exact"):
        if n < 1:
            raise ValueError(f"n={n} violates n >= 1")
        if not radius > 0:
            raise ValueError(f"radius={radius} violates radius > 0")
        if dim < 2:
            raise ValueError(f"dim={dim} violates dim >= 2 (paper 002 Theorem 21)")
        if not (kappa >= 1 and math.isfinite(kappa)):
            raise ValueError(f"kappa={kappa} violates kappa = M/m >= 1 (finite)")
        self.n, self.r, self.d, self.kappa, self.eps, self.delta = n, float(radius), int(dim), float(kappa), float(epsilon), float(delta)
        lam_min = 1.0
        self.temperature_rule = temperature_rule
        if temperature_rule == "exact":
            self.beta = gb.gaussian_mean_temperature_exact(epsilon, delta, n, radius, lam_min)
        elif temperature_rule == "theorem15":
            self.beta = gb.gaussian_mean_temperature_b89(epsilon, delta, n, radius, lam_min)
        else:
            raise ValueError(f"temperature_rule={temperature_rule!r} is not one of ['exact', 'theorem15']")
        self.m = n * self.beta + lam_min
        self.big_m = self.kappa * self.m
        soft = (self.d + 1) // 2
        self.lam = np.array([lam_min] * soft + [self.big_m - n * self.beta] * (self.d - soft))
        self.curv = n * self.beta + self.lam  # Hessian diagonal
        rng = np.random.default_rng(seed)
        others = rng.normal(size=(n - 1, self.d))
        others *= (rng.uniform(size=(n - 1, 1)) ** (1 / self.d)) * radius / np.linalg.norm(others, axis=1, keepdims=True)
        e1 = np.eye(self.d)[0] * radius
        self.x = np.concatenate([e1[None], others])
        self.x_neighbour = np.concatenate([-e1[None], others])
        self.mode = self.beta * self.x.sum(axis=0) / self.curv  # theta*_D = posterior mean
        self.mode_neighbour = self.beta * self.x_neighbour.sum(axis=0) / self.curv
        # privacy of one exact posterior sample: equal covariances, the means differ along axis 0
        self.mu_posterior = float(np.sqrt(np.sum((self.mode - self.mode_neighbour) ** 2 * self.curv)))

    def law(self, step_size, steps, neighbour=False):
        mode = self.mode_neighbour if neighbour else self.mode
        return lmc.gaussian_lmc_law(np.diag(self.curv), mode, mode, 1.0 / self.big_m, step_size, steps)

    def tv(self, step_size, steps):
        law = self.law(step_size, steps)  # eigenvectors = identity (diagonal Hessian, sorted eigenvalues)
        order = np.argsort(self.curv, kind="stable")
        var = np.empty(self.d)
        var[order] = law.variances
        return gaussian_tv(law.mean, var, self.mode, 1.0 / self.curv)

    def lmc_mu(self, step_size, steps):
        """Mean gap over sd of the two LMC output laws (equal covariances; the gap is on the soft axis)."""
        law = self.law(step_size, steps)
        order = np.argsort(self.curv, kind="stable")
        var = np.empty(self.d)
        var[order] = law.variances
        return float(np.sqrt(np.sum((self.mode - self.mode_neighbour) ** 2 / var))), var


def _first_step_below(problem, step_size, gamma, horizon_steps):
    """Smallest k <= horizon_steps with TV(k) <= gamma: a log grid, then bisection between the
    grid points that bracket the first crossing (TV decreases there)."""
    if problem.tv(step_size, 0) <= gamma:
        return 0
    grid = np.unique(np.round(np.logspace(0, math.log10(max(horizon_steps, 1)), 40)).astype(int))
    prev = 0
    for k in grid:
        if problem.tv(step_size, int(k)) <= gamma:
            lo, hi = prev, int(k)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if problem.tv(step_size, mid) <= gamma else (mid, hi)
            return hi
        prev = int(k)
    return None


def _fewest_steps(problem, gamma, num_step_sizes=12):
    """Fewest LMC steps with exact TV <= gamma over step sizes h in [h_schedule, 1/M] (a log grid;
    the discretisation bias must itself be below gamma), and the h that achieves it."""
    sch = lmc.dalalyan_schedule(problem.m, problem.big_m, problem.d, gamma)
    best = (None, None)
    for h in np.logspace(math.log10(sch.step_size), math.log10(1.0 / problem.big_m), num_step_sizes):
        if problem.tv(h, 10**15) > gamma:  # the stationary law is already too far
            continue
        k = _first_step_below(problem, h, gamma, 10**15)
        if k is not None and (best[0] is None or k < best[0]):
            best = (k, float(h))
    return best


def _exact_case(problem, gamma):
    out = {"gamma": gamma, "schedules": {}}
    for alpha in lmc.ALPHA_CHOICES:
        sch = lmc.dalalyan_schedule(problem.m, problem.big_m, problem.d, gamma, alpha)
        tv = problem.tv(sch.step_size, sch.num_steps)
        out["schedules"][alpha] = {
            "horizon": sch.horizon, "step_size": sch.step_size, "num_steps": sch.num_steps, "alpha": sch.alpha,
            "tv_exact": tv, "tv_over_gamma": tv / gamma, "tv_at_most_gamma": bool(tv <= gamma),
            "first_step_with_tv_below_gamma": _first_step_below(problem, sch.step_size, gamma, sch.num_steps),
        }
    sch = lmc.dalalyan_schedule(problem.m, problem.big_m, problem.d, gamma, "proposition13")
    ks = np.unique(np.round(np.logspace(0, math.log10(sch.num_steps), 60)).astype(int))
    out["tv_along_chain"] = {"steps": ks.tolist(), "tv": [problem.tv(sch.step_size, int(k)) for k in ks]}
    # privacy: posterior (Theorem 15 bound and exact), LMC output (exact), Prop. 12 with gamma and with the exact TV
    tv = out["schedules"]["proposition13"]["tv_exact"]
    mu_lmc, _ = problem.lmc_mu(sch.step_size, sch.num_steps)
    eps_grid = np.linspace(0.0, 3.0 * problem.eps, 61)
    delta_post = analytic_gaussian_delta(problem.mu_posterior, eps_grid)
    delta_lmc = analytic_gaussian_delta(mu_lmc, eps_grid)
    bound_exact_tv = np.minimum(1.0, delta_post + (1 + np.exp(eps_grid)) * tv)
    thm15 = gb.gaussian_mean_theorem15_delta(problem.eps, problem.beta, problem.n, problem.r, 1.0)
    post_exact = float(analytic_gaussian_delta(problem.mu_posterior, problem.eps))
    post_delta = post_exact if problem.temperature_rule == "exact" else thm15
    guarantee_delta = lmc.lmc_privacy_delta(problem.eps, post_delta, gamma)
    out["privacy"] = {
        "posterior_delta_theorem15": thm15,
        "posterior_delta_exact": post_exact,
        "guarantee": {"epsilon": problem.eps, "delta": guarantee_delta, "rule": "Prop. 12/13: delta + (1 + e^eps) gamma",
                      "posterior_delta_used": post_delta},
        "lmc_epsilon_exact_at_guarantee_delta": analytic_gaussian_epsilon(mu_lmc, min(guarantee_delta, 0.999)),
        "lmc_delta_exact_at_epsilon": float(analytic_gaussian_delta(mu_lmc, problem.eps)),
        "mu_posterior": problem.mu_posterior, "mu_lmc": mu_lmc,
        "prop12_with_exact_tv": {
            "epsilons": eps_grid.tolist(), "delta_lmc_exact": np.asarray(delta_lmc).tolist(),
            "delta_posterior_exact": np.asarray(delta_post).tolist(), "bound": bound_exact_tv.tolist(),
            "holds_everywhere": bool(np.all(np.asarray(delta_lmc) <= bound_exact_tv * (1 + 1e-12) + 1e-15)),
            "largest_ratio_lmc_over_bound": float(np.max(np.asarray(delta_lmc) / bound_exact_tv)),
        },
    }
    return out


def _chains(problem, case, pairs, seed):
    import jax.numpy as jnp
    from scipy import stats

    from ... import run_coupled
    from ...data import replace_one
    from ...estimators.lower_bound import epsilon_lower_bound
    from ...models.base import Model
    from ...models.gaussian_mean import gaussian_mean_dataset
    from ...samplers import ula

    lam = jnp.asarray(problem.lam)

    def log_likelihood(theta, record):
        return -0.5 * jnp.sum((theta - record["x"]) ** 2)

    def log_prior(theta):
        return -0.5 * jnp.sum(lam * theta**2)

    model = Model(log_likelihood=log_likelihood, log_prior=log_prior, dim=problem.d, likelihood_weight=problem.beta, name="gibbs_gaussian_mean_anisotropic")
    sch = case["schedules"]["proposition13"]
    h, steps = sch["step_size"], sch["num_steps"]
    # Dalalyan's start N(theta*_D, I/M) for D. run_coupled shares a pair's start, so D''s chain
    # starts at theta*_D + xi instead of theta*_D' + xi; both potentials have the Hessian H, so that
    # start's offset theta*_D - theta*_D' reaches step T as (I - h H)^T (theta*_D - theta*_D'),
    # deterministically (same noise either way), and subtracting it gives D''s LMC output exactly.
    rng = np.random.default_rng(seed)
    init = problem.mode + rng.normal(size=(pairs, problem.d)) / math.sqrt(problem.big_m)
    pair = replace_one(gaussian_mean_dataset(problem.x), 0, {"x": problem.x_neighbour[0]})
    with stage(f"gamma = {case['gamma']:g}: {pairs} coupled LMC pairs x {steps} steps"):
        res = run_coupled(seed, model, pair, ula(h), num_pairs=pairs, num_steps=steps, init=init, progress=False).finite_only()
    offset = np.exp(steps * np.log1p(-h * problem.curv)) * (problem.mode - problem.mode_neighbour)
    p, q = res.positions[-1], res.neighbour_positions[-1] - offset
    bad = int(res.num_nonfinite)
    mu_lmc, var = problem.lmc_mu(h, steps)
    checks = {}
    for label, sample, mode in (("D", p, problem.mode), ("D'", q, problem.mode_neighbour)):
        se_mean = np.sqrt(var / sample.shape[0])
        se_var = var * math.sqrt(2.0 / (sample.shape[0] - 1))
        checks[label] = {
            "mean_z": ((sample.mean(axis=0) - mode) / se_mean).tolist(),
            "var_z": ((sample.var(axis=0, ddof=1) - var) / se_var).tolist(),
            "ks_pvalue_soft_axis": float(stats.kstest(sample[:, 0], stats.norm(mode[0], math.sqrt(var[0])).cdf).pvalue),
        }
    guarantee = case["privacy"]["guarantee"]
    tv = case["schedules"]["proposition13"]["tv_exact"]
    # two guarantees for the same eps: Prop. 13 (gamma) and Prop. 12 with the exact TV
    deltas = {"prop13": guarantee["delta"], "prop12_exact_tv": float(lmc.lmc_privacy_delta(problem.eps, guarantee["posterior_delta_used"], tv))}
    soft_laws = (stats.norm(problem.mode[0], math.sqrt(var[0])), stats.norm(problem.mode_neighbour[0], math.sqrt(var[0])))
    bounds = {}
    for i, (label, dlt) in enumerate(deltas.items()):
        dlt_eval = min(dlt, 0.5)  # beyond 1/2 the guarantee says nothing a lower bound could contradict
        lb = epsilon_lower_bound(p, q, dlt_eval, 0.95, seed=seed + 2 * i)
        lb_soft = epsilon_lower_bound(p[:, 0], q[:, 0], dlt_eval, 0.95, seed=seed + 2 * i + 1, reference=soft_laws)
        exact = analytic_gaussian_epsilon(mu_lmc, dlt_eval)
        bounds[label] = {
            "delta": dlt, "delta_evaluated": dlt_eval, "guarantee_epsilon": guarantee["epsilon"], "lmc_epsilon_exact": exact,
            "lower_bound": lb.epsilon, "lower_bound_soft_axis": lb_soft.epsilon, "oracle_lower_bound_soft_axis": lb_soft.oracle_epsilon,
            "resolution_ceiling": lb.resolution_ceiling,
            "lower_bounds_below_exact_and_guarantee": bool(max(lb.epsilon, lb_soft.epsilon) <= exact + 1e-12 and exact <= guarantee["epsilon"] + 1e-12),
        }
    return {"pairs": pairs, "steps": steps, "step_size": h, "num_nonfinite": bad, "start_offset_at_T": offset.tolist(),
            "law_checks": checks, "privacy": bounds}


def _sensitivity(eps, delta, n, radius, seed, rule):
    rows = []
    for kappa in SENSITIVITY_KAPPAS:
        for d in SENSITIVITY_DIMS:
            prob = Problem(n, radius, d, kappa, eps, delta, seed, rule)
            for gamma in SENSITIVITY_GAMMAS:
                sch = lmc.dalalyan_schedule(prob.m, prob.big_m, d, gamma)
                tv = prob.tv(sch.step_size, sch.num_steps)
                rows.append(dict(kappa=kappa, dim=d, gamma=gamma, num_steps=sch.num_steps, tv_exact=tv, tv_over_gamma=tv / gamma))
    return rows


def run(args) -> tuple[dict, object]:
    quick = bool(getattr(args, "quick", False))
    seed = int(getattr(args, "seed", 0))
    gammas = list(args.gammas or (QUICK_GAMMAS if quick else DEFAULT_GAMMAS))
    for g in gammas:
        if not 0 < g < 0.5:
            raise ValueError(f"gamma={g} violates 0 < gamma < 1/2 (paper 002 Theorem 21)")
    pairs = int(args.pairs if args.pairs is not None else (400 if quick else 2000))
    if pairs < 10:
        raise ValueError(f"pairs={pairs} violates pairs >= 10")
    if not 0 < args.delta < 1:
        raise ValueError(f"delta={args.delta} violates 0 < delta < 1")
    if not args.epsilon > 0:
        raise ValueError(f"epsilon={args.epsilon} violates epsilon > 0")
    t0 = time.perf_counter()
    problem = Problem(int(args.n), float(args.radius), int(args.dim), float(args.kappa), float(args.epsilon), float(args.delta), seed,
                      args.temperature_rule)
    results = {
        "settings": {
            "epsilon": problem.eps, "delta": problem.delta, "n": problem.n, "radius": problem.r, "dim": problem.d, "kappa": problem.kappa,
            "temperature_beta": problem.beta, "prior_precisions": problem.lam.tolist(), "strong_convexity_m": problem.m,
            "smoothness_M": problem.big_m, "gammas": gammas, "pairs": pairs, "quick": quick, "seed": seed,
            "not_in_paper": "every number: the paper gives the schedule and the guarantee only",
            "temperature_rule": {"exact": "largest beta with the exact posterior (eps, delta)-DP (analytic Gaussian, lambda_min axis)",
                                 "theorem15": "largest beta with Theorem 15's delta(eps) <= delta (lambda -> lambda_min)"}[problem.temperature_rule],
        },
        "cases": [],
    }
    for gamma in gammas:
        with stage(f"gamma = {gamma:g}: exact laws"):
            case = _exact_case(problem, gamma)
            k, h = _fewest_steps(problem, gamma, 6 if quick else 12)
            case["fewest_steps_exact_tv"] = {"steps": k, "step_size": h}
        if not args.no_chains:
            case["chains"] = _chains(problem, case, pairs, seed)
        results["cases"].append(case)
    # the gamma for which the TV term (1 + e^eps) gamma equals the posterior's own delta: what the
    # schedule then asks for, against the steps the exact TV needs (at the schedule's step, and at the best one)
    gamma_match = problem.delta / (1.0 + math.exp(problem.eps))
    sch_match = lmc.dalalyan_schedule(problem.m, problem.big_m, problem.d, gamma_match)
    with stage(f"gamma = {gamma_match:.3g} (TV term = delta): exact laws"):
        k_best, h_best = _fewest_steps(problem, gamma_match, 6 if quick else 12)
        results["tv_term_equal_to_delta"] = {
            "gamma": gamma_match, "schedule_steps": sch_match.num_steps, "schedule_step_size": sch_match.step_size,
            "schedule_tv_exact": problem.tv(sch_match.step_size, sch_match.num_steps),
            "steps_exact_tv_needs_at_schedule_step": _first_step_below(problem, sch_match.step_size, gamma_match, sch_match.num_steps),
            "fewest_steps_exact_tv": k_best, "best_step_size": h_best,
        }
    with stage("sensitivity: exact TV for kappa, d, gamma"):
        results["sensitivity"] = _sensitivity(problem.eps, problem.delta, problem.n, problem.r, seed, problem.temperature_rule)
    results["all_tv_at_most_gamma"] = bool(all(s["tv_at_most_gamma"] for c in results["cases"] for s in c["schedules"].values())
                                          and all(r["tv_exact"] <= r["gamma"] for r in results["sensitivity"]))
    results["prop12_exact_tv_holds"] = bool(all(c["privacy"]["prop12_with_exact_tv"]["holds_everywhere"] for c in results["cases"]))
    results["seconds"] = time.perf_counter() - t0
    return results, _figure(results)


def headline(results) -> list[dict]:
    rows = []
    for c in results["cases"]:
        s = c["schedules"]["proposition13"]
        rows.append(dict(quantity=f"gamma = {c['gamma']:g}: exact TV at the schedule's T = {s['num_steps']}", paper=f"<= {c['gamma']:g}",
                         dpjax=f"{s['tv_exact']:.3g}", note=f"TV <= gamma already after {s['first_step_with_tv_below_gamma']} steps"))
        g = c["privacy"]["guarantee"]
        ch = c.get("chains")
        lb = ch["privacy"]["prop13"] if ch else None
        rows.append(dict(quantity=f"gamma = {c['gamma']:g}: eps at delta = {g['delta']:.3g}", paper=f"{g['epsilon']:g} (Prop. 13)",
                         dpjax=f"exact {c['privacy']['lmc_epsilon_exact_at_guarantee_delta']:.3g}"
                         + (f", chains >= {max(lb['lower_bound'], lb['lower_bound_soft_axis']):.3g}" if lb else ""),
                         note="the guarantee is loose by the (1 + e^eps) gamma term; the exact TV is far below gamma"))
    m = results["tv_term_equal_to_delta"]
    rows.append(dict(quantity=f"steps for (1 + e^eps) gamma = delta (gamma = {m['gamma']:.3g})", paper=f"{m['schedule_steps']:.3g} (schedule)",
                     dpjax=f"{m['fewest_steps_exact_tv']:.3g} (exact TV, best step size)", note="the schedule's horizon is what makes D.2 impractical"))
    return rows


def _figure(results):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15, 4.3))
    ax = fig.add_subplot(1, 3, 1)
    for i, c in enumerate(results["cases"]):
        t = c["tv_along_chain"]
        ax.loglog(np.maximum(t["steps"], 1), np.maximum(t["tv"], 1e-300), color=f"C{i}", label=f"gamma = {c['gamma']:g}")
        ax.axhline(c["gamma"], color=f"C{i}", ls=":", lw=1)
        ax.axvline(c["schedules"]["proposition13"]["num_steps"], color=f"C{i}", ls="--", lw=1)
    ax.set_xlabel("LMC step k (dashed: the schedule's T)")
    ax.set_ylabel("exact TV(law_k, Gibbs posterior)")
    s = results["settings"]
    ax.set_title(f"d = {s['dim']}, M/m = {s['kappa']:g}, n = {s['n']}", fontsize=9)
    ax.legend(fontsize=7)

    ax2 = fig.add_subplot(1, 3, 2)
    rows = results["sensitivity"]
    for j, kappa in enumerate(SENSITIVITY_KAPPAS):
        for k, d in enumerate(SENSITIVITY_DIMS):
            sel = [r for r in rows if r["kappa"] == kappa and r["dim"] == d]
            ax2.loglog([r["gamma"] for r in sel], [r["tv_exact"] for r in sel], marker="os^"[k], color=f"C{j}", ms=3, lw=1,
                       label=f"M/m = {kappa:g}, d = {d}")
    gs = np.array(SENSITIVITY_GAMMAS)
    ax2.loglog(gs, gs, "k--", lw=1, label="TV = gamma")
    ax2.set_xlabel("gamma (target TV)")
    ax2.set_ylabel("exact TV at the schedule's T")
    ax2.set_title("Dalalyan's schedule (Prop. 13): exact TV vs the target", fontsize=9)
    ax2.legend(fontsize=5, ncol=2)

    ax3 = fig.add_subplot(1, 3, 3)
    c = results["cases"][-1]
    p = c["privacy"]["prop12_with_exact_tv"]
    eps = np.asarray(p["epsilons"])
    ax3.semilogy(eps, np.maximum(p["delta_posterior_exact"], 1e-300), label="Gibbs posterior (exact)")
    ax3.semilogy(eps, np.maximum(p["delta_lmc_exact"], 1e-300), "--", label="LMC output (exact)")
    ax3.semilogy(eps, p["bound"], ":", label="Prop. 12 with the exact TV")
    g = c["privacy"]["guarantee"]
    ax3.semilogy([g["epsilon"]], [g["delta"]], "k*", ms=9, label=f"guarantee (eps, delta + (1+e^eps) gamma), gamma = {c['gamma']:g}")
    if "chains" in c:
        for k, (label, b) in enumerate(c["chains"]["privacy"].items()):
            ax3.semilogy([max(b["lower_bound"], b["lower_bound_soft_axis"])], [b["delta_evaluated"]], "v", color=f"C{3 + k}", ms=7,
                         label=f"chains: 95% lower bound on eps ({label})")
            ax3.semilogy([b["lmc_epsilon_exact"]], [b["delta_evaluated"]], "s", color=f"C{3 + k}", mfc="none", ms=6, label=f"LMC exact eps ({label})")
    ax3.set_xlabel("eps")
    ax3.set_ylabel("delta(eps)")
    ax3.set_ylim(1e-8, 1.5)
    ax3.set_title("privacy of one output", fontsize=9)
    ax3.legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    return fig
