"""The documentation builds with warnings as errors and no network, says where every public
name lives truthfully, and links only to files that exist (docs/contributing.md)."""
from __future__ import annotations

import importlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
import api_pages  # noqa: E402  (what docs/api/ lists: the build's parser)
import pending_pages  # noqa: E402  (the guide pages other branches are still writing)

BUILD_TIMEOUT_S = 900


@pytest.mark.slow  # 1.5-2 min of CPU: ~250 pages, ~200 of them generated API pages
def test_docs_build_with_warnings_as_errors_and_no_network(tmp_path):
    # build a copy: autosummary writes its generated pages into the source folder
    source = tmp_path / "docs"
    shutil.copytree(DOCS, source, ignore=shutil.ignore_patterns("_build", "generated", "__pycache__", ".ipynb_checkpoints"))
    out = tmp_path / "html"
    env = dict(os.environ, MPLBACKEND="Agg", JAX_PLATFORMS="cpu")
    # any attempt to fetch something (an intersphinx inventory, a remote image) fails, and
    # with -W so does the build
    env.update({k: "http://127.0.0.1:9" for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")})
    env.pop("no_proxy", None), env.pop("NO_PROXY", None)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(source), str(out)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    seconds = time.perf_counter() - t0
    assert done.returncode == 0, f"sphinx-build failed ({seconds:.0f} s):\n{done.stderr[-20000:]}"
    print(f"docs built in {seconds:.1f} s")
    # the pages a reader looks for are there, the notebooks with their outputs
    for page in ("index", "guide/getting_started", "guide/accounting", "guide/reproducing", "guide/troubleshooting",
                 "references", "contributing", "api/index", "notebooks/index", "notebooks/quickstart"):
        assert (out / f"{page}.html").exists(), page
    quickstart = (out / "notebooks" / "quickstart.html").read_text(encoding="utf-8")
    assert "cell_output" in quickstart and "<img" in quickstart, "the quickstart notebook renders without its outputs"
    generated = list((source / "api" / "generated").glob("*.rst"))
    assert len(generated) > 100, f"the API reference generated only {len(generated)} pages"
    for name in ("dpjax.run_coupled", "dpjax.accountants.PrivacyCurve", "dpjax.estimators.epsilon_lower_bound"):
        assert (out / "api" / "generated" / f"{name}.html").exists(), name


# ----------------------------------------------------------------------------------------
# the API reference says where each name lives: it must be true, and complete

API = DOCS / "api"
documented_names = api_pages.documented_names
_resolve = api_pages.resolve


def test_every_name_the_api_reference_lists_imports_from_where_it_says():
    listed = documented_names()
    assert len(listed) >= 8, f"the API reference lists only the modules {sorted(listed)}"
    missing = []
    for module_name, names in listed.items():
        for name in names:
            try:
                _resolve(module_name, name)
            except ImportError:
                missing.append(f"{module_name}.{name}")
    assert not missing, f"the API reference lists names that do not import from where it says: {missing}"


def test_the_api_reference_lists_every_public_name_of_each_package_it_documents():
    """Each name in the ``__all__`` of a package the reference documents is listed: under that
    package, or (a re-export) as the same object under another of its public homes."""
    listed = documented_names()
    objects = {id(_resolve(m, n)) for m, names in listed.items() for n in names}
    unlisted = []
    for module_name, names in listed.items():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            if name not in names and id(_resolve(module_name, name)) not in objects:
                unlisted.append(f"{module_name}.{name}")
    assert not unlisted, f"public names (in __all__) that docs/api/ does not list: {unlisted}"


def _public_packages() -> list[str]:
    import pkgutil

    import dpjax

    found = ["dpjax"]
    for info in pkgutil.walk_packages(dpjax.__path__, "dpjax."):
        parts = info.name.split(".")
        if info.ispkg and not any(part.startswith("_") for part in parts):
            found.append(info.name)
    return found


def test_every_public_package_has_a_place_in_the_api_reference():
    listed = documented_names()
    # a package is placed when a page lists its names, or lists it as a module of its parent
    placed = set(listed) | {f"{module}.{name}" for module, names in listed.items() for name in names}
    absent = [name for name in _public_packages() if name not in placed]
    assert not absent, f"public packages missing from docs/api/: {absent}"


# ----------------------------------------------------------------------------------------
# links: README.md and the pages point at files that exist

_MD_LINK = re.compile(r"\[[^\]]+\]\((?P<target>[^)#\s]+)(?:#[^)\s]*)?\)")


def _link_targets(path: pathlib.Path):
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # links inside code blocks are not links
    for match in _MD_LINK.finditer(text):
        target = match["target"]
        if re.match(r"[a-z]+:", target):  # http:, mailto:, ... (none needed offline)
            continue
        yield target


@pytest.mark.parametrize("page", [ROOT / "README.md"] + sorted(DOCS.rglob("*.md")), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_files_that_exist(page):
    if "_build" in page.parts:
        pytest.skip("build output")
    arriving = {DOCS / f"{name}.md" for name in pending_pages.missing_arrivals(DOCS)}
    broken = []
    for target in _link_targets(page):
        resolved = (page.parent / target).resolve()
        if not resolved.exists() and resolved not in arriving:
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to files that do not exist: {broken}"


# ----------------------------------------------------------------------------------------
# the pages use today's module paths, not the ones kept working for a release after a move


@pytest.mark.parametrize("page", [ROOT / "README.md"] + sorted(DOCS.rglob("*.md")), ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_name_no_moved_module_path(page):
    moved = pytest.importorskip("dpjax._moved").MOVED
    if "_build" in page.parts:
        pytest.skip("build output")
    text = page.read_text(encoding="utf-8")
    if page.name == "layout.md":  # the page that lists the old paths on purpose
        pytest.skip("names the old paths on purpose")
    old = sorted({m.group() for m in re.finditer(r"dpjax(?:\.\w+)+", text) if any(m.group() == o or m.group().startswith(o + ".") for o in moved)})
    assert not old, f"{page.relative_to(ROOT)} names moved module paths: " + ", ".join(f"{o} (now {_new_path(o, moved)})" for o in old)


def _new_path(old: str, moved: dict) -> str:
    prefix = max((o for o in moved if old == o or old.startswith(o + ".")), key=len)
    return moved[prefix] + old[len(prefix):]
