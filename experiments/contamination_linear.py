"""Run `dpjax reproduce contamination-linear` from a checkout: `python experiments/contamination_linear.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.contamination.linear` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "contamination-linear", *sys.argv[1:]]))
