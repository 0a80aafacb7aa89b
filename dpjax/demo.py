"""``dpjax demo``: paper 000's story at reduced n, in well under a minute on a 2-core CPU.

The story (paper 000, Figure 1): a sample from the Bayesian posterior is private, yet the
cyclic-SGLD iterates that are meant to approximate it are not, until the chain has mixed.

The set-up is paper 000's neighbouring pair (eq. 7) for Bayesian linear regression
y = theta x + noise (noise precision beta = 1, prior N(0, 1/alpha), alpha = 0.1):
D = n copies of the record (x_h, c x_h) with x_h = 1.8, and D' = D with one record replaced by
(x_h / 2, c x_h / 2). The slope c keeps Figure 1's ratio c / n = 1,165,165 / 1,149,019 at the
reduced n. Cyclic SGLD uses one record per step (n steps per epoch) with paper 000's step
eta = 2 / (alpha + n x_h^2 beta)^2, from a prior draw.

What the demo computes, all at the same delta:

- the posterior sample's exact eps (Lemma 4.1's closed forms: 0 here) and paper 000's Lemma
  4.3 bound on it (an upper bound, loose at this n);
- the exact eps of the SGLD iterate at every epoch end (a Gaussian on D against an n-component
  mixture on D'; :mod:`dpjax.accountants.samplers.cyclic_sgld`);
- certified 95% lower bounds on that eps at several epochs, from coupled chain pairs
  (:func:`dpjax.run_coupled` + :func:`~dpjax.estimators.epsilon_lower_bound`): they must lie
  below the exact curve (Bonferroni: all of them together with 95% confidence), and at the
  peak they certify a real leak;
- a different release for contrast: the whole path (every iterate, with the record order) to
  the peak epoch, measured from the recorded path privacy loss and bounded by paper 001's
  Prop 4.5 (Girsanov).
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

DEFAULTS = dict(n=1000, c=1014.0, alpha=0.1, beta=1.0, x_high=1.8, epochs=36, delta=0.01, chains=10_000, seed=0)
FIGURE1_N, FIGURE1_C = 1149019, 1165165.0
CONFIDENCE = 0.95
NUM_MEASURED_EPOCHS = 6


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    parser.add_argument("--n", type=int, default=d["n"], help=f"records (default {d['n']}; paper 000's Figure 1: {FIGURE1_N:,})")
    parser.add_argument("--c", type=float, default=d["c"], help="response slope of the records (x, c x) (default: n times Figure 1's c/n)")
    parser.add_argument("--epochs", type=int, default=d["epochs"], help=f"epochs of the exact curve (default {d['epochs']})")
    parser.add_argument("--delta", type=float, default=d["delta"], help=f"delta of every eps (default {d['delta']:g}, paper 000's)")
    parser.add_argument("--chains", type=int, default=d["chains"], help=f"coupled chain pairs for the measured lower bounds (default {d['chains']:,})")
    parser.add_argument("--seed", type=int, default=d["seed"], help="seed of the chains and the estimators (default 0)")
    parser.add_argument("--out", default="out", help="folder for demo.png (default: out)")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def _girsanov_path_bound(problem, epochs: int, delta: float):
    """Prop 4.5 for the released path, with the drift gap bounded on the visited region.

    At the same point theta the two datasets' drifts differ only on the step that uses the odd
    record (once per epoch), by (eta/2) n beta (x_h^2 - x_l^2) |c - theta| in Welling–Teh
    units, i.e. gap h = n beta (x_h^2 - x_l^2) |c - theta| for the Euler step gamma = eta/2.
    The chains start from the prior and move towards the posterior mean m* < c, so on the
    event theta in [-6/sqrt(alpha), c] (probability > 1 - 1e-8 at the start, and the chains
    only contract towards m*) |c - theta| <= c + 6/sqrt(alpha). The path constant is then
    C = beta_noise * (epochs * gamma) * h_max^2 with inverse temperature 1.
    """
    from .accountants.samplers.girsanov import prop45_path

    gamma = problem.eta / 2.0
    h_max = problem.n * problem.beta * (problem.x_high**2 - problem.x_low**2) * (abs(problem.c) + 6.0 / math.sqrt(problem.alpha))
    curve = prop45_path(h_max, epochs * gamma)
    return float(curve.epsilon(delta)), curve


def measured_epochs(peak: int, epochs: int, count: int = NUM_MEASURED_EPOCHS) -> list:
    """Epochs at which the chains are measured: spread over the rise, the peak and the return
    (from peak/3 to 1.6 peak, capped at ``epochs``), the peak always included."""
    last = max(1, min(epochs, int(round(1.6 * peak))))
    first = max(1, min(last, int(round(peak / 3))))
    picks = np.unique(np.round(np.linspace(first, last, count)).astype(int))
    return sorted(set(int(e) for e in picks) | {int(peak)})


def run_demo(args) -> int:
    """The CLI entry: compute, print the tables and the takeaway, save the figure."""
    compute_demo(args)
    return 0


def _stage(args, message):
    import contextlib

    from .experiments._report import stage

    return contextlib.nullcontext() if args.no_progress else stage(message)


def compute_demo(args) -> dict:
    """Everything the demo prints, as a dict (the rows, the exact curve, the measured epochs and
    lower bounds, the path numbers, the takeaway and the figure's path)."""
    from . import _validate
    from . import run_coupled
    from .accountants.samplers import cyclic_sgld as cs
    from .accountants.mechanisms import mixture as mx
    from .accountants.posterior import gaussian as post
    from .estimators import epsilon_lower_bound, privacy_loss_profile
    from .experiments.sgld_interim.monte_carlo import eq7_coupled_setup

    n = _validate.positive_int("n", args.n)
    num_epochs = _validate.positive_int("epochs", args.epochs)
    chains = _validate.positive_int("chains", args.chains)
    delta = _validate.in_range("delta", args.delta, 0.0, 1.0, low_open=True, high_open=True)
    c = _validate.positive("c", args.c)
    t_start = time.perf_counter()
    alpha, beta, x_high = DEFAULTS["alpha"], DEFAULTS["beta"], DEFAULTS["x_high"]
    x_low = x_high / 2.0
    problem = cs.CyclicSGLDProblem(n=n, alpha=alpha, beta=beta, x_high=x_high, x_low=x_low, c=c)

    # 1. the exact curve over epochs: a Gaussian (D) against a mixture over the odd record's position (D')
    with _stage(args, f"exact eps of the SGLD iterate at epochs 1..{num_epochs}"):
        exact = np.array([
            mx.mixture_epsilon(math.sqrt(law.variance), law.mixture(), delta)
            for law in (cs.epoch_law(problem, e) for e in range(1, num_epochs + 1))
        ])
    peak = int(np.argmax(exact)) + 1

    # 2. the posterior: exact, and paper 000's Lemma 4.3 bound at its order nu = 1 + 2 ln(1/delta)/1.6
    order = 1.0 + 2.0 * math.log(1.0 / delta) / 1.6
    posterior_exact = post.sgld_paper_posterior_exact(n, order, delta, alpha, beta, x_high, x_low, c).epsilon
    try:
        posterior_bound = post.sgld_paper_posterior_epsilon_bound(n, order, delta, alpha, beta, x_high, x_low, 0.1, c)
    except ValueError:  # Lemma 4.2's condition on n fails: the paper gives no bound at this n
        posterior_bound = float("nan")

    # 3. coupled chains, recorded at several epochs (the same eq. 7 set-up as `dpjax reproduce sgld-interim`)
    epochs_measured = measured_epochs(peak, num_epochs)
    _, model, pair, sampler, prior_draw = eq7_coupled_setup(n, c=c, alpha=alpha, beta=beta, x_high=x_high)
    steps = epochs_measured[-1] * n
    with _stage(args, f"{chains:,} coupled chain pairs of cyclic SGLD, {steps:,} steps (to epoch {epochs_measured[-1]})"):
        result = run_coupled(
            args.seed, model, pair, sampler, num_pairs=chains, num_steps=steps, record_steps=[e * n for e in epochs_measured],
            init=prior_draw, progress=False, chunk_size=max(n, 1000),
        )
    fin = result.finite_only()
    # Bonferroni: every epoch's bound at 1 - (1 - CONFIDENCE)/k, so all k hold together with probability >= CONFIDENCE
    per_epoch = 1.0 - (1.0 - CONFIDENCE) / len(epochs_measured)
    with _stage(args, f"lower bounds at epochs {', '.join(map(str, epochs_measured))} ({CONFIDENCE:.0%} simultaneous); the path's eps"):
        lower = [epsilon_lower_bound(fin.positions[i], fin.neighbour_positions[i], delta, per_epoch, seed=args.seed + i) for i in range(len(epochs_measured))]
        at_peak = epochs_measured.index(peak)
        loss = fin.path_loss[at_peak]
        grid = np.linspace(0.0, 4.0 * float(np.quantile(loss, 0.999)) + 1.0, 800)
        path_eps = float(privacy_loss_profile(loss, grid).curve().epsilon(delta))
        girsanov_eps, _ = _girsanov_path_bound(problem, peak, delta)
    lb_peak = lower[at_peak]
    back = next((e for e in range(peak + 1, num_epochs + 1) if exact[e - 1] <= 0.01), None)
    takeaway = (
        f"A posterior sample leaks nothing here (exact eps = {posterior_exact:.2g}), yet the SGLD iterate meant to approximate it "
        f"leaks eps = {exact[peak - 1]:.3g} at epoch {peak} (coupled chains certify >= {lb_peak.epsilon:.3g}); "
        + (f"it is private again only from epoch {back}." if back else f"it is still {exact[-1]:.2g} at epoch {num_epochs}.")
    )

    rows = [
        ("a posterior sample", f"{posterior_exact:.4g}", "exact: Lemma 4.1's closed forms"),
        ("a posterior sample", f"<= {posterior_bound:.4g}" if math.isfinite(posterior_bound) else "no bound",
         f"paper 000 Lemma 4.3 at order {order:.3g} (loose)"),
        (f"SGLD iterate, epoch {peak} (its peak)", f"{exact[peak - 1]:.4g}", f"exact: Gaussian vs {n:,}-part mixture"),
        (f"SGLD iterate, epoch {peak}", f">= {lb_peak.epsilon:.4g}", f"{len(fin.finite):,} coupled chain pairs ({CONFIDENCE:.0%}, all epochs)"),
    ]
    _print_report(args, n, c, delta, rows, exact, epochs_measured, lower, peak, path_eps, girsanov_eps, result, lb_peak, takeaway)
    fig = _figure(n, delta, exact, posterior_exact, posterior_bound, epochs_measured, lower, len(fin.finite), takeaway)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "demo.png", dpi=120, bbox_inches="tight")
    print(f"\nsaved {out / 'demo.png'} ({time.perf_counter() - t_start:.0f} s)")
    return dict(
        rows=rows,
        exact_curve=exact,
        peak_epoch=peak,
        posterior_exact=posterior_exact,
        posterior_bound=posterior_bound,
        measured_epochs=epochs_measured,
        lower_bounds=lower,
        lower_bound=lb_peak,
        path_epsilon=path_eps,
        girsanov_path_bound=girsanov_eps,
        num_nonfinite=result.num_nonfinite,
        takeaway=takeaway,
        figure_path=out / "demo.png",
    )


def _print_report(args, n, c, delta, rows, exact, epochs_measured, lower, peak, path_eps, girsanov_eps, result, lb_peak, takeaway):
    from . import _display

    ratio = "Figure 1's c/n" if abs(c / n - FIGURE1_C / FIGURE1_N) < 1e-3 else f"c/n = {c / n:.4g}"
    print(f"\ndpjax demo: paper 000's story at n = {n:,} (its Figure 1 has n = {FIGURE1_N:,})")
    print(_display.wrap_text(
        f"D = {n:,} copies of the record (x, y) = (1.8, {c:g} x 1.8), c = {c:g} keeping {ratio}; D' replaces one record by "
        f"(0.9, {c:g} x 0.9). Bayesian linear regression, sampled by cyclic SGLD: one record per step, {n:,} steps per epoch.",
        indent="  ", first="  "))
    print(_display.wrap_text(
        f"eps at delta = {delta:g} bounds what an observer of the released value learns about which dataset was used: any "
        f"test fires at most e^eps times more often on one than on the other (plus delta). eps = 0 means nothing is learnt; "
        f"the iterate's peak eps = {exact[peak - 1]:.3g} allows a test {math.exp(exact[peak - 1]):.3g} times likelier on one "
        "dataset.", indent="  ", first="  "))
    print()
    print(_display.text_table(["what is released", "eps", "by whose account"], rows, align="lrl"))
    print()
    print(f"the SGLD iterate, epoch by epoch ({CONFIDENCE:.0%} confidence that every certified value is below the exact):")
    table = [[str(e), f"{exact[e - 1]:.4g}", f">= {lb.epsilon:.4g}"] for e, lb in zip(epochs_measured, lower)]
    print(_display.text_table(["epoch", "exact eps", "certified"], table, indent=2))
    print(_display.wrap_text(
        f"({result.num_nonfinite} non-finite chain pairs; with {len(result.finite):,} pairs no lower bound can exceed "
        f"{lb_peak.resolution_ceiling:.3g}, the most this sample size can certify)", indent="  ", first="  "))
    print()
    print(_display.wrap_text(
        f"A different, far larger release: the whole path to epoch {peak} ({peak * n:,} iterates with the record order). "
        f"Measured eps = {path_eps:.3g} (from the recorded path privacy loss), Girsanov bound {girsanov_eps:.3g} "
        "(paper 001 Prop 4.5). The step that uses the odd record moves the two chains hundreds of noise standard "
        "deviations apart, so the path reveals which dataset was used; only the last iterate, which forgets most of "
        "the path, has the small eps above.", indent="  ", first=""))
    print()
    print(_display.wrap_text("Takeaway: " + takeaway, indent="  ", first=""))


def _figure(n, delta, exact, posterior_exact, posterior_bound, epochs_measured, lower, num_pairs, takeaway):
    import textwrap

    import matplotlib.figure

    fig = matplotlib.figure.Figure(figsize=(8.0, 5.0), layout="constrained")
    ax = fig.add_subplot()
    epochs = np.arange(1, exact.size + 1)
    ax.plot(epochs, exact, "-", color="C0", lw=2, label="SGLD iterate: exact eps")
    ax.plot(epochs_measured, [lb.epsilon for lb in lower], "^", color="C3", ms=8,
            label=f"SGLD iterate: certified lower bounds ({CONFIDENCE:.0%} for all together; {num_pairs:,} coupled pairs)")
    ax.axhline(posterior_exact, color="k", lw=2.5, label=f"posterior sample: exact eps = {posterior_exact:.2g}")
    if math.isfinite(posterior_bound):
        ax.axhline(posterior_bound, color="0.45", ls=":", lw=1.5,
                   label=f"posterior sample: Lemma 4.3 upper bound = {posterior_bound:.3g} (loose)")
    top = max(float(np.max(exact)), posterior_bound if math.isfinite(posterior_bound) else 0.0)
    ax.set_ylim(-0.04 * top, 1.12 * top)
    ax.set_xlim(0.5, exact.size + 0.5)
    ax.set_xlabel(f"epoch ({n:,} SGLD steps each)")
    ax.set_ylabel(f"eps at delta = {delta:g}")
    ax.grid(alpha=0.3)
    fig.suptitle(f"Paper 000 at n = {n:,}: a private posterior, a leaky interim SGLD iterate", fontsize=12)
    ax.set_title("\n".join(textwrap.wrap(takeaway, 118)), fontsize=8.5, loc="left")
    fig.legend(loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    return fig
