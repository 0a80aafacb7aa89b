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


def add_rate_options(parser: argparse.ArgumentParser) -> None:
    """The reported quantile over datasets and the contamination rate p_n and delta_n of paper 003's runs."""
    parser.add_argument("--quantile", type=float, default=0.99, help="reported quantile over datasets (default 0.99)")
    parser.add_argument("--rate-exponent", type=float, default=0.125, help="contamination rate p_n = n^-exponent (default 1/8)")
    parser.add_argument("--delta-factor", type=float, default=10.0, help="delta_n = 1/(factor n) (default 10)")


def add_batch_options(parser: argparse.ArgumentParser) -> None:
    """How the datasets are batched on the device and whether a progress bar shows (results do not depend on either)."""
    parser.add_argument("--dataset-batch", type=int, default=None,
                        help="datasets per compiled batch (default 8 on a CPU, 64 on a GPU or TPU; the results do not depend on it)")
    parser.add_argument("--progress", action="store_true", help="show a progress bar per n")
