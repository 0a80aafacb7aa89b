"""The ``summary()`` / ``__repr__`` / ``figure()`` / ``save(path)`` methods that dpjax's result
types share, written once.

Each method hands the result to a named function of :mod:`dpjax._display`, imported on first
use rather than here: importing a result type stays light (no matplotlib), and
:mod:`dpjax._display` may import the result modules without a circle. Plain functions, not a
base class, so that named tuples (which take no mixins) use them as dataclasses do::

    summary, __repr__ = printed_by("gdp_fit_summary", "mu, eps at a few deltas, in 100 columns.")
"""
from __future__ import annotations

from typing import Callable


def printed_by(summary_name: str, summary_doc: str = "") -> tuple[Callable, Callable]:
    """``(summary, __repr__)``: ``summary()`` returns ``dpjax._display.<summary_name>(self)``
    (documented by ``summary_doc``) and ``repr`` is that summary."""

    def summary(self) -> str:
        from . import _display

        return getattr(_display, summary_name)(self)

    def __repr__(self) -> str:
        return self.summary()

    summary.__doc__ = summary_doc or None
    return summary, __repr__


def drawn_by(figure_name: str, figure_doc: str = "") -> tuple[Callable, Callable]:
    """``(figure, save)``: ``figure()`` returns ``dpjax._display.<figure_name>(self)`` (documented
    by ``figure_doc``); ``save(path)`` writes it, the suffix picking the format."""

    def figure(self):
        from . import _display

        return getattr(_display, figure_name)(self)

    def save(self, path):
        """Write :meth:`figure` to ``path`` (the suffix picks the format); returns the path."""
        from . import _display

        return _display.save_figure(self.figure(), path)

    figure.__doc__ = figure_doc or None
    return figure, save
