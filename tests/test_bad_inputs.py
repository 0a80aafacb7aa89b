"""Bad inputs to every public entry point get a clear error (issue 12, item 12).

A registry below holds one valid call per public function; each argument in turn is replaced
by values of the wrong kind (a string, None, a list, a bool, NaN where a number belongs; a
string, None, a ragged list, an empty or non-finite array where an array belongs; an unknown
name where a choice belongs). Each such call must raise ``ValueError`` or ``TypeError`` whose
message names the argument (or, for an argument holding records or samples, names what it
holds). Values that are bad only for some arguments (0, negative, +-inf, 1e300) are tried too; ``python tests/test_bad_inputs.py`` prints the counts (functions, inputs,
clear errors) and every input not handled clearly, including extreme values that are
accepted but give a NaN the valid call does not (issue 12 item 5, the accountants' range);
the pytest run checks those extreme values too (each must give a number without a new NaN,
or a clear error). Whether the numbers returned at extreme values are right is checked
against closed forms and mpmath in tests/test_extreme_values.py.
"""
from __future__ import annotations

import inspect
import math
import signal
import sys
import time
import warnings
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Callable

import numpy as np
import pytest

import dpjax
from dpjax import data as D
from dpjax import models as M
from dpjax import samplers as S
from dpjax.accountants import conversions
from dpjax.accountants.posterior import gaussian as posterior
from dpjax.accountants.samplers import exact, girsanov
from dpjax.accountants.posterior import expfam, gibbs
from dpjax.accountants.mechanisms import gaussian, gaussian_divergence as gd, mixture
from dpjax.accountants.composition import rdp as noisy_sgd
from dpjax.accountants.curve import PrivacyCurve, Provenance
from dpjax.audit import audit as dpjax_audit
from dpjax.estimators import epsilon_estimate, epsilon_lower_bound, oracle_lower_bound, privacy_loss_profile, renyi_estimate, resolution_ceiling
from dpjax.estimators.path_loss import PrivacyLossAccumulator
from dpjax.samplers.batching import make_batching
from dpjax.sweep import config as sweep_config

SAMPLES = np.random.default_rng(0).normal(size=64)
SAMPLES_2D = np.random.default_rng(1).normal(size=(64, 2))
PROV = Provenance("test")
CURVE = PrivacyCurve.from_rdp([2.0, 4.0], [0.1, 0.3], PROV)
DATA = M.gaussian_mean_dataset(np.linspace(-1, 1, 6))
PAIR = dpjax.replace_one(DATA, 0, {"x": np.array([2.0])})
MIX = mixture.equal_weight_mixture([0.0, 1.0], [1.0, 1.0])
H, G = np.eye(1) * 2.0, np.ones(1)

# A bad value for a scalar number, for an array, for a choice among names.
NUMBER_BAD = {"str": "x", "numeric str": "1e-3", "None": None, "list": [1.0, 2.0], "bool": True, "nan": float("nan")}
NUMBER_MAYBE = {"zero": 0.0, "negative": -1.0, "inf": math.inf, "-inf": -math.inf, "huge": 1e300}
INT_BAD = {"str": "x", "None": None, "list": [1, 2], "bool": True, "float": 2.5, "nan": float("nan")}
INT_MAYBE = {"zero": 0, "negative": -1, "huge": 10**30}
ARRAY_BAD = {"str": "x", "None": None, "ragged": [[1.0, 2.0], [3.0]], "strings": ["a", "b"], "empty": [], "nan": [float("nan"), 1.0]}
ARRAY_MAYBE = {"inf": [math.inf, 1.0], "3-d": np.zeros((2, 2, 2))}
CHOICE_BAD = {"unknown": "nonsense", "None": None, "number": 3}


@dataclass
class Entry:
    name: str
    fn: Callable
    kwargs: dict
    kinds: dict = field(default_factory=dict)  # argument -> "number" | "int" | "array" | "choice" (default: inferred)
    names: dict = field(default_factory=dict)  # argument -> the word the error must contain (default: the argument)
    extremes: bool = True  # also try values bad only for some arguments (off where accepting one means a long run)
    allowed: set = field(default_factory=set)  # (argument, label) pairs that are valid here, e.g. an empty orders list


def _kind(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, float):
        return "number"
    if isinstance(value, (list, tuple, np.ndarray)) and np.asarray(value).dtype.kind in "iuf":
        return "array"
    if isinstance(value, str):
        return "choice"
    return None


E = Entry
REGISTRY = [
    # estimators
    E("epsilon_lower_bound", epsilon_lower_bound, dict(samples_p=SAMPLES, samples_q=SAMPLES + 1, delta=0.01, confidence=0.9, selection_fraction=0.3, candidates_per_tail=20, seed=1)),
    E("epsilon_estimate", epsilon_estimate, dict(samples_p=SAMPLES, samples_q=SAMPLES + 1, delta=0.01, bins=8, min_count=3, num_bootstrap=5, confidence=0.9, seed=1)),
    E("renyi_estimate", renyi_estimate, dict(samples_p=SAMPLES, samples_q=SAMPLES + 1, orders=[2.0, 3.0], bins=8, min_count=3, num_bootstrap=5, confidence=0.9, seed=1)),
    E("privacy_loss_profile", privacy_loss_profile, dict(log_ratio=SAMPLES, epsilons=[0.5, 1.0], orders=[2.0], confidence=0.9, num_blocks=8, num_bootstrap=20, seed=1),
      allowed={("log_ratio", "ragged"), ("orders", "empty")}),  # an iterable of chunks; no orders
    E("PrivacyLossAccumulator.create", PrivacyLossAccumulator.create, dict(epsilons=[0.5, 1.0], orders=[2.0], num_blocks=8), allowed={("orders", "empty")}),
    E("oracle_lower_bound", lambda **k: oracle_lower_bound(__import__("scipy").stats.norm(), __import__("scipy").stats.norm(1), **k),
      dict(holdout_p=100, holdout_q=100, delta=0.01, confidence=0.9, grid_size=101)),
    E("resolution_ceiling", resolution_ceiling, dict(holdout_p=100, holdout_q=100, delta=0.01, confidence=0.9)),
    # data and models
    E("gaussian_mean_dataset", M.gaussian_mean_dataset, dict(x=[1.0, 2.0, 3.0])),
    E("regression_dataset", M.regression_dataset, dict(x=[[1.0], [2.0]], y=[1.0, 2.0])),
    E("logistic_regression_dataset", M.logistic_regression_dataset, dict(x=[[1.0], [2.0]], y=[1.0, 0.0])),
    E("replace_one", D.replace_one, dict(dataset=DATA, index=1, record={"x": np.array([2.0])})),
    E("add_remove", D.add_remove, dict(dataset=DATA, index=1)),
    E("gaussian_mean", M.gaussian_mean, dict(dim=2, prior_precision=1.0, inverse_temperature=1.0)),
    E("bayesian_linear_regression", M.bayesian_linear_regression, dict(noise_precision=1.0, prior_precision=1.0, dim=2)),
    E("logistic_regression", M.logistic_regression, dict(prior_precision=1.0, dim=2)),
    # samplers
    E("ula", S.ula, dict(step_size=0.1, temperature=1.0, parameterisation="euler", clip_norm=1.0)),
    E("sgld", S.sgld, dict(step_size=0.1, batching="uniform", batch_size=2, temperature=1.0, parameterisation="welling-teh")),
    E("cyclic_sgld", S.cyclic_sgld, dict(step_size=0.1, batch_size=2, temperature=1.0)),
    E("make_batching", make_batching, dict(name="poisson", rate=0.5), names={"name": "batching"}),
    # runner and audit (checked before anything compiles)
    E("run_coupled", lambda **k: dpjax.run_coupled(model=M.gaussian_mean(), pair=PAIR, sampler=S.ula(0.05), progress=False, **k),
      dict(seed=0, num_pairs=8, num_steps=2, record_steps=[1, 2], chunk_size=10), kinds={"record_steps": "ints"}, extremes=False),
    E("audit", lambda **k: dpjax_audit(M.gaussian_mean(), PAIR, S.ula(0.05), **k),
      dict(num_pairs=8, num_steps=2, delta=0.05, confidence=0.9, seed=0), extremes=False),
    # curves and conversions
    E("PrivacyCurve.from_rdp", lambda **k: PrivacyCurve.from_rdp(provenance=PROV, **k), dict(orders=[2.0, 4.0], rdp=[0.1, 0.3])),
    E("PrivacyCurve.from_profile", lambda **k: PrivacyCurve.from_profile(provenance=PROV, **k), dict(epsilons=[0.0, 1.0], deltas=[0.5, 0.1])),
    E("PrivacyCurve.epsilon", CURVE.epsilon, dict(delta=0.01, conversion="balle")),
    E("PrivacyCurve.delta", CURVE.delta, dict(epsilon=1.0, conversion="balle")),
    E("Provenance", Provenance, dict(result="r", mode="bound"), allowed={("result", "unknown"), ("mode", "unknown")}),  # free text
    E("rdp_to_epsilon", conversions.rdp_to_epsilon, dict(orders=[2.0, 4.0], rdp=[0.1, 0.3], delta=0.01)),
    E("rdp_to_delta", conversions.rdp_to_delta, dict(orders=[2.0, 4.0], rdp=[0.1, 0.3], epsilon=1.0)),
    E("zcdp_to_epsilon", conversions.zcdp_to_epsilon, dict(rho=0.1, delta=0.01)),
    E("zcdp_rdp", conversions.zcdp_rdp, dict(rho=0.1, orders=[2.0, 3.0])),
    E("tv_corrected_delta", conversions.tv_corrected_delta, dict(epsilon=1.0, delta=0.01, total_variation=0.1)),
    # Gaussian mechanisms and divergences
    E("gaussian_rdp", gaussian.gaussian_rdp, dict(noise_multiplier=1.0, orders=[2.0, 3.0])),
    E("subsampled_gaussian_rdp", gaussian.subsampled_gaussian_rdp, dict(q=0.1, noise_multiplier=1.0, orders=[2.0, 3.5])),
    E("analytic_gaussian_epsilon", gd.analytic_gaussian_epsilon, dict(sensitivity_over_sigma=1.0, delta=0.01)),
    E("analytic_gaussian_delta", gd.analytic_gaussian_delta, dict(sensitivity_over_sigma=1.0, epsilon=1.0)),
    E("gaussian_epsilon", gd.gaussian_epsilon, dict(mean1=0.0, sd1=1.0, mean2=1.0, sd2=1.5, delta=0.01)),
    E("gaussian_hockey_stick", gd.gaussian_hockey_stick, dict(mean1=0.0, sd1=1.0, mean2=1.0, sd2=1.5, epsilon=1.0)),
    E("gaussian_renyi", gd.gaussian_renyi, dict(mean1=[0.0], cov1=[[1.0]], mean2=[1.0], cov2=[[1.5]], order=2.0)),
    E("gaussian_kl", gd.gaussian_kl, dict(mean1=[0.0], cov1=[[1.0]], mean2=[1.0], cov2=[[1.5]])),
    # noisy SGD
    E("noisy_sgd_curve", noisy_sgd.noisy_sgd_curve, dict(noise_multiplier=1.0, sampling_rate=0.1, steps=10, adjacency="add-remove")),
    E("langevin_noise_multiplier", noisy_sgd.langevin_noise_multiplier, dict(step_size=0.1, inverse_temperature=1.0, clip_norm=1.0, gradient_scale=10.0)),
    # Girsanov (paper 001)
    E("girsanov_rdp", girsanov.girsanov_rdp, dict(constant=0.5, orders=[2.0, 3.0])),
    E("girsanov_epsilon", girsanov.girsanov_epsilon, dict(constant=0.5, delta=0.01)),
    E("thm54_ula_path", girsanov.thm54_ula_path, dict(grad_gap=1.0, step_size=0.1, num_steps=10)),
    E("thm58_sgld_path", girsanov.thm58_sgld_path, dict(grad_gap=1.0, step_size=0.1, num_steps=10, batch_size=2)),
    E("thm52_ula_last_iterate", girsanov.thm52_ula_last_iterate, dict(grad_bound=1.0, strong_convexity=1.0, smoothness=1.0, step_size=0.1)),
    E("thm56_sgld_last_iterate", girsanov.thm56_sgld_last_iterate, dict(grad_bound=1.0, strong_convexity=1.0, smoothness=1.0, step_size=0.1)),
    E("thm57_sgld_last_iterate", girsanov.thm57_sgld_last_iterate, dict(grad_bound=1.0, strong_convexity=1.0, smoothness=1.0, step_size=0.1, batch_size=2)),
    E("prop45_path", girsanov.prop45_path, dict(drift_gap=1.0, horizon=2.0)),
    E("prop46_last_value", girsanov.prop46_last_value, dict(sync_distance=0.5, lipschitz=1.0, drift_gap=1.0)),
    E("path_constant", girsanov.path_constant, dict(drift_gap=1.0, horizon=2.0)),
    E("synchronous_distance", girsanov.synchronous_distance, dict(grad_bound=1.0, strong_convexity=1.0, smoothness=1.0, step_size=0.1)),
    # exact laws
    E("exact_last_iterate_epsilon", exact.exact_last_iterate_epsilon,
      dict(hessian1=H, linear1=G, hessian2=H, linear2=2 * G, step_size=0.1, steps=[1, 5], delta=0.01), kinds={"steps": "ints"}),
    E("exact_last_iterate_curve", exact.exact_last_iterate_curve,
      dict(hessian1=H, linear1=G, hessian2=H, linear2=2 * G, step_size=0.1, steps=[1, 5], orders=[2.0]), kinds={"steps": "ints"}),
    E("ula_law", exact.ula_law, dict(hessian=H, linear=G, step_size=0.1, steps=[1, 5]), kinds={"steps": "ints"}),
    E("ula_path_rdp_shift_only", exact.ula_path_rdp_shift_only, dict(linear_gap=G, step_size=0.1, steps=5, orders=[2.0])),
    # Gibbs and posterior mechanisms (paper 002, 000)
    E("exponential_mechanism_epsilon", gibbs.exponential_mechanism_epsilon, dict(temperature=1.0, loss_sensitivity=1.0)),
    E("lsi_epsilon", gibbs.lsi_epsilon, dict(delta=0.01, temperature=1.0, lipschitz=1.0, strong_convexity=1.0)),
    E("lsi_delta", gibbs.lsi_delta, dict(epsilon=1.0, temperature=1.0, lipschitz=1.0, strong_convexity=1.0)),
    E("gaussian_mean_exact_epsilon", gibbs.gaussian_mean_exact_epsilon, dict(delta=0.01, temperature=1.0, n=10, radius=1.0)),
    E("gaussian_mean_temperature_exact", gibbs.gaussian_mean_temperature_exact, dict(epsilon=1.0, delta=0.01, n=10, radius=1.0)),
    E("corollary8_temperature", gibbs.corollary8_temperature, dict(epsilon=1.0, delta=0.01, lipschitz=1.0, strong_convexity=1.0)),
    E("gaussian_posterior_epsilon", posterior.gaussian_posterior_epsilon, dict(mean1=[0.0], cov1=[[1.0]], mean2=[1.0], cov2=[[1.0]], delta=0.01)),
    E("gaussian_posterior_rdp", posterior.gaussian_posterior_rdp, dict(mean1=[0.0], cov1=[[1.0]], mean2=[1.0], cov2=[[1.0]], orders=[2.0])),
    E("sgld_paper_posterior_exact", posterior.sgld_paper_posterior_exact,
      dict(n=100, order=2.0, delta=0.01, alpha=1.0, beta=1.0, x_high=1.0, x_low=0.5, c=2.0)),
    # exponential families (paper 004)
    E("beta_renyi", expfam.beta_renyi, dict(a_p=2.0, b_p=3.0, a_q=3.0, b_q=2.0, order=2.0)),
    E("calibrate_diffuse", expfam.calibrate_diffuse, dict(prior_a=2.0, prior_b=2.0, n=10, order=2.0, target_epsilon=1.0)),
    E("dirichlet_renyi", expfam.dirichlet_renyi, dict(alpha_p=[1.0, 2.0], alpha_q=[2.0, 1.0], order=2.0)),
    E("glm_tempered_posterior_rdp", expfam.glm_tempered_posterior_rdp, dict(orders=[2.0], temperature=1.0, lipschitz=1.0, strong_convexity=1.0)),
    # Gaussian mixtures (cyclic SGLD)
    E("equal_weight_mixture", mixture.equal_weight_mixture, dict(means=[0.0, 1.0], sds=[1.0, 1.0])),
    E("mixture_epsilon", lambda **k: mixture.mixture_epsilon(mix=MIX, **k), dict(sd=1.0, delta=0.01)),
    E("mixture_renyi", lambda **k: mixture.mixture_renyi(mix=MIX, **k), dict(sd=1.0, order=2.0)),
    # the released last iterate (issue 22)
    E("last_iterate_curve", dpjax.accountants.last_iterate_curve,
      dict(step_size=0.1, noise_std=1.0, steps=10, dataset_size=20, gradient_sensitivity=2.0, smoothness=1.0, strong_convexity=0.1,
           diameter=3.0, batching="cyclic", batch_size=4, method="auto")),
    E("last_iterate_gdp_mu", dpjax.accountants.last_iterate_gdp_mu,
      dict(step_size=0.1, noise_std=1.0, steps=10, dataset_size=20, gradient_sensitivity=2.0, smoothness=1.0, strong_convexity=0.1,
           diameter=3.0, batching="shuffled", batch_size=4)),
    E("sampler_last_iterate_curve", lambda **k: dpjax.accountants.sampler_last_iterate_curve(M.gaussian_mean(), PAIR, S.ula(0.05), **k),
      dict(num_steps=10, method="auto")),
    # sweeps
]


def _has_nan(obj, depth=0) -> bool:
    if depth > 4:
        return False
    if isinstance(obj, float):
        return math.isnan(obj)
    if isinstance(obj, (np.ndarray, np.floating)):
        arr = np.asarray(obj)
        return arr.dtype.kind == "f" and bool(np.isnan(arr).any())
    if isinstance(obj, (list, tuple)):
        return any(_has_nan(o, depth + 1) for o in obj)
    if is_dataclass(obj) and not isinstance(obj, type):
        return any(_has_nan(getattr(obj, f.name), depth + 1) for f in fields(obj))
    return False


@dataclass
class Outcome:
    entry: str
    argument: str
    label: str
    required: bool  # a bad value that must be refused
    verdict: str  # "clear", "accepted", "unclear", "nan"
    detail: str


def _bad_values(kind):
    if kind == "number":
        return NUMBER_BAD, NUMBER_MAYBE
    if kind == "numbers":  # vectorised: a list of numbers is fine
        return {k: v for k, v in NUMBER_BAD.items() if k != "list"} | {"ragged": [[1.0], [1.0, 2.0]]}, NUMBER_MAYBE
    if kind == "int":
        return INT_BAD, INT_MAYBE
    if kind == "ints":
        return {"str": "x", "None-list": [None], "floats": [1.5, 2.5], "strings": ["a"]}, {"negative": [-1], "huge": [10**12]}
    if kind == "array":
        return ARRAY_BAD, ARRAY_MAYBE
    if kind == "choice":
        return CHOICE_BAD, {}
    return {}, {}


CALL_SECONDS = 20


class TooSlow(BaseException):
    pass


def _too_slow(signum, frame):
    raise TooSlow


signal.signal(signal.SIGALRM, _too_slow)


def run_entry(entry: Entry, extremes: bool = True) -> list[Outcome]:
    baseline_nan = False
    if extremes and entry.extremes:  # the valid call, to tell a new NaN from one it returns too
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            baseline_nan = _has_nan(entry.fn(**entry.kwargs))
    declared = getattr(entry.fn, "argument_kinds", {})
    try:
        defaults = {k: p.default for k, p in inspect.signature(entry.fn).parameters.items()}
    except (TypeError, ValueError):
        defaults = {}
    out = []
    for arg, good in entry.kwargs.items():
        kind = entry.kinds.get(arg, declared.get(arg, "").rstrip("?") or _kind(good))
        bad, maybe = _bad_values(kind)
        word = entry.names.get(arg, arg)
        for required, table in ((True, bad), (False, maybe if (extremes and entry.extremes) else {})):
            for label, value in table.items():
                if (arg, label) in entry.allowed or (value is None and defaults.get(arg, inspect.Parameter.empty) is None):
                    continue  # a valid value for this argument
                kwargs = dict(entry.kwargs)
                kwargs[arg] = value
                signal.alarm(CALL_SECONDS)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        result = entry.fn(**kwargs)
                except TooSlow:
                    out.append(Outcome(entry.name, arg, label, required, "unclear", f"still running after {CALL_SECONDS} s"))
                    continue
                except (ValueError, TypeError) as err:
                    text = str(err)
                    clear = word in text and "could not convert" not in text
                    out.append(Outcome(entry.name, arg, label, required, "clear" if clear else "unclear", f"{type(err).__name__}: {text[:200]}"))
                    continue
                except Exception as err:  # noqa: BLE001 - classifying every failure
                    out.append(Outcome(entry.name, arg, label, required, "unclear", f"{type(err).__name__}: {str(err)[:200]}"))
                    continue
                finally:
                    signal.alarm(0)
                verdict = "nan" if (_has_nan(result) and not baseline_nan) else "accepted"
                out.append(Outcome(entry.name, arg, label, required, verdict, repr(result)[:120]))
    return out


def problems(outcomes):
    return [o for o in outcomes if o.verdict in ("unclear", "nan") or (o.required and o.verdict != "clear")]


@pytest.mark.parametrize("entry", REGISTRY, ids=[e.name for e in REGISTRY])
def test_every_bad_input_gets_a_clear_error(entry):
    bad = problems(run_entry(entry, extremes=False))
    assert not bad, "\n".join(f"{o.argument}={o.label}: {o.verdict}: {o.detail}" for o in bad)


@pytest.mark.parametrize("entry", [e for e in REGISTRY if e.extremes], ids=[e.name for e in REGISTRY if e.extremes])
def test_every_extreme_input_gets_a_number_or_a_clear_error(entry):
    """0, negative, +-inf, 1e300 (and inf entries, a 3-d array): each call returns without a
    NaN the valid call does not give, or raises ValueError/TypeError naming the argument
    (issue 12 items 5 and 12; all 72 entry points take ~5 s together)."""
    bad = [o for o in problems(run_entry(entry)) if not o.required]
    assert not bad, "\n".join(f"{o.argument}={o.label}: {o.verdict}: {o.detail}" for o in bad)


if __name__ == "__main__":
    everything = []
    for entry in REGISTRY:
        try:
            start = time.perf_counter()
            everything += run_entry(entry)
            print(f"{entry.name}: {time.perf_counter() - start:.1f} s", flush=True)
        except Exception as err:  # noqa: BLE001
            print(f"BASELINE FAILED {entry.name}: {type(err).__name__}: {err}")
    required = [o for o in everything if o.required]
    print(f"{len(REGISTRY)} entry points, {len(everything)} inputs ({len(required)} invalid for sure, {len(everything) - len(required)} extreme)")
    print(f"clear errors on invalid inputs: {sum(o.verdict == 'clear' for o in required)} of {len(required)}")
    print(f"extreme inputs: {sum(o.verdict == 'clear' for o in everything if not o.required)} clear errors, "
          f"{sum(o.verdict == 'accepted' for o in everything if not o.required)} accepted")
    for o in problems(everything):
        print(f"  {o.entry}({o.argument}={o.label}): {o.verdict}: {o.detail}")
    sys.exit(1 if problems(everything) else 0)
