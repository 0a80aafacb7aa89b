"""What a model tells the coupled engine about its structure, so that the engine can take the
cheapest exact step for it (issue 21; DESIGN.md, "The engine for general models").

A :class:`~dpjax.models.Model` is, to the engine, the per-record log-likelihood
log p(record | theta) and the log-prior. Two optional declarations let the engine avoid the
per-record gradient tensor (vmap of grad: b x d per chain per step):

**A generalised linear model** (:class:`GLM`, the model's ``glm`` field). The record's
log-likelihood depends on theta only through one scalar, its linear predictor:

    log p(record_i | theta) = -loss(y_i, eta_i),     eta_i = x_i . theta,

with x_i the record's *design* vector (d,) and y_i its *response* (any pytree; e.g. a label).
Then the record gradient of -w log p (w = the model's ``likelihood_weight``) is

    g_i(theta) = w s_i x_i,      s_i = d loss / d eta (y_i, eta_i),

so a batch's gradient sum is X_b^T (w s) after one product X_b theta (two matrix-vector
products per chain on one gather of the batch's rows, shared by both chains of a pair), and
a record's gradient norm is w |s_i| ||x_i|| (the norms ||x_i|| computed once per run), which
is what per-record clipping needs. Declare it with the field names of x and y and the scalar
loss; the engine derives s by autodiff unless ``loss_derivative`` is given::

    GLM(loss=lambda y, eta: jax.nn.softplus(eta) - y * eta,          # logistic regression
        loss_derivative=lambda y, eta: jax.nn.sigmoid(eta) - y,
        design="x", response="y")

``design`` / ``response`` may instead be callables ``fields -> array`` applied once on the host
to the whole dataset (record axis first), e.g. a design with an intercept column built from a
field. The declaration is checked against the model's own ``log_likelihood`` before a run
(:func:`check_glm`): a GLM that does not describe the model raises ``ValueError``; it can
never silently change a number.

**Per-record gradient norms** (the model's ``record_grad_norms`` field), for clipping:
``record_grad_norms(theta, records) -> (b,)``, the Euclidean norms of grad_theta log p(record_j
| theta) (unweighted: the engine multiplies by ``likelihood_weight``) for a batch of records
(``records``: the dataset's fields with a leading batch axis b). It must be exact (the clipped
sum is built from it): e.g. for a dense network the ghost-norm identity from each layer's
inputs and backpropagated signals, without forming any b x d tensor. The engine then
computes the clipped sum sum_j min(1, C / (w n_j)) g_j by one reverse-mode pass over the
reweighted batch sum. Without it (and without a GLM) clipping takes per-record gradients by
vmap, the exact fallback.

**A fused weighted gradient sum** (the model's ``weighted_grad_sum`` field), the cheapest exact
route when a model can compute its own backward pass:
``weighted_grad_sum(theta, records, weigh) -> (d,)`` returns

    sum_j c_j grad_theta log p(record_j | theta),     c = weigh(norms)  (b,),

with ``norms`` the exact record gradient norms as ``record_grad_norms`` defines them (the
engine's ``weigh`` turns them into clip factors, masks and signs; without clipping it ignores
them and the compiler drops their computation). One forward pass gives the norms and the
backprop signals, then the sum is a few matrix products: for a dense network the forward
pass, the ghost norms and one backward pass, what one unclipped reverse-mode gradient costs
(:func:`dpjax.models.mlp_classifier`). The engine hands it finite records only (the fields of
a record with c_j = 0 are replaced by an active record's first) and uses it with and without
clipping, for the batch sums and the drift gap.

:func:`check_grad_hooks` verifies ``record_grad_norms`` and ``weighted_grad_sum`` against
autodiff of the model's ``log_likelihood`` before a run (as :func:`check_glm` does for a GLM).

:func:`glm_of` returns the model's declared GLM, or None. A model (a numpyro model included)
that declares none is recognised as a GLM by the engine when a proof on its program finds
theta reaching the log-likelihood through one affine scalar only
(:func:`dpjax.engine.detect.glm_form_of`); declared or recognised, :func:`check_glm` verifies
the GLM against the log-likelihood before a run. Which engine path uses what is :mod:`dpjax.engine.gradients`' business.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np

Fields = dict
FieldSpec = Union[str, Callable[[Fields], Any]]
RecordGradNorms = Callable[[jax.Array, Fields], jax.Array]
WeightedGradSum = Callable[[jax.Array, Fields, Callable[[jax.Array], jax.Array]], jax.Array]


@dataclasses.dataclass(frozen=True)
class GLM:
    """log p(record | theta) = -loss(y, x . theta): see the module docstring.

    loss: ``(y, eta) -> scalar``, minus the log-likelihood of one record (without the model's
        ``likelihood_weight``) as a function of its response ``y`` (one record's, no record
        axis) and linear predictor ``eta`` (a scalar).
    loss_derivative: ``(y, eta) -> scalar``, d loss / d eta; default ``jax.grad`` of ``loss``.
    design: the field holding x (shape (n, d)), or ``fields -> (n, d) array``.
    response: the field holding y (record axis first), ``fields -> pytree of (n, ...) arrays``,
        or None when the loss needs no response.
    """

    loss: Callable[[Any, jax.Array], jax.Array]
    loss_derivative: Optional[Callable[[Any, jax.Array], jax.Array]] = None
    design: FieldSpec = "x"
    response: Optional[FieldSpec] = "y"

    def __post_init__(self):
        if not callable(self.loss):
            raise TypeError(f"loss={self.loss!r} must be a callable (y, eta) -> scalar")
        if self.loss_derivative is not None and not callable(self.loss_derivative):
            raise TypeError(f"loss_derivative={self.loss_derivative!r} must be None or a callable (y, eta) -> scalar")
        for name in ("design", "response"):
            spec = getattr(self, name)
            if not (isinstance(spec, str) or callable(spec) or (name == "response" and spec is None)):
                raise TypeError(f"{name}={spec!r} must be a field name or a callable fields -> array")

    # --- host side: once per run ---------------------------------------------------------
    def design_matrix(self, fields: Fields) -> np.ndarray:
        """X, shape (n, d): the design vectors of all records (numpy, float64)."""
        x = fields[self.design] if isinstance(self.design, str) else self.design(fields)
        x = np.asarray(x, np.float64)
        if x.ndim != 2:
            raise ValueError(f"the GLM's design has shape {x.shape}; it must be (n, d)")
        return x

    def responses(self, fields: Fields) -> Any:
        """y of all records: a pytree of arrays with the record axis first (numpy)."""
        if self.response is None:
            n = len(next(iter(fields.values())))
            return np.zeros((n,), np.float64)
        y = fields[self.response] if isinstance(self.response, str) else self.response(fields)
        return jax.tree.map(np.asarray, y)

    # --- device side: per record (the engine vmaps) --------------------------------------
    def derivative(self, y: Any, eta: jax.Array) -> jax.Array:
        """s = d loss / d eta at (y, eta) for one record."""
        if self.loss_derivative is not None:
            return jnp.asarray(self.loss_derivative(y, eta), jnp.result_type(eta))
        return jax.grad(lambda e: self.loss(y, e))(eta)


def glm_of(model) -> Optional[GLM]:
    """The model's declared GLM structure (``Model.with_structure(glm=...)``), or None."""
    return getattr(model, "glm", None)


def check_glm(model, glm: GLM, dataset, *, rows: Optional[np.ndarray] = None, num_points: int = 2) -> None:
    """Raise ``ValueError`` unless ``glm`` reproduces the model's record gradients.

    On the records ``rows`` of ``dataset`` (default: up to 8 spread over it) and at
    ``num_points`` deterministic points theta, in float64: the GLM's w s_i x_i against autodiff
    of the model's own ``log_likelihood`` (relative 1e-8 of the larger norm, plus 1e-12). A
    wrong declaration (another loss, another design, a forgotten intercept) fails here before
    any chain runs.
    """
    if rows is None:  # present records only: an absent record's fields never reach a gradient
        rows = present_rows(dataset)
        if rows is None:
            return
    with jax.enable_x64(True):
        floats = _float64_rows(dataset, rows)
        x = glm.design_matrix(floats)
        if x.shape[1] != model.dim:
            raise ValueError(f"model {model.name!r} declares a GLM whose design has {x.shape[1]} columns; the model has dim = {model.dim}")
        y = glm.responses(floats)
        w = float(model.likelihood_weight)
        for theta in _check_points(model.dim, num_points):
            auto, s = _glm_check_sides(theta, floats, jnp.asarray(x), jax.tree.map(jnp.asarray, y), model=model, glm=glm)
            auto, s = np.asarray(auto), np.asarray(s)
            mine = w * s[:, None] * x
            scale = np.maximum(np.linalg.norm(auto, axis=1), np.linalg.norm(mine, axis=1))
            err = np.linalg.norm(auto - mine, axis=1)
            bad = np.flatnonzero(~(err <= 1e-8 * scale + 1e-12))
            if bad.size:
                r = int(rows[bad[0]])
                raise ValueError(
                    f"model {model.name!r}: its GLM declaration does not match its log_likelihood at record {r} "
                    f"(gradient {mine[bad[0]][:4]} from the GLM, {auto[bad[0]][:4]} by autodiff, theta = {np.asarray(theta)[:4]}); "
                    "check the loss, the design (an intercept column?) and the response"
                )


@functools.partial(jax.jit, static_argnames=("model", "glm"))
def _glm_check_sides(theta, fields, design, response, *, model, glm):
    """Both sides of :func:`check_glm` at one theta: autodiff record gradients and the GLM's
    slopes, as one compiled program per (model, GLM, shapes): run op by op, a numpyro model's
    gradient compiled some fifty one-operation programs (seconds of a cold audit's start), and
    a program of its own per call would compile again at every run of the same model."""
    auto = jax.vmap(model.record_grad, in_axes=(None, 0))(theta, fields)
    return auto, jax.vmap(glm.derivative)(response, design @ theta)


def _float64_rows(dataset, rows: np.ndarray) -> dict:
    """The fields of the records ``rows``, floating fields in float64 (the checks' precision)."""
    return float64_fields({k: np.asarray(v)[rows] for k, v in dataset.fields.items()})


def float64_fields(fields: Fields) -> dict:
    """``fields`` as numpy arrays, the floating ones in float64 (the others as they are)."""
    fields = {k: np.asarray(v) for k, v in fields.items()}
    return {k: (v.astype(np.float64) if np.issubdtype(v.dtype, np.floating) else v) for k, v in fields.items()}


def _check_points(dim: int, num_points: int):
    """The deterministic float64 points theta at which the checks compare with autodiff. Never
    theta = 0: there eta = 0 for every record of a GLM, where autodiff of a loss written with
    max / abs (numpyro's Bernoulli logits) returns a subgradient, not the derivative."""
    ramp = np.linspace(-1.0, 1.0, dim) / max(1.0, float(np.sqrt(dim)))
    for p in range(num_points):
        yield jnp.asarray(ramp * (0.7 * (p + 1)) + 0.1 * (p + 1), jnp.float64)


def present_rows(dataset) -> Optional[np.ndarray]:
    """Up to 8 present records spread over the dataset (None if none is present): the rows
    :func:`check_glm` and :func:`check_grad_hooks` check by default."""
    present = np.flatnonzero(np.asarray(dataset.mask) > 0)
    if present.size == 0:
        return None
    return present[np.unique(np.linspace(0, present.size - 1, min(present.size, 8)).astype(int))]


def _check_weigh(norms: jax.Array) -> jax.Array:
    """Coefficients for :func:`check_grad_hooks`: alternating signs, and magnitudes that depend on
    the norms the hook passes (so a hook handing ``weigh`` wrong norms fails the check)."""
    signs = 1.0 - 2.0 * (jnp.arange(norms.shape[0]) % 2)
    return signs / (1.0 + norms)


@functools.lru_cache(maxsize=32)
def _hook_values(model):
    """A compiled function (theta, records) -> {hook name: (the hook's value, autodiff's)}."""

    def values(theta, records):
        grads = jax.vmap(jax.grad(model.log_likelihood), in_axes=(None, 0))(theta, records)
        norms = jnp.sqrt(jnp.sum(grads**2, axis=1))
        out = {}
        if model.record_grad_norms is not None:
            out["record_grad_norms"] = (model.record_grad_norms(theta, records), norms)
        if model.weighted_grad_sum is not None:
            c = _check_weigh(norms)
            # the scale of the sum's entries: a cancelling sum is compared against its terms
            out["weighted_grad_sum"] = (model.weighted_grad_sum(theta, records, _check_weigh), c @ grads, jnp.abs(c) @ jnp.abs(grads))
        return out

    return jax.jit(values)


def check_grad_hooks(model, dataset, *, rows: Optional[np.ndarray] = None, num_points: int = 2) -> None:
    """Raise ``ValueError`` unless the model's ``record_grad_norms`` and ``weighted_grad_sum``
    (where declared) reproduce autodiff of its own ``log_likelihood``.

    On the records ``rows`` of ``dataset`` (default: up to 8 present ones spread over it) and at
    ``num_points`` deterministic points theta, in float64: the norms against the norms of
    vmap(grad) record gradients, and the weighted sum (coefficients of alternating sign that
    depend on the norms) against the same sum of the vmap(grad) gradients, each to relative
    1e-8 (of the larger norm; of the sum of the terms' magnitudes) plus 1e-12. Compiled once per
    model, so a run pays a few milliseconds for it.
    """
    if model.record_grad_norms is None and model.weighted_grad_sum is None:
        return
    rows = present_rows(dataset) if rows is None else rows
    if rows is None:
        return
    with jax.enable_x64(True):
        floats = _float64_rows(dataset, rows)
        for theta in _check_points(model.dim, num_points):
            values = jax.tree.map(np.asarray, _hook_values(model)(theta, floats))
            if "record_grad_norms" in values:
                mine, auto = values["record_grad_norms"]
                if mine.shape != auto.shape:
                    raise ValueError(f"model {model.name!r}: record_grad_norms returned shape {mine.shape} for {len(rows)} records; it must be ({len(rows)},)")
                bad = np.flatnonzero(~(np.abs(mine - auto) <= 1e-8 * np.maximum(mine, auto) + 1e-12))
                if bad.size:
                    raise ValueError(
                        f"model {model.name!r}: its record_grad_norms do not match its log_likelihood at record {int(rows[bad[0]])} "
                        f"(norm {mine[bad[0]]:.6g} from the hook, {auto[bad[0]]:.6g} by autodiff, theta = {np.asarray(theta)[:4]})")
            if "weighted_grad_sum" in values:
                mine, auto, scale = values["weighted_grad_sum"]
                if mine.shape != auto.shape:
                    raise ValueError(f"model {model.name!r}: weighted_grad_sum returned shape {mine.shape}; it must be ({model.dim},)")
                bad = np.flatnonzero(~(np.abs(mine - auto) <= 1e-8 * scale + 1e-12))
                if bad.size:
                    raise ValueError(
                        f"model {model.name!r}: its weighted_grad_sum does not match its log_likelihood (entry {int(bad[0])}: "
                        f"{mine[bad[0]]:.6g} from the hook, {auto[bad[0]]:.6g} by autodiff, theta = {np.asarray(theta)[:4]})")
