"""Shared test configuration. Tests enable float64 where they compute privacy numbers."""

import atexit
import os
import shutil
import tempfile

# XLA compiles the suite's CPU programs with LLVM's optimisation level 1, not 2 (XLA's own HLO
# passes, fusion included, run as always): most of the suite's time is XLA compiling programs
# that then run for milliseconds, and four coupled-step programs compiled in 10.3 s against
# 14.1 s (level 0: 7.0 s, but it computes some results an ulp apart from level 2, which broke a
# bit-for-bit equality of the Pallas GLM kernel's chunks; level 1 keeps it). Benchmarks and
# users keep XLA's default. It must be set before the CPU backend starts (the workers and the
# commands the tests start inherit it); DPJAX_TESTS_XLA_DEFAULT=1 keeps XLA's default, and a
# level the caller already put in XLA_FLAGS is kept. The pages' printed examples and the
# notebooks run with the caller's XLA_FLAGS (fixture xla_as_users_run_it): what they print is
# compared character for character with what the pages show. The first process (pytest, or
# xdist's controller) records the caller's flags for the workers, which inherit XLA_FLAGS with
# the level already added.
os.environ.setdefault("DPJAX_TESTS_CALLER_XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
if "DPJAX_TESTS_XLA_DEFAULT" not in os.environ and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=1").strip()

import jax  # noqa: E402  (after XLA_FLAGS)
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

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
def xla_as_users_run_it(monkeypatch):
    """XLA_FLAGS as the caller of the test run had them (XLA's default optimisation level) for
    the commands the test starts: a page's printed example or a notebook shows what a reader gets."""
    caller = os.environ["DPJAX_TESTS_CALLER_XLA_FLAGS"]
    if caller:
        monkeypatch.setenv("XLA_FLAGS", caller)
    else:
        monkeypatch.delenv("XLA_FLAGS", raising=False)


@pytest.fixture
def x64():
    """JAX in 64-bit mode for the test (a module opts in with ``pytestmark = pytest.mark.usefixtures("x64")``)."""
    with jax.enable_x64(True):
        yield


@pytest.fixture
def jax_engine(monkeypatch):
    """The PLD accountant's jitted engine for every batch, and the subsampled Gaussian's RDP by
    its jitted kernels: small jobs otherwise run in numpy (dpjax.accountants.composition.pld_numpy),
    which compiles nothing; tests of the engine's programs (what compiles, how work is cut into
    calls) take this fixture."""
    from dpjax.accountants.composition import pld_plan
    from dpjax.accountants.mechanisms import gaussian

    monkeypatch.setattr(pld_plan, "MAX_CONFIGURATIONS", 0)
    monkeypatch.setattr(gaussian, "_NUMPY_MAX_ELEMENTS", 0)


# Every program XLA compiles for the CPU is mapped into memory, and jit keeps each one while the
# process lives: a worker that runs for half an hour of the suite compiles thousands of
# programs and, near the kernel's limit on memory maps (vm.max_map_count, 65,530 by default),
# LLVM aborts while mapping the next one (CI lost a worker this way in a PLD test; a PLD test
# module alone grows by ~65 maps a second here). Past a threshold well below the limit, jit's
# caches are emptied between tests: later tests compile again (or load from the run's
# compilation cache); no number depends on it.
_MAPS_BEFORE_CLEARING = 20_000


def _memory_maps() -> int:
    try:
        with open("/proc/self/maps", "rb") as f:
            return sum(1 for _ in f)
    except OSError:  # not Linux: no such limit to keep under
        return 0


@pytest.fixture(autouse=True)
def _bounded_memory_maps():
    yield
    if _memory_maps() > _MAPS_BEFORE_CLEARING:
        import gc

        jax.clear_caches()
        gc.collect()
