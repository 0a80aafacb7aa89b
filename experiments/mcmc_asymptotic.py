"""Run `dpjax reproduce mcmc-asymptotic` from a checkout: `python experiments/mcmc_asymptotic.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.girsanov.mcmc_asymptotic` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "mcmc-asymptotic", *sys.argv[1:]]))
