"""Every relative link of README.md and of the documentation's sources (docs/**/*.md) resolves: the
file it names exists, and a ``#fragment`` names a heading of that page (GitHub's and MyST's
anchors: lowercase, punctuation dropped, spaces as ``-``). The Sphinx build checks the links
between pages it builds; this also covers the README, which the site does not include, and links
from the pages to files of the repository."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md")
                                     if "_generated" not in p.parts)]  # fmt: skip
GENERATED = ROOT / "docs" / "reference" / "_generated"  # written by the build: docs/_ext
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """``text`` without fenced blocks and inline code, where brackets are not links."""
    text = re.sub(r"(?ms)^(```|~~~).*?^\1[^\n]*$", "", text)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path: Path) -> set[str]:
    """The anchors of the headings of the Markdown file ``path``."""
    out = set()
    for heading in re.findall(r"(?m)^#{1,6} +(.+?) *$", prose(path.read_text(encoding="utf-8"))):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def relative_links(path: Path) -> list[str]:
    found = LINK.findall(prose(path.read_text(encoding="utf-8")))
    return [t for t in found if not re.match(r"[a-z][a-z0-9+.-]*:", t)]  # no http:, mailto:


@functools.cache
def generated_pages() -> frozenset[Path]:
    """The pages ``make docs`` writes before it reads the sources (docs/_ext/generated_pages.py)."""
    from tests.test_site import generated_pages as module

    return frozenset(GENERATED / name for name in module().PAGES)


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in relative_links(path):
        file, _, fragment = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if dest in generated_pages():
            continue
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: no heading #{fragment} in {dest.name}")
    return broken


def test_the_readme_links_into_the_docs() -> None:
    targets = relative_links(ROOT / "README.md")
    assert any(t.startswith("docs/tutorials/") for t in targets), targets
    assert any(t.startswith("docs/guide/") for t in targets), targets


@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# A page\n\n## Its part\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#its-part) [here](#title) `[code](nowhere.md)`\n"
                    "# Title\n[gone](missing.md) [bad](other.md#no-part) [web](https://x.y/z)\n"
                    "```\n[in a block](missing2.md)\n```\n")  # fmt: skip
    assert broken_links(page) == ["missing.md: no such file",
                                  "other.md#no-part: no heading #no-part in other.md"]  # fmt: skip
