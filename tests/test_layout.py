"""Layout independence: the same seed gives the same numbers on 1 device and sharded over 4.

Each run happens in a fresh interpreter because the host device count is fixed when JAX starts
(XLA_FLAGS=--xla_force_host_platform_device_count=4).
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

SCRIPT = textwrap.dedent(
    """
    import sys, jax, jax.numpy as jnp, numpy as np, dpjax
    from dpjax import samplers
    out = sys.argv[1]
    model = dpjax.Model(lambda th, r: -0.5 * (r["y"] - r["x"] @ th) ** 2, lambda th: -0.5 * jnp.sum(th**2), dim=2)
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):
        ds = dpjax.make_dataset(x=rng.normal(size=(9, 2)), y=rng.normal(size=9))
        pair = dpjax.add_remove(ds, 4)
    arrays = {}
    for name, sampler in (("cyclic", samplers.cyclic_sgld(0.01)), ("uniform", samplers.sgld(0.01, batching="uniform", batch_size=3))):
        res = dpjax.run_coupled(7, model, pair, sampler, num_pairs=10, num_steps=25, record_steps=[0, 12, 25],
                                init=lambda k: jax.random.normal(k, (2,)), progress=False)
        arrays.update({f"{name}_{f}": getattr(res, f) for f in ("positions", "neighbour_positions", "path_loss", "finite")})
        arrays[f"{name}_devices"] = res.config["num_devices"]
    np.savez(out, **arrays)
    """
)


def _run(tmp_path, devices):
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={devices}").strip()
    env["JAX_PLATFORMS"] = "cpu"
    out = tmp_path / f"run_{devices}.npz"
    subprocess.run([sys.executable, "-c", SCRIPT, str(out)], check=True, env=env, timeout=600)
    return np.load(out)


@pytest.mark.slow  # two fresh interpreters (~15 s unloaded)
def test_same_numbers_on_one_and_four_devices(tmp_path):
    one, four = _run(tmp_path, 1), _run(tmp_path, 4)
    for name in ("cyclic", "uniform"):
        assert int(one[f"{name}_devices"]) == 1 and int(four[f"{name}_devices"]) == 4
        assert one[f"{name}_positions"].shape == (3, 10, 2)  # 10 pairs: padded to 12 on 4 devices, padding dropped
        for field in ("positions", "neighbour_positions", "path_loss"):
            np.testing.assert_allclose(four[f"{name}_{field}"], one[f"{name}_{field}"], rtol=1e-12, atol=1e-12)
        assert np.array_equal(four[f"{name}_finite"], one[f"{name}_finite"])
