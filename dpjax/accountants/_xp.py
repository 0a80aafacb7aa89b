"""One copy of the accountants' math for two array libraries.

The PLD discretisation, composition and error bounds (:mod:`.composition.pld`,
:mod:`.composition.pld_pairs`) and the subsampled Gaussian's RDP
(:mod:`.mechanisms.gaussian`) run as jitted JAX programs for batches, and as plain numpy for
small jobs (:mod:`.composition.pld_numpy`), where compiling the programs (0.5-1.5 s each on a
CPU) would cost far more than the arithmetic. Both run the same functions: each picks its
namespace from its arguments (:func:`namespace`: JAX arrays, which include the tracers inside
``jit``, mean ``jax.numpy``; anything else numpy), and the few operations that are spelled
differently in the two libraries are here.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy import special as sps


def namespace(*arrays):
    """``jax.numpy`` if any argument is a JAX array (or tracer), else ``numpy``."""
    return jnp if any(isinstance(a, jax.Array) for a in arrays) else np


def erfc(x):
    return jax.lax.erfc(x) if namespace(x) is jnp else sps.erfc(x)


def logsumexp(x, axis):
    return jax.scipy.special.logsumexp(x, axis=axis) if namespace(x) is jnp else sps.logsumexp(x, axis=axis)


def barrier(x):
    """XLA's optimization barrier (stores ``x`` once instead of fusing its computation into
    each consumer); nothing in numpy, which computes every array once anyway."""
    return jax.lax.optimization_barrier(x) if any(isinstance(a, jax.Array) for a in jax.tree_util.tree_leaves(x)) else x


def add_at(x, index, values):
    """``x`` with ``values`` added at ``index`` (a copy: JAX's ``x.at[index].add(values)``)."""
    if namespace(x) is jnp:
        return x.at[index].add(values)
    out = np.array(x, dtype=np.result_type(x, values), copy=True)
    out[index] += values
    return out


def set_at(x, index, values):
    """``x`` with ``values`` at ``index`` (a copy: JAX's ``x.at[index].set(values)``)."""
    if namespace(x) is jnp:
        return x.at[index].set(values)
    out = np.array(x, copy=True)
    out[index] = values
    return out


def rotate(x, shift):
    """``x`` rotated left by ``shift`` (0 <= shift < len(x)): ``out[i] = x[(i + shift) mod n]``.
    JAX: a slice of ``x`` twice over (a traced shift); numpy: ``np.roll`` (no doubled copy)."""
    if namespace(x, shift) is jnp:
        return jax.lax.dynamic_slice(jnp.concatenate([x, x]), (shift,), (x.shape[0],))
    return np.roll(x, -int(shift))


def take_fill(x, index, fill: float):
    """``x[index]`` along the only axis, ``fill`` where ``index`` is out of range."""
    if namespace(x, index) is jnp:
        return jnp.take(x, index, mode="fill", fill_value=fill)
    inside = (index >= 0) & (index < x.shape[0])
    return np.where(inside, x[np.where(inside, index, 0)], fill)


def matmul_exact(a, b):
    """``a @ b`` (the last axis of ``a`` against a matrix ``b``) at full float64 precision
    (JAX's default may use reduced precision on accelerators). In numpy by einsum's own loop,
    not BLAS: the products here are small, and a multithreaded BLAS on a busy CPU waits for its
    threads (seen: 7 ms instead of 0.03 ms for 512 x 128 x 20 on a loaded 2-core machine)."""
    if namespace(a, b) is jnp:
        return jnp.einsum("...i,ik->...k", a, b, precision=jax.lax.Precision.HIGHEST)
    return np.einsum("...i,ik->...k", a, b)
