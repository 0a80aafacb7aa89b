"""Run `dpjax reproduce gibbs-lmc` from a checkout: `python experiments/gibbs_lmc.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.gibbs.lmc` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "gibbs-lmc", *sys.argv[1:]]))
