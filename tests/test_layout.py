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


POISSON_SCRIPT = textwrap.dedent(
    """
    import sys, jax, jax.numpy as jnp, numpy as np, dpjax
    from dpjax import samplers
    from dpjax.engine import gradients, reference, runner
    # first chunks of 3 gap words and further chunks of 8: most batches overflow, so the
    # overflow rounds run at every step
    gradients.poisson_capacity = lambda n, q: 3
    gradients.poisson_overflow_capacity = lambda n, q: 8
    out = sys.argv[1]
    rng = np.random.default_rng(1)
    with jax.enable_x64(True):
        ds = dpjax.make_dataset(x=rng.normal(size=(60, 3)), y=(rng.normal(size=60) > 0).astype(float))
        pair = dpjax.add_remove(ds, 7)
    model = dpjax.models.logistic_regression(1.0, 3)
    sampler = samplers.sgld(0.01, batching="poisson", sampling_rate=0.2, clip_norm=1.0)
    res = dpjax.run_coupled(3, model, pair, sampler, num_pairs=10, num_steps=20, record_steps=[0, 10, 20], progress=False, engine="glm")
    arrays = {f: getattr(res, f) for f in ("positions", "neighbour_positions", "path_loss", "finite")}
    arrays["devices"] = res.config["num_devices"]
    # the collectives in the compiled step of 12 pairs sharded over the mesh
    mesh = runner.default_mesh()
    chains = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("chains"))
    provider, host = gradients.provider_for(model, pair, "glm", jnp.float64, sampler)
    data = jax.device_put(host, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec()))
    with jax.enable_x64(True):
        _, keys = reference.chain_setup(sampler, jax.random.key(0), jax.device_put(np.arange(12, dtype=np.uint32), chains), num_slots=60)
        zeros = jax.device_put(np.zeros((12, 3)), chains)
        state = reference.PairState(zeros, zeros, jax.device_put(np.zeros(12), chains), jax.device_put(np.ones(12, bool), chains))
        for name, m in (("per_device", mesh), ("partitioner", None)):
            text = reference.advance.lower(sampler, data, jnp.int32(7), keys.words, keys.batching, state, jnp.int32(0), jnp.int32(5),
                                           provider=provider, num_slots=60, unroll=1, mesh=m).compile().as_text()
            arrays[f"collectives_{name}"] = sum(text.count(op) for op in ("all-gather", "all-reduce", "all-to-all", "collective-permute", "reduce-scatter"))
    np.savez(out, **arrays)
    """
)


@pytest.mark.slow  # two fresh interpreters
def test_poisson_overflow_rounds_stay_on_their_device(tmp_path):
    """Poisson batches that overflow their first chunk at most steps: the same numbers on one
    device and sharded over four, and the sharded step holds no collective (each device picks
    the overflowing pairs among its own; left to the partitioner it gathers across devices)."""
    runs = {}
    for devices in (1, 4):
        env = dict(os.environ)
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={devices}").strip()
        env["JAX_PLATFORMS"] = "cpu"
        out = tmp_path / f"poisson_{devices}.npz"
        subprocess.run([sys.executable, "-c", POISSON_SCRIPT, str(out)], check=True, env=env, timeout=600)
        runs[devices] = np.load(out)
    one, four = runs[1], runs[4]
    assert int(one["devices"]) == 1 and int(four["devices"]) == 4
    for field in ("positions", "neighbour_positions", "path_loss"):
        np.testing.assert_allclose(four[field], one[field], rtol=1e-12, atol=1e-12)
    assert np.array_equal(four["finite"], one["finite"])
    assert int(four["collectives_per_device"]) == 0
    assert int(four["collectives_partitioner"]) > 0  # what the per-device rounds avoid
