"""``dpjax reproduce girsanov-quadratic``: paper 001's Girsanov bounds against the exact
divergences of its closed-form case (NOTES 001).

The case (one dimension): K(x) = mu x^2 / 2, V_D(x) = -a_D x with |a_D| <= c and
a_D - a_D' = 2c (the worst neighbouring pair). ULA with step gamma is the AR(1) chain

    x_{k+1} = rho x_k + gamma a_D + sqrt(2 gamma / beta) z_{k+1},    rho = 1 - gamma mu,

started at a common x_0, with beta = 1 for ULA (Theorems 5.2, 5.4). Constants of the theorems
in this case: grad K is mu-Lipschitz, so any L >= mu is admissible (``--L``, default mu);
Thm 5.2's c (sup |grad V_D|) is c; Thm 5.4's c (|grad U_D - grad U_D'|) is 2c.

Exact values (the coupled chains share x_0 and the noise, so the two laws are Gaussians with the
same variance):

* last iterate after k steps: mean gap  dm_k = g sum_{j<k} rho^j = g (1 - rho^k)/(gamma mu),
  variance v_k = (2 gamma/beta) sum_{j<k} rho^{2j}; RDP_a = a dm_k^2 / (2 v_k).
* path (x_1, ..., x_k): each transition is a Gaussian mechanism with mean gap g and variance
  2 gamma/beta given the previous state, so RDP_a = a k g^2 / (2 (2 gamma/beta)).

Here g = 2 c gamma for ULA. For SGLD (eq. 31) with per-record linear terms v(x, d_i) = -a_i x,
|a_i| <= c, k(x) = mu x^2/2 and batch size s, the records shared by D and D' contribute the
same drift to both chains, and the differing record contributes (gamma/s)(a_i - a_i') = 2 c
gamma / s whenever it is in the batch. Theorems 5.6–5.8 assume it is in every batch (no
subsampling amplification); conditional on such a batch sequence (or with s = m, full batch)
both laws are Gaussian as above with g = 2 c gamma / s and noise variance 2 gamma / beta.
That is the exact value the SGLD bounds are compared to. For random batches that may miss the
record, and gamma mu <= 1, the true divergence is no larger: given the batch sequence both laws
are Gaussians whose mean gap (2 c gamma / s) sum_{j in S} rho^j is largest when every step
includes the record, and the unconditional laws are mixtures with the same weights on both
sides, where Rényi divergence is jointly quasi-convex. (For gamma mu > 1, rho < 0 and a batch
sequence that skips alternate steps has a larger gap; the value here is then not the worst case
over batch sequences.)
Theorem 5.6's c and 5.7's c are c (|grad v| <= c); Theorem 5.8's c (per-record gap) is 2c.

Every bound of paper 001 and every exact value here is linear in the order a (RDP_a = a x
const), so "RDP divided by the order" is the same number at every order; ``--order`` (default 2)
is the order at which the curves are evaluated and divided, and the JSON also carries each
curve's eps at ``--delta`` (default 1e-5) from its whole RDP curve (dpjax's default conversion),
the printed closed-form (eps, delta) statement of each theorem, and the exact tight eps of the
Gaussian laws (analytic Gaussian mechanism). ``--quick`` changes nothing: all values are closed
forms.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from ...accountants.samplers import girsanov
from ...accountants.curve import PrivacyCurve, Provenance
from ...accountants.mechanisms.gaussian_divergence import analytic_gaussian_epsilon

DEFAULTS = dict(c=1.0, L=1.0, mu=1.0, step_size=0.1, steps="1,10,100,1000", order=2.0, batch_size=10, inverse_temperature=1.0, delta=1e-5)


def _step_list(text: str) -> list[int]:
    try:
        steps = [int(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"steps={text!r} violates a comma-separated list of positive integers") from None
    if not steps or any(k < 1 for k in steps):
        raise argparse.ArgumentTypeError(f"steps={text!r} violates a comma-separated list of positive integers")
    return steps


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    parser.add_argument("--c", type=float, default=d["c"], help="bound on |a_D| (and per-record |a_i|); a_D - a_D' = 2c")
    parser.add_argument("--L", type=float, default=d["L"], help="smoothness constant used by the bounds (>= mu; K's own is mu)")
    parser.add_argument("--mu", type=float, default=d["mu"], help="strong convexity of K(x) = mu x^2 / 2")
    parser.add_argument("--step-size", type=float, default=d["step_size"], help="gamma, must be < 2 mu / L^2")
    parser.add_argument("--steps", type=_step_list, default=_step_list(d["steps"]), help="comma-separated step counts")
    parser.add_argument("--order", type=float, default=d["order"], help="Rényi order a at which RDP / a is reported")
    parser.add_argument("--batch-size", type=int, default=d["batch_size"], help="SGLD batch size s")
    parser.add_argument("--inverse-temperature", type=float, default=d["inverse_temperature"], help="SGLD beta")
    parser.add_argument("--delta", type=float, default=d["delta"], help="delta for the eps columns")


# ------------------------------------------------------------------------------------------
# exact divergences of the closed-form case
def _one_minus_power(rho: float, k: int) -> float:
    """1 - rho^k without cancellation when rho is close to 1."""
    if rho > 0:
        return -math.expm1(k * math.log(rho))
    return 1.0 - rho**k


def exact_last_rdp_per_order(drift_gap_per_step: float, step_size: float, strong_convexity: float, num_steps: int, inverse_temperature: float = 1.0) -> float:
    """RDP_a / a between the k-th iterates of the AR(1) chains on D and D' (common start).

    dm^2 / (2 v) with dm = g (1 - rho^k)/(gamma mu), v = (2 gamma/beta)(1 - rho^2k)/(1 - rho^2);
    using 1 - rho^2k = (1 - rho^k)(1 + rho^k) and 1 - rho^2 = gamma mu (2 - gamma mu):
    RDP_a / a = beta g^2 (2 - gamma mu)(1 - rho^k) / (4 gamma^2 mu (1 + rho^k)).
    """
    g, gamma, mu, beta = float(drift_gap_per_step), float(step_size), float(strong_convexity), float(inverse_temperature)
    if not (0 < gamma * mu < 2):
        raise ValueError(f"step_size={gamma:.6g} violates 0 < step_size * mu < 2 (the AR(1) chain must be stable)")
    rho = 1.0 - gamma * mu
    one_minus = _one_minus_power(rho, num_steps)
    one_plus = 2.0 - one_minus  # 1 + rho^k
    return beta * g * g * (2.0 - gamma * mu) * one_minus / (4.0 * gamma * gamma * mu * one_plus)


def exact_path_rdp_per_order(drift_gap_per_step: float, step_size: float, num_steps: int, inverse_temperature: float = 1.0) -> float:
    """RDP_a / a of the path: k Gaussian mechanisms with mean gap g and variance 2 gamma / beta."""
    g, gamma, beta = float(drift_gap_per_step), float(step_size), float(inverse_temperature)
    return num_steps * g * g * beta / (4.0 * gamma)


def _exact_curve(per_order: float, orders: np.ndarray, what: str, released: str) -> PrivacyCurve:
    prov = Provenance(f"exact Gaussian divergence, paper 001 closed-form case ({what})", "exact", ("K = mu x^2/2, V_D = -a_D x, a_D - a_D' = 2c",), released)
    return PrivacyCurve.from_rdp(orders, orders * per_order, prov)


# ------------------------------------------------------------------------------------------
def compute(args) -> dict:
    """Every bound and exact value (RDP / order) per step count (no figure)."""
    c = girsanov._positive("c", args.c, "the closed-form case (a_D - a_D' = 2c > 0)")
    mu, L, gamma = float(args.mu), float(args.L), float(args.step_size)
    # Theorem 5.2's conditions (mu > 0, L >= mu, gamma < 2 mu / L^2), checked by the accountant.
    girsanov.thm52_constant(c, mu, L, gamma)
    steps = list(args.steps) if not isinstance(args.steps, str) else _step_list(args.steps)
    order = float(args.order)
    if not (order > 1 and math.isfinite(order)):
        raise ValueError(f"order={args.order!r} violates order > 1 (finite)")
    s = girsanov._positive_int("batch_size", args.batch_size, "Theorems 5.7 and 5.8")
    beta = girsanov._positive("inverse_temperature", args.inverse_temperature, "Theorems 5.6–5.8")
    delta = float(args.delta)
    orders = np.array([order])

    def per_order(curve: PrivacyCurve) -> float:
        return float(curve.rdp_at([order])[0] / order)

    # ---- curves, keyed as in the JSON; each a list over step counts
    g_ula, g_sgld = 2.0 * c * gamma, 2.0 * c * gamma / s
    curves: dict[str, list[PrivacyCurve]] = {k: [] for k in (
        "exact_last", "exact_path", "thm52_paper", "thm52_strict", "thm54", "prop46_optimal_window",
        "exact_sgld_last", "exact_sgld_path", "thm56_paper", "thm56_strict", "thm57_paper", "thm57_strict",
        "thm57_optimal_window", "thm58",
    )}
    closed_form_eps: dict[str, list[float]] = {k: [] for k in curves if not k.startswith("exact")}
    tight_eps: dict[str, list[float]] = {k: [] for k in curves if k.startswith("exact")}
    grid = girsanov._orders(orders)
    for k in steps:
        ex = {
            "exact_last": exact_last_rdp_per_order(g_ula, gamma, mu, k),
            "exact_path": exact_path_rdp_per_order(g_ula, gamma, k),
            "exact_sgld_last": exact_last_rdp_per_order(g_sgld, gamma, mu, k, beta),
            "exact_sgld_path": exact_path_rdp_per_order(g_sgld, gamma, k, beta),
        }
        for name, value in ex.items():
            curves[name].append(_exact_curve(value, grid, name, "path" if name.endswith("path") else "last iterate"))
            # equal-variance Gaussians: RDP_a / a = mu_eff^2 / 2 with mu_eff = gap / sd
            tight_eps[name].append(analytic_gaussian_epsilon(math.sqrt(2.0 * value), delta))
        bounds = {
            "thm52_paper": girsanov.thm52_ula_last_iterate(c, mu, L, gamma, mode="paper", orders=orders),
            "thm52_strict": girsanov.thm52_ula_last_iterate(c, mu, L, gamma, mode="strict", orders=orders),
            "thm54": girsanov.thm54_ula_path(2.0 * c, gamma, k, orders=orders),
            "prop46_optimal_window": girsanov.thm52_ula_last_iterate(c, mu, L, gamma, mode="strict", window="optimal", num_steps=k, orders=orders),
            "thm56_paper": girsanov.thm56_sgld_last_iterate(c, mu, L, gamma, inverse_temperature=beta, mode="paper", orders=orders),
            "thm56_strict": girsanov.thm56_sgld_last_iterate(c, mu, L, gamma, inverse_temperature=beta, mode="strict", orders=orders),
            "thm57_paper": girsanov.thm57_sgld_last_iterate(c, mu, L, gamma, s, inverse_temperature=beta, mode="paper", orders=orders),
            "thm57_strict": girsanov.thm57_sgld_last_iterate(c, mu, L, gamma, s, inverse_temperature=beta, mode="strict", orders=orders),
            "thm57_optimal_window": girsanov.thm57_sgld_last_iterate(
                c, mu, L, gamma, s, inverse_temperature=beta, mode="strict", window="optimal", num_steps=k, orders=orders
            ),
            "thm58": girsanov.thm58_sgld_path(2.0 * c, gamma, k, s, inverse_temperature=beta, orders=orders),
        }
        for name, curve in bounds.items():
            curves[name].append(curve)
            constant = 4.0 * per_order(curve)  # RDP_a / a = C / 4
            form = "printed_without_quarter" if name in ("thm57_paper", "thm58") else "girsanov"
            closed_form_eps[name].append(girsanov.girsanov_epsilon(constant, delta, form))

    results: dict = {
        "steps": steps,
        "order": order,
        "parameters": {"c": c, "L": L, "mu": mu, "step_size": gamma, "batch_size": s, "inverse_temperature": beta, "delta": delta},
        "exact_last_rdp_per_order": [per_order(cv) for cv in curves["exact_last"]],
        "exact_path_rdp_per_order": [per_order(cv) for cv in curves["exact_path"]],
        "exact_sgld_last_rdp_per_order": [per_order(cv) for cv in curves["exact_sgld_last"]],
        "exact_sgld_path_rdp_per_order": [per_order(cv) for cv in curves["exact_sgld_path"]],
    }
    for name in closed_form_eps:
        results[name] = [per_order(cv) for cv in curves[name]]
    results["epsilon_at_delta"] = {
        "delta": delta,
        "from_rdp_curve": {name: [float(cv.epsilon(delta)) for cv in cvs] for name, cvs in curves.items()},
        "paper_closed_form": closed_form_eps,
        "exact_tight": tight_eps,
    }
    results["provenance"] = {name: cvs[0].provenance.describe() for name, cvs in curves.items()}
    # the gamma -> 0 limit (C4): the posterior pi_D = N(a_D/mu, 1/mu), mean gap 2c/mu, so RDP_a / a = 2 c^2 / mu
    exact_posterior = 2.0 * c * c / mu
    printed_c4 = girsanov.thm52_limit_constant_as_printed(c, mu, L) / 4.0
    results["posterior_limit"] = {
        "exact_rdp_per_order": exact_posterior,
        "c4_paper_squared": girsanov.thm52_limit_constant(c, mu, L, "paper") / 4.0,
        "c4_strict": girsanov.thm52_limit_constant(c, mu, L, "strict") / 4.0,
        "c4_as_printed": printed_c4,
        "as_printed_is_below_exact": bool(printed_c4 < exact_posterior),
        "note": "C4 / 4 = RDP / order; the printed C4 = c (2(L+1)/mu + 1) lacks its square (NOTES 001 erratum (iii))",
    }
    results["notes"] = (
        "Values are RDP_a / a (the same at every order a: all curves are linear in a). ULA: beta = 1, "
        "Thm 5.2 c = c, Thm 5.4 c = 2c. SGLD: exact values with the differing record in every batch "
        "(mean gap 2 c gamma / s per step), Thm 5.6/5.7 c = c, Thm 5.8 c = 2c. Thm 5.4 and 5.8 equal the exact "
        "path divergence (Gaussian mechanism). 'strict' uses the proofs' constants (+2c); "
        "'optimal_window' is Prop 4.6 with the steering window tau* = C_s/(L C_s + c) capped at n gamma "
        "(not in the paper). paper_closed_form for thm57_paper and thm58 is the printed C + sqrt(C log 1/delta)."
    )
    return results


def run(args) -> tuple[dict, object]:
    """Compute every bound and exact value (RDP / order) per step count, and a figure."""
    results = compute(args)
    return results, _figure(results)


def _figure(results: dict):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 5.4))
    steps = results["steps"]
    panels = (
        ("ULA (Theorems 5.2, 5.4)", [
            ("exact_last_rdp_per_order", "exact, last iterate", "k", "-", "o"),
            ("exact_path_rdp_per_order", "exact, path", "gray", "-", "s"),
            ("thm52_paper", "Thm 5.2 (paper)", "C0", "--", None),
            ("thm52_strict", "Thm 5.2 (strict)", "C1", "--", None),
            ("prop46_optimal_window", "Prop 4.6, optimal window (strict)", "C2", ":", "^"),
            ("thm54", "Thm 5.4 (path)", "C3", "-.", "x"),
        ]),
        (f"SGLD, batch size {results['parameters']['batch_size']} (Theorems 5.6–5.8)", [
            ("exact_sgld_last_rdp_per_order", "exact, last iterate", "k", "-", "o"),
            ("exact_sgld_path_rdp_per_order", "exact, path", "gray", "-", "s"),
            ("thm56_paper", "Thm 5.6 (paper)", "C4", "--", None),
            ("thm57_paper", "Thm 5.7 (paper)", "C0", "--", None),
            ("thm57_strict", "Thm 5.7 (strict)", "C1", "--", None),
            ("thm57_optimal_window", "Thm 5.7, optimal window (strict)", "C2", ":", "^"),
            ("thm58", "Thm 5.8 (path)", "C3", "-.", "x"),
        ]),
    )
    for i, (title, series) in enumerate(panels):
        ax = fig.add_subplot(1, 2, i + 1)
        for key, label, color, style, marker in series:
            ax.plot(steps, results[key], style, color=color, marker=marker, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("steps n")
        ax.set_ylabel(f"RDP / order (any order; a = {results['order']:g})")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=2, frameon=False)  # below: never over the curves
    p = results["parameters"]
    fig.suptitle(f"paper 001 closed-form case: c={p['c']:g}, mu={p['mu']:g}, L={p['L']:g}, step size={p['step_size']:g}", fontsize=11)
    fig.tight_layout()
    return fig


def headline(results: dict) -> list:
    """The bounds against the exact values at the largest step count (RDP / order; paper 001
    has no experiments, so the paper column is empty)."""
    k = results["steps"][-1]
    at = lambda key: results[key][-1]
    post = results["posterior_limit"]
    return [
        dict(quantity=f"ULA last iterate after {k} steps: exact RDP / order", paper=None, dpjax=at("exact_last_rdp_per_order")),
        dict(quantity="  Thm 5.2, the paper's constants", paper=None, dpjax=at("thm52_paper"),
             note="the printed '+c' should be '+2c' (NOTES 001); 'strict' uses the proof's constant"),
        dict(quantity="  Thm 5.2, strict constants", paper=None, dpjax=at("thm52_strict")),
        dict(quantity="  Prop 4.6 with the optimal window (strict)", paper=None, dpjax=at("prop46_optimal_window")),
        dict(quantity=f"ULA path to step {k}: exact RDP / order", paper=None, dpjax=at("exact_path_rdp_per_order")),
        dict(quantity="  Thm 5.4", paper=None, dpjax=at("thm54"), note="equal to the exact path divergence (a Gaussian mechanism per step)"),
        dict(quantity=f"SGLD (batch {results['parameters']['batch_size']}) last iterate: exact RDP / order", paper=None,
             dpjax=at("exact_sgld_last_rdp_per_order")),
        dict(quantity="  Thm 5.7, the paper's constants", paper=None, dpjax=at("thm57_paper")),
        dict(quantity="posterior (gamma -> 0): C4 / 4", paper=f"c (2(L+1)/mu + 1) / 4 = {post['c4_as_printed']:.4g}",
             dpjax=round(post["c4_paper_squared"], 6),
             note=f"exact posterior {post['exact_rdp_per_order']:.4g}: the printed C4 (no square) is below it, so not a bound"),
    ]
