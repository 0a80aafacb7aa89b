"""Run `dpjax reproduce contamination-mean` from a checkout: `python experiments/contamination_mean.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.contamination.mean` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "contamination-mean", *sys.argv[1:]]))
