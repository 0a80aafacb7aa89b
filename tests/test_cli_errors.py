"""The CLI's failures read as one line: a missing optional dependency (scikit-learn for the
real-data audit) is named with how to install it, not shown as two chained tracebacks; an
import error inside dpjax itself is a bug and keeps its traceback."""
from __future__ import annotations

import sys

import pytest

from dpjax import cli


def test_a_missing_optional_dependency_is_one_line_naming_how_to_install_it(monkeypatch, capsys, tmp_path):
    # as if scikit-learn were not installed: its submodules too, which an earlier test in the same
    # process may have imported (a cached "sklearn.datasets" would be found without its parent)
    for name in [m for m in sys.modules if m.startswith("sklearn.")] + ["sklearn"]:
        monkeypatch.setitem(sys.modules, name, None)
    code = cli.main(["reproduce", "breast-cancer-audit", "--quick", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err[-1] == 'dpjax reproduce breast-cancer-audit: the real-data workflow needs scikit-learn: pip install -e ".[data]"'
    assert not any("Traceback" in line for line in err)
    assert not list(tmp_path.iterdir()), "nothing written"


def test_a_bare_missing_module_gets_the_install_hint_and_dpjax_own_import_errors_are_raised(monkeypatch, capsys):
    def needs(package):
        def run(args):
            raise ModuleNotFoundError(f"No module named {package!r}", name=package)

        return run

    parser = cli.build_parser()
    args = parser.parse_args(["sweep", "c.yaml", "--out", "x"])
    for package, outcome in (("somepackage", 1), ("dpjax.no_such_module", None)):
        monkeypatch.setattr(cli, "build_parser", lambda: parser)
        parser.set_defaults(func=needs(package))
        args.func = needs(package)
        monkeypatch.setattr(parser, "parse_args", lambda argv, args=args: args)
        if outcome is None:
            with pytest.raises(ModuleNotFoundError, match="dpjax.no_such_module"):
                cli.main(["sweep", "c.yaml", "--out", "x"])
        else:
            assert cli.main(["sweep", "c.yaml", "--out", "x"]) == outcome
            assert capsys.readouterr().err.strip() == "dpjax sweep: No module named 'somepackage'; install it (pip install somepackage)"
