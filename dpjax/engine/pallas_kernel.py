"""The coupled step of a quadratic model in one Pallas kernel: a chunk of steps, state on chip.

On a GPU a coupled step is a few flops per pair, so the XLA loop pays a kernel launch and a
round trip through memory per fused region per step. Here one program handles a block of
``BLOCK`` pairs for *every* step of a chunk: positions, path loss, the finite flag and the
cyclic-order cursor stay in registers; the step's Philox words, batch indices and normal draws
are computed where they are used (:mod:`.randomness`); the record tables are read by index
from memory (L2-resident for n up to a few million), or not at all when every record of D is
the same (paper 000's eq. 7 data). The arithmetic is that of :mod:`.reference` with
:class:`.gradients.QuadraticGradients`, so both paths agree to rounding (tested on CPU, where
the kernel runs in Pallas's interpret mode; on a GPU it is lowered to Triton, which the tests
check on CPU by lowering for CUDA without running).

Supported (:func:`unsupported_reason` says why not otherwise): quadratic models with
d <= :data:`MAX_DIM`; a constant step size; full batches without clipping (the tables' sums),
uniform batches with replacement, and cyclic orders (affine or a fixed order), each with or
without per-record clipping.
"""
from __future__ import annotations

import functools
import os
from typing import Optional

import jax
import jax.numpy as jnp
from jax import lax

from ..samplers.batching import Cyclic, FullBatch, Poisson, UniformWithReplacement
from ..samplers.permutation import mulmod
from . import randomness as rng
from .gradients import QuadraticGradients
from .reference import PairState

BLOCK = 128  # pairs per program (a power of two, as Triton's block shapes must be)
NUM_WARPS = 4
MAX_DIM = 8
_SMALL = ("alt_hessian", "alt_linear", "sum_hessian_d", "sum_linear_d", "sum_hessian_n", "sum_linear_n")


def unsupported_reason(model, sampler) -> Optional[str]:
    """None if the kernel runs this model and sampler, else why it does not."""
    if not QuadraticGradients.supports(model):
        return "the model is not a quadratic model (dpjax.models.QuadraticModel)"
    if model.dim > MAX_DIM:
        return f"dim={model.dim} exceeds the kernel's MAX_DIM={MAX_DIM}"
    if callable(sampler.step_size):
        return "a step-size schedule (the kernel takes a constant step size)"
    scheme = sampler.batching
    if isinstance(scheme, FullBatch):
        return None if sampler.clip_norm is None else "full batches with per-record clipping (O(n) per step: use engine='quadratic')"
    if isinstance(scheme, (UniformWithReplacement, Poisson)):
        return None
    if isinstance(scheme, Cyclic) and (scheme.order is not None or scheme.order_family == "affine"):
        return None
    return f"batching {scheme.name!r}" + (f" with order_family={scheme.order_family!r}" if isinstance(scheme, Cyclic) else "")


def _finite(v):
    # v - v is 0 for finite v and NaN for inf or NaN; older Triton lowerings lack is_finite
    return (v - v) == 0


def coupled_update(x, xp, loss, finite, delta, sum_d, sum_n, z, *, drift, noise_std, scale, prior_grad):
    """One coupled step on coordinate lists, as both Pallas kernels take it (the arithmetic of
    :func:`.reference.advance`): both chains move by their drift (``prior_grad(c, x_c)`` plus
    ``scale`` times the batch sum) and the shared noise ``z``; the path loss gains
    |delta|^2 / (2 s^2) + delta . z / s for the drift gap ``delta``; ``finite`` drops where
    anything stopped being finite. Returns (x, x', loss, finite)."""
    loss = loss + (sum(dl * dl for dl in delta) / (2 * noise_std * noise_std) + sum(dl * zc for dl, zc in zip(delta, z)) / noise_std)
    new_x = [xc - drift * (prior_grad(c, xc) + scale * sc) + noise_std * zc for c, (xc, sc, zc) in enumerate(zip(x, sum_d, z))]
    new_xp = [xc - drift * (prior_grad(c, xc) + scale * sc) + noise_std * zc for c, (xc, sc, zc) in enumerate(zip(xp, sum_n, z))]
    ok = _finite(loss)
    for v in new_x + new_xp:
        ok = ok & _finite(v)
    return new_x, new_xp, loss, jnp.where(ok, finite, jnp.zeros_like(finite))


def steps_in_groups(one_step, carry, start, count, group: int, k0, k1, dim: int, dtype):
    """Steps start, ..., start + count - 1 of ``one_step(step, carry, z)``, with the normals z
    of a step drawn alone (:func:`.randomness.step_normals`) or, for the steps inside whole
    groups of ``group`` steps on the absolute grid, one whole Philox block set per group
    (:func:`.randomness.group_normals`: the same draws). With ``group == 1`` a step's draws
    fill whole blocks, and the program holds one copy of the step."""

    def single(step, carry):
        return one_step(step, carry, rng.step_normals(k0, k1, step, dim, dtype))

    def grouped(i, carry):
        first = first_group + i * group
        for u, z in enumerate(rng.group_normals(k0, k1, first, group, dim, dtype)):
            carry = one_step(first + u, carry, z)
        return carry

    stop = start + count
    if group == 1:
        return lax.fori_loop(start, stop, single, carry)
    first_group = jnp.minimum(lax.div(start + (group - 1), jnp.int32(group)) * group, stop)
    num_groups = lax.div(stop - first_group, jnp.int32(group))
    carry = lax.fori_loop(start, first_group, single, carry)
    carry = lax.fori_loop(jnp.int32(0), num_groups, grouped, carry)
    return lax.fori_loop(first_group + num_groups * group, stop, single, carry)


def store_state(x, xp, loss, finite, refs_in, refs_out, dim: int) -> None:
    """Write a block's final state; padding rows of the coordinate axis stay as they came."""
    x_ref, xp_ref = refs_in
    x_out, xp_out, loss_out, finite_out = refs_out
    for c in range(dim):
        x_out[c, :] = x[c]
        xp_out[c, :] = xp[c]
    for c in range(dim, x_out.shape[0]):
        x_out[c, :] = x_ref[c, :]
        xp_out[c, :] = xp_ref[c, :]
    loss_out[...] = loss
    finite_out[...] = finite


def _pow2(k: int) -> int:
    return 1 << max(0, int(k - 1).bit_length())


def _pack_small(data: dict, dtype) -> jax.Array:
    flat = jnp.concatenate([jnp.ravel(data[k]).astype(dtype) for k in _SMALL])
    return jnp.pad(flat, (0, _pow2(flat.size) - flat.size))


def _kernel(dim: int, num_slots: int, scheme, homogeneous: bool, has_clip: bool, dtype):
    """The kernel body for one block of pairs (static configuration closed over)."""
    dd = dim * dim
    offsets = {}
    at = 0
    for name, size in zip(_SMALL, (dd, dim, dd, dim, dd, dim)):
        offsets[name] = at
        at += size
    full = isinstance(scheme, FullBatch)
    uniform = isinstance(scheme, UniformWithReplacement)
    poisson = isinstance(scheme, Poisson)
    fixed_order = isinstance(scheme, Cyclic) and scheme.order is not None
    b = 0 if (full or poisson) else scheme.batch_size_
    steps_per_epoch = -(-num_slots // max(b, 1))
    group = rng.group_steps(dim, dtype)

    def kernel(fparams_ref, iparams_ref, words_ref, order_ref, x_ref, xp_ref, loss_ref, finite_ref, hess_ref, lin_ref, small_ref, table_ref,
               x_out, xp_out, loss_out, finite_out):
        drift, noise_std, prior, clip = fparams_ref[0], fparams_ref[1], fparams_ref[2], fparams_ref[3]
        start, count, index = iparams_ref[0], iparams_ref[1], iparams_ref[2]
        k0, k1 = words_ref[0, :], words_ref[1, :]
        multiplier, offset = order_ref[0, :], order_ref[1, :]
        # loop-invariant coefficients, read once per program
        small = {name: [small_ref[offsets[name] + i] for i in range(size)] for name, size in zip(_SMALL, (dd, dim, dd, dim, dd, dim))}
        if homogeneous:
            row_hessian = [hess_ref[e] for e in range(dd)]
            row_linear = [lin_ref[r] for r in range(dim)]
        else:
            index_hessian = [hess_ref[index * dd + e] for e in range(dd)]
            index_linear = [lin_ref[index * dim + r] for r in range(dim)]

        def affine_map(hessian, linear, x):  # H x - h for a (d, d) row-major list and a d list
            return [sum(hessian[r * dim + c] * x[c] for c in range(dim)) - linear[r] for r in range(dim)]

        def record_grad(rows, x):
            """A_i x - b_i for the records at int vector ``rows`` (homogeneous: the one row, no gather)."""
            if homogeneous:
                return affine_map(row_hessian, row_linear, x)
            return affine_map([hess_ref[rows * dd + e] for e in range(dd)], [lin_ref[rows * dim + r] for r in range(dim)], x)

        def clipped(g):
            if not has_clip:
                return g
            norm = jnp.sqrt(sum(gc * gc for gc in g))
            factor = jnp.minimum(1.0, clip / jnp.where(norm > 0, norm, 1.0))
            return [gc * factor for gc in g]

        def alt_grad(x):
            return affine_map(small["alt_hessian"], small["alt_linear"], x)

        def record_at_index(x):
            if homogeneous:
                return affine_map(row_hessian, row_linear, x)
            return affine_map(index_hessian, index_linear, x)

        # the cursor of an affine order at the chunk's first step (see Cyclic.start)
        def affine_cursor(step):
            position = lax.rem(step, jnp.int32(steps_per_epoch)) * b
            return mulmod(multiplier, jnp.broadcast_to(position, multiplier.shape), num_slots, addend=offset)

        def batch_sums(step, x, xp, cursor):
            """sum_j w_j clip(g_j(x; D)), the same on D' at xp, hits, scale, next cursor."""
            if full:
                sum_d = affine_map(small["sum_hessian_d"], small["sum_linear_d"], x)
                sum_n = affine_map(small["sum_hessian_n"], small["sum_linear_n"], xp)
                return sum_d, sum_n, jnp.ones_like(x[0]), jnp.ones_like(x[0]), cursor
            # lax.rem / bit operations on non-negative ints: jnp's floored % and // bring bool
            # arithmetic that Triton's lowering mistypes
            first_position = lax.rem(step, jnp.int32(steps_per_epoch)) * b
            zeros = [jnp.zeros_like(x[0]) for _ in range(dim)]

            def one(j, carry):
                sum_d, sum_n, hits, used, record = carry
                if uniform:
                    rows = rng.uniform_index(*rng.index_word(k0, k1, step, rng.BATCH, j), num_slots)
                    weight = jnp.ones_like(x[0])
                elif poisson:
                    # gap word j moves the pair's partial sum (record) to its next member
                    # (Poisson.chunk's arithmetic); past slot n - 1 it stays at n and weighs 0
                    high, low = rng.index_word(k0, k1, step, rng.INCLUSION, j)
                    record = jnp.minimum(record + rng.geometric_gaps(high, low, fparams_ref[4], num_slots + 1), num_slots)
                    member = record < num_slots
                    rows = jnp.where(member, record, 0)
                    weight = jnp.where(member, jnp.ones_like(x[0]), jnp.zeros_like(x[0]))
                else:
                    valid = first_position + j < num_slots
                    # selects, not bool -> float conversions (which Triton's lowering mistypes)
                    weight = jnp.where(valid, jnp.ones_like(x[0]), jnp.zeros_like(x[0]))
                    if fixed_order:
                        rows = jnp.full(x[0].shape, table_ref[jnp.where(valid, first_position + j, 0)], jnp.int32)
                    else:
                        rows = jnp.where(valid, record, 0)
                is_diff = rows == index
                g_d = clipped(record_grad(rows, x))
                g_alt_n = clipped(alt_grad(xp))
                g_n = clipped(record_grad(rows, xp))
                g_n = [jnp.where(is_diff, a, c) for a, c in zip(g_alt_n, g_n)]
                sum_d = [s + weight * g for s, g in zip(sum_d, g_d)]
                sum_n = [s + weight * g for s, g in zip(sum_n, g_n)]
                hits = hits + jnp.where(is_diff, weight, jnp.zeros_like(weight))
                if poisson:
                    return sum_d, sum_n, hits, used + weight, record
                nxt = record + multiplier
                return sum_d, sum_n, hits, used + weight, jnp.where(nxt >= num_slots, nxt - num_slots, nxt)

            if poisson:
                # as many gap words as the block's largest batch needs: while some pair's partial
                # sum is below n - 1 (the members of Poisson.chunk, walked one by one)
                def walk(carry):
                    j, inner = carry
                    return j + 1, one(j, inner)

                start_sums = jnp.full(x[0].shape, -1, jnp.int32)
                init = (zeros, zeros, jnp.zeros_like(x[0]), jnp.zeros_like(x[0]), start_sums)
                _, (sum_d, sum_n, hits, used, last) = lax.while_loop(lambda c: jnp.min(c[1][4]) < num_slots - 1, walk, (jnp.int32(0), init))
                return sum_d, sum_n, hits, jnp.full_like(x[0], 1.0) * fparams_ref[5], cursor
            init = (zeros, zeros, jnp.zeros_like(x[0]), jnp.zeros_like(x[0]), cursor)
            sum_d, sum_n, hits, used, last = lax.fori_loop(jnp.int32(0), jnp.int32(b), one, init)
            if uniform:
                scale = jnp.full_like(x[0], num_slots / b)
                return sum_d, sum_n, hits, scale, cursor
            scale = num_slots / used
            epoch_ends = lax.rem(step + 1, jnp.int32(steps_per_epoch)) == 0
            return sum_d, sum_n, hits, scale, jnp.where(epoch_ends, offset, last)

        def one_step(step, carry, z):
            x, xp, loss, finite, cursor = carry
            sum_d, sum_n, hits, scale, cursor = batch_sums(step, x, xp, cursor)
            g_idx = clipped(record_at_index(x))
            g_alt = clipped(alt_grad(x))
            delta = [(-drift * scale * hits) * (a - c) for a, c in zip(g_idx, g_alt)]
            x, xp, loss, finite = coupled_update(x, xp, loss, finite, delta, sum_d, sum_n, z, drift=drift, noise_std=noise_std,
                                                 scale=scale, prior_grad=lambda c, xc: prior * xc)
            return x, xp, loss, finite, cursor

        x = [x_ref[c, :] for c in range(dim)]
        xp = [xp_ref[c, :] for c in range(dim)]
        cursor = affine_cursor(start) if (isinstance(scheme, Cyclic) and not fixed_order) else jnp.zeros_like(k0, dtype=jnp.int32)
        carry = (x, xp, loss_ref[...], finite_ref[...], cursor)
        x, xp, loss, finite, _ = steps_in_groups(one_step, carry, start, count, group, k0, k1, dim, dtype)
        store_state(x, xp, loss, finite, (x_ref, xp_ref), (x_out, xp_out, loss_out, finite_out), dim)

    return kernel


def launch_shape() -> tuple[int, int]:
    """(pairs per program, warps per program): :data:`BLOCK` and :data:`NUM_WARPS` unless the
    environment variables ``DPJAX_PALLAS_BLOCK`` / ``DPJAX_PALLAS_WARPS`` say otherwise.

    The override exists for tuning runs on a GPU (read when a program is traced: set it before
    the first call, or clear JAX's caches). On one H100 (jax 0.11.2, BENCHMARKS.md) shapes from
    (32 pairs, 1 warp) to (256, 8) ran within 0.75-1.05x of the default at 1,024-262,144
    pairs, so there is no per-size choice; the numbers do not depend on the shape (tested)."""
    values = []
    for name, default in (("DPJAX_PALLAS_BLOCK", BLOCK), ("DPJAX_PALLAS_WARPS", NUM_WARPS)):
        text = os.environ.get(name, str(default))
        value = int(text) if text.strip().isdigit() else 0
        if value < 1 or value & (value - 1):
            raise ValueError(f"{name}={text!r} must be a power of two (Triton's block shapes and warp counts are)")
        values.append(value)
    return values[0], values[1]


def _pallas_call(kernel, padded: int, dpad: int, dtype, interpret: bool, block: int, warps: int, num_tables: int, name: str):
    """The pallas_call of a coupled kernel (both kernels' layout): two parameter vectors, the
    per-pair words, order, positions, loss and flags in blocks of pairs, then ``num_tables``
    data tables read by index from wherever they live."""
    from jax.experimental import pallas as pl

    per_pair = lambda rows: pl.BlockSpec((rows, block), lambda i: (0, i))
    vector = pl.BlockSpec((block,), lambda i: (i,))
    whole = lambda k: pl.BlockSpec((k,), lambda i: (0,))
    anywhere = pl.BlockSpec(memory_space=pl.ANY)
    in_specs = [whole(8), whole(8), per_pair(2), per_pair(2), per_pair(dpad), per_pair(dpad), vector, vector] + [anywhere] * num_tables
    out_specs = [per_pair(dpad), per_pair(dpad), vector, vector]
    out_shape = [
        jax.ShapeDtypeStruct((dpad, padded), dtype),
        jax.ShapeDtypeStruct((dpad, padded), dtype),
        jax.ShapeDtypeStruct((padded,), dtype),
        jax.ShapeDtypeStruct((padded,), jnp.int32),
    ]
    params = {}
    if not interpret:
        from jax.experimental.pallas import triton as plt

        params["compiler_params"] = plt.CompilerParams(num_warps=warps, num_stages=1)
    return pl.pallas_call(kernel, out_shape=out_shape, grid=(padded // block,), in_specs=in_specs, out_specs=out_specs, interpret=interpret, name=name, **params)


def _local_advance(fparams, iparams, words, order, x, xp, loss, finite, *tables, kernel, dtype, interpret, name="dpjax_coupled_quadratic"):
    """Run the kernel on this device's pairs (padded to a multiple of the block, padding dropped)."""
    k = x.shape[1]
    block, warps = launch_shape()
    padded = -(-k // block) * block
    pad = lambda v: jnp.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, padded - k)])
    call = _pallas_call(kernel, padded, x.shape[0], dtype, interpret, block, warps, len(tables), name)
    outs = call(fparams, iparams, pad(words), pad(order), pad(x), pad(xp), pad(loss), pad(finite), *tables)
    return tuple(o[..., :k] for o in outs)


@functools.partial(jax.jit, static_argnames=("provider", "num_slots", "mesh", "interpret"))
def advance(sampler, data, index, keys, state, start, count, *, provider, num_slots: int, mesh, interpret: Optional[bool] = None):
    """Steps start, ..., start + count - 1 of every pair, in the Pallas kernel (see the module
    docstring); the same contract as :func:`dpjax.engine.reference.advance`."""
    if interpret is None:
        interpret = jax.default_backend() == "cpu"
    dtype = state.position.dtype
    dim = state.position.shape[1]
    dpad = _pow2(dim)
    scheme = sampler.batching
    drift, noise_std = sampler.coefficients(jnp.asarray(0, jnp.int32), dtype)
    clip = jnp.asarray(0.0 if sampler.clip_norm is None else sampler.clip_norm, dtype)
    if isinstance(scheme, Poisson):
        # q (the run's dtype, widened to float64 in the kernel as Poisson.chunk does) and 1 / q
        rate, scale = jnp.asarray(scheme.rate).astype(dtype), scheme.scale(dtype)
    else:
        rate, scale = jnp.zeros((), dtype), jnp.ones((), dtype)
    fparams = jnp.stack([drift, noise_std, jnp.asarray(provider.model.prior_precision, dtype), clip, rate, scale] + [jnp.zeros((), dtype)] * 2)
    iparams = jnp.stack([jnp.asarray(start, jnp.int32), jnp.asarray(count, jnp.int32), jnp.asarray(index, jnp.int32)] + [jnp.zeros((), jnp.int32)] * 5)
    tables = (jnp.ravel(data["hessians"]).astype(dtype), jnp.ravel(data["linears"]).astype(dtype), _pack_small(data, dtype))
    kernel = _kernel(dim, num_slots, scheme, provider.homogeneous, sampler.clip_norm is not None, dtype)
    return launch(kernel, fparams, iparams, keys, scheme, state, dpad, tables, dtype=dtype, interpret=interpret, mesh=mesh,
                  name="dpjax_coupled_quadratic")


def launch(kernel, fparams, iparams, keys, scheme, state, dpad: int, tables: tuple, *, dtype, interpret: bool, mesh, name: str) -> PairState:
    """Run a coupled kernel over every pair (split over ``mesh``'s "chains" axis when it has
    several devices): the pairs' Philox words, the cyclic order's per-pair parameters or its
    fixed table, and the positions as coordinate-major rows padded to ``dpad``, then the
    kernel's data ``tables``. Shared by both Pallas kernels."""
    dim = state.position.shape[1]
    words = keys.words.T
    if isinstance(scheme, Cyclic) and scheme.order is None:
        order = jnp.stack([keys.batching.multiplier, keys.batching.offset]).astype(jnp.int32)
    else:
        order = jnp.zeros((2, words.shape[1]), jnp.int32)
    table = jnp.asarray(scheme.order, jnp.int32) if (isinstance(scheme, Cyclic) and scheme.order is not None) else jnp.zeros((1,), jnp.int32)
    x = jnp.pad(state.position.T, ((0, dpad - dim), (0, 0)))
    xp = jnp.pad(state.neighbour_position.T, ((0, dpad - dim), (0, 0)))
    local = functools.partial(_local_advance, kernel=kernel, dtype=dtype, interpret=interpret, name=name)
    args = (fparams, iparams, words, order, x, xp, state.path_loss, state.finite.astype(jnp.int32)) + tuple(tables) + (table,)
    if mesh is not None and mesh.size > 1:
        from jax.sharding import PartitionSpec as P

        pairs, rows = P("chains"), P(None, "chains")
        specs = (P(), P(), rows, rows, rows, rows, pairs, pairs) + (P(),) * (len(tables) + 1)
        local = jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=(rows, rows, pairs, pairs), check_vma=False)
    new_x, new_xp, loss, finite = local(*args)
    return PairState(new_x[:dim].T, new_xp[:dim].T, loss, finite.astype(bool))
