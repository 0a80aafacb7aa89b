"""Run `dpjax reproduce sgld-interim-proof` from a checkout: `python experiments/sgld_interim_proof.py --out DIR [flags]`.

The code lives in :mod:`dpjax.experiments.sgld_interim.proof` (importable: `add_arguments`, `run`).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "sgld-interim-proof", *sys.argv[1:]]))
