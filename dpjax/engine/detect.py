"""Quadratic models written as general models, recognised soundly (issue 21).

A user may write Bayesian linear regression (or any Gaussian-likelihood model with a Gaussian
prior) as a plain :class:`dpjax.Model`. Its record gradients are then affine in theta,
g_i(theta) = A_i theta - b_i, and the quadratic path's closed-form tables give the same step
for O(d^2) (unclipped full batch) or O(b d^2) work instead of autodiff.

The test is a proof, not a numerical guess: the Hessian of the record's log-likelihood (and of
the log-prior) is traced to a jaxpr, and dead-code elimination reports whether theta is an
input the Hessian uses. If it is not, the Hessian is the same matrix at every theta (it is a
program that does not read theta), so the function is exactly quadratic in theta (wherever it
is twice differentiable, which it then is everywhere). A model whose Hessian depends on theta
only through a branch (``jnp.where(theta > 0, ...)``) or a callback reads theta, and is not
recognised. The prior must in addition be isotropic with mean 0 (what
:class:`~dpjax.models.QuadraticModel` encodes): -Hessian = c I and gradient 0 at theta = 0,
checked in float64 on the host.

The tables are A_i = Hessian of -log p(r_i | .) and b_i = -grad(-log p(r_i | .))(0), both
exact for a quadratic (evaluated in float64).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.interpreters import partial_eval as pe

from ..data import Dataset
from ..models.base import Model
from ..models.quadratic import QuadraticModel

_CACHE: dict = {}


def _reads_theta(fn, theta, *rest) -> bool:
    """Whether the program of ``fn(theta, *rest)`` reads theta (after dead-code elimination)."""
    closed = jax.make_jaxpr(fn)(theta, *rest)
    _, used = pe.dce_jaxpr(closed.jaxpr, [True] * len(closed.jaxpr.outvars))
    return bool(used[0])


def quadratic_form_of(model: Model, dataset: Dataset) -> Optional[QuadraticModel]:
    """The model as a :class:`QuadraticModel` with closed-form record tables if its record
    log-likelihood and log-prior are provably quadratic in theta (module docstring), else None.
    The same object for the same model (compiled programs are keyed by it)."""
    if isinstance(model, QuadraticModel) or model.glm is not None or model.record_grad_norms is not None or model.weighted_grad_sum is not None:
        return None
    key = (model, tuple(sorted((k, np.asarray(v).shape[1:], np.asarray(v).dtype.str) for k, v in dataset.fields.items())))
    if key in _CACHE:
        return _CACHE[key]
    found = _detect(model, dataset)
    if len(_CACHE) > 64:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = found
    return found


def _detect(model: Model, dataset: Dataset) -> Optional[QuadraticModel]:
    d = model.dim
    with jax.enable_x64(True):
        theta = jnp.zeros(d, jnp.float64)
        record = {k: jnp.asarray(np.asarray(v)[0], jnp.float64 if np.issubdtype(np.asarray(v).dtype, np.floating) else None)
                  for k, v in dataset.fields.items()}
        try:
            if _reads_theta(jax.hessian(model.log_likelihood), theta, record) or _reads_theta(jax.hessian(model.log_prior), theta):
                return None
            prior_hessian = -np.asarray(jax.hessian(model.log_prior)(theta))
            prior_grad = np.asarray(jax.grad(model.log_prior)(theta))
        except Exception:  # a model JAX cannot differentiate twice is simply not recognised
            return None
    c = float(prior_hessian[0, 0])
    if not (np.array_equal(prior_hessian, c * np.eye(d)) and np.all(prior_grad == 0) and c >= 0):
        return None

    def record_quadratic(fields: dict):
        with jax.enable_x64(True):
            t0 = jnp.zeros(d, jnp.float64)
            neg = lambda t, r: -model.log_likelihood(t, r)
            a = jax.vmap(jax.hessian(neg), in_axes=(None, 0))(t0, fields)
            b = -jax.vmap(jax.grad(neg), in_axes=(None, 0))(t0, fields)
            return np.asarray(a, np.float64), np.asarray(b, np.float64)

    fields = {f.name: getattr(model, f.name) for f in dataclasses.fields(Model)}
    return QuadraticModel(**fields, prior_precision=c, record_quadratic=record_quadratic)
