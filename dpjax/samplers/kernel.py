"""The Langevin kernel shared by ULA, SGLD / noisy SGD and cyclic SGLD.

One step from theta with a batch B and a standard normal z:

    theta' = theta + drift_coef * f(theta) + noise_std * z,     f = -grad U_hat_B(theta)

Two parameterisations of (drift_coef, noise_std), with T = ``temperature``:

* ``"welling-teh"`` (paper 000 eq. 3): ``step_size`` = eta,
  drift_coef = eta / 2, noise_std = sqrt(eta T).
* ``"euler"`` (paper 001): ``step_size`` = gamma, drift_coef = gamma,
  noise_std = sqrt(2 gamma / beta) with beta = 1 / T.

They describe the same chain when gamma = eta / 2 (and blackjax's ``sgld`` step size is
gamma). Paper 001's noisy SGD (eq. 31) with loss l is a model whose per-record negative
log-likelihood is l / n (``likelihood_weight``) with batch size s: then
grad U_hat = (1/s) sum_{i in A} grad l(x, d_i).

The estimate grad U_hat_B(theta) = grad(-log prior)(theta)
+ scale * sum_j weights_j * mask[i_j] * clip_C(g_{i_j}(theta)), where g_i is record i's
gradient of -likelihood_weight * log p(x_i | theta) and clip_C (optional, ``clip_norm`` = C)
rescales it to norm at most C (DP-SGD's per-example clipping; the prior is not clipped).

Randomness is counter-based (:mod:`dpjax.engine.randomness`): a chain's key k_c =
fold_in(key(seed), c) gives it two Philox words once; step t's normal draw and batch are Philox
blocks of (those words; t, stream, block), so any step of any chain is computed in registers
without state, and every engine path (reference, fused, Pallas; any device layout) draws the
same numbers. ``init`` callables get fold_in(k_c, 2).

The sampler is a pytree: the step size (a number), temperature, clipping norm and the batching
scheme's numbers are leaves, so the engine's compiled programs are reused when only they change;
a step-size schedule (a callable) and the parameterisation are structure.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple, Optional, Union

import jax
import jax.numpy as jnp
import optax

from .. import _validate
from ..data import Dataset
from ..models.base import Model
from ..engine import randomness as rng
from .batching import Batch, BatchingScheme

PARAMETERISATIONS = ("welling-teh", "euler")
INIT_STREAM = rng.INIT_TAG  # fold_in tag of a chain's key for its init draw

StepSize = Union[float, Callable[[jax.Array], jax.Array]]


class ChainKeys(NamedTuple):
    """Per-chain randomness, derived once from the chain's key: its Philox words (2,) uint32
    and its batching scheme's per-chain state (e.g. its order)."""

    words: jax.Array
    batching: Any


class SamplerState(NamedTuple):
    """A chain's position (d,) and the number of steps taken."""

    position: jax.Array
    step: jax.Array


class StepInfo(NamedTuple):
    batch: Batch
    noise: jax.Array
    drift_coef: jax.Array
    noise_std: jax.Array


def clip_record_grads(grads: jax.Array, weights: jax.Array, clip_norm: Optional[float]) -> jax.Array:
    """sum_j weights_j * clip_C(grads_j) over the batch axis (weights 0/1); no clipping if C is None."""
    if clip_norm is None:
        # a select and a sum, not a matrix product or a multiply: XLA fuses the select into the
        # reduction with the gradients that feed it (a full batch's (n, d) record gradients are
        # never written to memory; the multiply by a broadcast weight vector did not fuse and
        # was 10x slower for full-batch ULA on a CPU), and an absent record's gradient cannot
        # leak a NaN into the sum (0 * inf)
        return jnp.sum(jnp.where(weights[:, None] > 0, grads, jnp.zeros_like(grads)), axis=0)
    # clip(w g) = w clip(g) for w in {0, 1}, so optax's per-example clip of w*g is what we need
    (total,), _ = optax.per_example_global_norm_clip([grads * weights[:, None]], clip_norm)
    return total


def clip_one(grad: jax.Array, clip_norm: Optional[float]) -> jax.Array:
    """clip_C of a single record gradient (identity if C is None)."""
    if clip_norm is None:
        return grad
    norm = jnp.sqrt(jnp.sum(grad**2))
    return grad * jnp.minimum(1.0, clip_norm / jnp.where(norm > 0, norm, 1.0))


@dataclasses.dataclass(frozen=True, eq=False)
class LangevinSampler:
    """A Langevin-type sampler: step size, batching scheme, temperature, optional clipping.

    Build it with :func:`dpjax.samplers.ula`, :func:`~dpjax.samplers.sgld` or
    :func:`~dpjax.samplers.cyclic_sgld`. Kernels in the blackjax shape:
    ``state = sampler.init(position)``;
    ``state, info = sampler.step(chain_key, state, model, dataset)`` where ``chain_key`` is
    the chain's own key, the same at every step (the step counter in the state selects the
    step's randomness; see the module docstring).
    """

    step_size: StepSize
    batching: BatchingScheme
    temperature: float = 1.0
    clip_norm: Optional[float] = None
    parameterisation: str = "welling-teh"
    name: str = "sgld"

    def __post_init__(self):
        if not callable(self.step_size):
            _validate.positive("step_size", self.step_size)
        _validate.positive("temperature", self.temperature, "temperature > 0 (finite): the noise scale must be positive")
        if self.clip_norm is not None:
            _validate.positive("clip_norm", self.clip_norm)
        _validate.one_of("parameterisation", self.parameterisation, PARAMETERISATIONS)
        if not isinstance(self.batching, BatchingScheme):
            raise TypeError(f"batching={self.batching!r} must be a BatchingScheme (see dpjax.samplers.make_batching)")

    # --- configuration ------------------------------------------------------------------
    def validate(self, num_slots: int, num_steps: Optional[int] = None) -> None:
        """Check the batching scheme against n and a step-size schedule over the steps run."""
        self.batching.validate(num_slots)
        if callable(self.step_size) and num_steps is not None and num_steps > 0:
            import numpy as np

            values = np.asarray(jax.vmap(self.step_size)(jnp.arange(num_steps)))
            bad = np.flatnonzero(~(np.isfinite(values) & (values > 0)))
            if bad.size:
                raise ValueError(f"step_size schedule gives step_size={values[bad[0]]!r} at step {int(bad[0])}; it must be > 0 and finite at every step")

    def describe(self) -> dict:
        return {
            "name": self.name,
            "step_size": self.step_size if not callable(self.step_size) else repr(self.step_size),
            "batching": self.batching.describe(),
            "temperature": self.temperature,
            "clip_norm": self.clip_norm,
            "parameterisation": self.parameterisation,
        }

    def coefficients(self, step: jax.Array, dtype=None) -> tuple[jax.Array, jax.Array]:
        """(drift_coef, noise_std) of step ``step`` (see the module docstring), in ``dtype``
        (default: JAX's default float)."""
        size = self.step_size(step) if callable(self.step_size) else self.step_size
        size = jnp.asarray(size).astype(jnp.result_type(float) if dtype is None else dtype)
        if self.parameterisation == "welling-teh":
            return size / 2, jnp.sqrt(size * self.temperature)
        return size, jnp.sqrt(2 * size * self.temperature)

    # --- randomness ---------------------------------------------------------------------
    def chain_keys(self, chain_key: jax.Array, num_slots: int, tables: Optional[dict] = None) -> ChainKeys:
        """A chain's Philox words and batching state, from its JAX key (once per chain);
        ``tables``: the batching scheme's ``tables(n)`` (default: built here)."""
        words = rng.chain_words(chain_key)
        return ChainKeys(words=words, batching=self.batching.chain_state(words, num_slots, tables))

    def noise(self, keys: ChainKeys, step: jax.Array, dim: int, dtype=None) -> jax.Array:
        """Standard normal draw (d,) of step ``step``."""
        return rng.normals(keys.words, step, dim, jnp.result_type(float) if dtype is None else dtype)

    def randomness(self, keys: ChainKeys, step: jax.Array, num_slots: int, dim: int, dtype=None) -> tuple[Batch, jax.Array]:
        """Step ``step``'s batch and standard normal draw (d,)."""
        batch = self.batching.batch(keys.words, keys.batching, step, num_slots)
        return batch, self.noise(keys, step, dim, dtype)

    # --- gradients ----------------------------------------------------------------------
    def potential_grad_estimate(self, model: Model, dataset: Dataset, theta: jax.Array, batch: Batch) -> jax.Array:
        """grad U_hat_B(theta) = prior gradient + scale * sum_j w_j mask_{i_j} clip(g_{i_j})."""
        records = {k: v[batch.indices] for k, v in dataset.fields.items()}
        return self.grad_from_records(model, theta, records, dataset.mask[batch.indices], batch)

    def grad_from_records(self, model: Model, theta: jax.Array, records: dict, mask: jax.Array, batch: Batch) -> jax.Array:
        """:meth:`potential_grad_estimate` from the batch's gathered records and mask values."""
        grads = jax.vmap(model.record_grad, in_axes=(None, 0))(theta, records)
        return model.prior_grad(theta) + batch.scale * clip_record_grads(grads, batch.weights * mask, self.clip_norm)

    # --- kernels ------------------------------------------------------------------------
    def init(self, position: jax.Array) -> SamplerState:
        position = jnp.asarray(position, dtype=jnp.result_type(float))
        if position.ndim != 1:
            raise ValueError(f"position has shape {position.shape}; positions are flat arrays of shape (d,)")
        return SamplerState(position=position, step=jnp.asarray(0, jnp.int32))

    def step(self, chain_key: jax.Array, state: SamplerState, model: Model, dataset: Dataset) -> tuple[SamplerState, StepInfo]:
        """One step of one chain (the blackjax shape; jit/vmap it yourself)."""
        n = dataset.num_slots
        keys = self.chain_keys(chain_key, n)
        batch, z = self.randomness(keys, state.step, n, state.position.shape[0], state.position.dtype)
        drift_coef, noise_std = self.coefficients(state.step, state.position.dtype)
        grad = self.potential_grad_estimate(model, dataset, state.position, batch)
        new = state.position - drift_coef * grad + noise_std * z
        return SamplerState(new, state.step + 1), StepInfo(batch, z, drift_coef, noise_std)


def _flatten_sampler(sampler: LangevinSampler):
    schedule = sampler.step_size if callable(sampler.step_size) else None
    size = None if schedule is not None else sampler.step_size
    return (size, sampler.temperature, sampler.clip_norm, sampler.batching), (schedule, sampler.parameterisation, sampler.name)


def _unflatten_sampler(aux, children) -> LangevinSampler:
    schedule, parameterisation, name = aux
    size, temperature, clip_norm, batching = children
    sampler = object.__new__(LangevinSampler)  # leaves may be tracers: skip __post_init__'s checks
    for field, value in (("step_size", schedule if schedule is not None else size), ("temperature", temperature), ("clip_norm", clip_norm),
                         ("batching", batching), ("parameterisation", parameterisation), ("name", name)):
        object.__setattr__(sampler, field, value)
    return sampler


jax.tree_util.register_pytree_node(LangevinSampler, _flatten_sampler, _unflatten_sampler)
