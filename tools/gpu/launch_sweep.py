"""Pallas launch shapes on `bench coupled`'s quadratic cyclic-SGLD workload, in one process.

    python tools/gpu/launch_sweep.py "32,1;128,4;256,8" "1024,2000;262144,2000" [float64,float32]

Arguments: (pairs per program, warps) variants; (pairs, steps) sizes; dtypes (float64 if left
out). One JSON line per measurement: the median pair-steps/s of 3 runs after a compiling one.
Each variant sets DPJAX_PALLAS_BLOCK / DPJAX_PALLAS_WARPS and clears JAX's caches so the kernel
is traced again.
"""
import argparse, json, os, statistics, sys, time
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
import dpjax
from dpjax.models import bayesian_linear_regression
from dpjax.bench import coupled as bc

def _int_pairs(text: str) -> list:
    # parsed by argparse, so that a malformed list is a usage error before any work starts
    return [tuple(map(int, v.split(","))) for v in text.split(";")]

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", type=_int_pairs,
                        help="launch shapes, 'pairs per program,warps' separated by semicolons: \"32,1;128,4;256,8\" (no default)")
    parser.add_argument("sizes", type=_int_pairs,
                        help="sizes, 'pairs,steps' separated by semicolons: \"1024,2000;262144,2000\" (no default)")
    parser.add_argument("dtypes", nargs="?", default="float64",
                        help="dtypes, comma-separated: float64,float32 (default: float64)")
    args = parser.parse_args(argv)
    records = 1000
    _, pair, x, y, eta = bc._problem(records)
    model = bayesian_linear_regression(bc.BETA, bc.ALPHA)
    sampler = bc._sampler("cyclic-sgld", eta, 1)
    variants, sizes, dtypes = args.variants, args.sizes, args.dtypes.split(",")
    for block, warps in variants:
        os.environ["DPJAX_PALLAS_BLOCK"], os.environ["DPJAX_PALLAS_WARPS"] = str(block), str(warps)
        jax.clear_caches()
        for dt in dtypes:
            for pairs, steps in sizes:
                def once(s):
                    r = dpjax.run_coupled(s, model, pair, sampler, num_pairs=pairs, num_steps=steps, progress=False, chunk_size=steps, dtype=getattr(jnp, dt), engine="auto")
                    return r.config["run_seconds"], r.config["engine"]
                t0 = time.perf_counter(); once(99); first = time.perf_counter() - t0
                ts = [once(s) for s in range(3)]
                rate = statistics.median(pairs * steps / t for t, _ in ts)
                print(json.dumps({"block": block, "warps": warps, "dtype": dt, "pairs": pairs, "steps": steps, "engine": ts[0][1], "pair_steps_per_s": rate, "first_s": first}), flush=True)
    return 0

if __name__ == "__main__":
    sys.exit(main())
