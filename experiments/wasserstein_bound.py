"""Run `dpjax reproduce wasserstein-bound` from a checkout: `python experiments/wasserstein_bound.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.sgld_interim.wasserstein_bound` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "wasserstein-bound", *sys.argv[1:]]))
