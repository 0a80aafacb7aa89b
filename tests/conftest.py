"""Shared test configuration. Tests enable float64 where they compute privacy numbers."""

import os

from hypothesis import settings

# JAX's persistent compilation cache (on by default for dpjax, see dpjax._compilation_cache)
# stays off in the test processes and the commands they start: tests must not write into the
# user's cache, and parallel workers must not share one (test_compilation_cache.py checks the
# cache itself in fresh processes with folders of their own).
os.environ.setdefault("DPJAX_NO_COMPILATION_CACHE", "1")

# CI runs the property tests on a fixed sequence of examples (a red CI means a change broke
# something, never that a new random draw found an old flaw); `pytest --hypothesis-profile
# explore` draws fresh examples each run to look for new counterexamples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile("ci")
