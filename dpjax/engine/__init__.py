"""The coupled engine: how chain pairs are scheduled on hardware.

* :mod:`.randomness` — counter-based Philox streams: every draw a function of (seed, pair, step).
* :mod:`.gradients` — the gradient providers: per-record autodiff (the reference), closed-form
  tables (quadratic models), matrix-vector products (GLMs), one reverse-mode pass per chain
  (any model); Poisson batches from geometric gaps, gathered in
  chunks (expected O(q n) a step).
* :mod:`.detect` — quadratic models written as general models, recognised by a jaxpr proof.
* :mod:`.reference` — the XLA path: vmap over pairs, a loop over steps with in-loop randomness.
* :mod:`.pallas_kernel` — the quadratic step in a Pallas kernel, state in registers for a chunk.
* :mod:`.runner` — the one loop (paths, chunks, recordings, checkpoints, hosts) that
  :func:`dpjax.run_coupled`, :func:`dpjax.audit` and sweeps call.

The math of a step (sampler, model, batching) lives in :mod:`dpjax.samplers` and
:mod:`dpjax.models`; the engine only decides how the steps run.
"""
