"""Run `dpjax reproduce contamination-logistic` from a checkout: `python experiments/contamination_logistic.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.contamination.logistic` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "contamination-logistic", *sys.argv[1:]]))
