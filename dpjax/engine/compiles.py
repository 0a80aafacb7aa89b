"""Count the programs JAX compiles: the check behind "a repeated run compiles nothing".

    with count_compilations() as compiled:
        dpjax.run_coupled(...)
    compiled.count    # backend compilations during the block

One listener is registered the first time (JAX versions before 0.9 cannot unregister one) and
counts only while a block is open, so nested and repeated blocks cost nothing.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import jax

_EVENT = "/jax/core/compile/backend_compile_duration"
_open: list = []


class Compilations:
    """How many backend compilations happened while the block was open."""

    def __init__(self) -> None:
        self.count = 0


def _listener(event: str, duration: float, **kwargs) -> None:
    if event == _EVENT:
        for counter in _open:
            counter.count += 1


_registered = False


@contextlib.contextmanager
def count_compilations() -> Iterator[Compilations]:
    """A :class:`Compilations` whose ``count`` is the number of programs compiled in the block."""
    global _registered
    if not _registered:
        jax.monitoring.register_event_duration_secs_listener(_listener)
        _registered = True
    counter = Compilations()
    _open.append(counter)
    try:
        yield counter
    finally:
        _open.remove(counter)
