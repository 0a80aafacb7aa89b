"""What the API reference lists, read from the pages under docs/api/ (one parser for the build
and for tests/test_docs.py), and one documented home per class.

The package pages list public names in ``.. autosummary::`` directives (inside ```{eval-rst}
blocks, where autosummary finds them) after a ``.. currentmodule::``. A name listed there is
also a member of the module that defines it (and of a group package that re-exports it), whose
page documents its members; documenting it twice would register two descriptions of one
object, so a module page leaves out what a package page lists: each function, class or
constant has one page, the one cross-references lead to.
"""
from __future__ import annotations

import importlib
import inspect
import pathlib

API = pathlib.Path(__file__).resolve().parents[1] / "api"


def documented_names(api_dir: pathlib.Path = API) -> dict[str, list[str]]:
    """module -> the names its autosummary lists name, in page order."""
    listed: dict[str, list[str]] = {}
    for page in sorted(api_dir.glob("*.md")):
        module = None
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            stripped = line.strip()
            if stripped.startswith(".. currentmodule::"):
                module = stripped.split("::", 1)[1].strip()
            elif stripped.startswith(".. autosummary::"):
                if module is None:
                    raise ValueError(f"{page.name}:{i + 1}: an autosummary before any currentmodule")
                indent = len(line) - len(line.lstrip())
                for entry in lines[i + 1 :]:
                    if entry.strip().startswith("```") or entry.strip() and len(entry) - len(entry.lstrip()) <= indent:
                        break
                    if entry.strip() and not entry.strip().startswith(":"):
                        listed.setdefault(module, []).append(entry.strip().lstrip("~"))
    return listed


def resolve(module_name: str, name: str):
    """The object ``module_name.name`` (a submodule is imported if it is not an attribute)."""
    module = importlib.import_module(module_name)
    if hasattr(module, name):
        return getattr(module, name)
    return importlib.import_module(f"{module_name}.{name}")


def _listed_objects(app) -> None:
    listed = set()
    for module_name, names in documented_names(pathlib.Path(app.srcdir) / "api").items():
        for name in names:
            obj = resolve(module_name, name)
            if not inspect.ismodule(obj):
                listed.add(id(obj))
    app.env.dpjax_listed_objects = listed


def _skip_listed(app, what, name, obj, skip, options):
    if what == "module" and not inspect.ismodule(obj) and id(obj) in getattr(app.env, "dpjax_listed_objects", ()):
        return True
    return None


def setup(app):
    app.connect("builder-inited", _listed_objects)
    app.connect("autodoc-skip-member", _skip_listed)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
