"""Run `dpjax reproduce noisy-monte-carlo` from a checkout: `python experiments/noisy_monte_carlo.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.girsanov.noisy_monte_carlo` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "noisy-monte-carlo", *sys.argv[1:]]))
