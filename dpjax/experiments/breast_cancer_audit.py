"""``dpjax reproduce breast-cancer-audit``: a privacy audit of noisy clipped SGLD on real data.

The workflow a researcher runs before trusting a private sampler, end to end on the Wisconsin
breast-cancer data that ships with scikit-learn (569 tumours, 30 features; nothing is
downloaded):

1. **Model.** Bayesian logistic regression written as a numpyro model (weights and intercept
   with independent N(0, s^2) priors, s = ``--prior-scale``) and turned into a dpjax model by
   :func:`dpjax.models.from_numpyro`. Features are standardised with the training split's
   mean and sd; a stratified ``--test-fraction`` of the records is held out.
2. **A worst-case neighbour.** D = the training records plus one canary; D' = the training
   records (add/remove adjacency, :func:`dpjax.add_remove`). The canary is out of
   distribution: its features lie ``--canary-scale`` standard units along the principal axis
   in which the training features vary least (no real record goes there, so the data hold the
   model's weight along it only through the prior), and its label is the one the non-private
   fit gets wrong. Its clipped gradient then pushes the parameter, step after step, in a
   direction the data do not pull back: close to the worst case for the last iterate.
3. **The sampler.** Noisy clipped SGD as Langevin dynamics (paper 001 eq. 31 with DP-SGD's
   per-record clipping): x' = x - gamma (grad(-log prior) + (1/q) sum_{i in B} clip_C(g_i))
   + sqrt(2 gamma T) z, with Poisson batches (each record independently with probability q),
   clip norm C and a temperature T set so that the per-step noise multiplier is
   ``--noise-multiplier`` sigma: T = sigma^2 C^2 gamma / (2 q^2)
   (:func:`dpjax.accountants.composition.rdp.langevin_noise_multiplier` inverts it).
4. **Side by side, at several step counts:** the accountants' upper bounds on eps(delta) (RDP of
   the Poisson-subsampled Gaussian mechanism composed over the steps,
   :func:`dpjax.accountants.composition.rdp.noisy_sgd_curve`; the tighter PLD accountant
   ``dpjax.accountants.pld_curve`` as well when this build has it), the certified 95% lower
   bound on the last iterate's eps from coupled chain pairs (:func:`dpjax.audit.audit`), and
   the test accuracy a released iterate reaches (per chain, against the non-private MAP fit by
   scikit-learn's LogisticRegression with the same L2 penalty).

The accountants bound the release of every iterate (the last one by post-processing); the
chains measure the last iterate alone, so a gap between them is expected: it is what
accounting for the whole path costs here (or what a stronger canary could still close).
Requires scikit-learn (the ``data`` extra: ``pip install -e ".[data]"``).
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from ._arguments import int_list
from ._report import stage

DEFAULTS = dict(
    prior_scale=3.0, clip=1.0, rate=0.05, noise_multiplier=1.0, step_size=1e-3, steps="50,100,200,400", pairs=5_000,
    delta=1e-3, canary_scale=4.0, test_fraction=0.2,
)
QUICK = dict(steps="25,50,100", pairs=500)
CANARIES = ("out-of-distribution", "gradient")
CONFIDENCE = 0.95


def _step_list(text: str) -> list:
    return int_list(text, distinct_sorted=True, label="steps=")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    parser.add_argument("--steps", type=_step_list, default=None,
                        help=f"step counts at which everything is measured (default {d['steps']}; --quick {QUICK['steps']})")
    parser.add_argument("--pairs", type=int, default=None, help=f"coupled chain pairs (default {d['pairs']:,}; --quick {QUICK['pairs']:,})")
    parser.add_argument("--noise-multiplier", type=float, default=d["noise_multiplier"],
                        help=f"DP-SGD noise multiplier sigma: noise sd over the step's sensitivity (default {d['noise_multiplier']:g})")
    parser.add_argument("--rate", type=float, default=d["rate"], help=f"Poisson sampling rate q (default {d['rate']:g})")
    parser.add_argument("--clip", type=float, default=d["clip"], help=f"per-record gradient clip norm C (default {d['clip']:g})")
    parser.add_argument("--step-size", type=float, default=d["step_size"], help=f"Langevin step gamma (Euler form; default {d['step_size']:g})")
    parser.add_argument("--prior-scale", type=float, default=d["prior_scale"], help=f"sd s of the N(0, s^2) priors (default {d['prior_scale']:g})")
    parser.add_argument("--delta", type=float, default=d["delta"], help=f"delta of every eps (default {d['delta']:g}, below 1/n)")
    parser.add_argument("--canary-scale", type=float, default=d["canary_scale"],
                        help=f"distance of the canary along the least-varying feature axis, in standard units (default {d['canary_scale']:g})")
    parser.add_argument("--test-fraction", type=float, default=d["test_fraction"], help=f"held-out share of the records (default {d['test_fraction']:g})")
    parser.add_argument("--canary", choices=CANARIES, default=CANARIES[0],
                        help="the differing record: out-of-distribution (along the least-varying feature axis; the default) or "
                             "gradient (clipped gradient C along one direction, found by a short pilot run)")


# --- the pieces (each usable on its own; the notebook calls them one by one) -----------------------
def load_data(test_fraction: float = DEFAULTS["test_fraction"], seed: int = 0) -> dict:
    """scikit-learn's breast-cancer data, split (stratified) and standardised with the training
    split's statistics. Returns x_train, y_train, x_test, y_test (float64) and feature_names."""
    from .. import _validate

    _validate.in_range("test_fraction", test_fraction, 0.0, 1.0, low_open=True, high_open=True)
    try:
        from sklearn.datasets import load_breast_cancer
        from sklearn.model_selection import train_test_split
    except ImportError as err:  # pragma: no cover - the data extra is missing
        raise ImportError('the real-data workflow needs scikit-learn: pip install -e ".[data]"') from err
    bunch = load_breast_cancer()
    x, y = bunch.data.astype(np.float64), bunch.target.astype(np.float64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, stratify=y, random_state=seed)
    mean, sd = x_tr.mean(axis=0), x_tr.std(axis=0)
    return dict(x_train=(x_tr - mean) / sd, y_train=y_tr, x_test=(x_te - mean) / sd, y_test=y_te, feature_names=list(bunch.feature_names))


def numpyro_logistic_regression(x, y=None, prior_scale: float = 1.0):
    """Bayesian logistic regression as a numpyro model: w ~ N(0, s^2 I), b ~ N(0, s^2),
    y ~ Bernoulli(sigmoid(x w + b)). ``x`` carries the record axis first."""
    import numpyro
    import numpyro.distributions as dist

    w = numpyro.sample("w", dist.Normal(0.0, prior_scale).expand([x.shape[-1]]).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, prior_scale))
    numpyro.sample("y", dist.Bernoulli(logits=x @ w + b), obs=y)


def make_model(x_train, y_train, prior_scale: float):
    """The numpyro model above as a :class:`dpjax.models.NumpyroModel` (theta = (b, w)),
    declared a GLM in eta = b + x . w (design [1, x]) so that the coupled engine takes its
    matrix-vector path and clips from |s_i| ||(1, x_i)|| (checked against the numpyro
    log-likelihood before the run; docs/guide/engine.md)."""
    import jax

    from ..models import GLM, from_numpyro

    model = from_numpyro(
        numpyro_logistic_regression, observed_site="y", example_record={"x": x_train[0], "y": y_train[0]},
        model_kwargs={"prior_scale": float(prior_scale)}, name="numpyro logistic regression",
    )
    glm = GLM(loss=lambda y, eta: jax.nn.softplus(eta) - y * eta, loss_derivative=lambda y, eta: jax.nn.sigmoid(eta) - y,
              design=_intercept_design, response="y")
    return model.with_structure(glm=glm)


def _intercept_design(fields: dict) -> np.ndarray:
    x = np.asarray(fields["x"], np.float64)
    return np.concatenate([np.ones((x.shape[0], 1)), x], axis=1)


def map_baseline(data: dict, prior_scale: float) -> dict:
    """The non-private reference: the MAP of the same model by scikit-learn's LogisticRegression
    (L2 penalty = the prior's precision; scikit-learn leaves the intercept unpenalised)."""
    from sklearn.linear_model import LogisticRegression

    fit = LogisticRegression(C=prior_scale**2, max_iter=10_000).fit(data["x_train"], data["y_train"])
    return dict(
        weights=fit.coef_[0], intercept=float(fit.intercept_[0]),
        test_accuracy=float(fit.score(data["x_test"], data["y_test"])),
        majority_rate=float(max(np.mean(data["y_test"]), 1.0 - np.mean(data["y_test"]))),
    )


def make_canary(x_train, baseline: dict, scale: float) -> dict:
    """The out-of-distribution canary (:func:`dpjax.canaries.out_of_distribution_canary`):
    ``scale`` standard units along the principal axis of least training variance, labelled
    against the non-private fit's prediction there."""
    from .. import _validate, make_dataset
    from ..canaries import out_of_distribution_canary

    _validate.positive("canary_scale", scale)
    # the labels do not enter the construction (the fit decides the canary's label): zeros stand in
    records = make_dataset(x=np.asarray(x_train, dtype=np.float64), y=np.zeros(np.shape(x_train)[0]))
    canary = out_of_distribution_canary(records, scale=scale, fit_weights=baseline["weights"], fit_intercept=baseline["intercept"], binary=True)
    d = canary.details
    return dict(x=canary.record["x"], y=float(canary.record["y"]), axis=d["axis"], fitted_logit=d["fitted_value"],
                axis_sd=d["axis_sd"], largest_sd=d["largest_sd"], kind="out-of-distribution", statistic="auto")


def make_gradient_canary(model, data: dict, sampler, pairs: int, steps: list, clip: float, seed: int = 0) -> dict:
    """The gradient canary (:func:`dpjax.canaries.gradient_canary`): a short pilot of the chains
    on the training records gives the positions they visit; the record along the features'
    best-identified axis whose clipped gradient is C there (in a logistic model the free axis
    admits none: the chains visit both signs of theta along it). Returns the record, its
    direction and statistic (the projection on it)."""
    from .. import make_dataset, replace_one, run_coupled
    from ..canaries import gradient_canary

    x, y = data["x_train"], data["y_train"]
    records = make_dataset(x=x, y=y)
    pilot_pair = replace_one(records, 0, {"x": x[0] + 1e-6, "y": y[0]})  # a pair that barely differs: the chains' region
    pilot = run_coupled(seed + 1, model, pilot_pair, sampler, num_pairs=min(pairs, 500), num_steps=steps[-1], record_steps=steps,
                        progress=False)
    visited = np.concatenate([pilot.positions.reshape(-1, model.dim), pilot.neighbour_positions.reshape(-1, model.dim)])
    canary = gradient_canary(model, records, clip, visited, direction="most-variance")
    return dict(x=canary.record["x"], y=float(canary.record["y"]), kind="gradient", statistic=canary.statistic, canary=canary,
                smallest_norm_over_clip=canary.details["smallest_norm_over_c"])


def temperature_for(noise_multiplier: float, step_size: float, clip: float, rate: float) -> float:
    """T with sqrt(2 gamma T) = sigma * gamma C / q: the Langevin temperature at which one step of
    noisy clipped SGD with Poisson rate q has noise multiplier sigma (add/remove sensitivity
    gamma C / q)."""
    return noise_multiplier**2 * clip**2 * step_size / (2.0 * rate**2)


def accountant_curves(steps, noise_multiplier: float, rate: float) -> dict:
    """The accountants' curves per step count, {"RDP accountant": {t: curve}, "PLD accountant":
    {t: curve}}: computed once, read by the JSON's numbers (:func:`accountant_bounds`) and by
    the audit's bound rows (the same curves, not a second computation)."""
    from ..accountants import pld_curve
    from ..accountants.composition.rdp import noisy_sgd_curve

    return {
        "RDP accountant": {int(t): noisy_sgd_curve(noise_multiplier, rate, int(t), adjacency="add-remove") for t in steps},
        "PLD accountant": {int(t): pld_curve(noise_multiplier, rate, int(t), adjacency="add-remove", sampling="poisson") for t in steps},
    }


def accountant_bounds(steps, noise_multiplier: float, rate: float, delta: float, curves: dict | None = None) -> dict:
    """eps(delta) per step count from the RDP and PLD accountants (``curves``: from
    :func:`accountant_curves`, computed here when not given)."""
    curves = accountant_curves(steps, noise_multiplier, rate) if curves is None else curves
    rdp, pld = curves["RDP accountant"], curves["PLD accountant"]
    return {
        "rdp": [float(rdp[int(t)].epsilon(delta)) for t in steps],
        "rdp_provenance": rdp[int(steps[0])].provenance.describe(),
        "pld": [float(pld[int(t)].epsilon(delta)) for t in steps],
        "pld_provenance": pld[int(steps[0])].provenance.describe(),
    }


def test_accuracy(model, thetas, x_test, y_test) -> np.ndarray:
    """Accuracy on the held-out records of each parameter vector in ``thetas`` (K, d)."""
    import jax

    with jax.enable_x64(True):
        latents = jax.vmap(model.constrain)(np.asarray(thetas, dtype=np.float64))
        w, b = np.asarray(latents["w"]), np.asarray(latents["b"])
    predictions = (np.asarray(x_test) @ w.T + b) > 0.0  # (records, K)
    return np.mean(predictions == (np.asarray(y_test)[:, None] > 0.5), axis=0)


# --- the experiment ------------------------------------------------------------------------------
def _check(args) -> dict:
    from .. import _validate

    q = _validate.in_range("rate", args.rate, 0.0, 1.0, low_open=True)
    return dict(
        rate=q,
        sigma=_validate.positive("noise_multiplier", args.noise_multiplier),
        clip=_validate.positive("clip", args.clip),
        gamma=_validate.positive("step_size", args.step_size),
        prior_scale=_validate.positive("prior_scale", args.prior_scale),
        delta=_validate.in_range("delta", args.delta, 0.0, 1.0, low_open=True, high_open=True),
        canary_scale=_validate.positive("canary_scale", args.canary_scale),
        test_fraction=_validate.in_range("test_fraction", args.test_fraction, 0.0, 1.0, low_open=True, high_open=True),
        canary=getattr(args, "canary", CANARIES[0]),
        steps=list(args.steps) if args.steps is not None else _step_list(QUICK["steps"] if args.quick else DEFAULTS["steps"]),
        pairs=_validate.positive_int("pairs", args.pairs if args.pairs is not None else (QUICK["pairs"] if args.quick else DEFAULTS["pairs"])),
    )


def run(args) -> tuple:
    from .. import add_remove, make_dataset, samplers
    from ..audit import audit

    p = _check(args)
    seed = int(getattr(args, "seed", 0))
    t0 = time.perf_counter()
    temperature = temperature_for(p["sigma"], p["gamma"], p["clip"], p["rate"])
    sampler = samplers.sgld(p["gamma"], batching="poisson", sampling_rate=p["rate"], temperature=temperature, parameterisation="euler", clip_norm=p["clip"])
    with stage("breast-cancer data (scikit-learn), the non-private MAP, the canary"):
        data = load_data(p["test_fraction"], seed)
        baseline = map_baseline(data, p["prior_scale"])
        model = make_model(data["x_train"], data["y_train"], p["prior_scale"])
        canary = make_canary(data["x_train"], baseline, p["canary_scale"])
    if p["canary"] == "gradient":
        with stage(f"a pilot run for the gradient canary ({min(p['pairs'], 500):,} pairs)"):
            canary = make_gradient_canary(model, data, sampler, p["pairs"], p["steps"], p["clip"], seed)
    x = np.vstack([canary["x"][None, :], data["x_train"]])
    y = np.concatenate([[canary["y"]], data["y_train"]])
    pair = add_remove(make_dataset(x=x, y=y), 0)  # D = records + canary (slot 0), D' = records
    with stage(f"accountants' bounds (RDP, PLD) at steps {', '.join(map(str, p['steps']))}"):
        curves = accountant_curves(p["steps"], p["sigma"], p["rate"])
        bounds = accountant_bounds(p["steps"], p["sigma"], p["rate"], p["delta"], curves)
    num_steps = p["steps"][-1]
    with stage(f"{p['pairs']:,} coupled chain pairs, {num_steps:,} steps of noisy clipped SGLD on {x.shape[0]} records (d = {model.dim})"):
        report = audit(
            model, pair, sampler, num_pairs=p["pairs"], num_steps=num_steps, record_steps=p["steps"], delta=p["delta"],
            bounds=_bound_specs(curves), confidence=CONFIDENCE, seed=seed, path_loss=False, statistic=canary["statistic"], fits=False,
        )
    with stage("test accuracy of every chain's iterate"):
        fin = report.coupled.finite_only()
        accuracy = [test_accuracy(model, fin.positions[i], data["x_test"], data["y_test"]) for i in range(len(p["steps"]))]
    table = report.table
    lower = [float(table[(table["step"] == t) & (table["kind"] == "lower bound")]["epsilon"].iloc[0]) for t in p["steps"]]
    ceiling = float(_ceiling(table))
    results = dict(
        steps=p["steps"],
        delta=p["delta"],
        confidence=CONFIDENCE,
        epsilon_upper_rdp=bounds["rdp"],
        epsilon_upper_pld=bounds["pld"],
        epsilon_lower_certified=lower,
        lower_bound_ceiling=ceiling,
        test_accuracy_mean=[float(a.mean()) for a in accuracy],
        test_accuracy_sd=[float(a.std(ddof=1)) for a in accuracy],
        test_accuracy_quantiles=[[float(v) for v in np.quantile(a, [0.05, 0.5, 0.95])] for a in accuracy],
        baseline=dict(map_test_accuracy=baseline["test_accuracy"], majority_rate=baseline["majority_rate"],
                      how="scikit-learn LogisticRegression, L2 penalty = the prior's precision (non-private)"),
        audit_ok=bool(report.ok),
        violations=report.violations.to_dict("records"),
        audit_table=report.table.to_dict("records"),
        num_pairs=int(p["pairs"]),
        num_nonfinite=int(report.coupled.num_nonfinite),
        sampler=dict(step_size=p["gamma"], temperature=temperature, clip_norm=p["clip"], sampling_rate=p["rate"],
                     noise_multiplier=p["sigma"], parameterisation="euler", batching="poisson", start="0 (data-independent)"),
        data=dict(source="sklearn.datasets.load_breast_cancer (Wisconsin diagnostic breast cancer)", train_records=int(data["x_train"].shape[0]),
                  test_records=int(data["x_test"].shape[0]), features=int(data["x_train"].shape[1]), standardised="train mean and sd",
                  dimension=int(model.dim)),
        canary=dict(kind=canary["kind"], features_norm=float(np.linalg.norm(canary["x"])), label=canary["y"],
                    fitted_logit=canary.get("fitted_logit"), axis_sd=canary.get("axis_sd"), largest_axis_sd=canary.get("largest_sd"),
                    smallest_gradient_norm_over_clip=canary.get("smallest_norm_over_clip"),
                    statistic="projection on the canary's clipped gradient" if canary["kind"] == "gradient" else "the audit's default",
                    adjacency="add/remove (D has the canary, D' not)"),
        accountants=dict(rdp=bounds["rdp_provenance"], pld=bounds["pld_provenance"]),
        seconds=time.perf_counter() - t0,
    )
    return results, figure(results)


def _bound_specs(curves: dict) -> dict:
    """The audit's bound rows: each accountant's curve at a recorded step count."""
    return {name: (lambda t, by_steps=by_steps: by_steps[int(t)]) for name, by_steps in curves.items()}


def _ceiling(table) -> float:
    import re

    src = table[table["kind"] == "lower bound"]["source"].iloc[0]
    match = re.search(r"ceiling ([0-9.eE+-]+)", src)
    return float(match.group(1)) if match else float("nan")


def figure(results: dict):
    from .. import _display

    fig, (ax, ax2) = _display.new_figure(2, size=(5.4, 4.6))
    steps = np.asarray(results["steps"])
    ax.plot(steps, results["epsilon_upper_rdp"], "o-", color="C0", label="upper bound, RDP accountant (release: every iterate)")
    if results.get("epsilon_upper_pld"):
        ax.plot(steps, results["epsilon_upper_pld"], "s-", color="C2", label="upper bound, PLD accountant (release: every iterate)")
    kind = (results.get("canary") or {}).get("kind", "out-of-distribution")
    ax.plot(steps, results["epsilon_lower_certified"], "^", color="C3", ms=9, clip_on=False,
            label=f"certified lower bound (release: last iterate; {kind} canary, {results['confidence']:.0%}, {results['num_pairs']:,} pairs)")
    ax.fill_between(steps, results["epsilon_lower_certified"], results["epsilon_upper_rdp"], color="0.85", alpha=0.6, label="what is not yet known")
    ax.set_xlabel("steps")
    ax.set_ylabel(f"eps at delta = {results['delta']:g}")
    _display.epsilon_axis(ax, list(results["epsilon_upper_rdp"]) + list(results["epsilon_lower_certified"]))
    ax.set_title("privacy: the accountants against the canary\n(a bound on every iterate also bounds the last one)", fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    ax.grid(alpha=0.3)

    mean = np.asarray(results["test_accuracy_mean"])
    q = np.asarray(results["test_accuracy_quantiles"])
    ax2.fill_between(steps, q[:, 0], q[:, 2], color="C1", alpha=0.25, label="5%-95% of the chains")
    ax2.plot(steps, mean, "o-", color="C1", label="one released iterate (mean over chains)")
    ax2.axhline(results["baseline"]["map_test_accuracy"], color="k", ls="--",
                label=f"non-private MAP (majority class: {results['baseline']['majority_rate']:.2f})")
    ax2.set_xlabel("steps")
    ax2.set_ylabel("test accuracy")
    ax2.set_ylim(min(float(q[:, 0].min()), results["baseline"]["map_test_accuracy"]) - 0.03, 1.0)
    ax2.set_title("utility: what the released iterate predicts", fontsize=10)
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    ax2.grid(alpha=0.3)
    s = results["sampler"]
    fig.suptitle(f"Noisy clipped SGLD on breast-cancer data: noise multiplier sigma = {s['noise_multiplier']:g}, Poisson rate "
                 f"q = {s['sampling_rate']:g}, clip norm C = {s['clip_norm']:g}\n(Langevin temperature T = {s['temperature']:.3g}: the one "
                 f"at which step size {s['step_size']:g} gives that sigma, T = sigma^2 C^2 gamma / (2 q^2))", fontsize=10)
    return fig


def headline(results: dict) -> list:
    """At each step count: the accountants' bounds, the certified lower bound and the accuracy
    (a real-data audit: no paper values)."""
    rows = []
    for i, t in enumerate(results["steps"]):
        rows.append(dict(quantity=f"{t} steps: eps upper bound, RDP accountant", paper=None, dpjax=results["epsilon_upper_rdp"][i]))
        if results.get("epsilon_upper_pld"):
            rows.append(dict(quantity=f"{t} steps: eps upper bound, PLD accountant", paper=None, dpjax=results["epsilon_upper_pld"][i]))
        rows.append(dict(quantity=f"{t} steps: eps certified lower bound (last iterate)", paper=None, dpjax=results["epsilon_lower_certified"][i]))
        rows.append(dict(quantity=f"{t} steps: test accuracy, mean over chains", paper=None,
                         dpjax=f"{results['test_accuracy_mean'][i]:.3f} +- {results['test_accuracy_sd'][i]:.3f}"))
    rows.append(dict(quantity="non-private MAP test accuracy", paper=None, dpjax=results["baseline"]["map_test_accuracy"],
                     note=f"audit verdict: {'ok' if results['audit_ok'] else 'VIOLATION'}; {results['num_nonfinite']} non-finite pairs; "
                          f"lower bounds at {results['confidence']:.0%} each, at most {results['lower_bound_ceiling']:.3g} at this sample size"))
    return rows
