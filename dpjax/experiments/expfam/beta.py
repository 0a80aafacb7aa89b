"""``dpjax reproduce expfam-beta``: paper 004's Beta–Bernoulli experiments (§A.5, Figures 1–2).

Priors are given as printed, in the paper's natural parameters eta0 = (a, a + b), which is
Beta(a, b) (see :mod:`dpjax.accountants.posterior.expfam`): "6,18" is Beta(6, 12), prior mean 1/3 (the
paper: rho = 1/3 "closely matches the predictions of the prior"); "1,2" is Beta(1, 1), the
uniform prior (the paper: "This prior corresponds to the uniform prior", lambda* = 2).

For each prior, with n records and order l:
- ``max_order``: the supremum of orders at which Direct posterior sampling has a finite
  worst-case RDP, 1 + min(a, b) (7 and 2 here; so at l = 15 Direct sampling is +inf for both);
- ``diffuse_r``: for each target eps, the largest r (likelihood tempered by r) whose worst case
  over datasets and neighbours is <= eps (bisection; Theorem A.14's vertices);
- ``concentrated_m``: the same for the prior scaled to eta0/m.

Log-likelihood against eps (Figures 1–2): data X and a hold-out X_H, each n draws of
Bernoulli(rho); each mechanism samples rho_hat = sigmoid(theta) from its posterior; the score is
the hold-out log-likelihood sum log p(x_H | rho_hat), averaged over trials. "Direct" is one
sample from the (untempered) posterior — no finite order-l guarantee at these priors, drawn as a
reference line. Figure 1 uses prior (6, 18) with rho in {1/3, 1/2, 2/3}; Figure 2 prior (1, 2)
with rho = 0.2.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from ...accountants.posterior import expfam as ef
from .._report import stage

DEFAULT_PRIORS = ("6,18", "1,2")
DEFAULT_TARGETS = (0.01, 0.1, 0.5, 1.0)
DEFAULT_RHOS = {"6,18": (1 / 3, 1 / 2, 2 / 3), "1,2": (0.2,)}


def _prior(text: str) -> tuple[float, float]:
    try:
        eta1, eta2 = (float(t) for t in str(text).split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"prior={text!r} violates 'eta1,eta2' (paper 004 natural parameters)") from None
    if not (eta1 > 0 and eta2 - eta1 > 0):
        raise argparse.ArgumentTypeError(f"prior={text!r} violates 0 < eta1 < eta2 (Beta(eta1, eta2 - eta1))")
    return eta1, eta2


def _floats(text: str) -> list[float]:
    try:
        vals = [float(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None
    if not vals or any(not v > 0 for v in vals):
        raise argparse.ArgumentTypeError(f"{text!r} violates a non-empty list of positive numbers")
    return vals


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--priors", nargs="+", default=list(DEFAULT_PRIORS), help="natural parameters 'eta1,eta2' (paper: 6,18 and 1,2)")
    parser.add_argument("--n", type=int, default=100, help="records (paper: 100)")
    parser.add_argument("--order", type=float, default=15.0, help="Rényi order (paper: 15)")
    parser.add_argument("--targets", type=_floats, default=list(DEFAULT_TARGETS), help="target eps for calibration (comma-separated)")
    parser.add_argument("--trials", type=int, default=2000, help="datasets per eps in the log-likelihood experiment (quick: 200)")
    parser.add_argument("--num-eps", type=int, default=13, help="eps grid size in the log-likelihood experiment")


def _key(x: float) -> str:
    return f"{x:g}"


def calibrations(prior: tuple[float, float], n: int, order: float, targets) -> dict:
    a, b = ef.beta_from_natural(np.array(prior))
    a, b = float(a), float(b)
    direct = ef.BetaBernoulliMechanism(a, b, n)
    out = {
        "natural_parameters": list(prior),
        "beta_parameters": [a, b],
        "max_order": ef.beta_bernoulli_max_order(direct),
        "direct_worst_case_at_order": ef.beta_bernoulli_worst_case(direct, order).divergence,
        "diffuse_r": {},
        "concentrated_m": {},
        "diffuse_worst_case": {},
        "concentrated_worst_case": {},
    }
    for t in targets:
        r = ef.calibrate_diffuse(a, b, n, order, t)
        m = ef.calibrate_concentrated(a, b, n, order, t)
        out["diffuse_r"][_key(t)] = r
        out["concentrated_m"][_key(t)] = m
        out["diffuse_worst_case"][_key(t)] = ef.beta_bernoulli_worst_case(direct._replace(diffuse_r=r), order).divergence
        out["concentrated_worst_case"][_key(t)] = ef.beta_bernoulli_worst_case(direct._replace(concentrate_m=m), order).divergence
    return out


def loglik_experiment(prior, rho: float, n: int, order: float, eps_grid, trials: int, rng: np.random.Generator) -> dict:
    """Mean hold-out log-likelihood per mechanism and eps (the same datasets for every mechanism)."""
    a, b = (float(v) for v in ef.beta_from_natural(np.array(prior)))
    k = rng.binomial(n, rho, size=trials)  # successes in X
    k_hold = rng.binomial(n, rho, size=trials)  # successes in X_H

    def score(alpha, beta):
        draw = rng.beta(alpha, beta)
        draw = np.clip(draw, 1e-300, 1 - 1e-16)
        ll = k_hold * np.log(draw) + (n - k_hold) * np.log1p(-draw)
        return float(ll.mean()), float(ll.std(ddof=1) / math.sqrt(trials))

    direct = score(a + k, b + n - k)
    diffuse, concentrated, r_list, m_list = [], [], [], []
    for e in eps_grid:
        r = ef.calibrate_diffuse(a, b, n, order, e, rtol=1e-9)
        m = ef.calibrate_concentrated(a, b, n, order, e, rtol=1e-9)
        r_list.append(r)
        m_list.append(m)
        diffuse.append(score(a + r * k, b + r * (n - k)))
        concentrated.append(score(a / m + k, b / m + n - k))
    return {
        "rho": rho,
        "eps": list(map(float, eps_grid)),
        "diffuse_r": r_list,
        "concentrated_m": m_list,
        "direct_loglik": direct[0],
        "direct_loglik_se": direct[1],
        "direct_epsilon_at_order": ef.beta_bernoulli_worst_case(ef.BetaBernoulliMechanism(a, b, n), order).divergence,
        "diffuse_loglik": [s[0] for s in diffuse],
        "diffuse_loglik_se": [s[1] for s in diffuse],
        "concentrated_loglik": [s[0] for s in concentrated],
        "concentrated_loglik_se": [s[1] for s in concentrated],
        # the best any mechanism could do: the true rho
        "oracle_loglik": float(np.mean(k_hold * math.log(rho) + (n - k_hold) * math.log1p(-rho))),
    }


def run(args) -> tuple[dict, object]:
    n = int(args.n)
    if n < 1:
        raise ValueError(f"n={n} violates n >= 1")
    order = float(args.order)
    if not order > 1:
        raise ValueError(f"order={order} violates order > 1")
    priors = [_prior(p) if isinstance(p, str) else tuple(p) for p in args.priors]
    targets = list(args.targets)
    trials = 200 if getattr(args, "quick", False) else int(args.trials)
    rng = np.random.default_rng(int(getattr(args, "seed", 0)))
    eps_grid = np.logspace(-2, 1, int(args.num_eps))

    results = {
        "n": n,
        "order": order,
        "targets": targets,
        "interpretation": "priors are paper 004 natural parameters eta0 = (a, a + b) <-> Beta(a, b): "
        "'6,18' = Beta(6, 12) (mean 1/3), '1,2' = Beta(1, 1) (uniform; lambda* = 2 as printed)",
        "priors": {},
        "loglik": {},
        "trials": trials,
    }
    for prior, text in zip(priors, [f"{p[0]:g},{p[1]:g}" for p in priors]):
        rhos = DEFAULT_RHOS.get(text, (0.5,))
        with stage(f"prior {text}: calibrations at {len(targets)} targets, log-likelihood at {len(eps_grid)} eps x {len(rhos)} rho x {trials:,} trials"):
            results["priors"][text] = calibrations(prior, n, order, targets)
            results["loglik"][text] = [loglik_experiment(prior, rho, n, order, eps_grid, trials, rng) for rho in rhos]
    return results, _figure(results)


def _figure(results):
    from matplotlib.figure import Figure

    panels = [(p, e) for p, exps in results["loglik"].items() for e in exps]
    fig = Figure(figsize=(4.2 * len(panels), 3.8))
    for i, (prior, e) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        ax.semilogx(e["eps"], e["diffuse_loglik"], "o-", label="Diffuse (tempered r)")
        ax.semilogx(e["eps"], e["concentrated_loglik"], "s-", label="Concentrated (prior / m)")
        ax.axhline(e["direct_loglik"], color="k", ls="--", label="Direct (not private at this order)")
        ax.axhline(e["oracle_loglik"], color="grey", ls=":", label="true rho")
        ax.set_xlabel(f"eps (RDP, order {results['order']:g})")
        ax.set_ylabel("hold-out log-likelihood")
        ax.set_title(f"prior {prior}, rho = {e['rho']:.3g}")
        if i == 0:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def headline(results: dict) -> list:
    """Per prior: the largest finite order and the calibrated r* and m* (paper 004 prints
    figures only, so the paper column is empty)."""
    rows = []
    for text, cal in results["priors"].items():
        a, b = cal["beta_parameters"]
        rows.append(dict(quantity=f"prior ({text}) = Beta({a:g}, {b:g}): largest finite order", paper=None, dpjax=cal["max_order"]))
        targets = list(cal["diffuse_r"])
        rows.append(dict(quantity=f"  diffuse r* at eps = {', '.join(targets)}", paper=None, dpjax=list(cal["diffuse_r"].values())))
        rows.append(dict(quantity=f"  concentrated m* at eps = {', '.join(targets)}", paper=None, dpjax=list(cal["concentrated_m"].values())))
    return rows
