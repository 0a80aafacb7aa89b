"""Run `dpjax reproduce gibbs-gaussian-mean` from a checkout: `python experiments/gibbs_gaussian_mean.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.gibbs.gaussian_mean` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "gibbs-gaussian-mean", *sys.argv[1:]]))
