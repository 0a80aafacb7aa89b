"""Command-line plumbing every ``dpjax reproduce NAME`` module shares, written once.

* :func:`int_list`: the argparse type for comma-separated step counts and sizes.
* :func:`add_defaulted_options`: the plain numeric options of a module, declared as a table
  of names and help texts whose defaults (and so types) come from the module's ``DEFAULTS``.
* :func:`compute_then_draw`: the ``run(args)`` of a module that computes its results, then
  draws its figure from them.
"""
from __future__ import annotations

import argparse
from typing import Callable, Mapping


def int_list(text: str, *, minimum: int = 1, distinct_sorted: bool = False, label: str = "") -> list[int]:
    """argparse type: a non-empty comma-separated list of integers >= ``minimum``.

    ``distinct_sorted`` returns them sorted without repeats (step counts at which a run is
    recorded); otherwise in the order given. ``label`` prefixes the error ("steps=").
    """
    rule = "positive integers" if minimum == 1 else f"integers >= {minimum}"
    message = f"{label}{text!r} violates a comma-separated list of {rule}"
    try:
        values = [int(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(message) from None
    if distinct_sorted:
        values = sorted(set(values))
    if not values or min(values) < minimum:
        raise argparse.ArgumentTypeError(message)
    return values


def add_defaulted_options(parser: argparse.ArgumentParser, defaults: Mapping, table: str) -> None:
    """Add one option per non-blank line ``NAME  HELP`` of ``table``, in order.

    The flag is ``--NAME`` with ``-`` for ``_``; the default is ``defaults[NAME]`` and the type
    that of the default (``int`` or ``float``: a command-line value is parsed as the default
    is written). A table rather than one ``add_argument`` call a line keeps each module's
    options readable at a glance and the flag/default/type rule in one place.
    """
    for line in table.strip().splitlines():
        name, help_text = line.strip().split(None, 1)
        default = defaults[name]
        if type(default) not in (int, float):
            raise TypeError(f"defaults[{name!r}]={default!r} violates an int or float default (a table option's type is its default's)")
        parser.add_argument("--" + name.replace("_", "-"), type=type(default), default=default, help=help_text)


def compute_then_draw(compute: Callable, figure: Callable) -> Callable:
    """``run(args) -> (results, figure)`` for a module whose figure is drawn from its results."""

    def run(args) -> tuple[dict, object]:
        results = compute(args)
        return results, figure(results)

    return run
