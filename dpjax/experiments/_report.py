"""What ``dpjax reproduce NAME`` tells its user while and after a result runs.

Two conventions every module under :mod:`dpjax.experiments` follows:

* **Progress.** Long steps are wrapped in :func:`stage`, which writes one line to stderr when
  the step starts and one with its wall time when it ends, so a run of minutes is never silent.
* **Headline.** A module may define ``headline(results) -> list[dict]``: the few numbers a
  reader wants first, one dict per row with keys ``quantity`` (what), ``paper`` (the printed
  value, or ``None`` where the paper prints none), ``dpjax`` (dpjax's value) and optionally
  ``note`` (where and why they differ). The CLI prints them as a table after writing the files.
"""
from __future__ import annotations

import contextlib
import sys
import time
from typing import Iterator


@contextlib.contextmanager
def stage(message: str, *, stream=None) -> Iterator[None]:
    """Announce a long step on stderr, then report how long it took."""
    stream = sys.stderr if stream is None else stream
    print(f"... {message}", file=stream, flush=True)
    start = time.perf_counter()
    yield
    print(f"    done in {time.perf_counter() - start:.1f} s", file=stream, flush=True)
