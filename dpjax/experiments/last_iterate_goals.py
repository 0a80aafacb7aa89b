"""Issue 22's goal tables: which last-iterate bound sees what, on two shipped settings.

* :func:`paper000_rows` — paper 000's Figure 1 (cyclic SGLD, b = 1, on the eq. 7 linear-regression
  pair at n = 1,149,019): the exact eps of the released iterate at each epoch end
  (:mod:`dpjax.accountants.cyclic_sgld`; peak 4.94 at epoch 25) against composition and the
  shifted-interpolation bound. The pair's records differ in x, so their gradients differ by
  n beta (x_h^2 - x_l^2) |theta - c|: unbounded, so no theorem applies to the chain as run. They
  apply to the chain projected onto I = [-margin, c + 1] (K = I, diameter c + 1 + margin), whose
  law differs from the paper's chain by at most the probability that the chain leaves I before
  step T (a union bound over the Gaussian marginals, :func:`paper000_exit_probability`).
* :func:`breast_cancer_rows` — the shipped real-data audit (numpyro logistic regression, noisy
  clipped SGLD, Poisson q = 0.05, noise multiplier 1, clip 1, delta = 1e-3): the best valid bound
  for the released iterate (the numpyro model certifies no constants: composition), and what
  the same model built with :func:`dpjax.models.logistic_regression` certifies and which
  assumption then fails.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..accountants.samplers import cyclic_sgld as cs
from ..accountants.samplers import last_iterate as li

PAPER000_EPOCHS = (1, 5, 10, 15, 20, 25, 29)
PAPER000_DELTA = 0.01
# the chains' certified 95% lower bounds on Figure 1's setting at the full n (BENCHMARKS.md,
# ``dpjax bench figure1 --pairs 256``; delta = 0.01; 256 pairs cap any bound near 4.0)
PAPER000_CERTIFIED_LOWER = {5: 0.000, 10: 0.557, 15: 1.113, 20: 1.609, 25: 1.850, 29: 1.283}
# the certified 95% lower bounds of the shipped audit run (README, BENCHMARKS.md: `dpjax
# reproduce breast-cancer-audit --pairs 500000`, 500,000 coupled pairs, delta = 1e-3, 714 s on
# the 2-core CPU; 50,000 pairs gave 0.69, 0.97, 1.29, 1.99 and 5,000 gave 0.41, 0.65, 0.98, 1.69)
BREAST_CANCER_CERTIFIED_LOWER = {50: 0.82, 100: 1.04, 200: 1.54, 400: 2.47}
BREAST_CANCER_STEPS = (50, 100, 200, 400)


def paper000_constants(problem: cs.CyclicSGLDProblem, margin: float = 40.0) -> dict:
    """The update's constants for cyclic SGLD on paper 000's pair, projected onto [-margin, c + 1].

    Welling–Teh step eta: drift eta / 2, gradient noise sigma = 2 / sqrt(eta); the batch loss of a
    record is f = -log prior - n log p(y | theta, x): curvature alpha + n beta x^2 (M for x_h,
    m for x_l), gradient gap n beta (x_h^2 - x_l^2) sup |theta - c| over I = (c + margin)."""
    p = problem
    reach = p.c + margin
    return dict(
        step_size=p.eta / 2.0, noise_std=2.0 / math.sqrt(p.eta), dataset_size=p.n, batching="cyclic", batch_size=1,
        gradient_sensitivity=p.n * p.beta * (p.x_high**2 - p.x_low**2) * reach,
        smoothness=p.alpha + p.n * p.beta * p.x_high**2, strong_convexity=p.alpha + p.n * p.beta * p.x_low**2,
        diameter=p.c + 1.0 + margin,
    )


def paper000_exit_probability(problem: cs.CyclicSGLDProblem, epochs: int, margin: float = 40.0) -> float:
    """Upper bound on P(the chain leaves [-margin, c + 1] by the end of ``epochs`` epochs), on D or
    D' (either order): every iterate is Gaussian given the order. Every step map
    theta -> lambda_x theta + rho_x has its fixed point in (0, c) and lambda <= lambda_x <= lambda',
    so from mean 0 the mean stays in [0, c), with c - mean_k >= c u_k (u_k = the product of the
    slopes so far), and the variance stays below v0 = 1/alpha, with sd_k <= sqrt(v0) u_k + s,
    s^2 = eta / (1 - lambda'^2). Hence per step P(below -margin) <= Phi(-margin / sqrt(v0)) and
    P(above c + 1) <= Phi(-min_u (1 + c u) / (sqrt(v0) u + s)); union bound over the T + 1 iterates."""
    p = problem
    count = epochs * p.n + 1
    sd_start = math.sqrt(p.v0)
    s = math.sqrt(p.eta / (p.kappa_low * (2.0 - p.kappa_low)))
    # (1 + c u) / (sd_start u + s) is monotone in u on (0, 1]: its minimum is at an end
    ratio = min(1.0 / s, (1.0 + p.c) / (sd_start + s))
    log_each = np.logaddexp(special.log_ndtr(-margin / sd_start), special.log_ndtr(-ratio))
    return float(np.exp(math.log(count) + log_each))


def paper000_rows(epochs=PAPER000_EPOCHS, delta: float = PAPER000_DELTA, margin: float = 40.0) -> list:
    """Per epoch end: the exact eps of the released iterate, and composition and shifted
    interpolation for the chain projected onto [-margin, c + 1] (eps at ``delta``)."""
    problem = cs.CyclicSGLDProblem(n=1149019)
    kw = paper000_constants(problem, margin)
    epochs = np.asarray(epochs, dtype=np.int64)
    mus = li.last_iterate_gdp_mu(kw.pop("step_size"), kw.pop("noise_std"), epochs * problem.n, **kw)
    rows = []
    for i, e in enumerate(epochs):
        rows.append(dict(
            epoch=int(e), exact=cs.epoch_end_epsilon(problem, int(e), delta), certified_lower=PAPER000_CERTIFIED_LOWER.get(int(e)),
            composition=float(li.gdp_epsilon(mus.composition[i], delta)),
            shifted_interpolation=float(li.gdp_epsilon(mus.shifted_interpolation[i], delta)),
        ))
    return rows


def breast_cancer_setting(seed: int = 0) -> dict:
    """The audit's data, pair and sampler (``dpjax.experiments.breast_cancer_audit`` defaults), with
    the numpyro model and the same model as :func:`dpjax.models.logistic_regression` (features with
    an intercept column; prior N(0, s^2) on every coordinate)."""
    from .. import add_remove, make_dataset, samplers
    from ..models import logistic_regression
    from . import breast_cancer_audit as bca

    d = bca.DEFAULTS
    data = bca.load_data(d["test_fraction"], seed)
    baseline = bca.map_baseline(data, d["prior_scale"])
    canary = bca.make_canary(data["x_train"], baseline, d["canary_scale"])
    x = np.vstack([canary["x"][None, :], data["x_train"]])
    y = np.concatenate([[canary["y"]], data["y_train"]])
    temperature = bca.temperature_for(d["noise_multiplier"], d["step_size"], d["clip"], d["rate"])
    sampler = samplers.sgld(d["step_size"], batching="poisson", sampling_rate=d["rate"], temperature=temperature,
                            parameterisation="euler", clip_norm=d["clip"])
    with_intercept = np.hstack([np.ones((x.shape[0], 1)), x])
    return dict(
        numpyro_model=bca.make_model(x, y, d["prior_scale"]), numpyro_pair=add_remove(make_dataset(x=x, y=y), 0),
        builtin_model=logistic_regression(1.0 / d["prior_scale"] ** 2, with_intercept.shape[1]),
        builtin_pair=add_remove(make_dataset(x=with_intercept, y=y), 0), sampler=sampler, delta=d["delta"],
    )


def breast_cancer_rows(steps=BREAST_CANCER_STEPS, setting: dict | None = None) -> dict:
    """The best valid bound for the released iterate at each step count, and why no hidden-state
    bound applies (the built-in model's certified constants and the failing assumption)."""
    from ..accountants.samplers import sampler_constants

    s = breast_cancer_setting() if setting is None else setting
    rows = []
    for t in steps:
        curve = li.sampler_last_iterate_curve(s["numpyro_model"], s["numpyro_pair"], s["sampler"], int(t))
        rows.append(dict(steps=int(t), best_bound=float(curve.epsilon(s["delta"])),
                         certified_lower=BREAST_CANCER_CERTIFIED_LOWER.get(int(t))))
    run = sampler_constants.describe_run(s["builtin_model"], s["builtin_pair"], s["sampler"], int(steps[-1]))
    try:
        li.sampler_last_iterate_curve(s["builtin_model"], s["builtin_pair"], s["sampler"], int(steps[-1]), method="shifted-interpolation")
        failure = None
    except li.ConstantsUnavailable as err:
        failure = str(err)
    typical = run.strong_convexity + (run.smoothness - run.strong_convexity) * 0.05  # a batch of q n records
    return dict(rows=rows, step_size=run.step_size, smoothness=run.smoothness, strong_convexity=run.strong_convexity,
                eta_times_smoothness=run.step_size * run.smoothness, eta_times_typical=run.step_size * typical,
                failure=failure)


__all__ = ["PAPER000_EPOCHS", "PAPER000_CERTIFIED_LOWER", "BREAST_CANCER_CERTIFIED_LOWER", "paper000_constants", "paper000_exit_probability",
           "paper000_rows", "breast_cancer_setting", "breast_cancer_rows"]
