"""Turn a numpyro model function into a dpjax :class:`~dpjax.models.Model`.

The model function must have latent sample sites (the parameters) and exactly one observed
site whose value carries the record axis first, e.g.::

    def m(x, y=None):
        theta = numpyro.sample("theta", dist.Normal(0, 1 / jnp.sqrt(alpha)).expand([d]).to_event(1))
        numpyro.sample("y", dist.Normal(x @ theta, 1 / jnp.sqrt(beta)), obs=y)

Records are passed to the model function as keyword arguments named like the dataset's
fields (here ``x`` and ``y``), one record at a time with a record axis of length 1. The
per-record log-likelihood is the observed site's ``log_prob`` summed over everything but the
record axis; the log-prior is the sum of the latent sites' ``log_prob``.

Parameter space. The latent values (a dict of arrays) are flattened to one vector theta of
shape (d,) with ``jax.flatten_util.ravel_pytree`` in sorted site-name order. theta lives in
the **unconstrained** space: a latent with a constrained support (e.g. a positive scale)
enters as u with value = biject_to(support)(u), and the log-prior includes the log-Jacobian
log|det d value / d u|, so exp(-U_D) is the posterior density of u. For real-valued latents
this is the identity. ``NumpyroModel.constrain(theta)`` returns the latent dict in the
model's own space. Discrete latents are rejected.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from .. import _validate
from .._validate import ArgumentKindError
from ..data import Dataset
from .base import Model


@dataclasses.dataclass(frozen=True)
class NumpyroModel(Model):
    """A :class:`Model` built by :func:`from_numpyro`; ``constrain`` maps theta (unconstrained,
    flat) to the dict of latent values in the model's own (constrained) space."""

    constrain: Callable[[jax.Array], dict] | None = None
    latent_sites: tuple = ()


def _batched_record(record: Mapping[str, Any]) -> dict:
    return {k: jnp.expand_dims(_in_current_precision(v), 0) for k, v in record.items()}


def _in_current_precision(value: Any):
    """``value`` as an array of the precision JAX computes in now. A concrete float64 JAX array
    (a Dataset keeps float64 data) outside x64 mode goes through NumPy, so that it becomes
    float32 as JAX would make it, without JAX's "float64 ... truncated to float32" warning
    (the warning is about a request this code never made: it is the caller's x64 setting)."""
    if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer) and not jax.config.jax_enable_x64:
        value = np.asarray(value)
    return jnp.asarray(value)


def _check_arguments(model_fn, observed_site, example_record, likelihood_weight, model_kwargs, name) -> dict:
    """The record as a dict of host arrays; every argument checked before the model is traced."""
    if not callable(model_fn):
        raise ArgumentKindError(
            f"model_fn={_validate._fmt(model_fn)} violates the rule that model_fn is a numpyro model function "
            f"(a callable taking the record fields by name); got {type(model_fn).__name__}"
        )
    if not isinstance(observed_site, str):
        raise ArgumentKindError(f"observed_site={_validate._fmt(observed_site)} violates the rule that observed_site is the name (a str) of the model's observed sample site")
    _validate.positive("likelihood_weight", likelihood_weight)
    if model_kwargs is not None and not isinstance(model_kwargs, Mapping):
        raise ArgumentKindError(f"model_kwargs={_validate._fmt(model_kwargs)} violates the rule that model_kwargs is a mapping of keyword arguments (or None)")
    if name is not None and not isinstance(name, str):
        raise ArgumentKindError(f"name={_validate._fmt(name)} violates the rule that name is a str (or None)")
    if isinstance(example_record, Dataset):
        example_record = example_record.record(0)
    if not isinstance(example_record, Mapping) or not example_record:
        raise ArgumentKindError(
            f"example_record={_validate._fmt(example_record)} violates the rule that example_record is one record as a "
            "non-empty mapping field name -> value (e.g. {'x': x[0], 'y': y[0]}) or a Dataset"
        )
    record = {}
    for field, value in example_record.items():
        if not isinstance(field, str):
            raise ArgumentKindError(f"example_record has the field name {field!r}; field names must be str (they are the model's keyword arguments)")
        try:
            array = np.asarray(value)
        except (ValueError, TypeError):
            array = None
        if isinstance(value, (str, bytes)) or array is None or array.dtype.kind not in "biuf":
            raise ArgumentKindError(f"example_record[{field!r}]={_validate._fmt(value)} violates the rule that a field's value is a number or an array of numbers")
        record[field] = array
    return record


def _point_of_support(site: dict):
    """A value in each latent's support (numpyro's ``feasible_like``), not a random draw, for the
    trace that finds the latents and their shapes: it samples nothing, so a first from_numpyro
    compiles no random-number programs (0.55 s of its 1.1 s on a 2-core CPU). Observed sites
    keep their data; a support with no known point (numpyro's ``dependent``) is drawn from."""
    if site["type"] != "sample" or site["is_observed"]:
        return None
    fn = site["fn"]
    try:
        return fn.support.feasible_like(jnp.zeros(fn.shape(site["kwargs"].get("sample_shape", ()))))
    except NotImplementedError:
        return None


def from_numpyro(
    model_fn: Callable,
    *,
    observed_site: str,
    example_record: Mapping[str, Any] | Dataset,
    likelihood_weight: float = 1.0,
    model_kwargs: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> NumpyroModel:
    """Adapt ``model_fn`` (see the module docstring) to the dpjax Model interface.

    ``example_record``: one record as a dict of fields (no record axis), or a Dataset whose
    first record is used, to trace the model and find its latent sites and their shapes.
    ``model_kwargs``: extra keyword arguments passed unchanged to ``model_fn`` (not records).
    Raises ``ValueError`` when ``observed_site`` is not the model's only observed site, when
    a latent is discrete, or when the observed value has no record axis; ``TypeError`` naming
    the argument for a ``model_fn`` that is not callable, an ``example_record`` that is not a
    mapping of numbers (or a Dataset), or fields the model function does not take, before the
    model is traced. Tracing happens on host copies of the record, so a float64 Dataset outside
    x64 mode raises no JAX precision warning here.
    """
    from numpyro import handlers
    from numpyro.distributions.transforms import biject_to

    example_record = _check_arguments(model_fn, observed_site, example_record, likelihood_weight, model_kwargs, name)
    extra = dict(model_kwargs or {})
    overlap = set(extra) & set(example_record)
    if overlap:
        raise ValueError(f"model_kwargs and the record fields share names {sorted(overlap)}; records are passed by field name")

    def run(latents: dict | None, record: Mapping[str, Any]):
        # substitute inside seed: numpyro hands a message to the innermost handler first, so the
        # latents have their values before seed looks, and no key is split for them (in the
        # engine's traced step those splits were dead code; in the first trace, compiled work)
        fn = handlers.substitute(model_fn, data=latents) if latents is not None else handlers.substitute(
            model_fn, substitute_fn=_point_of_support)
        return handlers.trace(handlers.seed(fn, rng_seed=0)).get_trace(**extra, **_batched_record(record))

    try:
        trace = run(None, example_record)
    except TypeError as err:  # the model's own signature refused the record's fields or model_kwargs
        raise TypeError(
            f"model_fn could not be called with example_record's fields {sorted(example_record)}"
            f"{' and model_kwargs ' + str(sorted(extra)) if extra else ''} as keyword arguments: {err}"
        ) from err
    observed = [k for k, s in trace.items() if s["type"] == "sample" and s["is_observed"]]
    if observed_site not in trace or trace[observed_site]["type"] != "sample":
        raise ValueError(f"observed_site={observed_site!r} is not a sample site of the model; its sample sites are {sorted(k for k, s in trace.items() if s['type'] == 'sample')}")
    if observed_site not in observed:
        raise ValueError(
            f"observed_site={observed_site!r} is latent (not observed) when the record fields {sorted(example_record)} are "
            f"passed; the model's observed sites are {observed}"
        )
    if observed != [observed_site]:
        raise ValueError(
            f"the model has observed sites {observed}; from_numpyro needs exactly one, observed_site={observed_site!r} "
            "(numpyro.factor also creates an observed site)"
        )
    obs_value = trace[observed_site]["value"]
    if jnp.ndim(obs_value) == 0 or jnp.shape(obs_value)[0] != 1:
        raise ValueError(
            f"observed site {observed_site!r} has value shape {jnp.shape(obs_value)} for one record; its first axis must be the record axis"
        )

    latent_names = tuple(sorted(k for k, s in trace.items() if s["type"] == "sample" and not s["is_observed"]))
    if not latent_names:
        raise ValueError("the model has no latent sample sites; there is no parameter to sample")
    transforms = {}
    for k in latent_names:
        site_fn = trace[k]["fn"]
        if getattr(site_fn, "is_discrete", False):
            raise ValueError(f"latent site {k!r} is discrete ({type(site_fn).__name__}); only continuous latents can be sampled by Langevin methods")
        transforms[k] = biject_to(site_fn.support)
    unconstrained_example = {k: transforms[k].inv(trace[k]["value"]) for k in latent_names}
    flat_example, unravel = ravel_pytree(unconstrained_example)
    dim = int(flat_example.shape[0])

    def constrain(theta):
        u = unravel(theta)
        return {k: transforms[k](u[k]) for k in latent_names}

    def log_prior(theta):
        u = unravel(theta)
        values = {k: transforms[k](u[k]) for k in latent_names}
        tr = run(values, example_record)
        total = 0.0
        for k in latent_names:
            site = tr[k]
            total = total + jnp.sum(site["fn"].log_prob(site["value"]))
            # change of variables to the unconstrained u (zero for real-valued latents)
            total = total + jnp.sum(transforms[k].log_abs_det_jacobian(u[k], values[k]))
        return total

    def log_likelihood(theta, record):
        values = constrain(theta)
        tr = run(values, record)
        site = tr[observed_site]
        return jnp.sum(site["fn"].log_prob(site["value"]))

    return NumpyroModel(
        log_likelihood=log_likelihood,
        log_prior=log_prior,
        dim=dim,
        likelihood_weight=likelihood_weight,
        name=name or f"numpyro:{getattr(model_fn, '__name__', 'model')}",
        constrain=constrain,
        latent_sites=latent_names,
    )

