"""Run `dpjax reproduce contamination-mean-estimation` from a checkout: `python experiments/contamination_mean_estimation.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.contamination.mean_estimation` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "contamination-mean-estimation", *sys.argv[1:]]))
