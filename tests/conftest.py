"""Shared test configuration. Tests enable float64 where they compute privacy numbers."""

import atexit
import os
import shutil
import tempfile

import jax
import pytest
from hypothesis import settings

# JAX's persistent compilation cache (on by default for dpjax, see dpjax._compilation_cache):
# never the user's; one fresh folder per test run, made by the first process (pytest, or
# xdist's controller) before the workers start, so the workers and the commands the tests
# start (CLI, docs, notebooks) compile each program once and load it after: most of the
# suite's time is XLA compiling the same accountant programs again in each process. A compiled
# program is the same program, so no number changes; jit's in-memory cache is unchanged, so
# "a repeated run compiles nothing" is still checked (a load from the folder counts as a
# compilation: JAX times both as the backend compile). DPJAX_NO_COMPILATION_CACHE=1 in the
# environment keeps it off; test_compilation_cache.py checks the cache itself in fresh
# processes with folders of their own.
if "DPJAX_NO_COMPILATION_CACHE" not in os.environ and "DPJAX_COMPILATION_CACHE_DIR" not in os.environ:
    _cache_dir = tempfile.mkdtemp(prefix="dpjax-tests-jax-cache-")
    os.environ["DPJAX_COMPILATION_CACHE_DIR"] = _cache_dir
    atexit.register(shutil.rmtree, _cache_dir, ignore_errors=True)

# CI runs the property tests on a fixed sequence of examples (a red CI means a change broke
# something, never that a new random draw found an old flaw); `pytest --hypothesis-profile
# explore` draws fresh examples each run to look for new counterexamples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile("ci")


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", default=False,
                     help="also run the checks marked full: the issues' acceptance checks at their full scale")


def pytest_collection_modifyitems(config, items):
    # skipped, not deselected: the report names each full-scale check the run left out
    if config.getoption("--full"):
        return
    skip = pytest.mark.skip(reason="full-scale acceptance check (the default suite runs its sample): pytest --full")
    for item in items:
        if item.get_closest_marker("full") is not None:  # the marker, not a keyword: ids like "full" name batchings
            item.add_marker(skip)


@pytest.fixture
def x64():
    """JAX in 64-bit mode for the test (a module opts in with ``pytestmark = pytest.mark.usefixtures("x64")``)."""
    with jax.enable_x64(True):
        yield
