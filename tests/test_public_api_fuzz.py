"""Every public call, fed a bad value in one argument (None, a string,
NaN, inf, a negative or zero number, a bool, a ragged list, an array of strings, a complex
number, a mapping, an arbitrary object, an empty list, an array holding NaN, a 2-D array),
raises ``ValueError`` or ``TypeError`` whose message names that argument, before any compute:
never AttributeError, AssertionError, IndexError or an unnamed "could not convert string".

The accountants' scalar functions are fuzzed by tests/test_bad_inputs.py; here are their
batch entry points (pld_curve, the calibrations, group privacy, curve_gdp, curve methods) and
the planning and fitting estimators (issue 38, item 9). Values a function rightly accepts (0 as a record index, None for an optional argument, ...) are listed in ``ACCEPTED``
with the reason and not called.
"""
from __future__ import annotations

import tempfile
import warnings

import numpy as np
import pytest

import dpjax
from dpjax import accountants, canaries, estimators, models, samplers
from dpjax.accountants import fdp, group
from dpjax.accountants.curve import PrivacyCurve, Provenance
from dpjax.sweep import config as sweep_config
from dpjax.sweep import store as sweep_store

BAD = {
    "None": None,
    "str": "abc",
    "nan": float("nan"),
    "inf": float("inf"),
    "negative": -1,
    "zero": 0,
    "bool": True,
    "ragged": [[1.0, 2.0], [3.0]],
    "strings": np.array(["a", "b"]),
    "complex": 1 + 2j,
    "mapping": {},
    "object": object(),
    "empty list": [],
    "nan array": np.array([np.nan, 1.0]),
    "2-D array": np.ones((2, 2)),
    "huge int": 10**30,  # a size no device holds (batch_size=10**30 was accepted, issue 38)
}

# (function, argument, bad value) a function rightly accepts, with why
ACCEPTED = {
    ("replace_one", "index", "zero"): "record 0 exists",
    ("add_remove", "index", "zero"): "record 0 exists",
    ("ula", "clip_norm", "None"): "no clipping",
    ("gaussian_mean", "prior_precision", "zero"): "a flat prior is allowed (the posterior stays proper with records)",
    ("gaussian_mean_posterior", "prior_precision", "zero"): "a flat prior is allowed",
    ("gaussian_mean_dataset", "x", "2-D array"): "two records of dimension 2",
    ("epsilon_estimate", "num_bootstrap", "zero"): "no bootstrap interval (printed as such; tests/test_api_edges.py)",
    ("renyi_estimate", "num_bootstrap", "zero"): "no bootstrap interval",
    ("privacy_loss_profile", "epsilons", "zero"): "eps = 0 is a valid point of the profile",
    ("run_coupled", "seed", "negative"): "any integer seeds the counter-based streams",
    ("run_coupled", "seed", "zero"): "any integer seeds the counter-based streams",
    ("run_coupled", "num_steps", "zero"): "the start is recorded",
    ("run_coupled", "progress", "bool"): "True shows the bar",
    ("point_hash", "point", "mapping"): "the empty point has a hash",
    ("make_dataset", "mask", "None"): "all records present",
    ("from_numpyro", "model_kwargs", "None"): "no extra arguments",
    ("from_numpyro", "model_kwargs", "mapping"): "no extra arguments",
    ("from_numpyro", "name", "None"): "a default name",
    ("from_numpyro", "name", "str"): "any name",
    ("run_coupled", "init", "None"): "the default start",
    ("run_coupled", "record_steps", "None"): "the last step",
    ("run_coupled", "record_steps", "zero"): "the start",
    ("load_results", "columns", "None"): "every column",
    ("load_results", "columns", "strings"): "column names (no result file yet, so none can be unknown)",
    ("load_results", "columns", "mapping"): "no column names",
    ("load_results", "columns", "empty list"): "no columns",
    ("load_results", "strict", "bool"): "strict mode",
    ("privacy_loss_profile", "log_ratio", "ragged"): "a list of 1-D chunks, the documented iterable form: [1, 2] then [3]",
}
# issue 38: the accountants' batch entry points and the planning estimators. Arrays broadcast
# (a batch of configurations), so a 2-D array of valid values is a valid batch
for _fn in ("pld_curve", "pld_epsilons", "calibrate_noise_multiplier", "calibrate_steps", "calibrate_sampling_rate", "group_profile"):
    for _arg in ("noise_multiplier", "sampling_rate", "steps", "target_epsilon", "delta", "epsilons", "deltas"):
        ACCEPTED[(_fn, _arg, "2-D array")] = "a batch of configurations (arrays broadcast)"
ACCEPTED.update({
    ("group_profile", "deltas", "zero"): "delta 0 is pure DP",
    ("group_profile", "epsilons", "zero"): "eps 0 is a point of a profile",
    ("group_profile", "epsilons", "inf"): "eps = inf is a point of a profile (delta 0 there)",
    ("expected_certified_bound", "mu", "zero"): "mu = 0: nothing to certify (bound 0)",
    ("group_rdp", "rdp", "inf"): "an RDP of inf at an order is a valid (vacuous) bound",
    ("group_rdp", "rdp", "zero"): "RDP 0 at every order (a mechanism that leaks nothing)",
    ("group_rdp", "rdp", "2-D array"): "a batch of curves (orders on the last axis)",
    ("gdp_lower_bound", "seed", "zero"): "seed 0", ("tradeoff_upper_bound", "seed", "zero"): "seed 0",
    ("rdp_lower_bound", "seed", "zero"): "seed 0",
    ("least_varying_direction", "x", "2-D array"): "two rows of two features",
    ("group_profile", "size", "huge int"): "a vacuous but valid group guarantee (delta capped at 1)",
    ("group_rdp", "size", "huge int"): "a vacuous but valid group bound (RDP inf)",
    ("PrivacyCurve.group", "size", "huge int"): "a vacuous but valid group bound (RDP inf)",
    ("PrivacyCurve.self_compose", "times", "huge int"): "RDP times 1e30: a valid (vacuous) bound, computed at once",
    ("curve_gdp", "max_points", "huge int"): "a cap on the grid that is never reached",
    ("run_coupled", "chunk_size", "huge int"): "a chunk larger than the run is the whole run",
})

# the argument's name as the message spells it, where the public name differs
ALIASES = {("make_batching", "name"): "batching"}


def _numpyro_model(x, y=None):
    import numpyro
    import numpyro.distributions as dist

    theta = numpyro.sample("theta", dist.Normal(0, 1).expand([2]).to_event(1))
    numpyro.sample("y", dist.Normal(x @ theta, 1.0), obs=y)


_RDP_CURVE = PrivacyCurve.from_rdp([2.0, 4.0, 8.0], [0.1, 0.2, 0.4], Provenance("fuzz"))


def _empty_store() -> str:
    """A sweep output folder in which no point has completed (load_results: no rows)."""
    folder = tempfile.mkdtemp(prefix="dpjax-fuzz-store-")
    sweep_store.ResultsStore(folder).open().close()
    return folder


def _cases() -> dict:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(6, 2)), rng.normal(size=6)
    dataset = dpjax.make_dataset(x=x, y=y)
    record = {"x": np.array([3.0, -3.0]), "y": 5.0}
    pair = dpjax.replace_one(dataset, 0, record)
    linear = models.bayesian_linear_regression(1.0, 1.0, dim=2)
    p, q = rng.normal(size=200), rng.normal(size=200) + 1.0
    p_big, q_big = rng.normal(size=2000), rng.normal(size=2000) + 1.0  # the GDP fit needs >= 1000 a side
    return {
        # name: (function, positional arguments with their names, keyword arguments)
        "make_dataset": (dpjax.make_dataset, {}, dict(x=x, y=y, mask=np.ones(6))),
        "replace_one": (dpjax.replace_one, dict(dataset=dataset, index=0, record=record), {}),
        "add_remove": (dpjax.add_remove, dict(dataset=dataset, index=0), {}),
        "make_pair": (dpjax.make_pair, dict(dataset=dataset, neighbour=pair.neighbour), dict(adjacency="replace-one")),
        "Model": (dpjax.Model, dict(log_likelihood=lambda t, r: -t @ t, log_prior=lambda t: -t @ t, dim=2), {}),
        "ula": (samplers.ula, dict(step_size=0.01), dict(temperature=1.0, parameterisation="euler", clip_norm=1.0)),
        "sgld": (samplers.sgld, dict(step_size=0.01), dict(batching="uniform", batch_size=2, temperature=1.0)),
        "cyclic_sgld": (samplers.cyclic_sgld, dict(step_size=0.01), dict(batch_size=1, order_family="affine")),
        "make_batching": (samplers.make_batching, dict(name="uniform"), dict(batch_size=2)),
        "bayesian_linear_regression": (models.bayesian_linear_regression, dict(noise_precision=1.0, prior_precision=1.0), dict(dim=2)),
        "logistic_regression": (models.logistic_regression, dict(prior_precision=1.0, dim=2), {}),
        "gaussian_mean": (models.gaussian_mean, {}, dict(dim=1, prior_precision=1.0, inverse_temperature=1.0)),
        "from_numpyro": (models.from_numpyro, dict(model_fn=_numpyro_model),
                         dict(observed_site="y", example_record={"x": x[0], "y": y[0]}, likelihood_weight=1.0, model_kwargs={}, name="m")),
        "quadratic_form": (models.quadratic_form, dict(model=linear, dataset=dataset), {}),
        "gaussian_posterior": (models.gaussian_posterior, dict(model=linear, dataset=dataset), {}),
        "linear_regression_posterior": (models.linear_regression_posterior, dict(noise_precision=1.0, prior_precision=1.0, dataset=dataset), {}),
        "gaussian_mean_posterior": (models.gaussian_mean_posterior,
                                    dict(inverse_temperature=1.0, prior_precision=1.0, dataset=dpjax.make_dataset(x=x[:, :1])), {}),
        "regression_dataset": (models.regression_dataset, dict(x=x, y=y), {}),
        "logistic_regression_dataset": (models.logistic_regression_dataset, dict(x=x, y=(y > 0).astype(float)), {}),
        "gaussian_mean_dataset": (models.gaussian_mean_dataset, dict(x=x), {}),
        "epsilon_estimate": (estimators.epsilon_estimate, dict(samples_p=p, samples_q=q, delta=0.01), dict(num_bootstrap=5, confidence=0.95)),
        "epsilon_lower_bound": (estimators.epsilon_lower_bound, dict(samples_p=p, samples_q=q, delta=0.01, confidence=0.95), {}),
        "renyi_estimate": (estimators.renyi_estimate, dict(samples_p=p, samples_q=q, orders=[2.0]), dict(num_bootstrap=5)),
        "privacy_loss_profile": (estimators.privacy_loss_profile, dict(log_ratio=0.3 * p, epsilons=[0.5]), dict(num_bootstrap=10, num_blocks=10)),
        "resolution_ceiling": (estimators.resolution_ceiling, dict(holdout_p=100, holdout_q=100, delta=0.01, confidence=0.95), {}),
        "run_coupled": (dpjax.run_coupled, dict(seed=0, model=linear, pair=pair, sampler=samplers.ula(0.01)),
                        dict(num_pairs=4, num_steps=2, record_steps=[2], init=np.zeros(2), chunk_size=10, progress=False)),
        "load_results": (sweep_store.load_results, dict(root=_empty_store()), dict(columns=["value"], strict=False)),
        "point_hash": (sweep_config.point_hash, dict(point={"a": 1}), {}),
        # accountants' batch entry points (a bad value is refused before any PLD is computed)
        "pld_curve": (accountants.pld_curve, dict(noise_multiplier=1.0, sampling_rate=0.01, steps=10), {}),
        "pld_epsilons": (accountants.pld_epsilons, dict(noise_multiplier=1.0, sampling_rate=0.01, steps=10, delta=1e-5), {}),
        "calibrate_noise_multiplier": (accountants.calibrate_noise_multiplier,
                                       dict(target_epsilon=1.0, delta=1e-5, sampling_rate=0.01, steps=100), dict(accountant="rdp")),
        "calibrate_steps": (accountants.calibrate_steps, dict(target_epsilon=1.0, delta=1e-5, noise_multiplier=1.0, sampling_rate=0.01),
                            dict(accountant="rdp")),
        "calibrate_sampling_rate": (accountants.calibrate_sampling_rate, dict(target_epsilon=1.0, delta=1e-5, noise_multiplier=1.0, steps=100),
                                    dict(accountant="rdp")),
        "group_profile": (group.group_profile, dict(epsilons=np.array([0.5, 1.0]), deltas=np.array([1e-3, 1e-4]), size=2), {}),
        "group_rdp": (group.group_rdp, dict(orders=np.array([2.0, 4.0, 8.0]), rdp=np.array([0.1, 0.2, 0.4]), size=2), {}),
        "curve_gdp": (fdp.curve_gdp, dict(curve=_RDP_CURVE), dict(min_delta=1e-8, rtol=1e-3, max_points=2000)),
        "PrivacyCurve.group": (_RDP_CURVE.group, dict(size=2), {}),
        "PrivacyCurve.self_compose": (_RDP_CURVE.self_compose, dict(times=3), {}),
        "PrivacyCurve.compose": (_RDP_CURVE.compose, dict(other=_RDP_CURVE), {}),
        # planning and fitting
        "pairs_needed": (estimators.pairs_needed, dict(epsilon=1.0, delta=1e-3), dict(fraction=0.9, confidence=0.95, selection_fraction=0.2)),
        "expected_certified_bound": (estimators.expected_certified_bound, dict(mu=1.0, pairs=1000, delta=1e-3),
                                     dict(confidence=0.95, selection_fraction=0.2)),
        "gdp_lower_bound": (estimators.gdp_lower_bound, dict(samples_p=p_big, samples_q=q_big), dict(confidence=0.95, selection_fraction=0.1, seed=0)),
        "tradeoff_upper_bound": (estimators.tradeoff_upper_bound, dict(samples_p=p, samples_q=q, alpha=[0.1, 0.5]),
                                 dict(confidence=0.95, selection_fraction=0.2, seed=0)),
        "rdp_lower_bound": (estimators.rdp_lower_bound, dict(samples_p=p, samples_q=q, orders=[2.0]),
                            dict(confidence=0.95, selection_fraction=0.2, candidates_per_tail=20, seed=0)),
        "least_varying_direction": (canaries.least_varying_direction, dict(x=x), {}),
    }


CASES = _cases()


def _call(fn, positional: dict, keywords: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*positional.values(), **keywords)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_bad_value_of_every_argument_is_a_clear_error(name):
    fn, positional, keywords = CASES[name]
    bare, unnamed, open_cases = [], [], []
    for argument in [*positional, *keywords]:
        for bad_name, bad in BAD.items():
            case = (name, argument, bad_name)
            if case in ACCEPTED:
                continue
            args, kwargs = dict(positional), dict(keywords)
            base = args.get(argument, kwargs.get(argument))
            if bad_name == "huge int" and not (isinstance(base, (int, np.integer)) and not isinstance(base, bool)):
                continue  # 1e30 is a fine real (a precision, a noise multiplier); as a count it is no size
            (args if argument in args else kwargs)[argument] = bad
            try:
                _call(fn, args, kwargs)
            except (ValueError, TypeError) as err:
                if ALIASES.get((name, argument), argument) not in str(err):
                    unnamed.append(f"{argument}={bad_name}: {type(err).__name__}: {str(err)[:160]}")
            except Exception as err:  # noqa: BLE001 - what the test is looking for
                bare.append(f"{argument}={bad_name}: {type(err).__name__}: {str(err)[:160]}")
            else:
                open_cases.append(f"{argument}={bad_name} was accepted")
    assert not bare, "bare Python errors:\n" + "\n".join(bare)
    assert not unnamed, "errors that do not name the argument:\n" + "\n".join(unnamed)
    assert not open_cases, "bad values accepted:\n" + "\n".join(open_cases)


def test_the_valid_calls_work():
    """The base calls themselves are valid (so every refusal above is the bad value's doing)."""
    for name, (fn, positional, keywords) in CASES.items():
        if name == "run_coupled":  # a compile: exercised in test_coupled.py
            continue
        _call(fn, positional, keywords)


def test_from_numpyro_none_names_the_argument():
    """The issue's case: from_numpyro(None, ...) raised a bare AssertionError from numpyro."""
    with pytest.raises(TypeError, match=r"model_fn=None violates the rule that model_fn is a numpyro model function"):
        models.from_numpyro(None, observed_site="y", example_record={"x": np.zeros(2), "y": 0.0})
    with pytest.raises(TypeError, match=r"model_fn could not be called with example_record's fields \['z'\]"):
        models.from_numpyro(_numpyro_model, observed_site="y", example_record={"z": np.zeros(2)})


def test_from_numpyro_on_a_float64_dataset_raises_no_precision_warning():
    """The issue's case: from_numpyro itself emitted JAX's "float64 ... truncated to float32"
    warning when given a Dataset (which keeps float64 data) outside x64 mode."""
    import jax

    rng = np.random.default_rng(1)
    dataset = dpjax.make_dataset(x=rng.normal(size=(5, 2)), y=rng.normal(size=5))
    assert not jax.config.jax_enable_x64
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = models.from_numpyro(_numpyro_model, observed_site="y", example_record=dataset)
        value = float(model.log_likelihood(np.zeros(2, np.float32), dataset.record(1)))
    y = float(dataset.fields["y"][1])
    assert value == pytest.approx(-0.5 * y**2 - 0.5 * np.log(2 * np.pi), rel=1e-6)  # N(y; 0, 1) at theta = 0


def test_make_dataset_takes_fields_by_name_and_the_old_positional_mask_with_a_deprecation_warning():
    x = np.arange(4.0)
    with pytest.raises(TypeError, match=r"make_dataset got 1 positional argument\(s\) .*it takes the fields by name"):
        dpjax.make_dataset(x)
    with pytest.warns(DeprecationWarning, match="the mask as a positional argument is deprecated"):
        old = dpjax.make_dataset([1, 0, 1, 1], x=x)
    new = dpjax.make_dataset(x=x, mask=[1, 0, 1, 1])
    assert np.array_equal(np.asarray(old.mask), np.asarray(new.mask)) and old.num_records == new.num_records == 3
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match=r"it was the positional argument: pass fields by name"):
        dpjax.make_dataset(np.ones((4, 2)), y=x)  # a field passed where the mask was
    with pytest.raises(TypeError, match=r"mask='1011' violates the rule that mask is an array of 0"):
        dpjax.make_dataset(x=x, mask="1011")
    assert sorted(dpjax.make_dataset(x=x, args=x).fields) == ["args", "x"], "any field name but mask"


def test_issue_38_cases_are_clear_errors():
    """The adversarial run's named cases (issue 38, item 9)."""
    with pytest.raises(ValueError, match=r"x \(shape \(2000,\)\) violates x a 2-D array"):
        canaries.least_varying_direction(np.zeros(2000))
    with pytest.raises(TypeError, match="curve=None violates curve a PrivacyCurve"):
        fdp.curve_gdp(None)
    with pytest.raises(ValueError, match=r"sampling_rate=\[\] violates sampling_rate a number or a non-empty array"):
        accountants.calibrate_noise_multiplier(1.0, 1e-5, [], 100, accountant="rdp")
    with pytest.raises(ValueError, match=r"batch_size=10{30} violates batch_size <= 2\*\*31 - 1"):
        samplers.sgld(0.1, batching="uniform", batch_size=10**30)
