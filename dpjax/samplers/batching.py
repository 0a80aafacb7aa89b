"""Batching schemes: which records the gradient of step t of chain c uses.

Every scheme is pure and counter-based: the batch of step t of a chain is a function of the
chain's Philox words (two uint32 drawn once from (seed, chain); :mod:`dpjax.engine.randomness`)
and t only, never of a split key or of other chains, so a chain's batches do not depend on how
many chains run beside it, on which device, or on the engine path that runs them.

A batch has a static shape: :class:`Batch` ``(indices, weights, scale)`` with ``indices`` and
``weights`` of shape ``(b,)``. The sampler's estimate of the data part of grad U_D is

    scale * sum_j weights_j * mask[indices_j] * grad_j,     grad_j = -w_lik grad log p(x_{indices_j} | theta)

``weights`` are 0/1 (a 0 marks an unused slot of a variable-size batch); ``mask`` is the
dataset's presence mask, so under add/remove adjacency the removed record's slot contributes
0 to D''s gradient while both chains of a pair still use the same indices and the same scale.
*Dense* schemes (``full``, ``poisson``) use every slot in order (``indices = arange(n)``), so the
engine reads the records in place instead of gathering them.

How ``scale`` is chosen (n = number of record *slots*, the same for D and D'):

=======================  ==================================================  ==============
scheme                   batch                                               scale
=======================  ==================================================  ==============
``full``                 all n slots                                         1
``uniform``              b slots i.i.d. uniform, with replacement             n / b
                         (paper 000 eq. 3)
``without-replacement``  b distinct slots: the first b positions of a fresh   n / b
                         swap-or-not order each step (paper 001 eq. 31)
``poisson``              each slot independently with probability q          1 / q
                         (geometric gaps between members, O(q n); gathered
                         in chunks by the engine, dense 0/1 weights from
                         ``batch``)
``reshuffle``            a fresh swap-or-not order each epoch, consecutive    n / (size of the block)
                         blocks of b
``cyclic``               one order per chain (affine by default, or a given   n / (size of the block)
                         fixed order) reused every epoch (paper 000, b = 1)
=======================  ==================================================  ==============

Sampling over slots and multiplying by the mask makes the estimate unbiased for the masked
sum sum_i mask_i grad_i for both datasets of an add/remove pair. For reshuffle/cyclic with b
not dividing n the last block of an epoch is shorter (its unused slots have weight 0) and
its scale is n / (its size); one epoch then has ceil(n / b) steps.

Schemes are pytrees: numbers that may change between runs (the Poisson rate, a fixed order)
are leaves, so a compiled engine program is reused when only they change; the batch size and
the order family are structure.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import _validate
from ..engine import randomness as rng
from . import permutation

ORDER_FAMILIES = ("affine", "swap-or-not")


class Batch(NamedTuple):
    """Slots used by one step: ``indices`` (b,) int32, ``weights`` (b,) 0/1, scalar ``scale``."""

    indices: jax.Array
    weights: jax.Array
    scale: jax.Array


def _check_batch_size(batch_size: Any, num_slots: int) -> int:
    b = _validate.dimension("batch_size", batch_size)
    if b > num_slots:
        raise ValueError(f"batch_size={b} violates batch_size <= n = {num_slots} (the number of records)")
    return b


def register_pytree(*dynamic: str):
    """Register a frozen dataclass as a pytree whose ``dynamic`` fields are leaves and whose
    other fields are static structure (compared by value when JAX caches compiled programs).
    Unflattening bypasses ``__post_init__``: leaves may be tracers inside a compiled program."""

    def register(cls):
        names = [f.name for f in dataclasses.fields(cls)]
        static = tuple(f for f in names if f not in dynamic)

        def flatten(obj):
            return tuple(getattr(obj, f) for f in dynamic), tuple(getattr(obj, f) for f in static)

        def unflatten(aux, children):
            obj = object.__new__(cls)
            for name, value in zip(static, aux):
                object.__setattr__(obj, name, value)
            for name, value in zip(dynamic, children):
                object.__setattr__(obj, name, value)
            return obj

        jax.tree_util.register_pytree_node(cls, flatten, unflatten)
        return cls

    return register


def _float_dtype():
    return jnp.result_type(float)


def _ones(b: int) -> jax.Array:
    return jnp.ones((b,), dtype=_float_dtype())


@dataclasses.dataclass(frozen=True, eq=False)
class BatchingScheme:
    """Base class.

    ``chain_state(words, n, tables)`` -> a chain's per-run batching state (e.g. its order), from
    its Philox words and the scheme's host ``tables(n)`` (arrays shared by every chain, passed
    to compiled programs as arguments rather than baked in as constants);
    ``batch(words, state, step, n)`` -> :class:`Batch` of step ``step``.
    Engine paths may walk the steps incrementally: ``start(words, state, step, n)`` gives a
    cursor at ``step`` and ``advance(words, state, cursor, step, n)`` gives step ``step``'s batch
    and the cursor of the next step; the batches are identical to :meth:`batch`'s (tested).
    """

    name = "scheme"
    dense = False  # True: indices are arange(n) in order (the engine reads records in place)

    def validate(self, num_slots: int) -> None:
        """Raise ``ValueError`` if the scheme cannot run on ``num_slots`` records."""

    def batch_size(self, num_slots: int) -> int:
        """Static length b of ``Batch.indices``."""
        raise NotImplementedError

    def steps_per_epoch(self, num_slots: int) -> int:
        """Steps that use every record once (schemes with orders), else n / b rounded up."""
        return math.ceil(num_slots / self.batch_size(num_slots))

    def tables(self, num_slots: int) -> dict:
        return {}

    def chain_state(self, words: jax.Array, num_slots: int, tables: Optional[dict] = None) -> Any:
        return ()

    def batch(self, words: jax.Array, state: Any, step: jax.Array, num_slots: int) -> Batch:
        raise NotImplementedError

    def start(self, words: jax.Array, state: Any, step: jax.Array, num_slots: int) -> Any:
        return ()

    def advance(self, words: jax.Array, state: Any, cursor: Any, step: jax.Array, num_slots: int) -> tuple[Batch, Any]:
        return self.batch(words, state, step, num_slots), cursor

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


@register_pytree()
@dataclasses.dataclass(frozen=True, eq=False)
class FullBatch(BatchingScheme):
    """Every record every step (ULA / full-batch noisy gradient descent)."""

    name = "full"
    dense = True

    def batch_size(self, num_slots: int) -> int:
        return num_slots

    def batch(self, words, state, step, num_slots):
        return Batch(jnp.arange(num_slots, dtype=jnp.int32), _ones(num_slots), jnp.asarray(1.0, _float_dtype()))


@register_pytree()
@dataclasses.dataclass(frozen=True, eq=False)
class UniformWithReplacement(_FixedSize):
    """b records drawn i.i.d. uniformly with replacement, redrawn each step (paper 000 eq. 3)."""

    name = "uniform"

    def batch(self, words, state, step, num_slots):
        b = self.batch_size_
        high, low = rng.index_words(words, step, rng.BATCH, b)
        # written out once: the gather and the slot comparisons of a step all read them
        return Batch(rng.computed_once(rng.uniform_index(high, low, num_slots), step), _ones(b), jnp.asarray(num_slots / b, _float_dtype()))


@register_pytree()
@dataclasses.dataclass(frozen=True, eq=False)
class WithoutReplacement(_FixedSize):
    """b distinct records, a fresh subset each step (paper 001 eq. 31).

    The subset is the first b positions of a swap-or-not order keyed by (chain, step)
    (:mod:`.permutation`): a fixed O(b R) work per step whatever n is. Each record's inclusion
    probability is b / n up to the order's 2^-R (tested).
    """

    name = "without-replacement"

    def batch(self, words, state, step, num_slots):
        b = self.batch_size_
        keys = permutation.swap_or_not_keys(words, step, num_slots)
        idx = permutation.swap_or_not(jnp.arange(b, dtype=jnp.int32), keys, num_slots)
        return Batch(idx, _ones(b), jnp.asarray(num_slots / b, _float_dtype()))


@register_pytree("rate")
@dataclasses.dataclass(frozen=True, eq=False)
class Poisson(BatchingScheme):
    """Each record independently with probability ``rate`` (DP-SGD's Poisson subsampling).

    The members of step t's batch are the partial sums of i.i.d. Geometric(q) gaps (word j of
    the chain's INCLUSION stream at step t gives gap j; :func:`~dpjax.engine.randomness.geometric_gaps`):
    slots s_1 = G_1 - 1, s_{j+1} = s_j + G_{j+1}, while below n. That is exactly Bernoulli(q)
    inclusion of every slot (up to the 2^-53 granularity of a uniform), in expected O(q n) work:
    the gaps are drawn in chunks (:meth:`chunk`), and only a batch larger than a chunk draws more.

    Engine paths take the batch chunk by chunk (:func:`dpjax.engine.reference.poisson_sums`); a
    chunk's capacity is a speed setting, never a change of law (a batch is never truncated or
    redrawn: a full chunk is followed by the next). :meth:`batch` gives the same members as
    dense 0/1 weights over all n slots (O(n); the reference path and single-chain kernels), with
    scale 1 / rate (so the estimate is unbiased).
    """

    rate: float = 0.01
    name = "poisson"
    dense = True  # batch(): weights over every slot; the engine's chunked paths use chunk()

    def __post_init__(self):
        _validate.in_range("rate", self.rate, 0.0, 1.0, low_open=True)

    def batch_size(self, num_slots):
        return num_slots

    def steps_per_epoch(self, num_slots):
        return math.ceil(1.0 / self.rate)

    def scale(self, dtype=None) -> jax.Array:
        """1 / rate in ``dtype`` (default: JAX's default float): what makes the batch sum unbiased."""
        return (1.0 / jnp.asarray(self.rate)).astype(_float_dtype() if dtype is None else dtype)

    def chunk(self, words, step, num_slots: int, first, size: int, last) -> tuple[Batch, jax.Array]:
        """The members that gap words ``first`` .. ``first + size - 1`` of step ``step`` mark (in
        slot order), as a gathered :class:`Batch` of ``size`` slots (weight 0 past the last
        member), given ``last``, the partial sum of the gaps before word ``first`` (-1 before
        the first word). Returns the batch and the partial sum after this chunk: while it is
        below n - 1 the batch may have further members (the next words)."""
        high, low = rng.index_words_from(words, step, rng.INCLUSION, first, size)
        gaps = rng.geometric_gaps(high, low, self.rate, num_slots + 1)  # a capped gap lands past slot n - 1
        sums = _partial_sums(last, gaps, num_slots)
        valid = sums < num_slots
        w = valid.astype(_float_dtype())
        return Batch(jnp.where(valid, sums, 0), w, self.scale(w.dtype)), sums[-1]

    def batch(self, words, state, step, num_slots):
        capacity = min(num_slots, DENSE_CHUNK)

        def more(carry):
            return carry[1] < num_slots - 1

        def next_chunk(carry):
            k, last, weights = carry
            part, last = self.chunk(words, step, num_slots, k * capacity, capacity, last)
            weights = weights.at[jnp.where(part.weights > 0, part.indices, num_slots)].set(1.0, mode="drop")
            return k + 1, last, weights

        _, _, w = jax.lax.while_loop(more, next_chunk, (jnp.int32(0), jnp.int32(-1), jnp.zeros((num_slots,), _float_dtype())))
        w = rng.computed_once(w, step)
        return Batch(jnp.arange(num_slots, dtype=jnp.int32), w, self.scale(w.dtype))


def _partial_sums(last, gaps: jax.Array, num_slots: int) -> jax.Array:
    """last + the running sums of ``gaps`` (each <= n + 1), capped at n, as int32.

    Exact integer sums whichever way they are taken: in int64 when size x (n + 1) may pass
    2^31, else int32. On a CPU a loop over the gaps (vmapped over pairs, each iteration adds a
    vector of pairs): jnp.cumsum's reduce-window is O(size^2) there, and for a chunk of 152 gaps
    of 2,048 pairs it cost 3x the gaps themselves (2-core x86, float32 run); elsewhere
    associative_scan's log2(size) fused rounds, not size small launches."""
    size = gaps.shape[-1]
    wide = size * (num_slots + 1) + 1 >= 2**31
    with jax.enable_x64(wide):
        dtype = jnp.int64 if wide else jnp.int32
        gaps = gaps.astype(dtype)
        start = jnp.asarray(last).astype(dtype)
        if rng.one_word_per_element():
            def add(total, gap):
                total = total + gap
                return total, total

            sums = lax.scan(add, start, gaps)[1]
        else:
            sums = start + lax.associative_scan(jnp.add, gaps)
        return jnp.minimum(sums, num_slots).astype(jnp.int32)


# gaps per chunk of Poisson.batch's dense form (any size gives the same members)
DENSE_CHUNK = 1024


def _positions(step, b: int, num_slots: int):
    """Epoch positions of step ``step``'s block of b, and which of them exist (< n)."""
    steps = math.ceil(num_slots / b)
    positions = (step % steps) * b + jnp.arange(b, dtype=jnp.int32)
    return positions, positions < num_slots


def _block_batch(records, valid, num_slots: int) -> Batch:
    w = valid.astype(_float_dtype())
    return Batch(jnp.where(valid, records, 0).astype(jnp.int32), w, num_slots / jnp.sum(w))


@register_pytree()
@dataclasses.dataclass(frozen=True, eq=False)
class Reshuffle(_FixedSize):
    """A fresh swap-or-not order every epoch (keyed by chain and epoch), consumed in blocks of b."""

    name = "reshuffle"

    def batch(self, words, state, step, num_slots):
        epoch = step // self.steps_per_epoch(num_slots)
        keys = permutation.swap_or_not_keys(words, epoch, num_slots)
        positions, valid = _positions(step, self.batch_size_, num_slots)
        return _block_batch(permutation.swap_or_not(jnp.where(valid, positions, 0), keys, num_slots), valid, num_slots)


@register_pytree("order")
@dataclasses.dataclass(frozen=True, eq=False)
class Cyclic(_FixedSize):
    """One order per chain, then the same order every epoch (paper 000's cyclic SGLD).

    ``order=None``: each chain draws its own order from its Philox words, of the family
    ``order_family``: ``"affine"`` (default; record (a p + b) mod n at position p, exactly
    uniform position of every record, O(1) per step) or ``"swap-or-not"`` (closer to a uniform
    permutation, O(R) per step); see :mod:`.permutation`. ``order`` given: that fixed order (a
    permutation of 0..n-1) for every chain, e.g. ``np.arange(n)`` for a known order.
    """

    order: Optional[np.ndarray] = None
    order_family: str = "affine"
    name = "cyclic"

    def __post_init__(self):
        _validate.one_of("order_family", self.order_family, ORDER_FAMILIES)
        if self.order is not None:
            object.__setattr__(self, "order", np.asarray(self.order))

    def validate(self, num_slots):
        super().validate(num_slots)
        if self.order is not None:
            order = np.asarray(self.order)
            if order.shape != (num_slots,) or not np.array_equal(np.sort(order), np.arange(num_slots)):
                raise ValueError(f"order (shape {order.shape}) must be a permutation of 0..{num_slots - 1} (n = {num_slots} records)")

    def tables(self, num_slots):
        if self.order is None and self.order_family == "affine":
            return {"units": permutation.units(num_slots)}
        return {}

    def chain_state(self, words, num_slots, tables=None):
        if self.order is not None:
            return ()
        if self.order_family == "affine":
            units = (tables or self.tables(num_slots))["units"]
            return permutation.affine_order(words, num_slots, units)
        return permutation.swap_or_not_keys(words, 0, num_slots)

    def _records(self, state, positions, num_slots):
        if self.order is not None:
            return jnp.asarray(self.order, jnp.int32)[positions]
        if self.order_family == "affine":
            return permutation.affine_record(state, positions, num_slots)
        return permutation.swap_or_not(positions, state, num_slots)

    def batch(self, words, state, step, num_slots):
        positions, valid = _positions(step, self.batch_size_, num_slots)
        return _block_batch(self._records(state, jnp.where(valid, positions, 0), num_slots), valid, num_slots)

    # An affine order is walked by additions: the record at position p + 1 is the record at p
    # plus the multiplier, mod n; the cursor is the record at the block's first position.
    def _walks(self) -> bool:
        return self.order is None and self.order_family == "affine"

    def start(self, words, state, step, num_slots):
        if not self._walks():
            return ()
        positions, _ = _positions(step, self.batch_size_, num_slots)
        return permutation.affine_record(state, positions[0], num_slots)

    def advance(self, words, state, cursor, step, num_slots):
        if not self._walks():
            return self.batch(words, state, step, num_slots), cursor
        b, n = self.batch_size_, jnp.int32(num_slots)
        positions, valid = _positions(step, b, num_slots)
        records = [cursor]
        for _ in range(b - 1):
            nxt = records[-1] + state.multiplier
            records.append(jnp.where(nxt >= n, nxt - n, nxt))
        following = records[-1] + state.multiplier
        following = jnp.where(following >= n, following - n, following)
        epoch_ends = (step + 1) % self.steps_per_epoch(num_slots) == 0
        cursor = jnp.where(epoch_ends, state.offset, following)
        return _block_batch(jnp.stack(records), valid, num_slots), cursor


SCHEMES = ("full", "uniform", "without-replacement", "poisson", "reshuffle", "cyclic")


def make_batching(name: str, *, batch_size: Optional[int] = None, rate: Optional[float] = None, order=None, order_family: str = "affine") -> BatchingScheme:
    """Build a batching scheme by name (one of :data:`SCHEMES`).

    ``batch_size`` is required for uniform / without-replacement / reshuffle (cyclic
    defaults to 1); ``rate`` for poisson; ``order`` and ``order_family`` only for cyclic.
    """
    _validate.one_of("batching", name, SCHEMES)
    if name != "cyclic" and (order is not None or order_family != "affine"):
        raise ValueError(f"order / order_family are only meaningful for batching='cyclic', not {name!r}")
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
        b = _validate.dimension("batch_size", 1 if batch_size is None else batch_size)
        return Cyclic(batch_size_=b, order=None if order is None else np.asarray(order), order_family=order_family)
    if batch_size is None:
        raise ValueError(f"batching={name!r} needs batch_size (a positive integer <= n)")
    b = _validate.dimension("batch_size", batch_size)  # a static array length: at most 2^31 - 1
    return {"uniform": UniformWithReplacement, "without-replacement": WithoutReplacement, "reshuffle": Reshuffle}[name](batch_size_=b)
