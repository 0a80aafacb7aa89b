"""Command-line argument types shared by paper 003's reproductions (a module of its own so
that the reproductions, which import one another, do not import each other for these)."""
from __future__ import annotations

import argparse


def int_list(text: str) -> list[int]:
    """argparse type: a comma-separated list of integers >= 2 (dataset sizes, dimensions)."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not values or any(v < 2 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: every n must be an integer >= 2")
    return values
