"""``dpjax reproduce girsanov-double-well``: Theorem 5.2 of paper 001 on a non-convex potential,
against the exact last-iterate privacy (quadrature) and coupled-chain lower bounds.

Theorem 5.2 needs U_D = V_D + K with K strongly convex and smooth but V_D only of bounded
gradient: the potential may be non-convex. Case (chosen here; the paper has no example):

    U_D(x) = mu x^2 / 2 + B exp(-x^2 / (2 w^2)) - a_D x,   a_D = +a on D, -a on D',

a double well when B / w^2 > mu (wells near +-w sqrt(2 log(B/(mu w^2))), barrier at 0). K = mu x^2/2
(strong convexity mu, L = mu), V_D = the bump minus the tilt, sup |grad V_D| = B/(w sqrt(e)) + a
= c. ULA with step gamma (< 2 mu / L^2) from x_0 ~ N(0, 1) shared by the pair.

Reported per step: Theorem 5.2's RDP and eps(delta) (printed constant and the proof's strict
one); the exact last-iterate Rényi divergence (order ``--order``) and tight eps(delta) from
the laws propagated on a grid (:mod:`dpjax.accountants.samplers.markov_grid`, with the change under grid
refinement); lower bounds (95% by default) on eps(delta) from ``dpjax.run_coupled``. The posterior itself
(quadrature of exp(-U_D)) against the gamma -> 0 constant C4 with its square (and as printed,
without). The barrier height B is the free parameter that makes the case non-convex:
``sensitivity`` repeats the exact values and the bound for several B.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from ...accountants.samplers import girsanov
from ...accountants.samplers import markov_grid as mg
from .._report import stage

DEFAULTS = dict(mu=1.0, barrier=2.0, width=0.7, tilt=0.5, step_size=0.1, order=2.0, delta=1e-3, steps="1,2,5,10,20,50,100,200,500,1000",
                pairs=20000, quick_pairs=3000, grid_spacing=0.02, quick_grid_spacing=0.04)
SENSITIVITY_BARRIER = (0.0, 1.0, 2.0, 4.0)


def _steps(text: str) -> list[int]:
    try:
        out = sorted({int(t) for t in str(text).split(",") if t.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} violates a comma-separated list of positive integers") from None
    if not out or out[0] < 1:
        raise argparse.ArgumentTypeError(f"{text!r} violates a comma-separated list of positive integers")
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    parser.add_argument("--mu", type=float, default=d["mu"], help="strong convexity of K(x) = mu x^2 / 2")
    parser.add_argument("--barrier", type=float, default=d["barrier"], help="B: height of the bump B exp(-x^2/(2 w^2))")
    parser.add_argument("--width", type=float, default=d["width"], help="w: width of the bump")
    parser.add_argument("--tilt", type=float, default=d["tilt"], help="a: V_D has -a x on D and +a x on D'")
    parser.add_argument("--step-size", type=float, default=d["step_size"], help="ULA step gamma (< 2 / mu)")
    parser.add_argument("--order", type=float, default=d["order"], help="Rényi order of the RDP columns")
    parser.add_argument("--delta", type=float, default=d["delta"], help="delta of the eps columns")
    parser.add_argument("--steps", type=_steps, default=_steps(d["steps"]), help="recorded step counts")
    parser.add_argument("--pairs", type=int, default=None, help=f"coupled pairs (default {d['pairs']}, {d['quick_pairs']} with --quick; 0: skip)")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence of the coupled-chain lower bounds")
    parser.add_argument("--grid-spacing", type=float, default=None, help="quadrature grid spacing (default 0.01, 0.02 with --quick)")


class DoubleWell:
    """U(x) = mu x^2/2 + B exp(-x^2/(2 w^2)) - a x and the constants of Theorem 5.2."""

    def __init__(self, mu: float, barrier: float, width: float, tilt: float):
        self.mu = girsanov._positive("mu", mu, "Theorem 5.2 (K strongly convex)")
        self.B = girsanov._nonnegative("barrier", barrier, "the double well")
        self.w = girsanov._positive("width", width, "the double well")
        self.a = girsanov._positive("tilt", tilt, "the neighbouring pair (a_D - a_D' = 2a)")
        self.c = self.B / (self.w * math.sqrt(math.e)) + self.a  # sup |grad V_D|

    def potential(self, sign: float):
        return lambda x: 0.5 * self.mu * x * x + self.B * np.exp(-0.5 * (x / self.w) ** 2) - sign * self.a * x

    def drift(self, sign: float):  # -U'
        return lambda x: -(self.mu * x - self.B * x / self.w**2 * np.exp(-0.5 * (x / self.w) ** 2) - sign * self.a)

    @property
    def is_double_well(self) -> bool:
        return self.B / self.w**2 > self.mu


def _renyi(p, q, order):
    mask = (p > 0) & (q > 0)
    lp, lq = np.log(p[mask]), np.log(q[mask])
    from scipy.special import logsumexp

    return float(logsumexp(order * lp + (1 - order) * lq) / (order - 1))


def exact_laws(dw: DoubleWell, gamma: float, steps: list[int], spacing: float, order: float, delta: float) -> dict:
    """Last-iterate divergences by grid propagation (both directions, the larger), and the posterior's."""
    lo, hi = -8.0, 8.0
    grid = mg.uniform_grid(lo, hi, int(round((hi - lo) / spacing)) + 1)
    start = mg.gaussian_masses(grid, 0.0, 1.0)
    laws, lost = [], []
    for sign in (1.0, -1.0):
        P, _ = mg.langevin_transition(grid, dw.drift(sign), gamma)
        laws.append(mg.propagate(start, P, steps))
        lost.append(float(1.0 - laws[-1].sum(axis=1).min()))  # mass the chain has lost off the grid
    renyi = [max(_renyi(laws[0][i], laws[1][i], order), _renyi(laws[1][i], laws[0][i], order)) for i in range(len(steps))]
    eps = [mg.epsilon(laws[0][i], laws[1][i], delta) for i in range(len(steps))]
    post = []
    for sign in (1.0, -1.0):
        u = dw.potential(sign)(grid.points)
        m = grid.weights * np.exp(-(u - u.min()))
        post.append(m / m.sum())
    return dict(renyi=renyi, epsilon=eps, mass_off_grid=max(lost), grid_points=int(grid.points.size),
                posterior_renyi=max(_renyi(post[0], post[1], order), _renyi(post[1], post[0], order)),
                posterior_epsilon=mg.epsilon(post[0], post[1], delta))


def coupled_lower_bounds(dw: DoubleWell, gamma: float, steps: list[int], pairs: int, delta: float, seed: int, confidence: float = 0.95) -> dict:
    import jax
    import jax.numpy as jnp

    from ... import run_coupled
    from ...data import make_dataset, replace_one
    from ...estimators import epsilon_lower_bound
    from ...models.base import Model
    from ...samplers import ula

    def log_prior(x):
        return -(0.5 * dw.mu * jnp.sum(x**2) + dw.B * jnp.sum(jnp.exp(-0.5 * (x / dw.w) ** 2)))

    def log_likelihood(x, record):
        return jnp.sum(record["a"] * x)

    model = Model(log_likelihood=log_likelihood, log_prior=log_prior, dim=1, name="double_well")
    pair = replace_one(make_dataset(a=np.array([[dw.a]])), 0, {"a": np.array([-dw.a])})
    with stage(f"{pairs} coupled ULA pairs x {max(steps)} steps"):
        res = run_coupled(seed, model, pair, ula(gamma), num_pairs=pairs, num_steps=max(steps), record_steps=steps,
                          init=lambda k: jax.random.normal(k, (1,)), progress=False)
    bounds = [epsilon_lower_bound(res.positions[i, :, 0], res.neighbour_positions[i, :, 0], delta, confidence, seed=seed) for i in range(len(steps))]
    return dict(num_pairs=pairs, num_nonfinite=res.num_nonfinite, confidence=confidence, lower_bound=[b.epsilon for b in bounds], resolution_ceiling=bounds[0].resolution_ceiling)


def compute(args) -> dict:
    quick = getattr(args, "quick", False)
    seed = getattr(args, "seed", 0)
    dw = DoubleWell(args.mu, args.barrier, args.width, args.tilt)
    gamma = float(args.step_size)
    L = dw.mu  # grad K = mu x is mu-Lipschitz
    girsanov.thm52_constant(dw.c, dw.mu, L, gamma)  # checks gamma < 2 mu / L^2
    order, delta = float(args.order), float(args.delta)
    if not (order > 1 and math.isfinite(order)):
        raise ValueError(f"order={args.order!r} violates order > 1 (finite)")
    if not 0 < delta < 1:
        raise ValueError(f"delta={args.delta!r} violates 0 < delta < 1")
    confidence = float(getattr(args, "confidence", 0.95))
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r} violates 0 < confidence < 1")
    steps = list(args.steps) if not isinstance(args.steps, str) else _steps(args.steps)
    spacing = args.grid_spacing if args.grid_spacing is not None else (DEFAULTS["quick_grid_spacing"] if quick else DEFAULTS["grid_spacing"])
    pairs = args.pairs if args.pairs is not None else (DEFAULTS["quick_pairs"] if quick else DEFAULTS["pairs"])

    bounds = {}
    for mode in ("paper", "strict"):
        C = girsanov.thm52_constant(dw.c, dw.mu, L, gamma, mode)
        curve = girsanov.thm52_ula_last_iterate(dw.c, dw.mu, L, gamma, mode=mode)
        bounds[mode] = dict(constant=C, rdp=order * C / 4.0, epsilon=float(curve.epsilon(delta)), epsilon_closed_form=girsanov.girsanov_epsilon(C, delta))
    with stage(f"exact laws on a grid (spacing {spacing:g} and {2 * spacing:g})"):
        exact = exact_laws(dw, gamma, steps, spacing, order, delta)
        coarse = exact_laws(dw, gamma, steps, 2 * spacing, order, delta)
    refinement = dict(renyi=float(np.max(np.abs(np.array(exact["renyi"]) - coarse["renyi"]))),
                      epsilon=float(np.max(np.abs(np.array(exact["epsilon"]) - coarse["epsilon"]))))
    limit = dict(c4_paper_squared=order * girsanov.thm52_limit_constant(dw.c, dw.mu, L, "paper") / 4.0,
                 c4_strict=order * girsanov.thm52_limit_constant(dw.c, dw.mu, L, "strict") / 4.0,
                 c4_as_printed=order * girsanov.thm52_limit_constant_as_printed(dw.c, dw.mu, L) / 4.0,
                 exact_posterior_renyi=exact["posterior_renyi"], exact_posterior_epsilon=exact["posterior_epsilon"])
    with stage(f"sensitivity to the barrier B in {SENSITIVITY_BARRIER}"):
        sens = []
        for B in SENSITIVITY_BARRIER:
            d2 = DoubleWell(dw.mu, B, dw.w, dw.a)
            ex = exact_laws(d2, gamma, [max(steps)], 2 * spacing, order, delta)
            C = girsanov.thm52_constant(d2.c, d2.mu, L, gamma, "paper")
            sens.append(dict(barrier=B, double_well=d2.is_double_well, c=d2.c, thm52_rdp=order * C / 4.0, exact_renyi=ex["renyi"][0],
                             thm52_epsilon=float(girsanov.thm52_ula_last_iterate(d2.c, d2.mu, L, gamma).epsilon(delta)), exact_epsilon=ex["epsilon"][0]))
    monte = coupled_lower_bounds(dw, gamma, steps, pairs, delta, seed, confidence) if pairs > 0 else None
    tol_r, tol_e = refinement["renyi"] + 1e-9, refinement["epsilon"] + 1e-9
    checks = dict(
        thm52_paper_above_exact_renyi=bool(np.all(np.array(exact["renyi"]) <= bounds["paper"]["rdp"] + tol_r)),
        thm52_paper_above_exact_epsilon=bool(np.all(np.array(exact["epsilon"]) <= bounds["paper"]["epsilon"] + tol_e)),
        c4_squared_above_exact_posterior=bool(limit["exact_posterior_renyi"] <= limit["c4_paper_squared"]),
        is_double_well=dw.is_double_well,
        sensitivity_bound_above_exact=all(r["exact_renyi"] <= r["thm52_rdp"] for r in sens),
    )
    if monte is not None:
        checks["lower_bounds_below_exact"] = bool(np.all(np.array(monte["lower_bound"]) <= np.array(exact["epsilon"]) + tol_e))
    return dict(
        parameters=dict(mu=dw.mu, barrier=dw.B, width=dw.w, tilt=dw.a, c=dw.c, L=L, step_size=gamma, order=order, delta=delta, grid_spacing=spacing,
                        start="N(0, 1) shared", chosen_here="all (paper 001 has no non-convex example)"),
        steps=steps, bounds=bounds, exact=exact, grid_refinement_change=refinement, posterior_limit=limit, sensitivity=sens,
        monte_carlo=monte, checks=checks,
        notes=("Exact values: ULA's laws propagated on a uniform grid on [-8, 8] (Gaussian transition kernel), divergences of the "
               "discretised laws (larger direction); the change when the spacing doubles is 'grid_refinement_change'. Rényi "
               "divergences are at 'order'; Theorem 5.2's RDP is order * C3 / 4. Lower bounds: Clopper-Pearson at delta, confidence in monte_carlo."),
    )


def run(args) -> tuple[dict, object]:
    results = compute(args)
    return results, figure(results)


def headline(results: dict) -> list[dict]:
    p, b, ex = results["parameters"], results["bounds"], results["exact"]
    rows = [
        dict(quantity=f"double well (B = {p['barrier']:g}): Thm 5.2 eps at delta = {p['delta']:g}, paper / strict", paper=None,
             dpjax=f"{b['paper']['epsilon']:.3f} / {b['strict']['epsilon']:.3f}", note=f"c = {p['c']:.3f}, uniform in n"),
        dict(quantity=f"  exact eps of the last iterate (largest over n = {results['steps'][0]}..{results['steps'][-1]})", paper=None,
             dpjax=round(max(ex["epsilon"]), 4), note=f"quadrature; grid change {results['grid_refinement_change']['epsilon']:.1e}"),
        dict(quantity="  posterior: C4 (squared) / exact Rényi", paper=None,
             dpjax=f"{results['posterior_limit']['c4_paper_squared']:.3f} / {results['posterior_limit']['exact_posterior_renyi']:.4f}",
             note=f"printed C4 (no square) gives {results['posterior_limit']['c4_as_printed']:.3f}"),
    ]
    mc = results.get("monte_carlo")
    if mc is not None:
        rows.append(dict(quantity=f"  {100 * mc['confidence']:g}% lower bound from coupled chains (largest)", paper=None, dpjax=round(max(mc["lower_bound"]), 4),
                         note=f"{mc['num_pairs']} pairs"))
    return rows


def figure(results: dict):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(16, 4.4))
    steps = results["steps"]
    p, b, ex = results["parameters"], results["bounds"], results["exact"]
    ax = fig.add_subplot(1, 3, 1)
    x = np.linspace(-3.5, 3.5, 400)
    dw = DoubleWell(p["mu"], p["barrier"], p["width"], p["tilt"])
    for sign, label, color in ((1.0, "D (tilt +a)", "C0"), (-1.0, "D' (tilt -a)", "C1")):
        u = dw.potential(sign)(x)
        ax.plot(x, u - u.min(), color=color, label=f"U on {label}")
    ax.set_xlabel("x")
    ax.set_ylabel("potential (shifted to min 0)")
    ax.set_title(f"U = mu x^2/2 + B exp(-x^2/(2w^2)) -+ a x: B = {p['barrier']:g}, w = {p['width']:g}, a = {p['tilt']:g}", fontsize=9)
    ax.legend(fontsize=8)
    ax = fig.add_subplot(1, 3, 2)
    ax.axhline(b["paper"]["epsilon"], color="C3", ls="--", label="Theorem 5.2 (printed constant), all n")
    ax.axhline(b["strict"]["epsilon"], color="C3", ls=":", label="Theorem 5.2 (the proof's constant)")
    ax.plot(steps, ex["epsilon"], "k-o", ms=4, label="exact eps of the n-th iterate (quadrature)")
    mc = results.get("monte_carlo")
    if mc is not None:
        ax.plot(steps, mc["lower_bound"], "v", color="C2", ms=7, label=f"{100 * mc['confidence']:g}% lower bound, {mc['num_pairs']} coupled pairs")
    ax.axhline(results["posterior_limit"]["exact_posterior_epsilon"], color="gray", lw=1, label="posterior, exact")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step n")
    ax.set_ylabel(f"eps at delta = {p['delta']:g}")
    ax.set_title(f"ULA, gamma = {p['step_size']:g}: the non-convex bound against the exact privacy", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax = fig.add_subplot(1, 3, 3)
    sens = results["sensitivity"]
    bs = [r["barrier"] for r in sens]
    ax.plot(bs, [r["thm52_epsilon"] for r in sens], "C3o--", label="Theorem 5.2 (printed constant)")
    ax.plot(bs, [r["exact_epsilon"] for r in sens], "ko-", label=f"exact, step {steps[-1]}")
    ax.set_yscale("log")
    ax.set_xlabel("barrier height B (B = 0: convex)")
    ax.set_ylabel(f"eps at delta = {p['delta']:g}")
    ax.set_title("the bump enters c = sup|grad V_D| though D and D' share it", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle("paper 001 Theorem 5.2 on a double-well potential", fontsize=10)
    fig.tight_layout()
    return fig
