"""Sphinx configuration of the tieaudit documentation (``make docs`` builds it into ``site/``).

Sphinx, because the docstrings are reStructuredText with Sphinx roles (``:func:``, ``:mod:``)
that autodoc renders and links as they are; the pages are Markdown (MyST), the theme is the
PyData one. The build is offline: MathJax comes from the sphinx-mathjax-offline package, copied
into the site, and nothing is fetched.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tieaudit

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "tieaudit"
author = "The tieaudit contributors"
copyright = "the tieaudit contributors"  # noqa: A001 - the name Sphinx reads
release = version = tieaudit.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "generated_pages",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "results_page.png"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_preserve_defaults = True

# MathJax 3 (SVG output: no web fonts to fetch) from the installed package, copied to _static/.
_MATHJAX = Path(__import__("importlib").util.find_spec("sphinx-mathjax-offline").origin).parent
html_static_path = [str(_MATHJAX / "static" / "mathjax" / "tex-svg.js")]
mathjax_path = "tex-svg.js"

html_theme = "pydata_sphinx_theme"
html_title = f"tieaudit {release}"
# Every section in the header (none under "More") and each section's pages in the left sidebar;
# the pages of no section (the home page, Install, Changelog) have no left sidebar to leave empty.
html_theme_options = {
    "header_links_before_dropdown": 6,
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": [], "install": [], "changelog": []}
html_show_sourcelink = False
html_last_updated_fmt = None
