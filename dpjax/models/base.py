"""The model interface: a per-record log-likelihood plus a log-prior.

Positions are flat float arrays of shape ``(d,)`` (d >= 1); models with pytree parameters
flatten them (see the numpyro adapter). The potential on a dataset D is

    U_D(theta) = -log_prior(theta) - likelihood_weight * sum_i mask_i * log_likelihood(theta, x_i)

``likelihood_weight`` is the tempering factor: the Gibbs posterior's inverse temperature
beta (paper 002), the diffuse mechanism's r (paper 004), 1 for the ordinary posterior.
The sampler's own temperature (the noise scale) is a sampler argument, not a model one.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp

from ..data import Dataset

LogLikelihood = Callable[[jax.Array, dict], jax.Array]
LogPrior = Callable[[jax.Array], jax.Array]


@dataclasses.dataclass(frozen=True)
class Model:
    """A per-record log-likelihood ``log_likelihood(theta, record)`` and ``log_prior(theta)``.

    ``record`` is a dict of one record's fields (``Dataset.record(i)``). ``dim`` is the
    dimension of ``theta``. Instances are static (hashable by identity) so they can be closed
    over by jitted samplers.
    """

    log_likelihood: LogLikelihood
    log_prior: LogPrior
    dim: int
    likelihood_weight: float = 1.0
    name: str = "model"
    # Optional check of a dataset's fields for this model (shapes, label values); raises
    # ValueError. Called by check_dataset, which samplers and accountants may call up front.
    dataset_check: Callable[[Dataset], None] | None = None
    # Optional structure the coupled engine uses for a cheaper exact step (see
    # dpjax.models.structure): a GLM declaration (theta enters each record's log-likelihood
    # only through x_i . theta), exact per-record gradient norms for clipping, and a batch's
    # weighted (clipped) gradient sum in one fused pass.
    glm: Any = None
    record_grad_norms: Callable[[jax.Array, dict], jax.Array] | None = None
    weighted_grad_sum: Callable[[jax.Array, dict, Callable[[jax.Array], jax.Array]], jax.Array] | None = None
    # Optional constants the model certifies for the last-iterate accountants (a
    # dpjax.models.constants.CurvatureCertificate; None: none certified).
    curvature: object | None = None

    def __str__(self) -> str:
        """One line: name, dimension and the structure the engine can use (the dataclass repr
        prints every function object; repr() keeps it)."""
        structure = [k for k in ("glm", "curvature") if getattr(self, k, None) is not None]
        weight = "" if self.likelihood_weight == 1.0 else f", likelihood weight {self.likelihood_weight:g}"
        return (f"{type(self).__name__} {self.name!r}: theta in R^{self.dim}{weight}"
                + (f" ({', '.join(structure)} structure)" if structure else ""))

    def __post_init__(self):
        for name in ("log_likelihood", "log_prior"):  # refused here, not at the first gradient
            if not callable(getattr(self, name)):
                raise TypeError(f"{name}={getattr(self, name)!r:.80} violates the rule that {name} is a function of theta (a callable)")
        if not (isinstance(self.dim, int) and not isinstance(self.dim, bool) and self.dim >= 1):
            raise ValueError(f"dim={self.dim!r} must be a positive integer")
        if self.dim > 2**31 - 1:  # a parameter vector no device holds (10**30 was accepted)
            raise ValueError(f"dim={self.dim} violates dim <= 2**31 - 1 (an array axis the device can index)")
        if not (self.likelihood_weight > 0):
            raise ValueError(f"likelihood_weight={self.likelihood_weight!r} violates likelihood_weight > 0")

    def with_structure(self, *, glm: Any = None, record_grad_norms: Callable[[jax.Array, dict], jax.Array] | None = None,
                       weighted_grad_sum: Callable[[jax.Array, dict, Callable[[jax.Array], jax.Array]], jax.Array] | None = None) -> "Model":
        """The same model declaring a GLM structure, exact per-record gradient norms and/or a
        fused weighted gradient sum (:mod:`dpjax.models.structure`); the engine checks each
        declaration against ``log_likelihood`` before a run."""
        from .structure import GLM

        if glm is not None and not isinstance(glm, GLM):
            raise TypeError(f"glm={glm!r} must be a dpjax.models.GLM")
        if record_grad_norms is not None and not callable(record_grad_norms):
            raise TypeError(f"record_grad_norms={record_grad_norms!r} must be a callable (theta, records) -> (b,) norms")
        if weighted_grad_sum is not None and not callable(weighted_grad_sum):
            raise TypeError(f"weighted_grad_sum={weighted_grad_sum!r} must be a callable (theta, records, weigh) -> (d,) gradient sum")
        return dataclasses.replace(self, glm=glm if glm is not None else self.glm,
                                   record_grad_norms=record_grad_norms if record_grad_norms is not None else self.record_grad_norms,
                                   weighted_grad_sum=weighted_grad_sum if weighted_grad_sum is not None else self.weighted_grad_sum)

    def tempered(self, likelihood_weight: float) -> "Model":
        """The same model with its log-likelihood multiplied by ``likelihood_weight``."""
        return dataclasses.replace(self, likelihood_weight=likelihood_weight)

    def check_dataset(self, dataset: Dataset) -> None:
        """Raise ``ValueError`` if ``dataset`` does not fit this model (missing fields, wrong
        shapes, labels outside their range). A no-op for models without a ``dataset_check``."""
        if not isinstance(dataset, Dataset):
            raise TypeError(f"dataset must be a dpjax.data.Dataset, got {type(dataset).__name__}")
        if self.dataset_check is not None:
            self.dataset_check(dataset)

    # --- potentials and gradients -------------------------------------------------------
    def record_log_likelihoods(self, theta: jax.Array, dataset: Dataset) -> jax.Array:
        """log p(x_i | theta) for every record slot, shape ``(n,)`` (mask not applied)."""
        return jax.vmap(self.log_likelihood, in_axes=(None, 0))(theta, dataset.fields)

    def potential(self, theta: jax.Array, dataset: Dataset) -> jax.Array:
        """U_D(theta) = -log prior - likelihood_weight * sum_i mask_i log-likelihood_i."""
        ll = self.record_log_likelihoods(theta, dataset)
        return -self.log_prior(theta) - self.likelihood_weight * jnp.sum(dataset.mask * ll)

    def prior_grad(self, theta: jax.Array) -> jax.Array:
        """Gradient of the negative log-prior, shape ``(d,)``."""
        return jax.grad(lambda t: -self.log_prior(t))(theta)

    def record_grad(self, theta: jax.Array, record: dict) -> jax.Array:
        """Gradient of ``-likelihood_weight * log p(record | theta)``, shape ``(d,)``."""
        return jax.grad(lambda t: -self.likelihood_weight * self.log_likelihood(t, record))(theta)

    def record_grads(self, theta: jax.Array, dataset: Dataset) -> jax.Array:
        """Per-record gradients of the weighted negative log-likelihood, shape ``(n, d)``."""
        return jax.vmap(self.record_grad, in_axes=(None, 0))(theta, dataset.fields)

    def potential_grad(self, theta: jax.Array, dataset: Dataset) -> jax.Array:
        """grad U_D(theta), shape ``(d,)``."""
        return jax.grad(self.potential)(theta, dataset)


def shared(factory: Callable[..., "Model"]) -> Callable[..., "Model"]:
    """Return the same model object for the same arguments.

    A model's functions are closures, and compiled engine programs are cached by the model's
    identity: building ``bayesian_linear_regression(1.0, 0.1)`` twice (say, once per sweep point)
    must not compile twice. Arguments that cannot be hashed skip the cache.
    """
    cache: dict = {}

    @functools.wraps(factory)
    def build(*args, **kwargs):
        try:
            # typed keys: True == 1 == 1.0 as dict keys, but they are different arguments (a bool
            # must still reach the factory's own validation)
            key = (tuple((type(a), a) for a in args), tuple(sorted((k, type(v), v) for k, v in kwargs.items())))
            hash(key)
        except TypeError:
            return factory(*args, **kwargs)
        if key not in cache:
            if len(cache) >= 256:
                cache.pop(next(iter(cache)))
            cache[key] = factory(*args, **kwargs)
        return cache[key]

    return build
