"""``dpjax reproduce noisy-monte-carlo``: paper 001 Propositions 3.7, 3.10 and A.5 on a closed-form case.

The released value is a chain average plus Laplace noise, A(D) = (1/N) sum_{n=1}^N X_n^D + L.
Prop 3.10 sets L ~ Laplace((2C + gamma_f)/eps), with C the radius within which the average
lies around pi_D(f) with probability 1 - delta~ (Assumption 3.8) and gamma_f the largest gap
between neighbouring posterior means (Assumption 3.9), and guarantees (eps, 2 delta~ - delta~^2)-DP.

Case (parameters chosen here; the paper has no experiment): the posterior pair of
``mcmc-asymptotic`` (Gaussian-mean posterior, ``--records`` records on [-1, 1], the first moved
by ``--shift``, prior precision lambda), f(x) = x, and the exact AR(1) kernel (pi-invariant,
``--rho``) run for N = ``--num-samples`` steps from the prior. The average is then Gaussian with
a closed-form mean and variance (:func:`dpjax.experiments.girsanov.noisy_monte_carlo_bounds.ar1_average_law`),
so C is exact (the (1 - delta~) radius of a Gaussian around pi_D(f), the larger over D, D'), and
the release is a Gaussian convolved with a Laplace, whose exact privacy comes from quadrature.

Reported: the guarantee (eps, delta) of Prop 3.10; the exact eps of the release at that delta and
at delta = 0 (the release's loss is bounded by |a_D - a_D'|/b); Prop 3.7 with the synchronous
coupling (the two averages then differ by a deterministic |a_D - a_D'| <= gamma_f, so eta can be
that gap with delta~ = 0: Laplace(gap/eps) is exactly eps-DP); lower bounds (95% by default) on eps from
simulated releases (coupled chain pairs, :func:`dpjax.samplers.mala.run_metropolis_pair`, plus
Laplace draws); the empirical rate of |average - pi_D(f)| > C against delta~; the printed variance
of the release (eta/eps) against the correct one (2 (eta/eps)^2, NOTES 001 erratum); and the
sensitivity of the noise scale and the exact eps to the two free parameters delta~ and N.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from . import noisy_monte_carlo_bounds as nmc
from .._report import stage
from .mcmc_asymptotic import Problem

DEFAULTS = dict(records=10, prior_precision=1.0, shift=4.0, rho=0.78, num_samples=1000, epsilon=1.0, delta_tilde=1e-3,
                releases=200_000, quick_releases=20_000)
SWEEP_DELTA_TILDE = np.logspace(-8, -1, 15)
SWEEP_SAMPLES = (100, 1000, 10000)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    parser.add_argument("--records", type=int, default=d["records"], help="number of records, evenly spread on [-1, 1]")
    parser.add_argument("--prior-precision", type=float, default=d["prior_precision"], help="lambda: prior N(0, 1/lambda), also the chains' start")
    parser.add_argument("--shift", type=float, default=d["shift"], help="the neighbour moves the first record by this much")
    parser.add_argument("--rho", type=float, default=d["rho"], help="the exact AR(1) kernel's autocorrelation")
    parser.add_argument("--num-samples", type=int, default=d["num_samples"], help="N: chain steps averaged")
    parser.add_argument("--epsilon", type=float, default=d["epsilon"], help="eps of the Laplace noise (Assumption 3.5)")
    parser.add_argument("--delta-tilde", type=float, default=d["delta_tilde"], help="delta~ of Assumption 3.8")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence of the coupled-chain lower bounds")
    parser.add_argument("--releases", type=int, default=None, help=f"simulated releases per dataset (default {d['releases']}, {d['quick_releases']} with --quick; 0: skip)")


class GaussianLaplace:
    """N(mean, sd^2) + Laplace(0, scale) with ``cdf`` and ``sf`` (the oracle of the lower bound)."""

    def __init__(self, mean, sd, scale):
        self.mean, self.sd, self.scale = float(mean), float(sd), float(scale)

    def cdf(self, x):
        return nmc.gaussian_laplace_cdf(x, self.mean, self.sd, self.scale)

    def sf(self, x):
        return nmc.gaussian_laplace_cdf(-np.asarray(x, dtype=np.float64), -self.mean, self.sd, self.scale)


def mechanism(problem: Problem, rho: float, num_samples: int, epsilon: float, delta_tilde: float) -> dict:
    """Everything exact about the Prop 3.10 release for one (N, delta~)."""
    from .mcmc_convergence import exact_ar1_parameters

    _, noise = exact_ar1_parameters(rho, problem.h)
    laws = [nmc.ar1_average_law(rho, noise, m, num_samples, 0.0, 1.0 / problem.lam) for m in problem.means]
    sd = math.sqrt(laws[0].variance)  # the same on D and D'
    radii = [nmc.concentration_radius(law.mean - m, sd, delta_tilde) for law, m in zip(laws, problem.means)]
    C = max(radii)
    gamma_f = abs(problem.means[0] - problem.means[1])
    scale = nmc.prop310_noise_scale(C, gamma_f, epsilon)
    delta = nmc.prop310_delta(delta_tilde)
    gap = abs(laws[0].mean - laws[1].mean)
    return dict(
        average_means=[law.mean for law in laws], average_sd=sd, concentration=C, gamma_f=gamma_f, eta=2 * C + gamma_f, scale=scale,
        guarantee=dict(epsilon=epsilon, delta=delta),
        average_gap=gap,
        exact_epsilon_at_guarantee_delta=nmc.gaussian_laplace_epsilon(laws[0].mean, laws[1].mean, sd, scale, delta),
        exact_epsilon_at_delta_0=gap / scale,
        exact_delta_at_guarantee_epsilon=nmc.gaussian_laplace_hockey_stick(laws[0].mean, laws[1].mean, sd, scale, epsilon),
    )


def compute(args) -> dict:
    """The numbers (no figure)."""
    quick = getattr(args, "quick", False)
    seed = getattr(args, "seed", 0)
    problem = Problem(args.records, args.prior_precision, args.shift, 0.01)  # the step size is unused here
    rho = float(args.rho)
    if not (0.0 <= rho < 1.0):
        raise ValueError(f"rho={args.rho!r} violates 0 <= rho < 1")
    N = int(args.num_samples)
    if N < 1:
        raise ValueError(f"num_samples={args.num_samples!r} violates num_samples >= 1")
    eps = float(args.epsilon)
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"epsilon={args.epsilon!r} violates epsilon > 0 (finite)")
    dt = float(args.delta_tilde)
    if not (0 < dt < 1):
        raise ValueError(f"delta_tilde={args.delta_tilde!r} violates 0 < delta_tilde < 1")
    confidence = float(getattr(args, "confidence", 0.95))
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r} violates 0 < confidence < 1")
    releases = args.releases if args.releases is not None else (DEFAULTS["quick_releases"] if quick else DEFAULTS["releases"])

    with stage("exact release laws and their privacy (quadrature)"):
        main = mechanism(problem, rho, N, eps, dt)
        sync_scale = main["average_gap"] / eps  # Prop 3.7 with the synchronous coupling: eta = |a_D - a_D'|, delta~ = 0
        sync = dict(eta=main["average_gap"], scale=sync_scale, guarantee=dict(epsilon=eps, delta=0.0),
                    exact_epsilon_at_delta_0=main["average_gap"] / sync_scale,
                    exact_epsilon_at_guarantee_delta=nmc.gaussian_laplace_epsilon(*main["average_means"], main["average_sd"], sync_scale, main["guarantee"]["delta"]))
        delta_grid = np.logspace(-8, -0.5, 40)
        curves = {
            "prop310": [nmc.gaussian_laplace_epsilon(*main["average_means"], main["average_sd"], main["scale"], d) for d in delta_grid],
            "prop37_synchronous": [nmc.gaussian_laplace_epsilon(*main["average_means"], main["average_sd"], sync_scale, d) for d in delta_grid],
        }
    variances = dict(
        average=main["average_sd"] ** 2,
        release_correct=nmc.release_variance(main["average_sd"] ** 2, main["eta"], eps),
        release_printed=nmc.printed_release_variance(main["average_sd"] ** 2, main["eta"], eps),
    )
    with stage(f"sensitivity to delta~ ({SWEEP_DELTA_TILDE.size} values) and N {SWEEP_SAMPLES}"):
        sweep = {int(n): [mechanism(problem, rho, int(n), eps, float(d)) for d in SWEEP_DELTA_TILDE] for n in SWEEP_SAMPLES}
        sensitivity = dict(delta_tilde=SWEEP_DELTA_TILDE, num_samples=list(SWEEP_SAMPLES),
                           scale={n: [m["scale"] for m in rows] for n, rows in sweep.items()},
                           exact_epsilon_at_guarantee_delta={n: [m["exact_epsilon_at_guarantee_delta"] for m in rows] for n, rows in sweep.items()},
                           exact_epsilon_at_delta_0={n: [m["exact_epsilon_at_delta_0"] for m in rows] for n, rows in sweep.items()})

    monte = simulate(problem, rho, N, main, sync_scale, releases, seed, confidence) if releases > 0 else None
    checks = dict(
        exact_below_guarantee=bool(main["exact_epsilon_at_guarantee_delta"] <= eps and main["exact_delta_at_guarantee_epsilon"] <= main["guarantee"]["delta"]),
        synchronous_is_tight=bool(abs(sync["exact_epsilon_at_delta_0"] - eps) < 1e-12),
    )
    if monte is not None:
        checks["lower_bound_below_exact"] = bool(monte["prop310"]["lower_bound"] <= main["exact_epsilon_at_guarantee_delta"] + 1e-9)
        checks["lower_bound_below_exact_synchronous"] = bool(monte["prop37_synchronous"]["lower_bound"] <= sync["exact_epsilon_at_guarantee_delta"] + 1e-9)
        ex = monte["exceedance"]
        checks["exceedance_matches_the_exact_rate"] = bool(ex["lower_1e6"] <= ex["expected"] <= ex["upper_1e6"] and ex["expected"] <= dt * (1 + 1e-9))
    results = dict(
        parameters=dict(records=int(args.records), prior_precision=problem.lam, shift=problem.shift, rho=rho, num_samples=N, epsilon=eps,
                        delta_tilde=dt, f="identity", chain="exact AR(1) kernel (pi-invariant), start = prior",
                        chosen_here="all (paper 001 has no experiment); delta~ and N are free: see 'sensitivity'"),
        posterior=dict(means=list(problem.means), sd=problem.sd),
        prop310=main, prop37_synchronous=sync, variance=variances,
        delta_grid=delta_grid, epsilon_curves=curves, sensitivity=sensitivity, monte_carlo=monte, checks=checks,
        notes=("Prop 3.10's delta = 2 delta~ - delta~^2 is slack here: the averages' mean gap is below gamma_f, so the release "
               "is pure eps'-DP with eps' = |a_D - a_D'|/b < eps. The synchronous coupling of Prop 3.7 makes the averages' "
               "difference deterministic, so eta = that difference and delta~ = 0: Laplace(eta/eps) is then exactly eps-DP "
               "(tight). Printed Var(A) = Var(avg) + eta/eps is wrong (Laplace of scale b has variance 2 b^2)."),
    )
    return results


def run(args) -> tuple[dict, object]:
    results = compute(args)
    return results, figure(results)


def simulate(problem: Problem, rho: float, N: int, main: dict, sync_scale: float, releases: int, seed: int, confidence: float = 0.95) -> dict:
    """Releases from coupled chain pairs plus Laplace noise, and lower confidence bounds on eps."""
    import jax

    from ...data import replace_one
    from ...estimators import epsilon_lower_bound
    from ...models.gaussian_mean import gaussian_mean, gaussian_mean_dataset
    from ...samplers.mala import exact_ar1, run_metropolis_pair

    model = gaussian_mean(dim=1, prior_precision=problem.lam)
    pair = replace_one(gaussian_mean_dataset(problem.x), 0, {"x": np.array([problem.x_neighbour[0]])})
    sd0 = 1.0 / math.sqrt(problem.lam)
    with stage(f"{releases} coupled exact-AR(1) pairs x {N} steps"):
        run = run_metropolis_pair(seed, model, pair, exact_ar1(rho), num_pairs=releases, num_steps=N, init=lambda k: sd0 * jax.random.normal(k, (1,)))
    avg_d, avg_n = run.path_mean[:, 0], run.neighbour_path_mean[:, 0]
    rng = np.random.default_rng(seed)
    out = {"releases": releases, "num_nonfinite": run.num_nonfinite, "confidence": confidence}
    delta = main["guarantee"]["delta"]
    for name, scale in (("prop310", main["scale"]), ("prop37_synchronous", sync_scale)):
        rel_d = avg_d + rng.laplace(0.0, scale, releases)
        rel_n = avg_n + rng.laplace(0.0, scale, releases)
        refs = (GaussianLaplace(main["average_means"][0], main["average_sd"], scale), GaussianLaplace(main["average_means"][1], main["average_sd"], scale))
        lb = epsilon_lower_bound(rel_d, rel_n, delta, confidence, seed=seed, reference=refs)
        out[name] = dict(lower_bound=lb.epsilon, oracle_epsilon=lb.oracle_epsilon, resolution_ceiling=lb.resolution_ceiling, delta=delta)
        if name == "prop310":
            out["histogram_samples"] = dict(D=rel_d[:20000], D_prime=rel_n[:20000])
    # Assumption 3.8 on the simulated averages: P(|avg - pi_D(f)| > C) should be <= delta~ (it is = delta~ on the worse side)
    from scipy import stats

    exceed = int(np.sum(np.abs(avg_d - problem.means[0]) > main["concentration"]) + np.sum(np.abs(avg_n - problem.means[1]) > main["concentration"]))
    total = 2 * releases
    ci = stats.binomtest(exceed, total).proportion_ci(0.99, method="exact")
    sd, C = main["average_sd"], main["concentration"]
    expected = float(np.mean([stats.norm.sf((C - (a - m)) / sd) + stats.norm.sf((C + (a - m)) / sd)
                              for a, m in zip(main["average_means"], problem.means)]))  # <= delta~, = on the worse side
    wide = stats.binomtest(exceed, total).proportion_ci(1 - 1e-6, method="exact")  # the check's interval: fails by chance 1e-6
    out["exceedance"] = dict(count=exceed, total=total, rate=exceed / total, expected=expected, lower_99=float(ci.low), upper_99=float(ci.high),
                             lower_1e6=float(wide.low), upper_1e6=float(wide.high))
    return out


def headline(results: dict) -> list[dict]:
    m, s, p = results["prop310"], results["prop37_synchronous"], results["parameters"]
    rows = [
        dict(quantity=f"Prop 3.10 guarantee (Laplace scale {m['scale']:.4g})", paper="(eps, 2 delta~ - delta~^2)",
             dpjax=f"({p['epsilon']:g}, {m['guarantee']['delta']:.4g})", note=f"N = {p['num_samples']}, delta~ = {p['delta_tilde']:g}; C = {m['concentration']:.4g}"),
        dict(quantity="exact eps of the release at that delta", paper=None, dpjax=round(m["exact_epsilon_at_guarantee_delta"], 4),
             note=f"at delta = 0: {m['exact_epsilon_at_delta_0']:.4f} (= |a_D - a_D'| / b); the bound's delta is slack"),
        dict(quantity="Prop 3.7, synchronous coupling: exact eps at delta = 0", paper=None, dpjax=round(float(s["exact_epsilon_at_delta_0"]), 6),
             note=f"tight; noise scale {s['scale']:.4g} vs Prop 3.10's {m['scale']:.4g}"),
        dict(quantity="Var(release)", paper=f"Var(avg) + eta/eps = {results['variance']['release_printed']:.4g}",
             dpjax=round(results["variance"]["release_correct"], 6), note="erratum: Laplace(b) has variance 2 b^2"),
    ]
    mcr = results.get("monte_carlo")
    if mcr is not None:
        rows.append(dict(quantity=f"{100 * mcr['confidence']:g}% lower bound from simulated releases (Prop 3.10 noise)", paper=None, dpjax=round(mcr["prop310"]["lower_bound"], 4),
                         note=f"{mcr['releases']} releases per dataset; the most they can certify: {mcr['prop310']['oracle_epsilon']:.4f}"))
    return rows


def figure(results: dict):
    from matplotlib.figure import Figure

    from . import noisy_monte_carlo_bounds as nm

    fig = Figure(figsize=(15, 4.4))
    m, p = results["prop310"], results["parameters"]
    ax = fig.add_subplot(1, 3, 1)
    lo = min(m["average_means"]) - 6 * m["scale"]
    hi = max(m["average_means"]) + 6 * m["scale"]
    xs = np.linspace(lo, hi, 600)
    mcr = results.get("monte_carlo")
    for i, (label, color) in enumerate((("D", "C0"), ("D'", "C1"))):
        if mcr is not None:
            key = "D" if i == 0 else "D_prime"
            ax.hist(mcr["histogram_samples"][key], bins=120, range=(lo, hi), density=True, alpha=0.3, color=color, label=f"simulated releases, {label}")
        ax.plot(xs, np.exp(nm.gaussian_laplace_logpdf(xs, m["average_means"][i], m["average_sd"], m["scale"])), color=color, label=f"exact density, {label}")
    for i, color in enumerate(("C0", "C1")):
        ax.axvline(results["posterior"]["means"][i], color=color, ls=":", lw=1)
    ax.set_xlabel("released value A(D) = average + Laplace")
    ax.set_title(f"Prop 3.10 release: N = {p['num_samples']}, Laplace scale {m['scale']:.3g}", fontsize=10)
    ax.legend(fontsize=7)

    ax = fig.add_subplot(1, 3, 2)
    dg = np.asarray(results["delta_grid"])
    ax.plot(dg, results["epsilon_curves"]["prop310"], "C0-", label="exact eps(delta), Prop 3.10 noise")
    ax.plot(dg, results["epsilon_curves"]["prop37_synchronous"], "C2-", label="exact eps(delta), Prop 3.7 noise (synchronous coupling)")
    ax.plot([m["guarantee"]["delta"]], [p["epsilon"]], "C0*", ms=15, alpha=0.5, label="Prop 3.10 guarantee")
    ax.plot([1e-8], [p["epsilon"]], "C2*", ms=15, alpha=0.5, label="Prop 3.7 guarantee (delta = 0)")
    if mcr is not None:
        for key, color, label in (("prop310", "C0", "Prop 3.10"), ("prop37_synchronous", "C2", "Prop 3.7")):
            ax.plot([mcr[key]["delta"]], [mcr[key]["lower_bound"]], "v", color=color, mec="k", ms=8, zorder=5,
                    label=f"{100 * mcr['confidence']:g}% lower bound from {mcr['releases']} simulated releases ({label} noise)")
    ax.set_xscale("log")
    ax.set_xlabel("delta")
    ax.set_ylabel("eps")
    ax.set_title("guarantees above the exact privacy above the lower bounds", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)

    ax = fig.add_subplot(1, 3, 3)
    sens = results["sensitivity"]
    dts = np.asarray(sens["delta_tilde"])
    for j, n in enumerate(sens["num_samples"]):
        ax.plot(dts, sens["scale"][n], f"C{j}-", label=f"Laplace scale b, N = {n}")
        ax.plot(dts, sens["exact_epsilon_at_delta_0"][n], f"C{j}--", label=f"exact eps at delta = 0, N = {n}")
    ax.axhline(p["epsilon"], color="k", lw=1, ls=":", label="guaranteed eps")
    ax.set_xscale("log")
    ax.set_xlabel("delta~ (Assumption 3.8), a free parameter")
    ax.set_title("sensitivity to delta~ and N", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle(f"paper 001 §3.2, noisy Monte Carlo: exact AR(1) kernel (rho = {p['rho']:g}) on the Gaussian-mean posterior, "
                 f"eps = {p['epsilon']:g}, delta~ = {p['delta_tilde']:g}", fontsize=10)
    fig.tight_layout()
    return fig
