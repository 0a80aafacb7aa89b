"""Build a resolved sweep point's objects: model, neighbouring pair, sampler, shared start.

Synthetic data generators (all deterministic in ``data.seed``, so every process of a
multi-host run builds the same pair):

* ``gaussian``: x_i ~ N(mean, scale^2 I_d) for :func:`dpjax.models.gaussian_mean`.
* ``regression``: x_i ~ N(0, I_d); y_i = w <1, x_i> + noise_scale N(0, 1) (linear regression)
  or y_i ~ Bernoulli(sigmoid(w <1, x_i>)) (logistic regression), w = ``coefficient``.
* ``paper000``: paper 000 eq. 7: D = n copies of (x_h, c x_h), D' = D with record ``index``
  replaced by (x_h / 2, c x_h / 2); c defaults to n^1.001 as in the paper's Figure 1.

The neighbour is D with record ``index`` replaced by ``record`` (replace-one) or removed
(add-remove; static shapes via the mask, see :mod:`dpjax.data`).
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Optional

import numpy as np

from .. import models, samplers
from ..data import NeighbouringPair, add_remove, replace_one
from ..models.base import Model
from ..samplers import LangevinSampler
from .config import ConfigError


class Problem(NamedTuple):
    model: Model
    pair: NeighbouringPair
    sampler: LangevinSampler
    init: Optional[np.ndarray]  # the shared start (d,), None for zeros


def build_model(spec: Mapping[str, Any]) -> Model:
    name, dim = spec["name"], spec["dim"]
    if name == "gaussian_mean":
        return models.gaussian_mean(dim=dim, prior_precision=spec["prior_precision"], inverse_temperature=spec["inverse_temperature"])
    if name == "bayesian_linear_regression":
        return models.bayesian_linear_regression(spec["noise_precision"], spec["prior_precision"], dim=dim)
    if name == "logistic_regression":
        return models.logistic_regression(spec["prior_precision"], dim)
    raise ConfigError(f"model.name={name!r} has no builder")  # unreachable after validation


def _record(dataset, given: Mapping[str, Any]) -> dict:
    # A scalar for a field with one entry per record (e.g. x of shape (n, 1)) is that entry.
    out = {}
    for name, value in given.items():
        arr = np.asarray(value, dtype=np.float64)
        if name in dataset.fields:
            want = tuple(dataset.fields[name].shape[1:])
            if arr.shape == () and want == (1,):
                arr = arr.reshape(1)
        out[name] = arr
    return out


def build_pair(spec: Mapping[str, Any], model_spec: Mapping[str, Any]) -> NeighbouringPair:
    gen, n, dim = spec["generator"], spec["n"], model_spec["dim"]
    if gen == "paper000":
        c = spec["c"] if spec["c"] is not None else float(n) ** 1.001
        x_high = spec["x_high"]
        dataset = models.regression_dataset(np.full((n, 1), x_high), np.full(n, c * x_high))
        return replace_one(dataset, spec["index"], {"x": np.array([x_high / 2]), "y": np.array(c * x_high / 2)})
    rng = np.random.default_rng(spec["seed"])
    if gen == "gaussian":
        dataset = models.gaussian_mean_dataset(spec["mean"] + spec["scale"] * rng.standard_normal((n, dim)))
    else:  # regression
        x = rng.standard_normal((n, dim))
        signal = spec["coefficient"] * x.sum(axis=1)
        if model_spec["name"] == "logistic_regression":
            y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-signal))).astype(np.float64)
            dataset = models.logistic_regression_dataset(x, y)
        else:
            dataset = models.regression_dataset(x, signal + spec["noise_scale"] * rng.standard_normal(n))
    if spec["adjacency"] == "add-remove":
        return add_remove(dataset, spec["index"])
    return replace_one(dataset, spec["index"], _record(dataset, spec["record"]))


def build_sampler(spec: Mapping[str, Any]) -> LangevinSampler:
    common = dict(temperature=spec["temperature"], parameterisation=spec["parameterisation"], clip_norm=spec["clip_norm"])
    if spec["name"] == "ula":
        return samplers.ula(spec["step_size"], **common)
    if spec["name"] == "sgld":
        return samplers.sgld(spec["step_size"], batching=spec["batching"], batch_size=spec["batch_size"], sampling_rate=spec["rate"], **common)
    return samplers.cyclic_sgld(spec["step_size"], batch_size=spec["batch_size"], **common)


def build(point: Mapping[str, Any], where: str = "point") -> Problem:
    """The point's objects; library errors (e.g. a record of the wrong shape, a batch larger
    than n) come back as :class:`ConfigError` prefixed with ``where`` and the block's key."""
    block = "model"
    try:
        model = build_model(point["model"])
        block = "data"
        pair = build_pair(point["data"], point["model"])
        model.check_dataset(pair.dataset)
        model.check_dataset(pair.neighbour)
        block = "sampler"
        sampler = build_sampler(point["sampler"])
        sampler.validate(pair.dataset.num_slots, point["num_steps"])
    except ConfigError:
        raise
    except (ValueError, TypeError) as err:
        raise ConfigError(f"{where}.{block}: {err}") from None
    init = None if point["init"] is None else np.asarray(point["init"], dtype=np.float64)
    return Problem(model, pair, sampler, init)
