"""Batching schemes: which records the gradient of step t of chain c uses.

Every scheme is pure and counter-based. A chain's batching key is derived once from
(seed, chain index) by the caller (see :func:`dpjax.samplers.kernel.chain_keys`); the batch of
step t is a function of that key and t only (``fold_in(key, t)``, or ``fold_in(key, epoch)``
for schemes with a per-epoch order), never of a split chain, so a chain's batches do not
depend on how many chains run beside it or on which device.

A batch has a static shape: :class:`Batch` ``(indices, weights, scale)`` with ``indices`` and
``weights`` of shape ``(b,)``. The sampler's estimate of the data part of grad U_D is

    scale * sum_j weights_j * mask[indices_j] * grad_j,     grad_j = -w_lik grad log p(x_{indices_j} | theta)

``weights`` are 0/1 (a 0 marks an unused slot of a variable-size batch); ``mask`` is the
dataset's presence mask, so under add/remove adjacency the removed record's slot contributes
0 to D''s gradient while both chains of a pair still use the same indices and the same scale.

How ``scale`` is chosen (n = number of record *slots*, the same for D and D'):

=====================  ==================================================  ==============
scheme                 batch                                               scale
=====================  ==================================================  ==============
``full``               all n slots                                         1
``uniform``            b slots i.i.d. uniform, with replacement             n / b
                       (paper 000 eq. 3)
``without-replacement``  b distinct slots, a fresh uniform order each step   n / b
                       (paper 001 eq. 31)
``poisson``            each slot independently with probability q          1 / q
                       (weights = inclusion indicators over all n slots)
``reshuffle``          a fresh order each epoch, consecutive blocks of b   n / (size of the block)
``cyclic``             one order per chain (or a given fixed order) reused  n / (size of the block)
                       every epoch (paper 000's cyclic SGLD, b = 1)
=====================  ==================================================  ==============

Sampling over slots and multiplying by the mask makes the estimate unbiased for the masked
sum sum_i mask_i grad_i for both datasets of an add/remove pair. For reshuffle/cyclic with b
not dividing n the last block of an epoch is shorter (its unused slots have weight 0) and
its scale is n / (its size); one epoch then has ceil(n / b) steps.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate
from . import permutation


class Batch(NamedTuple):
    """Slots used by one step: ``indices`` (b,) int32, ``weights`` (b,) 0/1, scalar ``scale``."""

    indices: jax.Array
    weights: jax.Array
    scale: jax.Array


def _check_batch_size(batch_size: Any, num_slots: int) -> int:
    b = _validate.positive_int("batch_size", batch_size)
    if b > num_slots:
        raise ValueError(f"batch_size={b} violates batch_size <= n = {num_slots} (the number of records)")
    return b


@dataclasses.dataclass(frozen=True, eq=False)
class BatchingScheme:
    """Base class. ``init(key, n)`` -> per-chain batching state (a pytree derived from the
    chain's batching key only); ``batch(state, step, n)`` -> :class:`Batch`."""

    name = "scheme"

    def validate(self, num_slots: int) -> None:
        """Raise ``ValueError`` if the scheme cannot run on ``num_slots`` records."""

    def batch_size(self, num_slots: int) -> int:
        """Static length b of ``Batch.indices``."""
        raise NotImplementedError

    def steps_per_epoch(self, num_slots: int) -> int:
        """Steps that use every record once (schemes with orders), else n / b rounded up."""
        return math.ceil(num_slots / self.batch_size(num_slots))

    def init(self, key: jax.Array, num_slots: int) -> Any:
        return key

    def batch(self, state: Any, step: jax.Array, num_slots: int) -> Batch:
        raise NotImplementedError

    def describe(self) -> dict:
        return {"name": self.name, **{f.name: _describe_value(getattr(self, f.name)) for f in dataclasses.fields(self)}}


@dataclasses.dataclass(frozen=True, eq=False)
class _FixedSize(BatchingScheme):
    """A scheme whose batches all have ``batch_size_`` records (1 <= b <= n)."""

    batch_size_: int = 1

    def validate(self, num_slots):
        _check_batch_size(self.batch_size_, num_slots)

    def batch_size(self, num_slots):
        return self.batch_size_


def _describe_value(v):
    if isinstance(v, np.ndarray):
        return v.tolist() if v.size <= 32 else f"array(shape={v.shape})"
    return v


def _ones(b: int) -> jax.Array:
    return jnp.ones((b,), dtype=jnp.result_type(float))


@dataclasses.dataclass(frozen=True, eq=False)
class FullBatch(BatchingScheme):
    """Every record every step (ULA / full-batch noisy gradient descent)."""

    name = "full"

    def batch_size(self, num_slots: int) -> int:
        return num_slots

    def batch(self, state, step, num_slots):
        return Batch(jnp.arange(num_slots, dtype=jnp.int32), _ones(num_slots), jnp.asarray(1.0, _ones(1).dtype))


@dataclasses.dataclass(frozen=True, eq=False)
class UniformWithReplacement(_FixedSize):
    """b records drawn i.i.d. uniformly with replacement, redrawn each step (paper 000 eq. 3)."""

    name = "uniform"

    def batch(self, state, step, num_slots):
        b = self.batch_size_
        idx = jax.random.randint(jax.random.fold_in(state, step), (b,), 0, num_slots, dtype=jnp.int32)
        w = _ones(b)
        return Batch(idx, w, jnp.asarray(num_slots / b, w.dtype))


@dataclasses.dataclass(frozen=True, eq=False)
class WithoutReplacement(_FixedSize):
    """b distinct records, a fresh subset each step (paper 001 eq. 31).

    The subset is the first b positions of a keyed order (:mod:`.permutation`) keyed by
    (chain, step): O(b) work per step whatever n is. Each record's inclusion probability is
    b / n (tested); the subsets are not exactly uniform over all C(n, b) subsets (see
    :mod:`.permutation`).
    """

    name = "without-replacement"

    def batch(self, state, step, num_slots):
        b = self.batch_size_
        keys = permutation.round_keys(jax.random.fold_in(state, step), num_slots)
        idx = permutation.permute(jnp.arange(b), keys, num_slots)
        w = _ones(b)
        return Batch(idx, w, jnp.asarray(num_slots / b, w.dtype))


@dataclasses.dataclass(frozen=True, eq=False)
class Poisson(BatchingScheme):
    """Each record independently with probability ``rate`` (DP-SGD's Poisson subsampling).

    The batch size is random; shapes stay static by using all n slots with the inclusion
    indicators as weights, and scale 1 / rate (so the estimate is unbiased). O(n) per step.
    """

    rate: float = 0.01
    name = "poisson"

    def __post_init__(self):
        _validate.in_range("rate", self.rate, 0.0, 1.0, low_open=True)

    def batch_size(self, num_slots):
        return num_slots

    def steps_per_epoch(self, num_slots):
        return math.ceil(1.0 / self.rate)

    def batch(self, state, step, num_slots):
        include = jax.random.bernoulli(jax.random.fold_in(state, step), self.rate, (num_slots,))
        w = include.astype(_ones(1).dtype)
        return Batch(jnp.arange(num_slots, dtype=jnp.int32), w, jnp.asarray(1.0 / self.rate, w.dtype))


def _block(order_fn, step, b: int, num_slots: int) -> Batch:
    steps = math.ceil(num_slots / b)
    within = step % steps
    positions = within * b + jnp.arange(b, dtype=jnp.int32)
    valid = positions < num_slots
    idx = order_fn(jnp.where(valid, positions, 0))
    w = valid.astype(_ones(1).dtype)
    return Batch(idx, w, num_slots / jnp.sum(w))


class OrderTable(NamedTuple):
    """A chain's keyed order written out: ``records[p]`` is the record at position p.

    Equal, entry for entry, to the keyed bijection it is made from (:meth:`Cyclic.tabulate`),
    so a run gives the same numbers with or without it; it trades K x n integers of memory
    for one gather per step instead of a Feistel evaluation with cycle-walking.
    """

    records: jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class Reshuffle(_FixedSize):
    """A fresh order every epoch (keyed by chain and epoch), consumed in blocks of b."""

    name = "reshuffle"

    def batch(self, state, step, num_slots):
        epoch = step // self.steps_per_epoch(num_slots)
        keys = permutation.round_keys(jax.random.fold_in(state, epoch), num_slots)
        return _block(lambda p: permutation.permute(p, keys, num_slots), step, self.batch_size_, num_slots)


@dataclasses.dataclass(frozen=True, eq=False)
class Cyclic(_FixedSize):
    """One order per chain, then the same order every epoch (paper 000's cyclic SGLD).

    ``order=None``: each chain's order is a keyed bijection (:mod:`.permutation`) of its
    batching key, computed on demand (no K x n table). ``order`` given: that fixed order
    (a permutation of 0..n-1) for every chain, e.g. ``np.arange(n)`` for a known order.
    """

    order: Optional[np.ndarray] = None
    name = "cyclic"

    def validate(self, num_slots):
        super().validate(num_slots)
        if self.order is not None:
            order = np.asarray(self.order)
            if order.shape != (num_slots,) or not np.array_equal(np.sort(order), np.arange(num_slots)):
                raise ValueError(f"order (shape {order.shape}) must be a permutation of 0..{num_slots - 1} (n = {num_slots} records)")

    def init(self, key, num_slots):
        if self.order is not None:
            return jnp.zeros((0,), jnp.uint32)
        return permutation.round_keys(key, num_slots)

    def tabulate(self, state, num_slots) -> Any:
        """The per-chain order as an :class:`OrderTable` (n int32), for runs where K x n
        integers fit in memory; a fixed ``order`` needs no table and is returned as is."""
        if self.order is not None or isinstance(state, OrderTable):
            return state
        return OrderTable(permutation.permute(jnp.arange(num_slots, dtype=jnp.int32), state, num_slots))

    def batch(self, state, step, num_slots):
        if self.order is not None:
            order = jnp.asarray(np.asarray(self.order), dtype=jnp.int32)
            return _block(lambda p: order[p], step, self.batch_size_, num_slots)
        if isinstance(state, OrderTable):
            return _block(lambda p: state.records[p], step, self.batch_size_, num_slots)
        return _block(lambda p: permutation.permute(p, state, num_slots), step, self.batch_size_, num_slots)


SCHEMES = ("full", "uniform", "without-replacement", "poisson", "reshuffle", "cyclic")


def make_batching(name: str, *, batch_size: Optional[int] = None, rate: Optional[float] = None, order=None) -> BatchingScheme:
    """Build a batching scheme by name (one of :data:`SCHEMES`).

    ``batch_size`` is required for uniform / without-replacement / reshuffle (cyclic
    defaults to 1); ``rate`` for poisson; ``order`` only for cyclic.
    """
    _validate.one_of("batching", name, SCHEMES)
    if name != "cyclic" and order is not None:
        raise ValueError(f"order is only meaningful for batching='cyclic', not {name!r}")
    if name == "poisson":
        if rate is None:
            raise ValueError("batching='poisson' needs rate=q with 0 < q <= 1")
        if batch_size is not None:
            raise ValueError("batching='poisson' has a random batch size; pass rate=q, not batch_size")
        return Poisson(rate=rate)
    if rate is not None:
        raise ValueError(f"rate is only meaningful for batching='poisson', not {name!r}")
    if name == "full":
        if batch_size is not None:
            raise ValueError("batching='full' uses every record; do not pass batch_size")
        return FullBatch()
    if name == "cyclic":
        return Cyclic(batch_size_=_validate.positive_int("batch_size", 1 if batch_size is None else batch_size), order=None if order is None else np.asarray(order))
    if batch_size is None:
        raise ValueError(f"batching={name!r} needs batch_size (a positive integer <= n)")
    b = _validate.positive_int("batch_size", batch_size)
    return {"uniform": UniformWithReplacement, "without-replacement": WithoutReplacement, "reshuffle": Reshuffle}[name](batch_size_=b)
