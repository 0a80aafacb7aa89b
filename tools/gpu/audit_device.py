"""The certified estimators on samples that stay on the device: N(0,1) vs N(mu,1) drawn by JAX on
the default device (1e8 per side by default), then epsilon_lower_bound, gdp_lower_bound and
tradeoff_upper_bound read them in chunks of 2^20 rows. Prints each result, its time, and the
process's peak resident memory (a whole 1e8-sample host copy would add 800 MB per side).

    python tools/gpu/audit_device.py [samples] [mu]      # defaults: 1e8 samples a side, mu = 1
"""
import argparse
import resource
import sys
import time

import jax
import jax.numpy as jnp

from dpjax.accountants.mechanisms.gaussian_divergence import analytic_gaussian_epsilon
from dpjax.estimators import epsilon_lower_bound, gdp_lower_bound, tradeoff_upper_bound


def _count(text: str) -> int:
    # through float, so that 1e8 is accepted as well as 100000000
    return int(float(text))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("samples", nargs="?", type=_count, default=100_000_000,
                        help="samples per side, an integer or a float such as 1e8 (default: 1e8)")
    parser.add_argument("mu", nargs="?", type=float, default=1.0,
                        help="mean of the second Gaussian, N(mu, 1) against N(0, 1) (default: 1)")
    args = parser.parse_args(argv)
    n, mu = args.samples, args.mu
    with jax.enable_x64(True):
        kp, kq = jax.random.split(jax.random.key(0))
        p = jax.random.normal(kp, (n,), dtype=jnp.float64)
        q = jax.random.normal(kq, (n,), dtype=jnp.float64) + mu
        p.block_until_ready(), q.block_until_ready()
    print(f"device {p.devices()}, {n:,} samples a side, mu = {mu:g}; rss after drawing {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    for name, call in (("epsilon_lower_bound", lambda: epsilon_lower_bound(p, q, 1e-3)),
                       ("gdp_lower_bound", lambda: gdp_lower_bound(p, q)),
                       ("tradeoff_upper_bound", lambda: tradeoff_upper_bound(p, q, [1e-4, 1e-3, 0.01, 0.1, 0.5]))):
        start = time.perf_counter()
        result = call()
        print(f"{name}: {time.perf_counter() - start:.1f} s, peak rss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
        print(result)
    print(f"truth: eps(1e-3) = {analytic_gaussian_epsilon(mu, 1e-3):.4f}, mu = {mu:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
