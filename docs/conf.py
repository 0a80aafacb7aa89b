"""Sphinx configuration: MyST pages, myst-nb notebooks, API reference from the docstrings.

Built by the test suite (tests/test_docs.py) with warnings as errors and no network:
``python -m sphinx -W --keep-going -b html docs docs/_build/html``. docs/contributing.md says
why each choice was made.
"""
from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import dpjax  # noqa: E402  (the installed package: `pip install -e .`)

project = "dpjax"
author = "the dpjax authors"
copyright = "the dpjax authors"
release = version = dpjax.__version__

extensions = [
    "myst_nb",  # MyST Markdown pages and Jupyter notebooks (includes myst_parser)
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",  # the few Google-style Args:/Returns: sections
    "plain_docstrings",  # dpjax's plain-text docstrings: |x| and hanging indents (see the module)
    "pending_pages",  # guide pages that land in a later merge: a link to one is text until then
    "api_pages",  # one documented home per class (see the module)
]

root_doc = "index"
exclude_patterns = ["_build", "_ext", "_templates", "jupyter_execute", "**/.ipynb_checkpoints", "README.md"]
templates_path = ["_templates"]

# MyST: headings get anchors so pages can link to sections (page.md#a-heading)
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# notebooks: rendered from the copies in docs/notebooks/, whose outputs tools/docs/render_notebooks.py
# wrote and tests/test_notebooks.py compares with its own execution; the build executes nothing
nb_execution_mode = "off"
nb_output_stderr = "remove"

# API reference: one page per public name, listed on the package pages under docs/api/
autosummary_generate = True
autosummary_ignore_module_all = False
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# no network: nothing is fetched at build time (no intersphinx, no remote images)
html_theme = "sphinx_book_theme"
html_title = f"dpjax {release}"
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # the sidebar shows the open branch only: building the whole tree into each of the ~250
    # pages was a third of the build's time
    "collapse_navigation": True,
    "max_navbar_depth": 2,
    "show_navbar_depth": 1,
}
html_static_path = ["_static"]
html_css_files = ["dpjax.css"]  # a wider article column for the result tables
html_last_updated_fmt = None
