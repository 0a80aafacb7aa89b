"""The coupled step of a generalised linear model in one Pallas kernel: a chunk of steps, state on chip.

The GLM counterpart of :mod:`.pallas_kernel` (issue 21, item 2; DESIGN.md, "The engine on
accelerators"). A GLM's record gradient is w s_i x_i with s_i = d loss / d eta at
eta_i = x_i . theta (:class:`dpjax.models.GLM`), so a step of one chain is, per batch record,
one dot product, one scalar derivative and one scaled add of the record's row: O(b d) flops
with no b x d tensor. On a GPU the XLA loop of :mod:`.reference` pays a kernel launch and a
round trip through memory per fused region per step; here one program handles a block of
:data:`BLOCK` pairs for *every* step of a chunk:

* theta of both chains, the two batch sums, the path loss, the finite flag and the cyclic
  cursor stay in registers (one list entry per coordinate, each a vector over the block's pairs);
* a step's Philox words, batch indices and normal draws are computed where they are used
  (:mod:`.randomness`), so a pair's randomness is a function of (seed, pair, step) only;
* the records are read by index from ``packed`` = rows [x_i, ||x_i||, mask_i, y_i]
  (:func:`.gradients.glm_data`; L2-resident on a GPU for n d up to a few million floats), one
  row per batch draw shared by both chains, and never written back;
* D' is D with the differing slot i* masked plus D''s record at i* (its row ``alt_*``),
  counted as often as the batch holds the slot, exactly as :class:`.gradients.GLMGradients`.

The arithmetic is :class:`.gradients.GLMGradients`' in :func:`.reference.coupled_step`, so both
paths agree to rounding (tested on CPU in Pallas's interpret mode; on a GPU the kernel is lowered
to Triton, which the tests check on CPU by lowering for CUDA without running).

Supported (:func:`unsupported_reason` says why not otherwise): a model with a GLM structure
(declared) whose response is one float per record, whose derivative is a
scalar function of (y, eta) (it is applied elementwise over the block's pairs) and whose
prior gradient is diagonal-affine, a theta + c (Gaussian priors with a diagonal covariance,
checked by probing, in float64); d <= :data:`MAX_DIM`; a constant step size; full batches,
uniform batches with replacement, Poisson batches (each pair walks its batch's members by
their geometric gaps, :meth:`~dpjax.samplers.batching.Poisson.chunk`'s arithmetic: expected
O(n q d) a chain-step, the loop running as long as the block's largest batch) and cyclic orders (affine or a fixed order), each with or without
per-record clipping (the factor min(1, C / (|w s_i| ||x_i||)) from the packed norms).

Why :data:`MAX_DIM` = 32: per pair the kernel keeps theta and the batch sum of both chains
(4 d values) plus the row being read (d + 3) in registers; at d = 32 that is about 160
32-bit registers a thread with one pair per thread (128 pairs, 4 warps), under the 255 a CUDA
thread may address, with room for Philox's words. Past that the values spill to local memory
and the XLA GLM path (matrix-vector products) is the better choice. The program is unrolled
over coordinates, so its size grows with d, which is another reason for a bound.
"""
from __future__ import annotations

import functools
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..models.structure import glm_of
from ..samplers.batching import Cyclic, FullBatch, Poisson, UniformWithReplacement
from ..samplers.permutation import mulmod
from . import randomness as rng
from .pallas_kernel import _pow2, coupled_update, launch, steps_in_groups, store_state

MAX_DIM = 32
# the prior probe: prior_grad(theta) must equal a theta + c to this relative tolerance (float64)
PRIOR_RTOL = 1e-10


@functools.lru_cache(maxsize=64)
def diagonal_prior(model) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """(a, c) with ``model.prior_grad(theta) == a * theta + c`` (float64 numpy), or None.

    Found by probing in float64: c = prior_grad(0), a = prior_grad(1) - c, then checked at two
    further points (of both signs and unequal coordinates); a prior that is not diagonal-affine
    (not a Gaussian with diagonal covariance) fails the check and the kernel refuses it."""
    dim = int(model.dim)
    # eager even when called while a program is traced (advance probes at trace time)
    with jax.enable_x64(True), jax.ensure_compile_time_eval():
        grad = lambda t: np.asarray(model.prior_grad(jnp.asarray(t, jnp.float64)), np.float64)
        try:
            c = grad(np.zeros(dim))
            a = grad(np.ones(dim)) - c
            probes = [np.linspace(-1.7, 2.3, dim), np.linspace(3.1, -0.4, dim) ** 3]
            for theta in probes:
                got, want = grad(theta), a * theta + c
                if not np.allclose(got, want, rtol=PRIOR_RTOL, atol=PRIOR_RTOL * (1 + np.abs(want).max())):
                    return None
        except Exception:  # a prior whose gradient cannot be evaluated at a probe: not affine
            return None
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(c))):
        return None
    return a, c


def _primitives(jaxpr) -> set:
    """Names of the primitives of a jaxpr, its sub-jaxprs included."""
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for value in eqn.params.values():
            for item in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(item, "jaxpr", item)
                if hasattr(inner, "eqns"):
                    names |= _primitives(inner)
    return names


def unlowerable_primitives(glm) -> Optional[list]:
    """The primitives of the GLM's loss derivative that Pallas's Triton lowering lacks (sorted;
    [] if none), or None when this JAX exposes no table of lowering rules to check against (then
    the first GPU call is the check: the runner falls back to the XLA path when it fails).

    E.g. probit regression's normal log-cdf needs ``erf``, which JAX 0.10's Triton lowering lacks."""
    try:
        from jax._src.pallas.triton.lowering import triton_lowering_rules
    except ImportError:
        return None
    known = {p.name for p in triton_lowering_rules}
    with jax.ensure_compile_time_eval():
        probe = jnp.zeros((8,), jnp.float32)
        jaxpr = jax.make_jaxpr(jax.vmap(glm.derivative))(probe, probe)
    return sorted(_primitives(jaxpr.jaxpr) - known)


def unsupported_reason(model, sampler) -> Optional[str]:
    """None if the kernel runs this model and sampler, else why it does not."""
    glm = glm_of(model)
    if glm is None:
        return "the model has no GLM structure (declare dpjax.models.GLM with Model.with_structure)"
    if model.dim > MAX_DIM:
        return f"dim={model.dim} exceeds the kernel's MAX_DIM={MAX_DIM} (theta of both chains in registers; use engine='glm')"
    if callable(sampler.step_size):
        return "a step-size schedule (the kernel takes a constant step size)"
    try:
        missing = unlowerable_primitives(glm)
    except (TypeError, IndexError, KeyError, ValueError) as err:  # the loss reads fields of a pytree response
        return (f"the GLM's loss does not take one float response per record (a recognised GLM's response is its fields and "
                f"an offset; {type(err).__name__}: {str(err)[:80]}); use engine='glm'")
    if missing:
        return f"the loss derivative uses {', '.join(missing)}, which Pallas's Triton lowering (jax {jax.__version__}) lacks"
    if diagonal_prior(model) is None:
        return "the prior's gradient is not a theta + c (the kernel takes Gaussian priors with a diagonal covariance)"
    scheme = sampler.batching
    if isinstance(scheme, (FullBatch, UniformWithReplacement, Poisson)):
        return None
    if isinstance(scheme, Cyclic) and (scheme.order is not None or scheme.order_family == "affine"):
        return None
    return f"batching {scheme.name!r}" + (f" with order_family={scheme.order_family!r}" if isinstance(scheme, Cyclic) else "")


def _kernel(dim: int, num_slots: int, scheme, has_clip: bool, derivative, dtype):
    """The kernel body for one block of pairs (static configuration closed over)."""
    width = dim + 3  # a packed row: x_i (d), ||x_i||, mask_i, y_i
    full = isinstance(scheme, FullBatch)
    uniform = isinstance(scheme, UniformWithReplacement)
    cyclic = isinstance(scheme, Cyclic)
    poisson = isinstance(scheme, Poisson)
    fixed_order = cyclic and scheme.order is not None
    b = num_slots if (full or poisson) else scheme.batch_size_
    steps_per_epoch = -(-num_slots // b)
    group = rng.group_steps(dim, dtype)
    # the loss derivative is a scalar function of (y, eta); vmapped it acts on a block of pairs
    slope_of = jax.vmap(derivative)

    def kernel(fparams_ref, iparams_ref, words_ref, order_ref, x_ref, xp_ref, loss_ref, finite_ref, packed_ref, small_ref, table_ref,
               x_out, xp_out, loss_out, finite_out):
        drift, noise_std, weight, clip = fparams_ref[0], fparams_ref[1], fparams_ref[2], fparams_ref[3]
        start, count, index = iparams_ref[0], iparams_ref[1], iparams_ref[2]
        k0, k1 = words_ref[0, :], words_ref[1, :]
        multiplier, offset = order_ref[0, :], order_ref[1, :]
        # loop-invariant values, read once per program: the prior a theta + c, D''s record at
        # i* (alt) and D's record at i* (its row of packed)
        prior_a = [small_ref[c] for c in range(dim)]
        prior_c = [small_ref[dim + c] for c in range(dim)]
        alt_x = [small_ref[2 * dim + c] for c in range(dim)]
        alt_norm, alt_mask, alt_y = small_ref[3 * dim], small_ref[3 * dim + 1], small_ref[3 * dim + 2]
        idx_x = [packed_ref[index * width + c] for c in range(dim)]
        idx_norm, idx_mask, idx_y = packed_ref[index * width + dim], packed_ref[index * width + dim + 1], packed_ref[index * width + dim + 2]
        zero = jnp.zeros_like(x_ref[0, :])
        one_ = jnp.ones_like(zero)

        def dot(row, theta):
            return sum(r * t for r, t in zip(row, theta))

        def slope(y, eta, norm):
            """w s, clipped to |w s| ||x|| <= C (GLMGradients._slopes); y, norm scalars or per pair."""
            s = weight * slope_of(y + zero, eta)
            if not has_clip:
                return s
            size = jnp.abs(s) * norm
            return s * jnp.minimum(1.0, clip / jnp.where(size > 0, size, 1.0))

        def affine_cursor(step):  # an affine order's cursor at the chunk's first step (Cyclic.start)
            position = lax.rem(step, jnp.int32(steps_per_epoch)) * b
            return mulmod(multiplier, jnp.broadcast_to(position, multiplier.shape), num_slots, addend=offset)

        def batch_sums(step, x, xp, cursor):
            """sum_j [active] w s_j(x) x_j on D, the same on D' at xp (slot i* masked, alt added),
            the hits of slot i*, the scale and the next cursor."""
            first_position = lax.rem(step, jnp.int32(steps_per_epoch)) * b

            def one(j, carry):
                sum_d, sum_n, hits, used, record = carry
                if uniform:
                    rows = rng.uniform_index(*rng.index_word(k0, k1, step, rng.BATCH, j), num_slots)
                    present = one_
                elif full:
                    rows = jnp.full(zero.shape, j, jnp.int32)
                    present = one_
                elif poisson:
                    # gap word j of the INCLUSION stream moves each pair's partial sum (record) to
                    # its next member (Poisson.chunk's arithmetic, rng.geometric_gaps, float64);
                    # a pair past slot n - 1 stays at n and reads nothing
                    high, low = rng.index_word(k0, k1, step, rng.INCLUSION, j)
                    record = jnp.minimum(record + rng.geometric_gaps(high, low, fparams_ref[5], num_slots + 1), num_slots)
                    member = record < num_slots
                    rows = jnp.where(member, record, 0)
                    present = jnp.where(member, one_, zero)
                else:
                    valid = first_position + j < num_slots
                    # selects, not bool -> float conversions (which Triton's lowering mistypes)
                    present = jnp.where(valid, one_, zero)
                    if fixed_order:
                        rows = jnp.full(zero.shape, table_ref[jnp.where(valid, first_position + j, 0)], jnp.int32)
                    else:
                        rows = jnp.where(valid, record, 0)
                row = [packed_ref[rows * width + c] for c in range(dim)]
                norm, mask, y = packed_ref[rows * width + dim], packed_ref[rows * width + dim + 1], packed_ref[rows * width + dim + 2]
                active = (present > 0) & (mask > 0)
                is_diff = rows == index
                # selects, not products: a masked record's NaN or inf slope stays out of the sums
                s_d = jnp.where(active, slope(y, dot(row, x), norm), zero)
                s_n = jnp.where(active & ~is_diff, slope(y, dot(row, xp), norm), zero)
                sum_d = [acc + s_d * r for acc, r in zip(sum_d, row)]
                sum_n = [acc + s_n * r for acc, r in zip(sum_n, row)]
                hits = hits + jnp.where(is_diff & (present > 0), present, zero)
                if poisson:
                    return sum_d, sum_n, hits, used + present, record
                nxt = record + multiplier
                return sum_d, sum_n, hits, used + present, jnp.where(nxt >= num_slots, nxt - num_slots, nxt)

            if poisson:
                # as many gap words as the block's largest batch needs (expected n q + O(sqrt(n q) log K)):
                # while some pair's partial sum is below n - 1
                def walk(carry):
                    j, inner = carry
                    return j + 1, one(j, inner)

                start_sums = jnp.full(zero.shape, -1, jnp.int32)
                _, (sum_d, sum_n, hits, used, last) = lax.while_loop(lambda c: jnp.min(c[1][4]) < num_slots - 1, walk,
                                                                     (jnp.int32(0), ([zero] * dim, [zero] * dim, zero, zero, start_sums)))
            else:
                init = ([zero] * dim, [zero] * dim, zero, zero, cursor)
                sum_d, sum_n, hits, used, last = lax.fori_loop(jnp.int32(0), jnp.int32(b), one, init)
            # D''s own record at slot i*, as often as the batch holds the slot
            alt = jnp.where((hits > 0) & (alt_mask > 0), hits * slope(alt_y, dot(alt_x, xp), alt_norm), zero)
            sum_n = [acc + alt * a for acc, a in zip(sum_n, alt_x)]
            if uniform:
                return sum_d, sum_n, hits, jnp.full_like(zero, num_slots / b), cursor
            if full:
                return sum_d, sum_n, hits, one_, cursor
            if poisson:
                return sum_d, sum_n, hits, jnp.full_like(zero, 1.0) * fparams_ref[4], cursor
            epoch_ends = lax.rem(step + 1, jnp.int32(steps_per_epoch)) == 0
            return sum_d, sum_n, hits, num_slots / used, jnp.where(epoch_ends, offset, last)

        def gap(x):
            """clip(mask g_{i*}(x; D)) - clip(mask g_{i*}(x; D')) (GLMGradients.gap)."""
            s_d = jnp.where(idx_mask > 0, slope(idx_y, dot(idx_x, x), idx_norm), zero)
            s_n = jnp.where(alt_mask > 0, slope(alt_y, dot(alt_x, x), alt_norm), zero)
            return [s_d * a - s_n * c for a, c in zip(idx_x, alt_x)]

        def one_step(step, carry, z):
            x, xp, loss, finite, cursor = carry
            sum_d, sum_n, hits, scale, cursor = batch_sums(step, x, xp, cursor)
            delta = [(-drift * scale * hits) * g for g in gap(x)]
            x, xp, loss, finite = coupled_update(x, xp, loss, finite, delta, sum_d, sum_n, z, drift=drift, noise_std=noise_std,
                                                 scale=scale, prior_grad=lambda c, xc: prior_a[c] * xc + prior_c[c])
            return x, xp, loss, finite, cursor

        x = [x_ref[c, :] for c in range(dim)]
        xp = [xp_ref[c, :] for c in range(dim)]
        cursor = affine_cursor(start) if (cyclic and not fixed_order) else jnp.zeros_like(k0, dtype=jnp.int32)
        carry = (x, xp, loss_ref[...], finite_ref[...], cursor)
        x, xp, loss, finite, _ = steps_in_groups(one_step, carry, start, count, group, k0, k1, dim, dtype)
        store_state(x, xp, loss, finite, (x_ref, xp_ref), (x_out, xp_out, loss_out, finite_out), dim)

    return kernel


def _small(prior, data, dim: int, dtype) -> jax.Array:
    """[a (d), c (d), alt_x (d), ||alt_x||, alt_mask, alt_y], padded to a power of two."""
    a, c = prior
    alt_y = jnp.asarray(data["alt_response"])
    if alt_y.ndim != 0:
        raise ValueError(f"the Pallas GLM kernel needs one float response per record; D''s record at i* has response shape {alt_y.shape}")
    flat = jnp.concatenate([jnp.asarray(a, dtype), jnp.asarray(c, dtype), jnp.ravel(data["alt_design"]).astype(dtype),
                            jnp.stack([jnp.asarray(data["alt_design_norm"], dtype), jnp.asarray(data["alt_mask"], dtype), alt_y.astype(dtype)])])
    return jnp.pad(flat, (0, _pow2(flat.size) - flat.size))


@functools.partial(jax.jit, static_argnames=("provider", "num_slots", "mesh", "interpret"))
def advance(sampler, data, index, keys, state, start, count, *, provider, num_slots: int, mesh, interpret: Optional[bool] = None):
    """Steps start, ..., start + count - 1 of every pair, in the Pallas GLM kernel (see the module
    docstring); the same contract and call signature as :func:`.pallas_kernel.advance`, with
    ``provider`` a :class:`.gradients.GLMGradients` and ``data`` its :func:`.gradients.glm_data`."""
    if interpret is None:
        interpret = jax.default_backend() == "cpu"
    dtype = state.position.dtype
    dim = state.position.shape[1]
    # one float response per record, as an array (a pytree response with one leaf, e.g. a
    # recognised GLM's offset alone, also packs into d + 3 columns, but the kernel's loss takes y bare)
    if data["packed"].shape[1] != dim + 3 or not jax.tree_util.treedef_is_leaf(jax.tree.structure(data["response"])):
        raise ValueError(f"the Pallas GLM kernel needs one float response per record (packed rows of d + 3 = {dim + 3} columns); "
                         f"this GLM's packed rows have {data['packed'].shape[1]}: use engine='glm'")
    prior = diagonal_prior(provider.model)
    if prior is None:
        raise ValueError("the Pallas GLM kernel needs a prior whose gradient is a theta + c (a Gaussian with diagonal covariance); use engine='glm'")
    dpad = _pow2(dim)
    scheme = sampler.batching
    drift, noise_std = sampler.coefficients(jnp.asarray(0, jnp.int32), dtype)
    clip = jnp.asarray(0.0 if sampler.clip_norm is None else sampler.clip_norm, dtype)
    if isinstance(scheme, Poisson):
        # the scale 1 / q and q itself as Poisson.chunk takes them (q in the run's dtype; the
        # kernel widens it to float64 for the gaps, as the XLA path does)
        rate = jnp.asarray(scheme.rate).astype(dtype)
        scale = scheme.scale(dtype)
    else:
        rate, scale = jnp.zeros((), dtype), jnp.ones((), dtype)
    fparams = jnp.stack([drift, noise_std, jnp.asarray(provider.model.likelihood_weight, dtype), clip, scale, rate] + [jnp.zeros((), dtype)] * 2)
    iparams = jnp.stack([jnp.asarray(start, jnp.int32), jnp.asarray(count, jnp.int32), jnp.asarray(index, jnp.int32)] + [jnp.zeros((), jnp.int32)] * 5)
    tables = (jnp.ravel(data["packed"]).astype(dtype), _small(prior, data, dim, dtype))
    kernel = _kernel(dim, num_slots, scheme, sampler.clip_norm is not None, provider.glm.derivative, dtype)
    return launch(kernel, fparams, iparams, keys, scheme, state, dpad, tables, dtype=dtype, interpret=interpret, mesh=mesh,
                  name="dpjax_coupled_glm")
