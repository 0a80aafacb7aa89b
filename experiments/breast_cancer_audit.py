"""Run `dpjax reproduce breast-cancer-audit` from a checkout: `python experiments/breast_cancer_audit.py --out DIR [--quick] [flags]`.

The code lives in :mod:`dpjax.experiments.breast_cancer_audit` (importable: `add_arguments`, `run`, and the workflow's pieces).
"""
import sys

from dpjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["reproduce", "breast-cancer-audit", *sys.argv[1:]]))
