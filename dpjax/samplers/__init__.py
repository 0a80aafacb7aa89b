"""Samplers as pure (init, step) kernels."""
