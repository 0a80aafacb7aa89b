"""Quadratic models and GLMs written as general models, recognised soundly (issue 21).

Two recognisers, each a proof on the model's program, never a numerical probe:
:func:`quadratic_form_of` (below) and :func:`glm_form_of` (the section "GLMs written as general
models": theta reaches the log-likelihood only through one affine scalar).

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
from ..models.structure import GLM, float64_fields

_CACHE: dict = {}


def _reads_theta(fn, theta, *rest) -> bool:
    """Whether the program of ``fn(theta, *rest)`` reads theta: after dead-code elimination, and
    through an equation other than x^0 (older JAX, e.g. 0.8, leaves integer_pow[y=0] of a theta
    term in the Hessian of a square, a constant 1 that reads theta only in form). Either test
    saying "does not read" is a proof, so theta is read only where both say it is."""
    closed = jax.make_jaxpr(fn)(theta, *rest)
    _, used = pe.dce_jaxpr(closed.jaxpr, [True] * len(closed.jaxpr.outvars))
    return bool(used[0]) and any(_depends_on(closed.jaxpr, [True] + [False] * (len(closed.jaxpr.invars) - 1)))


def _depends_on(jaxpr, inputs: list) -> list:
    """Per output of ``jaxpr``: whether it depends on the inputs flagged in ``inputs``, following
    data flow; x^0 depends on nothing, a call's jaxpr is followed, and any other equation with
    a flagged input (control flow included) is taken to depend on it."""
    flagged = {v for v, f in zip(jaxpr.invars, inputs) if f}
    for eqn in jaxpr.eqns:
        ins = [not _is_literal(v) and v in flagged for v in eqn.invars]
        if not any(ins) or (eqn.primitive.name == "integer_pow" and eqn.params.get("y") == 0):
            continue
        inner = eqn.params.get("jaxpr") if eqn.primitive.name in ("pjit", "jit", "closed_call") else None
        if inner is not None:
            outs = _depends_on(getattr(inner, "jaxpr", inner), ins)
        else:
            outs = [True] * len(eqn.outvars)
        flagged.update(v for v, f in zip(eqn.outvars, outs) if f)
    return [not _is_literal(v) and v in flagged for v in jaxpr.outvars]


def quadratic_form_of(model: Model, dataset: Dataset) -> Optional[QuadraticModel]:
    """The model as a :class:`QuadraticModel` with closed-form record tables if its record
    log-likelihood and log-prior are provably quadratic in theta (module docstring), else None.
    The same object for the same model (compiled programs are keyed by it)."""
    return _recognised_once(_CACHE, model, dataset, _detect)


def _recognised_once(cache: dict, model: Model, dataset: Dataset, recognise):
    """``recognise(model, dataset)``, or None for a model that declares a structure of its own;
    one answer per model and field layout (compiled programs are keyed by the object returned)."""
    if isinstance(model, QuadraticModel) or model.glm is not None or model.record_grad_norms is not None or model.weighted_grad_sum is not None:
        return None
    key = (model, tuple(sorted((k, np.asarray(v).shape[1:], np.asarray(v).dtype.str) for k, v in dataset.fields.items())))
    if key not in cache:
        if len(cache) > 64:
            cache.pop(next(iter(cache)))
        cache[key] = recognise(model, dataset)
    return cache[key]


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


# --- GLMs written as general models ------------------------------------------------------------
# A record's log-likelihood is a GLM (dpjax.models.GLM) when theta reaches it only through one
# scalar that is affine in theta: log p(r | theta) = f(r, a(r) . theta + c(r)). The proof reads
# the record log-likelihood's jaxpr: the equations that read theta (directly or through each
# other) must be affine maps of it (slices, reshapes, sums, products and dot products with
# values that do not depend on theta, ...) up to one value eta of one element; nothing else may
# read theta or any of them but eta. Then every path from theta to the output passes through
# eta, and eta is affine in theta for each record: the GLM's design is a(r) (its gradient), its
# response the record's fields with the offset c(r), and its loss -f(r, eta + c(r)) is the rest
# of the same program, evaluated with eta given. A function called on theta as a whole (a jitted
# helper, a callback, a branch on theta) is not an affine map here, so such a model is not
# recognised (it keeps the batched path); the engine still checks the result against autodiff
# of the model before a run (dpjax.models.structure.check_glm).
_AFFINE_ANY = {"neg", "reshape", "squeeze", "broadcast_in_dim", "transpose", "slice", "copy", "copy_p", "reduce_sum",
               "expand_dims", "rev", "split", "add", "sub", "add_any", "concatenate"}
_GLM_CACHE: dict = {}


def _affine_equation(eqn, tainted: set) -> bool:
    """Whether ``eqn`` (some of whose inputs are in ``tainted``) is affine in its tainted inputs."""
    name = eqn.primitive.name
    hit = [(not _is_literal(v)) and v in tainted for v in eqn.invars]
    if name == "convert_element_type":
        return jnp.issubdtype(eqn.params["new_dtype"], jnp.floating)
    if name in _AFFINE_ANY:
        return True
    if name in ("mul", "dot_general"):
        return sum(hit) == 1
    if name == "div":
        return hit == [True, False]
    if name in ("dynamic_slice", "gather"):
        return hit[0] and not any(hit[1:])
    if name == "select_n":  # a branch on the record alone: affine for each record
        return not hit[0]
    return False


def _is_literal(v) -> bool:
    return type(v).__name__ == "Literal"


def _split_at_eta(closed):
    """(eta var, indices of the equations that compute it from theta) for a closed jaxpr whose
    first input is theta, or None when no single affine scalar carries theta to the output."""
    jaxpr = closed.jaxpr
    theta = jaxpr.invars[0]
    dependent, affine = {theta}, {theta}  # values that read theta; those affine in it
    for eqn in jaxpr.eqns:
        if any(not _is_literal(v) and v in dependent for v in eqn.invars):
            dependent.update(eqn.outvars)
            reads = [v for v in eqn.invars if not _is_literal(v) and v in dependent]
            if all(v in affine for v in reads) and _affine_equation(eqn, dependent):
                affine.update(eqn.outvars)
    for eqn in jaxpr.eqns:  # candidates in program order: the first that cuts theta off the output
        for eta in eqn.outvars:
            if eta not in affine or int(np.prod(eta.aval.shape)) != 1:
                continue
            found = _cut_at(jaxpr, theta, eta)
            if found is not None:
                return eta, found
    return None


def _cut_at(jaxpr, theta, eta):
    """The equations that read theta when ``eta`` is given (all affine), if none of the outputs
    then reads theta; else None."""
    reached, prefix = {theta}, set()
    for k, eqn in enumerate(jaxpr.eqns):
        if not any(not _is_literal(v) and v in reached for v in eqn.invars):
            continue
        if not _affine_equation(eqn, reached):
            return None  # theta reaches a non-affine step other than through eta
        prefix.add(k)
        reached.update(v for v in eqn.outvars if v is not eta)
    if any(not _is_literal(v) and v in reached for v in jaxpr.outvars):
        return None
    return frozenset(prefix)


def _evaluate(closed, args, *, stop_at=None, skip=frozenset(), given=None):
    """Evaluate a closed jaxpr on ``args`` (flat), equation by equation; ``given``: {var: value}
    bound before the start (eta), ``skip``: equations not evaluated (the affine part), and
    ``stop_at``: return that var's value as soon as it is computed."""
    env = dict(zip(closed.jaxpr.constvars, closed.consts))
    env.update(zip(closed.jaxpr.invars, args))
    env.update(given or {})
    read = lambda v: v.val if _is_literal(v) else env[v]  # noqa: E731
    for k, eqn in enumerate(closed.jaxpr.eqns):
        if k in skip:
            continue
        params = eqn.primitive.get_bind_params(eqn.params)
        subfuns, params = params if isinstance(params, tuple) else ((), params)  # (subfuns, params) in older JAX
        out = eqn.primitive.bind(*subfuns, *[read(v) for v in eqn.invars], **params)
        env.update(zip(eqn.outvars, out if eqn.primitive.multiple_results else [out]))
        if stop_at is not None and stop_at in env:
            return env[stop_at]
    return [read(v) for v in closed.jaxpr.outvars]


def _traced(model: Model, dim: int, dtype, record_avals: dict):
    """(closed jaxpr, eta, affine equations) of the record log-likelihood at these input types,
    or None."""
    theta = jax.ShapeDtypeStruct((dim,), dtype)
    closed = jax.make_jaxpr(model.log_likelihood)(theta, record_avals)
    found = _split_at_eta(closed)
    return None if found is None else (closed, *found)


def _avals(record: dict) -> dict:
    return {k: jax.ShapeDtypeStruct(jnp.shape(v), jnp.result_type(v)) for k, v in record.items()}


def glm_form_of(model: Model, dataset: Dataset) -> Optional[Model]:
    """The model with a :class:`~dpjax.models.GLM` structure if its record log-likelihood is
    provably a function of one affine scalar of theta (the section's comment), else None. Only
    for a model that declares no structure; the same object for the same model."""
    return _recognised_once(_GLM_CACHE, model, dataset, _recognise_glm)


def _recognise_glm(model: Model, dataset: Dataset) -> Optional[Model]:
    d = model.dim
    with jax.enable_x64(True):
        record = float64_fields({k: np.asarray(v)[0] for k, v in dataset.fields.items()})
        try:
            traced = _traced(model, d, jnp.float64, _avals(record))
        except Exception:  # a model JAX cannot trace this way is simply not recognised
            traced = None
    if traced is None:
        return None
    closed, eta_var, affine = traced
    used = _tail_fields(closed, sorted(record), affine)  # a dict's leaves: its fields in sorted order
    traced_at: dict = {}  # the program at each set of input types the loss is traced at (once each, not per use)

    def eta_of(theta, fields):  # float64, one record
        out = _evaluate(closed, [theta] + jax.tree.leaves(fields), stop_at=eta_var)
        return jnp.reshape(out, ())

    def etas(fields):
        """(gradients (n, d), values (n,)) of eta at theta = 0 for every record, in float64."""
        with jax.enable_x64(True):
            value, grad = jax.vmap(jax.value_and_grad(eta_of), in_axes=(None, 0))(jnp.zeros(d, jnp.float64), float64_fields(fields))
            return np.asarray(grad, np.float64), np.asarray(value, np.float64)

    def response(fields):
        return {"fields": {k: np.asarray(fields[k]) for k in used}, "offset": etas(fields)[1]}

    def loss(y, eta):
        dtype = jnp.result_type(eta)
        # fields the loss does not read: placeholders of their shape (their value reaches nothing)
        full = {k: y["fields"].get(k, jnp.zeros(a.shape, jax.dtypes.canonicalize_dtype(a.dtype))) for k, a in _avals(record).items()}
        full = {k: (v.astype(dtype) if jnp.issubdtype(jnp.result_type(v), jnp.floating) else v) for k, v in full.items()}
        types = (jnp.dtype(dtype),) + tuple((k, a.shape, a.dtype) for k, a in _avals(full).items())
        if types not in traced_at:
            traced_at[types] = _traced(model, d, dtype, _avals(full))
        if traced_at[types] is None:
            raise ValueError(f"model {model.name!r}: its log-likelihood is not a GLM at dtype {dtype} (it was at float64)")
        closed_t, eta_t, affine_t = traced_at[types]
        total = jnp.reshape(eta + y["offset"].astype(dtype), eta_t.aval.shape)
        (out,) = _evaluate(closed_t, [jnp.zeros(d, dtype)] + jax.tree.leaves(full), skip=affine_t, given={eta_t: total})
        return -out

    return model.with_structure(glm=GLM(loss=loss, design=lambda fields: etas(fields)[0], response=response))


def _tail_fields(closed, field_names: list, affine) -> list:
    """The record fields the program reads outside its affine part (the loss's inputs)."""
    field_of = dict(zip(closed.jaxpr.invars[1:], field_names))
    read = {field_of[v] for k, eqn in enumerate(closed.jaxpr.eqns) if k not in affine for v in eqn.invars if not _is_literal(v) and v in field_of}
    read |= {field_of[v] for v in closed.jaxpr.outvars if not _is_literal(v) and v in field_of}
    return sorted(read)
