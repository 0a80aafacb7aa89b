"""How a coupled step gets its two gradient estimates and the drift gap of the differing record.

Every provider computes the same quantities (NOTES 001; :mod:`dpjax.coupled`):

    grad_D(x)  = grad(-log prior)(x) + scale sum_j w_j clip(mask_D[i_j] g_{i_j}(x; D))
    grad_D'(x') likewise on D' at the neighbour chain's point,
    gap(x)     = clip(mask_D[i*] g_{i*}(x; D)) - clip(mask_D'[i*] g_{i*}(x; D'))   (i* = the differing slot)

with g_i the gradient of -likelihood_weight log p(x_i | theta). D and D' differ in slot i* only,
so every provider treats D' as D with the slot i* masked plus one record term (D''s record at
i*, counted as often as the batch holds the slot): one gather serves both chains.

* :class:`GenericGradients` (engine "reference") — any :class:`dpjax.Model`: per-record
  gradients by vmap of ``jax.grad`` (a b x d tensor per chain per step). The oracle every other
  path is tested against; Poisson batches dense (all n slots weighted 0/1), the other
  providers take the same members gathered in chunks.
* :class:`QuadraticGradients` (engine "quadratic", and the Pallas kernel's tables) — a
  quadratic model: g_i(x) = A_i x - b_i from per-record tables built once on the host in
  float64 (likelihood weight and mask folded in), so a step costs O(b d^2) (O(d^2) for an
  unclipped full batch: the tables' sums). When every record of D is the same (paper 000's
  eq. 7 data) the tables have one row and no gather is needed (``homogeneous``).
* :class:`GLMGradients` (engine "glm") — a model with a GLM structure
  (:class:`dpjax.models.GLM`, declared): eta = X_b theta, s = w loss'(y, eta),
  sum = X_b^T s per chain on one shared gather; clipping from |s_i| ||x_i|| with the norms
  ||x_i|| computed once; O(b d) per chain-step and no b x d tensor beyond the gathered rows.
* :class:`BatchedGradients` (engine "batched") — any model: one pass per chain over the
  weighted batch sum sum_j c_j (-w log p(r_j | theta)), the records with c_j = 0 replaced by an
  active record's fields first (so a masked record's NaN cannot reach the gradient through
  0 * NaN in the backward pass); D''s record at i* is selected into D's gathered rows for the
  neighbour chain (its gradient joins that chain's pass), and the drift gap's two records are
  one signed two-record sum. The pass is the model's fused ``weighted_grad_sum`` when it
  declares one (e.g. the MLP: forward pass, exact norms, clip factors and the weighted sum as
  two matrix products, no b x d tensor); else one reverse-mode pass, with clipping
  c_j = w_j min(1, C / n_j) from the model's exact ``record_grad_norms`` (ghost norms) when it
  has them, else per-record gradients by vmap (the exact fallback).

**The provider protocol** (what a new provider implements to plug into the XLA loop of
:mod:`.reference`; a new *path* with its own loop, like a Pallas kernel, instead implements
``advance`` with :func:`.reference.advance`'s contract and is named in
:data:`dpjax.engine.runner.ENGINES`):

* a frozen, hashable dataclass (it is a static argument of compiled programs; new values of
  the data never recompile because the data travel separately, as a pytree argument);
* ``name``: the engine name it serves;
* ``batch_sums(sampler, x, xp, data, index, batch, dense) -> (sum_D, sum_D')``: the data
  parts sum_j w_j clip(mask g_j) on D at ``x`` and on D' at ``xp`` (``dense``: the batch is
  ``arange(n)`` in order and the rows are read in place; else ``batch.indices`` are gathered);
* ``prior_grad(x)``; ``estimates(...)`` = prior + ``batch.scale`` * sums (from :class:`_Sums`);
* ``gap(sampler, x, data, index) -> (d,)``: the clipped, masked drift gap of slot i* at ``x``;
* ``capacity``, ``overflow_capacity``: None, or the static sizes of the gathered chunks (the
  first, and each further one of an overflowing batch) in which it takes a Poisson
  batch's members (:func:`.reference.poisson_sums`; needs ``batch_sums``) instead of the dense
  0/1 weights over every slot;
* a builder registered in :data:`BUILDERS`: ``build(model, pair, dtype, sampler) -> (provider,
  host data)`` with the data as numpy arrays in ``dtype``.

The GLM data (what a fused GLM kernel reads; :func:`glm_data`): ``design`` X (n, d),
``response`` (pytree, record axis first), ``design_norms`` ||x_i|| (n,), ``mask`` (n,) of D
(and ``packed``: the rows [x_i, ||x_i||, mask_i, y_i] (n, d + 3), one read per record for the
Pallas GLM kernel, whose last columns the XLA path gathers beside ``design``; with every leaf
of the response when each is one float per record, e.g. a recognised GLM's field and offset;
without them otherwise); and
``alt_design`` (d,), ``alt_response``, ``alt_design_norm`` (), ``alt_mask`` () of D''s record at i*.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Dataset, NeighbouringPair
from ..models.base import Model
from ..models.quadratic import QuadraticModel
from ..models.structure import GLM, check_glm, check_grad_hooks, glm_of, present_rows
from ..samplers.batching import Batch, FullBatch, Poisson
from ..samplers.kernel import clip_one, clip_record_grads


def cast_dataset(dataset: Dataset, dtype) -> Dataset:
    """Float fields in ``dtype`` (numpy leaves, so they can be placed on any mesh)."""
    fields = {k: (np.asarray(v, dtype) if np.issubdtype(np.asarray(v).dtype, np.floating) else np.asarray(v)) for k, v in dataset.fields.items()}
    return Dataset(fields=fields, mask=np.asarray(dataset.mask, dtype))


def _expand(flag: jax.Array, leaf: jax.Array) -> jax.Array:
    return flag.reshape(flag.shape + (1,) * (leaf.ndim - flag.ndim))


@dataclasses.dataclass(frozen=True)
class GenericGradients:
    """Record gradients of any model by autodiff (see the module docstring)."""

    model: Model
    name = "generic"
    capacity = None  # Poisson batches dense (Poisson.batch): the oracle of the chunked paths

    def estimates(self, sampler, x, xp, data, index, batch: Batch, dense: bool):
        model, clip = self.model, sampler.clip_norm
        dataset, neighbour = data["dataset"], data["neighbour"]
        if dense:
            grads_d = jax.vmap(model.record_grad, in_axes=(None, 0))(x, dataset.fields)
            grads_n = jax.vmap(model.record_grad, in_axes=(None, 0))(xp, neighbour.fields)
            sum_d = clip_record_grads(grads_d, batch.weights * dataset.mask, clip)
            sum_n = clip_record_grads(grads_n, batch.weights * neighbour.mask, clip)
        else:
            # gather D's batch once; D' differs only in slot `index`, so its batch is a select
            records_d = {k: v[batch.indices] for k, v in dataset.fields.items()}
            is_diff = batch.indices == index
            records_n = {k: jnp.where(_expand(is_diff, v), neighbour.fields[k][index], v) for k, v in records_d.items()}
            mask_d = dataset.mask[batch.indices]
            mask_n = jnp.where(is_diff, neighbour.mask[index], mask_d)
            grads_d = jax.vmap(model.record_grad, in_axes=(None, 0))(x, records_d)
            grads_n = jax.vmap(model.record_grad, in_axes=(None, 0))(xp, records_n)
            sum_d = clip_record_grads(grads_d, batch.weights * mask_d, clip)
            sum_n = clip_record_grads(grads_n, batch.weights * mask_n, clip)
        return model.prior_grad(x) + batch.scale * sum_d, model.prior_grad(xp) + batch.scale * sum_n

    def gap(self, sampler, x, data, index):
        dataset, neighbour = data["dataset"], data["neighbour"]
        g_d = clip_one(self.model.record_grad(x, dataset.record(index)), sampler.clip_norm) * dataset.mask[index]
        g_n = clip_one(self.model.record_grad(x, neighbour.record(index)), sampler.clip_norm) * neighbour.mask[index]
        return g_d - g_n


def quadratic_tables(model: QuadraticModel, pair: NeighbouringPair) -> dict:
    """Float64 host tables of a quadratic model on a pair (see :class:`QuadraticGradients`).

    ``hessians`` (n or 1, d, d) and ``linears`` (n or 1, d): w mask_i A_i and w mask_i b_i of
    D's records (one row when they are all equal); ``alt_hessian``, ``alt_linear``: the same
    for D''s differing record; ``sum_*_d`` / ``sum_*_n``: the full-batch sums over D and D',
    each summed over its own records (never formed as a difference).
    """
    w = float(model.likelihood_weight)

    def weighted(dataset):
        fields = {k: np.asarray(v, np.float64) for k, v in dataset.fields.items()}
        a, b = model.record_quadratic(fields)
        mask = np.asarray(dataset.mask, np.float64)
        return w * mask[:, None, None] * np.asarray(a, np.float64), w * mask[:, None] * np.asarray(b, np.float64)

    a_d, b_d = weighted(pair.dataset)
    a_n, b_n = weighted(pair.neighbour)
    i = pair.index
    homogeneous = bool(np.all(a_d == a_d[:1]) and np.all(b_d == b_d[:1]))
    return {
        "hessians": a_d[:1] if homogeneous else a_d,
        "linears": b_d[:1] if homogeneous else b_d,
        "alt_hessian": a_n[i],
        "alt_linear": b_n[i],
        "sum_hessian_d": a_d.sum(axis=0),
        "sum_linear_d": b_d.sum(axis=0),
        "sum_hessian_n": a_n.sum(axis=0),
        "sum_linear_n": b_n.sum(axis=0),
    }


@dataclasses.dataclass(frozen=True)
class QuadraticGradients:
    """Closed-form record gradients g_i(x) = A_i x - b_i of a quadratic model (module docstring)."""

    model: QuadraticModel
    homogeneous: bool
    capacity: Optional[int] = None
    overflow_capacity: Optional[int] = None
    name = "quadratic"

    @staticmethod
    def supports(model: Model) -> bool:
        return isinstance(model, QuadraticModel) and model.record_quadratic is not None

    def _rows(self, table, indices):
        return jnp.broadcast_to(table[0], indices.shape + table.shape[1:]) if self.homogeneous else table[indices]

    def record(self, data, x, index):
        """D's and D''s weighted, masked record gradients of the differing slot at ``x``."""
        a = data["hessians"][0] if self.homogeneous else data["hessians"][index]
        b = data["linears"][0] if self.homogeneous else data["linears"][index]
        return a @ x - b, data["alt_hessian"] @ x - data["alt_linear"]

    def prior_grad(self, x):
        return self.model.prior_precision * x

    def estimates(self, sampler, x, xp, data, index, batch: Batch, dense: bool):
        clip = sampler.clip_norm
        if dense and isinstance(sampler.batching, FullBatch) and clip is None:
            grad_d = data["sum_hessian_d"] @ x - data["sum_linear_d"]
            grad_n = data["sum_hessian_n"] @ xp - data["sum_linear_n"]
            return self.prior_grad(x) + grad_d, self.prior_grad(xp) + grad_n
        sum_d, sum_n = self.batch_sums(sampler, x, xp, data, index, batch, dense)
        return self.prior_grad(x) + batch.scale * sum_d, self.prior_grad(xp) + batch.scale * sum_n

    def batch_sums(self, sampler, x, xp, data, index, batch: Batch, dense: bool):
        """sum_j w_j clip(g_j) on D at x and on D' at xp over the batch's slots (gathered rows of
        the tables; ``dense`` batches list every slot in order, so the same gather serves)."""
        indices = batch.indices
        hess = self._rows(data["hessians"], indices)
        lin = self._rows(data["linears"], indices)
        is_diff = (indices == index)[:, None]
        hess_n = jnp.where(is_diff[:, :, None], data["alt_hessian"], hess)
        lin_n = jnp.where(is_diff, data["alt_linear"], lin)
        # products and sums rather than contractions, so XLA fuses them (see clip_record_grads)
        grads_d = jnp.sum(hess * x, axis=-1) - lin
        grads_n = jnp.sum(hess_n * xp, axis=-1) - lin_n
        return clip_record_grads(grads_d, batch.weights, sampler.clip_norm), clip_record_grads(grads_n, batch.weights, sampler.clip_norm)

    def gap(self, sampler, x, data, index):
        g_d, g_n = self.record(data, x, index)
        return clip_one(g_d, sampler.clip_norm) - clip_one(g_n, sampler.clip_norm)


def _gathered_rows_times(weights: jax.Array, rows: jax.Array) -> jax.Array:
    """sum_j weights_j rows_j (X^T s for a pair's gathered rows X, (b, d)).

    float32 on a CPU: as products and a sum over the rows, which XLA fuses into one loop; its
    float32 dot kernel for a batch of small (b x d)^T (b) products (one per pair of a block)
    ran at about half its float64 speed on a 2-core x86 CPU (jax 0.10.2: 71 against 27
    microseconds a call for 64 pairs x 128 x 20), and the fused form made the whole coupled
    GLM step 1.16x faster in float32 (median of 21 alternating runs; logistic regression
    d = 20, b = 128, 2,048 pairs; slower in float64, where the dot stays). Same sum, summed in
    another order. Not for dense batches: there every pair reads the same X, and the pairs'
    products are one matrix product."""
    if rows.dtype == jnp.float32 and jax.default_backend() == "cpu":
        return jnp.sum(weights[:, None] * rows, axis=0)
    return weights @ rows


def _clip_factor(norm: jax.Array, clip_norm) -> jax.Array:
    """min(1, C / norm) as :func:`dpjax.samplers.kernel.clip_one` takes it (1 for a zero norm)."""
    return jnp.minimum(1.0, clip_norm / jnp.where(norm > 0, norm, 1.0))


def _active(weights: jax.Array, mask: jax.Array) -> jax.Array:
    # weights and masks are 0/1, so "both positive" is the whole record's coefficient
    return (weights > 0) & (mask > 0)


class _Sums:
    """estimates = prior gradient + scale * batch sums, for providers that give the sums."""

    capacity = None

    def prior_grad(self, x):
        return self.model.prior_grad(x)

    def estimates(self, sampler, x, xp, data, index, batch: Batch, dense: bool):
        sum_d, sum_n = self.batch_sums(sampler, x, xp, data, index, batch, dense)
        return self.prior_grad(x) + batch.scale * sum_d, self.prior_grad(xp) + batch.scale * sum_n


def _packable(response, num_records: int) -> bool:
    """Whether every leaf of the response is one float per record (then the leaves join the
    packed rows, e.g. y_i, or a recognised GLM's field and offset)."""
    leaves = jax.tree.leaves(response)
    return bool(leaves) and all(
        np.ndim(leaf) == 1 and len(leaf) == num_records and np.issubdtype(np.asarray(leaf).dtype, np.floating) for leaf in leaves)


def glm_data(glm: GLM, pair: NeighbouringPair, dtype) -> dict:
    """The GLM provider's host data (see the module docstring), numpy in ``dtype``."""
    i = pair.index

    def floats(tree):
        return jax.tree.map(lambda v: np.asarray(v, dtype) if np.issubdtype(np.asarray(v).dtype, np.floating) else np.asarray(v), tree)

    x_d = glm.design_matrix(pair.dataset.fields)
    x_n = glm.design_matrix({k: np.asarray(v)[i:i + 1] for k, v in pair.neighbour.fields.items()})[0]
    # rows of absent records (mask 0) are zeroed here, once: a NaN or inf there would otherwise
    # reach the sums through 0 * NaN in X^T s (the slopes themselves are selected, not multiplied)
    present = np.asarray(pair.dataset.mask) > 0
    bad = np.flatnonzero(present & ~np.all(np.isfinite(x_d), axis=1))
    if bad.size:
        raise ValueError(f"the GLM's design row of record {int(bad[0])} is not finite ({x_d[bad[0]][:4]}); a present record needs a finite design")
    x_d = np.where(present[:, None], x_d, 0.0)
    alt_present = float(np.asarray(pair.neighbour.mask)[i]) > 0
    if alt_present and not np.all(np.isfinite(x_n)):
        raise ValueError(f"the GLM's design row of D''s record {i} is not finite ({x_n[:4]}); a present record needs a finite design")
    x_n = x_n if alt_present else np.zeros_like(x_n)
    y_d = glm.responses(pair.dataset.fields)
    y_n = jax.tree.map(lambda v: np.asarray(v)[0], glm.responses({k: np.asarray(v)[i:i + 1] for k, v in pair.neighbour.fields.items()}))
    # the rows a gathered batch reads, packed so that one gather serves them all; the response
    # joins them when it is one float per record
    columns = [x_d, np.linalg.norm(x_d, axis=1)[:, None], np.asarray(pair.dataset.mask, np.float64)[:, None]]
    if _packable(y_d, len(x_d)):
        columns.extend(np.asarray(leaf)[:, None] for leaf in jax.tree.leaves(y_d))
    return {
        "packed": floats(np.concatenate(columns, axis=1)),
        "design": floats(x_d),
        "response": floats(y_d),
        "design_norms": floats(np.linalg.norm(x_d, axis=1)),  # float64 on the host, then cast
        "mask": floats(np.asarray(pair.dataset.mask, np.float64)),
        "alt_design": floats(x_n),
        "alt_response": floats(y_n),
        "alt_design_norm": floats(np.asarray(np.linalg.norm(x_n))),
        "alt_mask": floats(np.asarray(pair.neighbour.mask, np.float64)[i]),
    }


@dataclasses.dataclass(frozen=True)
class GLMGradients(_Sums):
    """Record gradients w s_i x_i of a GLM as matrix-vector products (module docstring)."""

    model: Model
    glm: GLM
    capacity: Optional[int] = None
    overflow_capacity: Optional[int] = None
    name = "glm"

    def _slopes(self, sampler, y, eta, norms):
        """w s_i, clipped to |w s_i| ||x_i|| <= C when the sampler clips."""
        s = self.model.likelihood_weight * jax.vmap(self.glm.derivative)(y, eta)
        if sampler.clip_norm is None:
            return s
        return s * _clip_factor(jnp.abs(s) * norms, sampler.clip_norm)

    def _alt_slope(self, sampler, data, theta):
        eta = jnp.dot(data["alt_design"], theta)
        return self._slopes(sampler, jax.tree.map(lambda v: v[None], data["alt_response"]), eta[None], data["alt_design_norm"][None])[0]

    def batch_sums(self, sampler, x, xp, data, index, batch: Batch, dense: bool):
        if dense:
            rows = jnp.arange(data["mask"].shape[0], dtype=jnp.int32)
            design, response, norms, mask = data["design"], data["response"], data["design_norms"], data["mask"]
        else:
            rows = batch.indices
            # the gathers, shared by both chains: the design rows, and the rest of ``packed``'s
            # rows (||x_i||, mask_i, the response's leaves when each is one float per record).
            # Two gathers, not one of packed rows and a slice: the slice was a copy of every
            # gathered row (on a 2-core x86 CPU the whole float32 step ran 1.08x faster apart)
            d = x.shape[0]
            design = data["design"].at[rows].get(mode="promise_in_bounds")  # slots lie in [0, n)
            extra = data["packed"][:, d:].at[rows].get(mode="promise_in_bounds")
            norms, mask = extra[:, 0], extra[:, 1]
            leaves, tree = jax.tree.flatten(data["response"])
            if extra.shape[1] == 2 + len(leaves):
                response = jax.tree.unflatten(tree, [extra[:, 2 + j] for j in range(len(leaves))])
            else:
                response = jax.tree.map(lambda v: v.at[rows].get(mode="promise_in_bounds"), data["response"])
        active = _active(batch.weights, mask)
        is_diff = rows == index
        s_d = self._slopes(sampler, response, design @ x, norms)
        s_n = self._slopes(sampler, response, design @ xp, norms)
        # selects, not products: a masked record's NaN or inf slope stays out of the sum
        rows_times = (lambda s, rows: s @ rows) if dense else _gathered_rows_times
        sum_d = rows_times(jnp.where(active, s_d, 0), design)
        sum_n = rows_times(jnp.where(active & ~is_diff, s_n, 0), design)
        # D''s own record at slot i*, as often as the batch holds the slot
        hits = jnp.sum(jnp.where(is_diff & (batch.weights > 0), batch.weights, 0))
        alt = jnp.where((hits > 0) & (data["alt_mask"] > 0), hits * self._alt_slope(sampler, data, xp), 0)
        return sum_d, sum_n + jnp.where((hits > 0) & (data["alt_mask"] > 0), alt * data["alt_design"], 0)

    def gap(self, sampler, x, data, index):
        one = lambda v: v[index][None]
        eta = jnp.dot(data["design"][index], x)
        s_d = self._slopes(sampler, jax.tree.map(one, data["response"]), eta[None], data["design_norms"][index][None])[0]
        s_n = self._alt_slope(sampler, data, x)
        g_d = jnp.where(data["mask"][index] > 0, s_d * data["design"][index], 0)
        g_n = jnp.where(data["alt_mask"] > 0, s_n * data["alt_design"], 0)
        return g_d - g_n


def _first_active(active: jax.Array) -> jax.Array:
    return jnp.argmax(active)


def guard_records(records: dict, active: jax.Array) -> dict:
    """The batch's records with every inactive one replaced by the first active record's fields:
    a reverse-mode pass over them then multiplies finite numbers by the zero coefficients (an
    absent record's own fields could give inf * 0 = NaN in the backward pass). With no active
    record the result is multiplied by zeros only and discarded by the caller."""
    first = _first_active(active)

    def guard(v):
        keep = active.reshape(active.shape + (1,) * (v.ndim - 1))
        return jnp.where(keep, v, v[first])

    return jax.tree.map(guard, records)


@dataclasses.dataclass(frozen=True)
class BatchedGradients(_Sums):
    """Any model: one pass per chain over the weighted batch sum (module docstring)."""

    model: Model
    capacity: Optional[int] = None
    overflow_capacity: Optional[int] = None
    name = "batched"

    def _weighted_grad(self, theta, records, coefficients):
        """grad of sum_j c_j (-w log p(r_j | theta)) in one reverse pass (c_j held constant)."""
        model = self.model

        def total(t):
            ll = jax.vmap(model.log_likelihood, in_axes=(None, 0))(t, records)
            return -model.likelihood_weight * jnp.sum(coefficients * ll)

        return jax.grad(total)(theta)

    def _combine(self, sampler, theta, records, active, signs=None):
        """sum_j [active_j] signs_j clip(g_j(theta)) over a batch of records (signs: +-1, default
        all +1), by the cheapest exact route the model declares: its fused ``weighted_grad_sum``
        (the norms, the clip factors and the sum in one forward and one backward pass); its
        ``record_grad_norms`` and one reverse pass over the reweighted sum; else per-record
        gradients by vmap."""
        model, clip = self.model, sampler.clip_norm
        w = model.likelihood_weight
        safe = guard_records(records, active)
        coefficients = active.astype(theta.dtype) if signs is None else jnp.where(active, signs, 0).astype(theta.dtype)
        if model.weighted_grad_sum is not None:
            def weigh(norms):  # the model's sum is of grad log p: g_j = -w grad log p_j
                return -w * coefficients * (1.0 if clip is None else _clip_factor(w * norms, clip))

            total = model.weighted_grad_sum(theta, safe, weigh)
        elif clip is None:
            total = self._weighted_grad(theta, safe, coefficients)
        elif model.record_grad_norms is not None:
            norms = w * model.record_grad_norms(theta, safe)
            factors = jax.lax.stop_gradient(_clip_factor(norms, clip))
            total = self._weighted_grad(theta, safe, coefficients * factors)
        else:  # the exact fallback: per-record gradients, clipped one by one
            grads = jax.vmap(model.record_grad, in_axes=(None, 0))(theta, safe)
            if signs is not None:
                grads = grads * signs[:, None].astype(grads.dtype)
            total = clip_record_grads(grads, active.astype(theta.dtype), clip)
        return jnp.where(jnp.any(active), total, 0)

    def _sum(self, sampler, theta, records, active):
        """sum_j [active_j] clip(g_j(theta)) over the batch."""
        return self._combine(sampler, theta, records, active)

    def batch_sums(self, sampler, x, xp, data, index, batch: Batch, dense: bool):
        dataset, neighbour = data["dataset"], data["neighbour"]
        if dense:
            rows = jnp.arange(dataset.mask.shape[0], dtype=jnp.int32)
            records, mask = dataset.fields, dataset.mask
        else:
            rows = batch.indices
            records = {k: v[rows] for k, v in dataset.fields.items()}  # the one gather
            mask = dataset.mask[rows]
        active = _active(batch.weights, mask)
        is_diff = rows == index
        sum_d = self._sum(sampler, x, records, active)
        # D''s batch: D's rows with D''s record selected into the differing slot's rows (as often
        # as the batch holds it), so its gradient joins the chain's one pass
        records_n = {k: jnp.where(_expand(is_diff, v), neighbour.fields[k][index], v) for k, v in records.items()}
        active_n = jnp.where(is_diff, (batch.weights > 0) & (neighbour.mask[index] > 0), active)
        return sum_d, self._sum(sampler, xp, records_n, active_n)

    def gap(self, sampler, x, data, index):
        """clip(g(x; D's record i*)) - clip(g(x; D''s record i*)) (each where present) as one
        signed two-record sum: one pass for both records."""
        dataset, neighbour = data["dataset"], data["neighbour"]
        both = {k: jnp.stack([dataset.fields[k][index], neighbour.fields[k][index]]) for k in dataset.fields}
        present = jnp.stack([dataset.mask[index] > 0, neighbour.mask[index] > 0])
        return self._combine(sampler, x, both, present, signs=jnp.array([1.0, -1.0], x.dtype))


def poisson_capacity(num_slots: int, rate: float) -> int:
    """Gap words of a Poisson batch's first chunk (:func:`.reference.poisson_sums`): the mean
    n q plus 1 standard deviation plus 1, rounded up to a multiple of 8, at most n. A batch
    overflows it with probability about 16% (the normal tail at 1 sd); the overflowing pairs of
    a step then take further chunks of :func:`poisson_overflow_capacity` together. Only the
    speed depends on it: the members are the same for any capacity (tested).

    Why not a generous capacity: every pair gathers the whole first chunk, so its size is the
    step's cost. At b = n q = 128 a chunk of mean + 6 sd rounded to a power of two (256) ran
    0.44x the pair-steps/s of uniform batches of 128 (logistic d = 20, n = 1e4, clipped, float32,
    2-core CPU). Against mean + 2 sd (the rule before), mean + 1 sd with overflow rounds of
    8 + K / 8 pairs ran 1.05-1.11x faster on each of four workloads (12 alternating rounds:
    logistic n = 1e4 and 1e5 at b = 128, a numpyro regression at b = 32 on the GLM and on the
    batched path): the rows the first chunk gathers cost more than the rounds it saves."""
    mean = num_slots * rate
    return _multiple_of_8(mean + math.sqrt(mean * (1.0 - rate)) + 1.0, num_slots)


def poisson_overflow_capacity(num_slots: int, rate: float) -> int:
    """Gap words of each further chunk of an overflowing Poisson batch: 2 standard deviations,
    at least 8, rounded up to a multiple of 8, at most n (one further chunk almost always ends
    the batch: past mean + 3 sd)."""
    mean = num_slots * rate
    return _multiple_of_8(max(8.0, 2.0 * math.sqrt(mean * (1.0 - rate))), num_slots)


def _multiple_of_8(words: float, num_slots: int) -> int:
    """``words`` rounded up to a multiple of 8 (nearby rates share a compiled program), at most n."""
    return int(min(num_slots, 8 * math.ceil(words / 8)))


def provider_for(model: Model, pair: NeighbouringPair, kind: str, dtype, sampler=None) -> tuple[Any, dict]:
    """(provider, its data as numpy arrays in ``dtype``) for ``kind`` "generic" (the reference
    path), "quadratic", "glm" or "batched"."""
    chunks = (None, None)
    if sampler is not None and isinstance(sampler.batching, Poisson):
        n, q = pair.dataset.num_slots, float(sampler.batching.rate)
        chunks = (poisson_capacity(n, q), poisson_overflow_capacity(n, q))
    if kind == "quadratic":
        tables = quadratic_tables(model, pair)
        return QuadraticGradients(model, tables["hessians"].shape[0] == 1, *chunks), {k: np.asarray(v, dtype) for k, v in tables.items()}
    if kind == "glm":
        glm = glm_of(model)
        if glm is None:
            raise ValueError(f"engine='glm' needs a model with a GLM structure (dpjax.models.GLM); {getattr(model, 'name', model)!r} has none")
        check_glm(model, glm, pair.dataset)
        if float(np.asarray(pair.neighbour.mask)[pair.index]) > 0:
            check_glm(model, glm, pair.neighbour, rows=np.array([pair.index]))
        return GLMGradients(model, glm, *chunks), glm_data(glm, pair, dtype)
    data = {"dataset": cast_dataset(pair.dataset, dtype), "neighbour": cast_dataset(pair.neighbour, dtype)}
    if kind == "batched":
        # a declared norm or fused-sum hook is checked against autodiff before it changes a number
        check_grad_hooks(model, pair.dataset)
        rows = present_rows(pair.dataset)
        if rows is not None and float(np.asarray(pair.neighbour.mask)[pair.index]) > 0:
            # D''s own record in the first row, the rest as checked on D: the same shapes, so the
            # compiled check is reused
            check_grad_hooks(model, pair.neighbour, rows=np.concatenate([[pair.index], rows[1:]]))
        return BatchedGradients(model, *chunks), data
    if kind != "generic":
        raise ValueError(f"kind={kind!r} is not one of ['generic', 'quadratic', 'glm', 'batched']")
    return GenericGradients(model), data
