"""tests/test_engine.py's float32 agreement case (uniform batches of 3 with clipping, d = 2) on
this machine's default device: every engine in float32 and float64, every step recorded, the
largest differences printed and all arrays saved to $OUT/f32diag.npz (or /tmp). On an H100
(jax 0.11.2) the float32 path losses differed by up to 6.4e-4 between engines before the
engine asked XLA for full-precision float32 products; run this on a GPU to confirm the fix.

    python tools/gpu/float32_agreement.py
"""
import argparse, os, sys, numpy as np, jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
sys.path.insert(0, "tests")
import dpjax
from dpjax import samplers
from dpjax.models import bayesian_linear_regression
from test_engine import _pairs

def main(argv=None) -> int:
    # no options: the parser is there so that --help answers without running the engines
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    model = bayesian_linear_regression(1.0, 0.5, dim=2)
    pair = _pairs(2, False)
    sampler = samplers.sgld(0.002, batching="uniform", batch_size=3, clip_norm=0.5)
    out = {}
    for dt in ("float32", "float64"):
        kw = dict(num_pairs=130, num_steps=40, record_steps=list(range(1, 41)), progress=False, init=lambda k: jax.random.normal(k, (2,)), dtype=getattr(jnp, dt))
        for e in ("reference", "quadratic", "pallas"):
            r = dpjax.run_coupled(3, model, pair, sampler, engine=e, **kw)
            for f in ("positions", "neighbour_positions", "path_loss"):
                out[f"{dt}_{e}_{f}"] = np.asarray(getattr(r, f))
        ref = out[f"{dt}_reference_path_loss"]
        for e in ("quadratic", "pallas"):
            print(dt, e, "max|dloss|", np.abs(out[f"{dt}_{e}_path_loss"] - ref).max(), "max|dx|", np.abs(out[f"{dt}_{e}_positions"] - out[f"{dt}_reference_positions"]).max())
    np.savez_compressed(os.path.join(os.environ.get("OUT", "/tmp"), "f32diag.npz"), **out)
    return 0

if __name__ == "__main__":
    sys.exit(main())
