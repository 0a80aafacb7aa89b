"""Run `dpjax reproduce sgld-interim` from a checkout: `python experiments/sgld_interim.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.sgld_interim.figure1` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "sgld-interim", *sys.argv[1:]]))
