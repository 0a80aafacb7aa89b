"""JAX's persistent compilation cache, on by default for processes that use dpjax.

Most of a first answer's time (a cold ``pld_curve``, a first ``calibrate_noise_multiplier``) is
XLA compiling dpjax's programs, paid again in every new process. With JAX's persistent cache
the compiled executables are written to disk and a second process loads them instead.

What :func:`install` (run by ``import dpjax``) does:

* ``DPJAX_NO_COMPILATION_CACHE=1`` (or true/yes): nothing.
* the user chose a cache already (``JAX_COMPILATION_CACHE_DIR`` in the environment, or
  ``jax.config.jax_compilation_cache_dir`` set before dpjax configures JAX): that choice is
  kept, and nothing else is changed.
* otherwise, once JAX is imported (at once if it already is; else right after the process
  first imports it, so ``import dpjax`` and ``dpjax --help`` still do not load JAX), JAX's cache
  directory is set to ``DPJAX_COMPILATION_CACHE_DIR`` if given, else to the user's cache
  directory (``$XDG_CACHE_HOME/dpjax/jax-compilation-cache``, ``~/.cache/...`` on Linux,
  ``~/Library/Caches/...`` on macOS, ``%LOCALAPPDATA%\\...`` on Windows), and the smallest
  compile time worth caching is lowered to :data:`MIN_COMPILE_SECONDS` = 0 (unless
  ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` is set): dpjax's programs are many and most
  compile in well under JAX's default of one second, yet together they are most of a cold
  ``pld_curve``; caching all of them (a few hundred kB) lets a second process answer without
  compiling anything. A folder that cannot be created or written leaves the cache off,
  silently: the cache only saves time.

JAX's configuration is global, so the cache then serves every program compiled in the
process, the user's own included; the options used (``jax_compilation_cache_dir``,
``jax_persistent_cache_min_compile_time_secs``) exist in every JAX dpjax supports (>= 0.8).
Several processes may share the folder: JAX names an entry by a hash of the program, the
compiler and the device, and a reader that finds an entry half written recompiles (a
warning, never a wrong executable).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

ENV_OFF = "DPJAX_NO_COMPILATION_CACHE"
ENV_DIR = "DPJAX_COMPILATION_CACHE_DIR"
MIN_COMPILE_SECONDS = 0.0

_configured: Optional[str] = None  # the folder in use once configure() ran ("" when off)


def disabled() -> bool:
    """Whether ``DPJAX_NO_COMPILATION_CACHE`` turns the cache off (any value but 0/false/no)."""
    return os.environ.get(ENV_OFF, "").strip().lower() not in ("", "0", "false", "no")


def default_dir() -> Path:
    """dpjax's folder for JAX's compiled programs in the user's cache directory."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "dpjax" / "jax-compilation-cache"


def _usable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def configure() -> Optional[str]:
    """Point JAX's persistent cache at dpjax's folder unless turned off or chosen by the user.
    Imports JAX. Returns the folder JAX now uses (the user's or dpjax's), None when off."""
    global _configured
    import jax

    if disabled():
        _configured = ""
        return None
    own = jax.config.jax_compilation_cache_dir
    if os.environ.get("JAX_COMPILATION_CACHE_DIR") or (own and own != _configured):
        _configured = own or ""
        return own or None  # the user's choice: theirs entirely
    folder = default_dir()
    if not _usable(folder):
        _configured = ""
        return None
    try:
        jax.config.update("jax_compilation_cache_dir", str(folder))
        if not os.environ.get("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"):
            jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    except (AttributeError, KeyError, ValueError):  # an option a future JAX renamed: no cache, no failure
        _configured = ""
        return None
    _configured = str(folder)
    return _configured


class _ConfigureAfter:
    """JAX's own loader, calling :func:`configure` once JAX's package has executed (a plain
    class: importing importlib.abc would cost ``dpjax --help`` 40 ms)."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        configure()

    def __getattr__(self, name):  # resources, is_package, get_source, ...: JAX's loader's
        return getattr(self._loader, name)


class _WhenJaxLoads:
    """Finds nothing itself: on the first import of ``jax`` it asks the other finders for
    JAX's spec and wraps its loader, then steps aside."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "jax":
            return None
        _remove_hook()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ConfigureAfter(spec.loader)
                return spec
        return None


def _remove_hook() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _WhenJaxLoads)]


def install() -> None:
    """Configure the cache now if JAX is loaded, else right after JAX is first imported."""
    if disabled():
        return
    jax = sys.modules.get("jax")
    if jax is not None and hasattr(jax, "config"):
        configure()
    elif not any(isinstance(f, _WhenJaxLoads) for f in sys.meta_path):
        sys.meta_path.insert(0, _WhenJaxLoads())
