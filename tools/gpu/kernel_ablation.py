"""Where the Pallas kernel's time goes: `bench coupled`'s workload at 262,144 pairs and 2,000 steps
with the normal draws swapped for cheaper stand-ins (a timing probe only: the stand-ins are not
random numbers to use).

    python tools/gpu/kernel_ablation.py float64,float32      # the dtypes to time, comma-separated

Variants: full (Philox4x32-10 + Box-Muller), cheap_normals (one multiply-xorshift word, no
transcendental), no_transcendental (Philox kept, Box-Muller replaced by linear maps),
no_philox (Box-Muller kept, Philox replaced by a multiply).
"""
import argparse, json, statistics, sys
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
import dpjax
from dpjax.engine import randomness as rng
from dpjax.models import bayesian_linear_regression
from dpjax.bench import coupled as bc

orig_block, orig_philox = rng.normal_block, rng.philox4x32

def cheap_normals(k0, k1, bh, bl, dtype):  # one multiply-xorshift word per block, no transcendental
    w = (bl * jnp.uint32(0x9E3779B9)) ^ k0
    u = (w >> 8).astype(dtype) * (1.0 / 16777216.0) - 0.5
    return (u, -u) if jnp.dtype(dtype) == jnp.dtype(jnp.float64) else (u, -u, u * 0.5, -u * 0.5)

def no_transcendental(k0, k1, bh, bl, dtype):  # Philox kept, Box-Muller replaced by linear maps
    w0, w1, w2, w3 = orig_philox((k0, k1), (bl, jnp.full(jnp.shape(bl), 1, jnp.uint32), bh, jnp.zeros(jnp.shape(bl), jnp.uint32)))
    f = lambda w: (w >> 8).astype(dtype) * (1.0 / 16777216.0) - 0.5
    return (f(w0) + f(w1), f(w2) - f(w3)) if jnp.dtype(dtype) == jnp.dtype(jnp.float64) else (f(w0), f(w1), f(w2), f(w3))

def no_philox(k0, k1, bh, bl, dtype):  # Box-Muller kept, Philox replaced by one multiply
    w = bl * jnp.uint32(0x9E3779B9) ^ k0
    ws = (w, w ^ k1, w * jnp.uint32(3), w + k1)
    rng_p = rng.philox4x32
    rng.philox4x32 = lambda key, counter, rounds=10: ws
    try:
        return orig_block(k0, k1, bh, bl, dtype)
    finally:
        rng.philox4x32 = rng_p

variants = {"full": orig_block, "cheap_normals": cheap_normals, "no_transcendental": no_transcendental, "no_philox": no_philox}

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dtypes", help="dtypes to time each variant in, comma-separated: float64,float32 (no default)")
    args = parser.parse_args(argv)
    _, pair, x, y, eta = bc._problem(1000)
    model = bayesian_linear_regression(bc.BETA, bc.ALPHA)
    sampler = bc._sampler("cyclic-sgld", eta, 1)
    pairs, steps = 262144, 2000
    for dt in args.dtypes.split(","):
        for name, fn in variants.items():
            rng.normal_block = fn
            jax.clear_caches()
            def once(s):
                return dpjax.run_coupled(s, model, pair, sampler, num_pairs=pairs, num_steps=steps, progress=False, chunk_size=steps, dtype=getattr(jnp, dt), engine="auto").config["run_seconds"]
            once(99)
            rate = statistics.median(pairs * steps / once(s) for s in range(3))
            print(json.dumps({"variant": name, "dtype": dt, "pair_steps_per_s": rate}), flush=True)
    rng.normal_block = orig_block
    return 0

if __name__ == "__main__":
    sys.exit(main())
