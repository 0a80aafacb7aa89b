"""``dpjax demo``: paper 000's story at reduced n, in about a minute on a laptop CPU.

Bayesian linear regression y = theta x + noise on paper 000's neighbouring pair (eq. 7):
D1 = n copies of (x_h, c x_h), D2 = D1 with one record replaced by (x_h/2, c x_h/2), sampled
by cyclic SGLD (batch size 1, eta = 2/(alpha + n x_h^2 beta)^2, theta_0 from the prior).

The table puts side by side, at the epoch where the interim iterate leaks most:
- the posterior's exact eps (Lemma 4.1 closed forms) and paper 000's Lemma 4.3 bound,
- the exact eps of the interim iterate (Gaussian vs n-component mixture; dpjax.accountants),
- a lower confidence bound from coupled chains (dpjax.run_coupled + epsilon_lower_bound),
- the Girsanov path bound (paper 001 Prop 4.5) and the path eps measured from the recorded
  path privacy loss.
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

DEFAULTS = dict(n=1000, c=1014.0, alpha=0.1, beta=1.0, x_high=1.8, epochs=30, delta=0.01, chains=20_000, seed=0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    parser.add_argument("--n", type=int, default=d["n"], help="records (paper 000 Figure 1: 1149019)")
    parser.add_argument("--c", type=float, default=d["c"], help="response slope; c/n as in Figure 1 by default")
    parser.add_argument("--epochs", type=int, default=d["epochs"], help="epochs of the exact curve")
    parser.add_argument("--delta", type=float, default=d["delta"])
    parser.add_argument("--chains", type=int, default=d["chains"], help="coupled chain pairs for the Monte Carlo")
    parser.add_argument("--seed", type=int, default=d["seed"])
    parser.add_argument("--out", default="out", help="folder for demo.png")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


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
    from .accountants.girsanov import prop45_path

    gamma = problem.eta / 2.0
    h_max = problem.n * problem.beta * (problem.x_high**2 - problem.x_low**2) * (abs(problem.c) + 6.0 / math.sqrt(problem.alpha))
    curve = prop45_path(h_max, epochs * gamma)
    return float(curve.epsilon(delta)), curve


def run_demo(args) -> int:
    """The CLI entry: compute, print the table, save the figure."""
    compute_demo(args)
    return 0


def compute_demo(args) -> dict:
    """Everything the demo prints, as a dict (the table rows, the exact curve, the figure path)."""
    from . import run_coupled
    from .accountants import cyclic_sgld as cs
    from .accountants import mixture as mx
    from .accountants import posterior as post
    from .estimators import epsilon_lower_bound, privacy_loss_profile
    from .experiments.sgld_interim_mc import eq7_coupled_setup

    t_start = time.perf_counter()
    n, c, delta = args.n, args.c, args.delta
    alpha, beta, x_high = DEFAULTS["alpha"], DEFAULTS["beta"], DEFAULTS["x_high"]
    x_low = x_high / 2.0
    problem = cs.CyclicSGLDProblem(n=n, alpha=alpha, beta=beta, x_high=x_high, x_low=x_low, c=c)

    # 1. exact curve over epochs: Gaussian (D1) vs mixture over the odd record's position (D2)
    exact = []
    for e in range(1, args.epochs + 1):
        law = cs.epoch_law(problem, e)
        exact.append(mx.mixture_epsilon(math.sqrt(law.variance), law.mixture(), delta))
    exact = np.array(exact)
    peak = int(np.argmax(exact)) + 1

    # 2. posterior: exact and paper 000 Lemma 4.3 (order nu = 1 + 2 ln(1/delta)/1.6)
    order = 1.0 + 2.0 * math.log(1.0 / delta) / 1.6
    posterior_exact = post.sgld_paper_posterior_exact(n, order, delta, alpha, beta, x_high, x_low, c).epsilon
    try:
        posterior_bound = post.sgld_paper_posterior_epsilon_bound(n, order, delta, alpha, beta, x_high, x_low, 0.1, c)
    except ValueError:
        posterior_bound = float("nan")

    # 3. coupled chains up to the peak epoch (the same eq. 7 set-up as `dpjax reproduce sgld-interim`)
    _, model, pair, sampler, prior_draw = eq7_coupled_setup(n, c=c, alpha=alpha, beta=beta, x_high=x_high)

    result = run_coupled(
        args.seed, model, pair, sampler, num_pairs=args.chains, num_steps=peak * n, record_steps=[peak * n],
        init=prior_draw, progress=not args.no_progress, chunk_size=max(n, 1000),
    )
    fin = result.finite_only()
    lb = epsilon_lower_bound(fin.positions[0], fin.neighbour_positions[0], delta, 0.95, seed=args.seed)
    loss = fin.path_loss[0]
    grid = np.linspace(0.0, 4.0 * float(np.quantile(loss, 0.999)) + 1.0, 800)
    path_eps = float(privacy_loss_profile(loss, grid).curve().epsilon(delta))
    girsanov_eps, _ = _girsanov_path_bound(problem, peak, delta)

    rows = [
        ("posterior sample, exact", posterior_exact, "Lemma 4.1 closed forms"),
        ("posterior sample, paper 000 Lemma 4.3 bound", posterior_bound, f"RDP order {order:.2f}"),
        (f"SGLD iterate at epoch {peak}, exact", exact[peak - 1], "Gaussian vs n-component mixture"),
        (f"SGLD iterate at epoch {peak}, measured lower bound", lb.epsilon, f"95% confidence, {len(fin.finite)} coupled pairs"),
        (f"SGLD path to epoch {peak}, measured", path_eps, "recorded path privacy loss (with the order)"),
        (f"SGLD path to epoch {peak}, Girsanov bound", girsanov_eps, "paper 001 Prop 4.5"),
    ]
    print(f"\ndpjax demo: cyclic SGLD on paper 000's pair, n = {n}, c = {c:g}, delta = {delta:g}")
    print(f"{'what is released':<48} {'epsilon':>12}  source")
    for what, eps, src in rows:
        print(f"{what:<48} {eps:>12.4g}  {src}")
    print(f"(non-finite chain pairs: {result.num_nonfinite}; lower bound's ceiling at this sample size: {lb.resolution_ceiling:.3g})")

    import matplotlib.figure

    fig = matplotlib.figure.Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    epochs = np.arange(1, args.epochs + 1)
    ax.plot(epochs, exact, marker=".", label="SGLD iterate, exact eps")
    ax.axhline(posterior_exact, color="k", ls="--", label="posterior, exact eps")
    if math.isfinite(posterior_bound):
        ax.axhline(posterior_bound, color="gray", ls=":", label="posterior, Lemma 4.3 bound")
    ax.plot([peak], [lb.epsilon], "^", color="C3", ms=9, label="measured 95% lower bound (coupled chains)")
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"epsilon at delta = {delta:g}")
    ax.set_title(f"A private posterior, a non-private interim iterate (n = {n})")
    ax.legend(fontsize=8)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "demo.png", dpi=120, bbox_inches="tight")
    print(f"saved {out / 'demo.png'} ({time.perf_counter() - t_start:.0f} s)")
    return dict(
        rows=rows,
        exact_curve=exact,
        peak_epoch=peak,
        posterior_exact=posterior_exact,
        posterior_bound=posterior_bound,
        lower_bound=lb,
        path_epsilon=path_eps,
        girsanov_path_bound=girsanov_eps,
        num_nonfinite=result.num_nonfinite,
        figure_path=out / "demo.png",
    )
