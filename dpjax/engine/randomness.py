"""Counter-based random streams: every draw of pair k at step t is a pure function of (seed, k, t).

The generator is Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy
as 1, 2, 3", SC 2011; cuRAND's ``curandStatePhilox4_32_10``): a keyed bijection of 128-bit
counters, ten rounds of two 32 x 32 -> 64-bit multiplications. It has no state and reads no
memory, so a fused kernel evaluates any step of any pair in registers, in any order, on any device,
and gets the same words. The Random123 known-answer vectors are checked in the tests.

Layout (the contract every engine path keeps):

* a chain's **key** is two uint32 words drawn once from its JAX key ``fold_in(key(seed), pair)``
  (:func:`chain_words`), so its words depend on (seed, pair) only;
* a batch draw's **counter** is ``(step, stream, block, 0)``: the step, the stream (batch, order,
  Poisson inclusion) and the block of four words within that step and stream;
* the normal draws form one stream per chain: draw j = t d + c (coordinate c of step t) is
  component j mod P of block j // P, whose counter is ``(low word, NOISE, high word, 0)`` of
  the block index (P = 2 draws per block in float64, 4 in float32). Consecutive steps of a
  1-D chain share blocks, so a loop that draws whole blocks per group of steps
  (:func:`group_normals`) pays one Philox evaluation per P draws.

Derived variates, each an exact integer computation or one fixed float formula, so every path
(reference, fused, Pallas; any device layout) gets the same values:

* :func:`normal_block` — Box–Muller. float64: two draws per block, the radius from a 53-bit
  uniform (two words), the angle from a 32-bit word (its quadrant exact, so sine and cosine
  are short series with no range reduction); float32: four draws per block from 24-bit
  uniforms. Uniforms lie in (0, 1) (a half-ulp offset), so every draw is finite (|z| < 8.6 in
  float64).
* :func:`uniform_index` — floor(w n / 2^64) of a 64-bit word w: uniform on {0..n-1} up to a
  relative bias below n / 2^64.
* :func:`bernoulli` — a 64-bit word below floor(q 2^64): probability q up to 2^-64.
* :func:`geometric_gaps` — the gaps between a Poisson batch's members, Geometric(q) from a
  53-bit uniform in float64, its log from the bits by a series (:func:`log_unit`) (the INCLUSION
  stream's word j is the j-th gap).

The 64-bit integer arithmetic runs on uint64 in JAX's 64-bit mode and on 16-bit limbs of uint32
otherwise; both give the same words (tested), so float32 runs need no 64-bit mode.

How the XLA paths lay the work out depends on the device, never the words: on a CPU the batch
words and the normals of a step are built element by element (:func:`_one_word_per_element`,
:func:`philox4x32_wide`), and the batch and (for steps that read few records) the normals are
written out once (:func:`computed_once`); elsewhere as stacks of each block's four words.
"""
from __future__ import annotations

import contextlib
import math
from typing import Iterator

import jax
import jax.numpy as jnp
from jax import lax

PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
PHILOX_ROUNDS = 10

# stream ids (counter word 1)
NOISE, BATCH, ORDER, INCLUSION = 1, 2, 3, 4
# fold_in tags under a chain's JAX key
PHILOX_TAG, INIT_TAG = 0, 2

_HALF_PI = 0.5 * math.pi
_QUARTER_PI = 0.25 * math.pi
_SQRT_HALF = math.sqrt(0.5)
_MASK16 = 0xFFFF


def _u32(x) -> jax.Array:
    return jnp.asarray(x).astype(jnp.uint32)


_scoped_wide = [False]


@contextlib.contextmanager
def wide_products() -> Iterator[None]:
    """Within the block, :func:`mul_wide` uses uint64 products even outside JAX's 64-bit mode
    (switching the mode on for the product alone). For XLA programs: a float32 run's Philox words
    then cost what a float64 run's do; the words are the same (tested)."""
    _scoped_wide.append(True)
    try:
        yield
    finally:
        _scoped_wide.pop()


def _wide() -> bool:
    # uint64 products in 64-bit mode (one widening multiply on GPUs, vpmuludq on x86: 1.6x
    # faster per coupled step than the limbs on a 2-core x86 CPU); 16-bit limbs otherwise.
    # Both give the same words (tested).
    return bool(jax.config.jax_enable_x64)


def mul_wide(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(high, low) uint32 words of the 64-bit product of uint32 arrays ``a`` and ``b``."""
    a, b = _u32(a), _u32(b)
    if _wide() or _scoped_wide[-1]:
        with jax.enable_x64(True):
            product = a.astype(jnp.uint64) * b.astype(jnp.uint64)
            return (product >> jnp.uint64(32)).astype(jnp.uint32), product.astype(jnp.uint32)
    # schoolbook on 16-bit limbs: every partial product and partial sum fits in 32 bits
    a_hi, a_lo = a >> 16, a & _MASK16
    b_hi, b_lo = b >> 16, b & _MASK16
    t = a_lo * b_lo
    u = a_hi * b_lo + (t >> 16)
    v = a_lo * b_hi + (u & _MASK16)
    return a_hi * b_hi + (u >> 16) + (v >> 16), a * b


def philox4x32(key: tuple, counter: tuple, rounds: int = PHILOX_ROUNDS) -> tuple:
    """Philox4x32-``rounds`` of ``counter`` (four uint32 arrays) under ``key`` (two uint32 arrays).

    Elementwise over broadcast shapes; returns four uint32 arrays.
    """
    c0, c1, c2, c3 = (_u32(c) for c in counter)
    k0, k1 = (_u32(k) for k in key)
    m0, m1 = jnp.uint32(PHILOX_M0), jnp.uint32(PHILOX_M1)
    for r in range(rounds):
        if r:
            k0 = k0 + jnp.uint32(PHILOX_W0)
            k1 = k1 + jnp.uint32(PHILOX_W1)
        hi0, lo0 = mul_wide(m0, c0)
        hi1, lo1 = mul_wide(m1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def philox4x32_wide(key: tuple, counter: tuple, rounds: int = PHILOX_ROUNDS) -> tuple[jax.Array, jax.Array]:
    """:func:`philox4x32` with its four words held as two uint64 words, A = w0 2^32 + w1 and
    B = w2 2^32 + w3 (the same words; tested). A round is two multiplications and a few shifts
    and xors of two values:

        A' = M1 (B >> 32) ^ (A << 32) ^ (k0 << 32),   B' = M0 (A >> 32) ^ (B << 32) ^ (k1 << 32),

    since A' = (hi(M1 c2) ^ c1 ^ k0) 2^32 + lo(M1 c2) and B' likewise with M0 c0. The words are
    uint64 whatever JAX's 64-bit mode (switched on for this computation alone).
    """
    with jax.enable_x64(True):
        c0, c1, c2, c3 = (_u32(c).astype(jnp.uint64) for c in counter)
        k0, k1 = (_u32(k) for k in key)
        a, b = (c0 << 32) | c1, (c2 << 32) | c3
        for r in range(rounds):
            key0 = (k0 + jnp.uint32((r * PHILOX_W0) & 0xFFFFFFFF)).astype(jnp.uint64) << 32
            key1 = (k1 + jnp.uint32((r * PHILOX_W1) & 0xFFFFFFFF)).astype(jnp.uint64) << 32
            a, b = (jnp.uint64(PHILOX_M1) * (b >> 32)) ^ (a << 32) ^ key0, (jnp.uint64(PHILOX_M0) * (a >> 32)) ^ (b << 32) ^ key1
        return a, b


def _halves(word: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(high, low) uint32 halves of a uint64 word."""
    with jax.enable_x64(True):
        return (word >> 32).astype(jnp.uint32), word.astype(jnp.uint32)


def _one_word_per_element() -> bool:
    """Whether the XLA array paths draw each output element from its own Philox evaluation.

    XLA's CPU backend fuses no computation with several outputs. Stacking a block's words (or the
    draws made from them) along an axis then makes each element of the stack recompute the whole
    ten rounds, in a loop over an interleaved axis that is not vectorised: the float32 normals of
    a coupled step ran as scalar code, and its batch words paid four evaluations per block. On a
    CPU the arrays are instead built element by element, each element evaluating its own block
    and selecting its word (no stack): the same words, vectorised along the trailing axis, two
    evaluations per block of batch words. GPUs fuse multi-output computations, so there one
    evaluation serves a block's four words and the stacked form stays."""
    return jax.default_backend() == "cpu"


def one_word_per_element() -> bool:
    """Public name of the layout switch (:func:`_one_word_per_element`): True on a CPU."""
    return _one_word_per_element()


def computed_once(tree, step):
    """``tree`` as it is, computed once into memory before its uses (CPU; elsewhere unchanged).

    XLA duplicates a cheap computation (integer rounds count as cheap) into each fusion that
    uses it, so a step's Philox words would be evaluated again by every use (the gather, the
    slot comparisons, each chain's update). A conditional's operands are always computed before
    it, once; the conditional here always takes its first branch (``step | 1`` is never 0, which
    XLA cannot prove, so it cannot remove it), and costs one small call per step. Under vmap
    with a batched ``step`` it would become a select of both branches: the same values."""
    if not _one_word_per_element():
        return tree
    always = (_u32(step) | jnp.uint32(1)) != 0
    return lax.cond(always, lambda t: t, lambda t: jax.tree.map(jnp.zeros_like, t), tree)


def _block_counter(k0: jax.Array, step, stream: int, index) -> tuple:
    """The Philox counter (step, stream, index, 0) of block ``index`` of ``stream`` at ``step``,
    broadcast against the chains' keys."""
    step = _u32(step)
    index = _u32(index)
    shape = jnp.broadcast_shapes(jnp.shape(k0), step.shape, index.shape)
    return jnp.broadcast_to(step, shape), jnp.full(shape, stream, jnp.uint32), jnp.broadcast_to(index, shape), jnp.zeros(shape, jnp.uint32)


def draw_block(k0: jax.Array, k1: jax.Array, step, stream: int, index) -> tuple:
    """The four words of block ``index`` of ``stream`` at ``step`` for chains with keys (k0, k1)."""
    return philox4x32((k0, k1), _block_counter(k0, step, stream, index))


def draw_block_wide(k0: jax.Array, k1: jax.Array, step, stream: int, index) -> tuple:
    """:func:`draw_block`'s words as two uint64 (:func:`philox4x32_wide`)."""
    return philox4x32_wide((k0, k1), _block_counter(k0, step, stream, index))


def chain_words(chain_key: jax.Array) -> jax.Array:
    """A chain's Philox key: two uint32 words drawn from its JAX key (once per chain)."""
    return jax.random.bits(jax.random.fold_in(chain_key, PHILOX_TAG), (2,), dtype=jnp.uint32)


# --- floats --------------------------------------------------------------------------------
def uniform_53(high: jax.Array, low: jax.Array) -> jax.Array:
    """A float64 uniform on (0, 1) from two words: 53 random bits plus half an ulp."""
    bits = (high >> 5).astype(jnp.float64) * 67108864.0 + (low >> 6).astype(jnp.float64)
    return (bits + 0.5) * (1.0 / 9007199254740992.0)


def uniform_32(word: jax.Array) -> jax.Array:
    """A float64 uniform on (0, 1) from one word: 32 random bits plus half an ulp."""
    return (word.astype(jnp.float64) + 0.5) * (1.0 / 4294967296.0)


def uniform_24(word: jax.Array) -> jax.Array:
    """A float32 uniform on (0, 1) from one word: 24 random bits plus half an ulp."""
    return ((word >> 8).astype(jnp.float32) + jnp.float32(0.5)) * jnp.float32(1.0 / 16777216.0)


# Taylor coefficients of sin(x)/x and cos(x) in powers of x^2 (to x^16 and x^18)
_SIN_SERIES = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(9))
_COS_SERIES = tuple((-1) ** k / math.factorial(2 * k) for k in range(10))


def _horner(x2, coefficients):
    acc = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        acc = c + x2 * acc
    return acc


def _sincos_turn(word: jax.Array, bits: int, dtype) -> tuple[jax.Array, jax.Array]:
    """cos and sin of the angle 2 pi (v + 1/2) / 2^bits, v = the top ``bits`` bits of ``word``.

    The quadrant comes from the top two bits exactly, so no range reduction is needed: with
    f in (0, 1) the rest of the angle is pi/4 + x, x = (pi/2)(f - 1/2) in (-pi/4, pi/4), where
    Taylor series to x^17 / x^18 are exact to below 1e-18; then a rotation by pi/4 and by the
    quadrant. About a tenth of the cost of cos and sin on a CPU.
    """
    quadrant = word >> 30
    rest = bits - 2
    fraction = ((word >> (32 - bits)) & jnp.uint32((1 << rest) - 1)).astype(dtype)
    x = (fraction + 0.5) * (_HALF_PI / (1 << rest)) - _QUARTER_PI
    x2 = x * x
    sin = x * _horner(x2, _SIN_SERIES)
    cos = _horner(x2, _COS_SERIES)
    c45 = (cos - sin) * _SQRT_HALF  # cos(pi/4 + x)
    s45 = (cos + sin) * _SQRT_HALF  # sin(pi/4 + x)
    odd = (quadrant & 1) == 1
    c_rot = jnp.where(odd, -s45, c45)
    s_rot = jnp.where(odd, c45, s45)
    flip = quadrant >= 2
    return jnp.where(flip, -c_rot, c_rot), jnp.where(flip, -s_rot, s_rot)


def normals_per_block(dtype) -> int:
    """Normal draws one Philox block yields: 2 in float64, 4 in float32."""
    return 2 if jnp.dtype(dtype) == jnp.dtype(jnp.float64) else 4


def _radius(uniform: jax.Array) -> jax.Array:
    """Box–Muller's radius sqrt(-2 log u) of a uniform on (0, 1) (both forms of the normals)."""
    return jnp.sqrt(-2 * jnp.log(uniform))


def _noise_counter(block_high, block_low) -> tuple:
    """The Philox counter (block_low, NOISE, block_high, 0) of a noise block."""
    return block_low, jnp.full(jnp.shape(block_low), NOISE, jnp.uint32), block_high, jnp.zeros(jnp.shape(block_low), jnp.uint32)


def normal_block(k0: jax.Array, k1: jax.Array, block_high, block_low, dtype) -> tuple:
    """The normal draws of block (block_high 2^32 + block_low) of a chain's noise stream.

    Box–Muller. float64: two draws, the radius from a 53-bit uniform (two words), the angle from
    a third; float32: four draws, two (radius, angle) pairs of 24-bit uniforms.
    """
    dtype = jnp.dtype(dtype)
    w0, w1, w2, w3 = philox4x32((k0, k1), _noise_counter(block_high, block_low))
    if dtype == jnp.dtype(jnp.float64):
        radius = _radius(uniform_53(w0, w1))
        cos, sin = _sincos_turn(w2, 32, dtype)
        return radius * cos, radius * sin
    if dtype == jnp.dtype(jnp.float32):
        r0, r1 = _radius(uniform_24(w0)), _radius(uniform_24(w2))
        c0, s0 = _sincos_turn(w1, 24, dtype)
        c1, s1 = _sincos_turn(w3, 24, dtype)
        return r0 * c0, r0 * s0, r1 * c1, r1 * s1
    raise ValueError(f"dtype={dtype} must be float64 or float32")


def group_steps(dim: int, dtype) -> int:
    """Consecutive steps whose d normals fill whole blocks: P / gcd(d, P)."""
    per = normals_per_block(dtype)
    return per // math.gcd(dim, per)


def _first_draw(step, dim: int) -> tuple[jax.Array, jax.Array]:
    """(high, low) words of the index step d of a step's first normal in the chain's stream."""
    step = _u32(step)
    return mul_wide(step, jnp.full(step.shape, dim, jnp.uint32))


def _shift_right(high, low, shift: int):
    if shift == 0:
        return high, low
    return high >> shift, (low >> shift) | (high << (32 - shift))


def _carry(wrapped, before) -> jax.Array:
    # a select, not a bool -> int conversion (which Triton's lowering mistypes)
    return jnp.where(wrapped < before, jnp.uint32(1), jnp.uint32(0))


def _add(high, low, k: int):
    total = low + jnp.uint32(k)
    return high + _carry(total, low), total


def step_normals(k0: jax.Array, k1: jax.Array, step, dim: int, dtype) -> list:
    """The d normal draws of ``step`` for chains with keys (k0, k1): a list of d arrays.

    A chain's normals form one stream: draw j = t d + c is coordinate c of step t, component
    j mod P of block j // P (P = :func:`normals_per_block`). Valid at any step; when d is not a
    multiple of P a step's draws may start mid-block, and the blocks it touches are selected.
    """
    per = normals_per_block(dtype)
    shift = per.bit_length() - 1
    high, low = _first_draw(jnp.broadcast_to(_u32(step), jnp.shape(k0)), dim)
    block_high, block_low = _shift_right(high, low, shift)
    if dim % per == 0:
        draws = []
        for b in range(dim // per):
            draws.extend(normal_block(k0, k1, *_add(block_high, block_low, b), dtype))
        return draws
    offset = low & jnp.uint32(per - 1)
    candidates = []
    for b in range((dim + 2 * per - 2) // per):
        candidates.extend(normal_block(k0, k1, *_add(block_high, block_low, b), dtype))
    picked = []
    for c in range(dim):
        value = candidates[c]
        for o in range(1, per):
            value = jnp.where(offset == o, candidates[o + c], value)
        picked.append(value)
    return picked


def group_normals(k0: jax.Array, k1: jax.Array, first, steps: int, dim: int, dtype) -> list:
    """The normals of ``steps`` consecutive steps from ``first`` (a list of ``steps`` lists of d
    arrays), equal to :func:`step_normals` step by step. Requires first d and steps d to be
    multiples of P (``first`` a multiple of :func:`group_steps`), so whole blocks are drawn once.
    """
    per = normals_per_block(dtype)
    if (steps * dim) % per:
        raise ValueError(f"steps={steps} x dim={dim} must be a multiple of {per} normals per block")
    high, low = _first_draw(jnp.broadcast_to(_u32(first), jnp.shape(k0)), dim)
    block_high, block_low = _shift_right(high, low, per.bit_length() - 1)
    draws = []
    for b in range(steps * dim // per):
        draws.extend(normal_block(k0, k1, *_add(block_high, block_low, b), dtype))
    return [draws[t * dim:(t + 1) * dim] for t in range(steps)]


# --- normals as arrays (the XLA paths) --------------------------------------------------------
# The list-returning functions above suit a kernel that keeps every coordinate in its own
# register (the Pallas kernel); an XLA program built from them holds one Philox evaluation per
# block per coordinate, so its size (and compile time) grows with d. The functions below draw
# the same blocks as one vector operation over a trailing block axis and reshape, so the program
# is the same size for any d. They give the same words, hence the same draws (tested). The XLA
# loop keeps the lists up to d = 8, where they run faster on a CPU (engine/reference.py).
def _block_range(block_high, block_low, count: int) -> tuple[jax.Array, jax.Array]:
    """(high, low) words of the block indices block, block + 1, ..., block + count - 1 (a new
    trailing axis of length ``count``), with the carry into the high word."""
    low = block_low[..., None] + jnp.arange(count, dtype=jnp.uint32)
    return block_high[..., None] + _carry(low, block_low[..., None]), low


def _normal_blocks(k0, k1, block_high, block_low, count: int, dtype) -> jax.Array:
    """The draws of ``count`` consecutive blocks from block (block_high, block_low): (..., count P),
    draw b P + p being component p of block b (the order :func:`step_normals` lists them in)."""
    high, low = _block_range(block_high, block_low, count)
    parts = normal_block(jnp.asarray(k0)[..., None], jnp.asarray(k1)[..., None], high, low, dtype)
    return jnp.stack(parts, axis=-1).reshape(low.shape[:-1] + (count * len(parts),))


def _normal_draws_elementwise(k0, k1, step, dim: int, count: int, dtype) -> jax.Array:
    """The ``count`` draws of a chain's noise stream from draw ``step`` d on, as one array (..., count),
    each from its own block's words (the CPU form, :func:`_one_word_per_element`): draw j is
    component j mod P of block j // P, Box–Muller as in :func:`normal_block`, the cosine or the
    sine selected by the component."""
    dtype = jnp.dtype(dtype)
    per = normals_per_block(dtype)
    first_high, first_low = _first_draw(jnp.broadcast_to(_u32(step), jnp.shape(k0)), dim)
    low = first_low[..., None] + jnp.arange(count, dtype=jnp.uint32)
    high = first_high[..., None] + _carry(low, first_low[..., None])
    block_high, block_low = _shift_right(high, low, per.bit_length() - 1)
    component = low & jnp.uint32(per - 1)
    key = (jnp.asarray(k0)[..., None], jnp.asarray(k1)[..., None])
    a, b = philox4x32_wide(key, _noise_counter(block_high, block_low))
    if dtype == jnp.dtype(jnp.float64):
        # radius from (w0, w1) = A, angle from w2 = the high half of B
        radius = _radius(uniform_53(*_halves(a)))
        cos, sin = _sincos_turn(_halves(b)[0], 32, dtype)
        return jnp.where(component == 0, radius * cos, radius * sin)
    if dtype == jnp.dtype(jnp.float32):
        # components 0 and 1 from (w0, w1) = A, components 2 and 3 from (w2, w3) = B
        with jax.enable_x64(True):
            word = jnp.where(component < 2, a, b)
        radius_word, angle_word = _halves(word)
        radius = _radius(uniform_24(radius_word))
        cos, sin = _sincos_turn(angle_word, 24, dtype)
        return jnp.where((component & jnp.uint32(1)) == 0, radius * cos, radius * sin)
    raise ValueError(f"dtype={dtype} must be float64 or float32")


def step_normals_array(k0: jax.Array, k1: jax.Array, step, dim: int, dtype) -> jax.Array:
    """:func:`step_normals` as one array (..., d): the same draws, a program whose size does not
    depend on d. When a step starts mid-block (d not a multiple of P) the blocks it touches are
    drawn and the window at its offset is selected (P - 1 selects of the whole vector)."""
    if _one_word_per_element():
        return _normal_draws_elementwise(k0, k1, step, dim, dim, dtype)
    per = normals_per_block(dtype)
    high, low = _first_draw(jnp.broadcast_to(_u32(step), jnp.shape(k0)), dim)
    block_high, block_low = _shift_right(high, low, per.bit_length() - 1)
    if dim % per == 0:
        return _normal_blocks(k0, k1, block_high, block_low, dim // per, dtype)
    candidates = _normal_blocks(k0, k1, block_high, block_low, (dim + 2 * per - 2) // per, dtype)
    offset = (low & jnp.uint32(per - 1))[..., None]
    value = candidates[..., :dim]
    for o in range(1, per):
        value = jnp.where(offset == o, candidates[..., o:o + dim], value)
    return value


def group_normals_array(k0: jax.Array, k1: jax.Array, first, steps: int, dim: int, dtype) -> jax.Array:
    """:func:`group_normals` as one array (..., steps, d): the normals of ``steps`` consecutive steps
    from ``first``, whose first draw starts a block (first d and steps d multiples of P)."""
    per = normals_per_block(dtype)
    if (steps * dim) % per:
        raise ValueError(f"steps={steps} x dim={dim} must be a multiple of {per} normals per block")
    if _one_word_per_element():
        draws = _normal_draws_elementwise(k0, k1, first, dim, steps * dim, dtype)
        return draws.reshape(draws.shape[:-1] + (steps, dim))
    high, low = _first_draw(jnp.broadcast_to(_u32(first), jnp.shape(k0)), dim)
    block_high, block_low = _shift_right(high, low, per.bit_length() - 1)
    draws = _normal_blocks(k0, k1, block_high, block_low, steps * dim // per, dtype)
    return draws.reshape(draws.shape[:-1] + (steps, dim))


def normals(words: jax.Array, step, dim: int, dtype) -> jax.Array:
    """Standard normal draws (..., dim) of ``step`` for chains with keys ``words`` (..., 2)."""
    return step_normals_array(words[..., 0], words[..., 1], step, dim, dtype)


# --- integers ------------------------------------------------------------------------------
def index_words(words: jax.Array, step, stream: int, count: int) -> tuple[jax.Array, jax.Array]:
    """``count`` 64-bit words of ``stream`` at ``step`` as (high, low) uint32 arrays (..., count).

    Block j gives words 2j (its first two uint32) and 2j + 1 (its last two).
    """
    return index_words_from(words, step, stream, 0, count)


def index_words_from(words: jax.Array, step, stream: int, first, count: int) -> tuple[jax.Array, jax.Array]:
    """Words ``first``, ..., ``first + count - 1`` of ``stream`` at ``step`` as (high, low)
    uint32 arrays (..., count), numbered as in :func:`index_words` (``first`` may be traced).

    On a CPU each word evaluates its own block (element by element, :func:`_one_word_per_element`);
    elsewhere the blocks are stacked, one evaluation serving a block's two words, and a traced
    ``first`` (odd or even) is a dynamic slice of one block more."""
    lead = words.shape[:-1]
    step = jnp.broadcast_to(_u32(step), lead)[..., None]
    if _one_word_per_element():
        # word j from block j // 2 (A for even j, B for odd), element by element
        j = _u32(first) + jnp.arange(count, dtype=jnp.uint32)
        a, b = draw_block_wide(words[..., 0:1], words[..., 1:2], step, stream, j >> 1)
        with jax.enable_x64(True):
            word = jnp.where((j & jnp.uint32(1)) == 0, a, b)
        return _halves(word)
    static = isinstance(first, int)
    skip = first & 1 if static else (_u32(first) & jnp.uint32(1)).astype(jnp.int32)
    blocks = -(-(count + skip) // 2) if static else count // 2 + 1
    w0, w1, w2, w3 = draw_block(words[..., 0:1], words[..., 1:2], step, stream, (_u32(first) >> 1) + jnp.arange(blocks, dtype=jnp.uint32))
    high = jnp.stack([w0, w2], axis=-1).reshape(lead + (2 * blocks,))
    low = jnp.stack([w1, w3], axis=-1).reshape(lead + (2 * blocks,))
    if static:
        return high[..., skip:skip + count], low[..., skip:skip + count]
    return lax.dynamic_slice_in_dim(high, skip, count, axis=-1), lax.dynamic_slice_in_dim(low, skip, count, axis=-1)


# ln 2 split as fdlibm's log does: _LN2_HI has its low 21 bits zero, so e * _LN2_HI is exact for
# any float64 exponent e
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_ATANH_SERIES = tuple(2.0 / (2 * k + 1) for k in range(11))  # log m = sum 2 s^(2k+1) / (2k+1)
_SQRT2 = math.sqrt(2.0)


def log_unit(u: jax.Array) -> jax.Array:
    """log u in float64 for u in (0, 1) (any positive normal float64 in fact; 0, subnormals, inf
    and NaN are not handled, and the gaps' uniforms are none of these), from the bits and basic
    arithmetic: within 3 units in the last place of the exact value (the rounding of s, of the
    series and of the two final sums, and near u = sqrt(1/2) the cancellation of e ln 2 against
    log m; at most 2 measured against 40-digit mpmath over 4,000 values, 83% correctly rounded).

    u = 2^e m with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m - 1) / (m + 1),
    abs(s) <= 0.172, eleven terms of the series (the next term is below 2^-60); e ln 2 in two
    parts. Why not ``jnp.log``: XLA's CPU backend evaluates a float64 log at a few Philox words'
    cost (most of a Poisson walk's own work; this form made the step 1.08-1.10x faster,
    BENCHMARKS.md, issue 36); this form vectorises, and its additions, products and divisions
    are the same IEEE operations on every device, so every path gets the same gaps (a float64
    log's last bit is each library's own)."""
    with jax.enable_x64(True):  # the bits are 64-bit whatever the caller's mode
        bits = lax.bitcast_convert_type(jnp.asarray(u).astype(jnp.float64), jnp.int64)
        exponent = (bits >> 52) - 1023
        m = lax.bitcast_convert_type((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000, jnp.float64)  # [1, 2)
        big = m > _SQRT2
        m = jnp.where(big, 0.5 * m, m)
        e = (exponent + big.astype(jnp.int64)).astype(jnp.float64)
        s = (m - 1.0) / (m + 1.0)
        s2 = s * s
        series = _ATANH_SERIES[-1]
        for c in _ATANH_SERIES[-2::-1]:
            series = series * s2 + c
        return e * _LN2_HI + (s * series + e * _LN2_LO)


def geometric_gaps(high: jax.Array, low: jax.Array, rate, cap: int) -> jax.Array:
    """Gaps G = 1 + floor(log U / log(1 - rate)) between consecutive members of a Poisson
    (Bernoulli(rate) per slot) subset, one per 64-bit word, capped at ``cap`` (int32).

    P(G > k) = P(U <= (1 - q)^k) = (1 - q)^k: G is Geometric(q) on {1, 2, ...}, so the partial
    sums of i.i.d. gaps mark each slot independently with probability q (Devroye 1986, Non-Uniform
    Random Variate Generation, Sec. X.2: the sequential method for Bernoulli trials). U is
    :func:`uniform_53`, log U is :func:`log_unit`, and the arithmetic is float64 whatever the run's
    dtype (the same gaps on every path and in float32 runs), so the law is exact up to the 2^-53
    granularity of U (and a ratio within ~1e-15 relative of an integer, where rounding decides
    the floor, i.e. a probability of order 1e-13 per gap). A gap at or
    beyond ``cap`` = n + 1 only says "no further member" (from any partial sum >= -1 it lands past
    slot n - 1), so capping changes no batch; q = 1 gives gaps of 1 (log(1 - q) = -inf)."""
    with jax.enable_x64(True):
        u = uniform_53(high, low)
        q = jnp.asarray(rate).astype(jnp.float64)
        ratio = log_unit(u) / jnp.log1p(-q)  # >= 0 (+0 when q = 1)
        return (jnp.minimum(jnp.floor(ratio), cap - 1) + 1).astype(jnp.int32)


def index_word(k0: jax.Array, k1: jax.Array, step, stream, j) -> tuple[jax.Array, jax.Array]:
    """(high, low) of word ``j`` of ``stream`` at ``step``: one word of :func:`index_words`,
    drawn where it is used (the Pallas kernels' form; two 64-bit words per Philox block)."""
    w0, w1, w2, w3 = draw_block(k0, k1, step, stream, lax.shift_right_logical(j, jnp.int32(1)))
    even = lax.bitwise_and(j, jnp.int32(1)) == 0
    return jnp.where(even, w0, w2), jnp.where(even, w1, w3)


def uniform_index(high: jax.Array, low: jax.Array, n) -> jax.Array:
    """floor(w n / 2^64) for the 64-bit word w = high 2^32 + low and 1 <= n < 2^31 (int32).

    The top word of the 96-bit product: high n plus the carry out of low n; exact.
    """
    n = _u32(n)
    top, bottom = mul_wide(high, n)
    carry_in, _ = mul_wide(low, n)
    total = bottom + carry_in
    return (top + _carry(total, bottom)).astype(jnp.int32)


def inclusion_threshold(rate) -> tuple[jax.Array, jax.Array]:
    """floor(rate 2^64) as (high, low) uint32 words, for 0 < rate < 1.

    rate 2^32 and its fractional part times 2^32 are exact in binary floating point.
    """
    scaled = jnp.asarray(rate) * 4294967296.0
    high = jnp.floor(scaled)
    low = jnp.floor((scaled - high) * 4294967296.0)
    return jnp.minimum(high, 4294967295.0).astype(jnp.uint32), low.astype(jnp.uint32)


def bernoulli(high: jax.Array, low: jax.Array, rate) -> jax.Array:
    """True with probability ``rate`` (to 2^-64) from the 64-bit word high 2^32 + low."""
    t_high, t_low = inclusion_threshold(rate)
    below = (high < t_high) | ((high == t_high) & (low < t_low))
    return below | (jnp.asarray(rate) >= 1)
