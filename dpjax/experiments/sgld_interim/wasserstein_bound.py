"""``dpjax reproduce wasserstein-bound``: paper 000 §5 (Claim 5.1, Theorem 2, Claims E.1-E.2)
checked pointwise on Gaussian pairs in d = 1-3, and its vacuity in high dimension as a curve.

Theorem 2 turns W2(p, q) < eps^2 and L-Lipschitz densities into
p_lambda(x) <= V q_lambda(x) + (V - 1) 2 lambda L + eps / vol_d(lambda - eps),
V = (lambda/(lambda - eps))^d, for every lambda > eps (p_lambda: p averaged over a ball).

Pointwise check (``--pairs`` Gaussian pairs per dimension, chosen here; the paper has no
numbers): isotropic N(m1, s1^2 I) and N(m2, s2^2 I) with closed-form W2, eps = sqrt(W2), L the
larger of the two densities' Lipschitz constants, smoothed densities from non-central
chi-square ball probabilities. At points along the line through the means and at random points,
for several lambda > eps, both directions (p vs q, q vs p): Theorem 2, Claim E.1
(p(B_r(x)) <= q(B_{r+eps}(x)) + eps), Claim 5.1 (|p - p_lambda| <= lambda L) and dpjax's pointwise
corollary (p <= V q + (V + 1) lambda L + A). Reported: the smallest slack (right side minus left
side, all must be >= 0), how loose the bound is (right/left), and where it is vacuous (right side
above sup p_lambda).

Vacuity (the paper's closing remark): for N(0, I_d) against a neighbour at W2 distance w,
min over lambda of A(lambda) / sup p_lambda against d (>= 1: the bound says nothing anywhere),
and the largest w at which the bound says anything, against d.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from . import wasserstein as ws
from .._report import stage

# (mean shift along e1, sd of p, sd of q): a shift, a scale change, both, a narrower pair, a close pair
PAIRS = ((0.05, 1.0, 1.0), (0.0, 1.0, 1.03), (0.1, 1.0, 0.95), (0.02, 0.5, 0.5), (0.002, 1.0, 1.0))
SMOOTHING_FACTORS = (1.05, 1.5, 3.0, 10.0)  # lambda = factor * eps
SMOOTHING_ABSOLUTE = (0.5, 1.0, 2.0)  # and these, where > eps
RADII = (0.1, 0.5, 1.0, 2.0)  # Claim E.1
DIMS_CURVE = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 75, 100)
W2_CURVE = (1e-2, 1e-4, 1e-6, 1e-8)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--points", type=int, default=None, help="random points per pair and dimension (default 200, 40 with --quick)")
    parser.add_argument("--max-dim", type=int, default=100, help="largest d of the vacuity curve")


def _points(d: int, m1: np.ndarray, m2: np.ndarray, s: float, count: int, rng) -> np.ndarray:
    line = np.zeros((41, d))
    line[:, 0] = np.linspace(-4 * s, 4 * s, 41) + 0.5 * (m1[0] + m2[0])
    cloud = m1 + s * rng.standard_normal((count, d)) * 1.5
    return np.concatenate([line, cloud])


def check_pair(d: int, shift: float, sd_p: float, sd_q: float, count: int, rng) -> dict:
    """Every check of §5 on one Gaussian pair in dimension d, both directions."""
    m_p = np.zeros(d)
    m_q = np.zeros(d)
    m_q[0] = shift
    w2 = ws.gaussian_w2(m_p, sd_p, m_q, sd_q)
    eps = math.sqrt(w2)
    L = max(ws.gaussian_lipschitz(sd_p, d), ws.gaussian_lipschitz(sd_q, d))
    x = _points(d, m_p, m_q, max(sd_p, sd_q), count, rng)
    lams = sorted({f * eps for f in SMOOTHING_FACTORS} | {a for a in SMOOTHING_ABSOLUTE if a > eps})
    out = dict(dim=d, shift=shift, sd_p=sd_p, sd_q=sd_q, w2=w2, eps=eps, lipschitz=L, points=int(x.shape[0]), smoothing=lams)
    slack = dict(theorem2=np.inf, claim_e1=np.inf, claim51=np.inf, pointwise=np.inf)
    looseness, nonvacuous, total = [], 0, 0
    for (ma, sa), (mb, sb) in (((m_p, sd_p), (m_q, sd_q)), ((m_q, sd_q), (m_p, sd_p))):
        dens_a, dens_b = ws.gaussian_density(x, ma, sa), ws.gaussian_density(x, mb, sb)
        for lam in lams:
            pa = ws.gaussian_smoothed_density(x, lam, ma, sa)
            qb = ws.gaussian_smoothed_density(x, lam, mb, sb)
            rhs = ws.theorem2_rhs(qb, d, lam, eps, L)
            slack["theorem2"] = min(slack["theorem2"], float(np.min(rhs - pa)))
            looseness.append(float(np.min(rhs / np.maximum(pa, 1e-300))))
            sup_pa = float(ws.gaussian_smoothed_density(ma[None, :], lam, ma, sa)[0])
            nonvacuous += int(np.sum(rhs < sup_pa))
            total += x.shape[0]
            slack["claim51"] = min(slack["claim51"], float(np.min(ws.claim51_bound(lam, L) - np.abs(dens_a - pa))))
            slack["pointwise"] = min(slack["pointwise"], float(np.min(ws.pointwise_rhs(dens_b, d, lam, eps, L) - dens_a)))
        for r in RADII:
            lhs = ws.gaussian_ball_probability(x, r, ma, sa)
            rhs = ws.claim_e1_rhs(ws.gaussian_ball_probability(x, r + eps, mb, sb), eps)
            slack["claim_e1"] = min(slack["claim_e1"], float(np.min(rhs - lhs)))
    out["min_slack"] = slack
    out["holds"] = bool(all(v >= -1e-12 for v in slack.values()))
    out["min_rhs_over_lhs_theorem2"] = min(looseness)
    out["nonvacuous_fraction_theorem2"] = nonvacuous / total
    return out


def compute(args) -> dict:
    quick = getattr(args, "quick", False)
    seed = getattr(args, "seed", 0)
    count = args.points if args.points is not None else (40 if quick else 200)
    if count < 1:
        raise ValueError(f"points={args.points!r} violates points >= 1")
    if args.max_dim < 1:
        raise ValueError(f"max_dim={args.max_dim!r} violates max_dim >= 1")
    rng = np.random.default_rng(seed)
    with stage(f"pointwise checks: {len(PAIRS)} Gaussian pairs x d = 1, 2, 3"):
        checks = [check_pair(d, *pair, count, rng) for d in (1, 2, 3) for pair in PAIRS]
    dims = [d for d in DIMS_CURVE if d <= args.max_dim]
    with stage(f"vacuity against d (d <= {args.max_dim})"):
        curve = {w: [ws.vacuity_ratio(d, w) for d in dims] for w in W2_CURVE}
        largest = [ws.largest_nonvacuous_w2(d) for d in dims]
    return dict(
        parameters=dict(pairs=[dict(shift=a, sd_p=b, sd_q=c) for a, b, c in PAIRS], smoothing_factors=SMOOTHING_FACTORS,
                        smoothing_absolute=SMOOTHING_ABSOLUTE, radii=RADII, points_per_pair=count,
                        chosen_here="all (paper 000 §5 gives no numbers)"),
        pointwise=checks,
        all_checks_hold=bool(all(c["holds"] for c in checks)),
        vacuity=dict(
            dims=dims,
            w2=list(W2_CURVE),
            ratio={w: [r[0] for r in rows] for w, rows in curve.items()},
            best_smoothing={w: [r[1] for r in rows] for w, rows in curve.items()},
            log_volume_ratio={w: [r[2] for r in rows] for w, rows in curve.items()},
            largest_nonvacuous_w2=largest,
            reference="p = N(0, I_d), L = its Lipschitz constant; ratio = min_lambda A(lambda) / sup p_lambda",
        ),
        notes=("eps = sqrt(W2) (the paper writes W2 < eps^2). Claim E.1's Markov step uses E|X - Y| <= W2; Markov on "
               "|X - Y|^2 would give failure probability W2^2/eps^2 instead of eps (not used: the printed statement is checked)."),
    )


def run(args) -> tuple[dict, object]:
    results = compute(args)
    return results, figure(results)


def headline(results: dict) -> list[dict]:
    vac = results["vacuity"]
    rows = [dict(quantity="Theorem 2, Claims E.1, 5.1 hold pointwise on the Gaussian pairs (d = 1-3)", paper=None,
                 dpjax=results["all_checks_hold"], note=f"{len(results['pointwise'])} pairs, both directions")]
    for d in (1, 2, 3, 10, 100):
        if d in vac["dims"]:
            rows.append(dict(quantity=f"largest W2 at which Theorem 2 says anything, d = {d}", paper="'vacuous in high d'",
                             dpjax=float(f"{vac['largest_nonvacuous_w2'][vac['dims'].index(d)]:.3g}"), note="N(0, I_d) with its own L"))
    return rows


def figure(results: dict):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15, 4.4))
    # panel 1: the d = 1 shift pair, both sides of Theorem 2 along x
    ax = fig.add_subplot(1, 3, 1)
    c = min((p for p in results["pointwise"] if p["dim"] == 1 and p["shift"] > 0 and p["sd_p"] == p["sd_q"] == 1.0), key=lambda p: p["w2"])
    eps, L = c["eps"], c["lipschitz"]
    x = np.linspace(-4, 4, 400)[:, None]
    mq = np.array([c["shift"]])
    for lam, style in ((1.5 * eps, "-"), (0.5, "--")):
        pl = ws.gaussian_smoothed_density(x, lam, np.zeros(1), 1.0)
        ql = ws.gaussian_smoothed_density(x, lam, mq, 1.0)
        rhs = ws.theorem2_rhs(ql, 1, lam, eps, L)
        ax.plot(x[:, 0], pl, "k" + style, lw=1, label=f"p_lambda, lambda = {lam:.3g}")
        ax.plot(x[:, 0], rhs, "C3" + style, label=f"Theorem 2 bound, lambda = {lam:.3g}")
    ax.axhline(float(ws.gaussian_smoothed_density(np.zeros((1, 1)), 1.5 * eps, np.zeros(1), 1.0)[0]), color="gray", ls=":", lw=1,
               label="sup p_lambda: above it the bound is vacuous")
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 10)
    ax.set_xlabel("x")
    ax.set_title(f"d = 1: N(0, 1) vs N({c['shift']:g}, 1), W2 = {c['w2']:.3g}", fontsize=10)
    ax.legend(fontsize=7)
    vac = results["vacuity"]
    ax = fig.add_subplot(1, 3, 2)
    for j, w in enumerate(vac["w2"]):
        ax.plot(vac["dims"], vac["ratio"][w], f"C{j}o-", ms=3, label=f"W2 = {w:g}")
    ax.axhline(1.0, color="k", ls=":", lw=1, label="vacuous above (additive term >= sup p_lambda)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel("min over lambda of A / sup p_lambda")
    ax.set_title("Theorem 2's additive term against d (p = N(0, I_d))", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax = fig.add_subplot(1, 3, 3)
    ax.plot(vac["dims"], vac["largest_nonvacuous_w2"], "C3o-", ms=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel("largest W2 with a non-vacuous bound")
    ax.set_title("how close p and q must be for Theorem 2 to say anything", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("paper 000 §5: the Wasserstein + Lipschitz bound, checked on Gaussians, and its vacuity in high d", fontsize=10)
    fig.tight_layout()
    return fig
