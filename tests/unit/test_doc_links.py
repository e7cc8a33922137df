"""Every relative link of the Markdown documentation resolves (issue 43): README.md, CONTRIBUTING.md, docs/**/*.md, the
roles' READMEs and bench/README.md. A link to a file must name one of the repository (relative to the page, as GitHub
and Galaxy resolve it); a link to an anchor (#section, or page.md#section) must name a heading of that page, by the
anchor GitHub gives it (lower case, punctuation dropped, spaces to hyphens)."""
from __future__ import annotations

import glob
import os
import re
import urllib.parse

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATTERNS = ("README.md", "CONTRIBUTING.md", "docs/**/*.md", "roles/*/README.md", "bench/README.md")
PAGES = sorted({os.path.relpath(p, ROOT) for pattern in PATTERNS for p in glob.glob(os.path.join(ROOT, pattern), recursive=True)})
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _without_code(text: str) -> str:
    """The page without its fenced code blocks and inline code (a link there is an example, not a link)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path: str) -> set:
    """GitHub's anchors of a Markdown page's headings (a repeated heading gets -1, -2, ...)."""
    with open(path) as handle:
        text = re.sub(r"^```.*?^```", "", handle.read(), flags=re.S | re.M)
    seen, found = {}, set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", "")).replace(" ", "-")
        found.add(slug if slug not in seen else "%s-%d" % (slug, seen[slug]))
        seen[slug] = seen.get(slug, 0) + 1
    return found


def links(page: str, root: str = ROOT) -> list:
    with open(os.path.join(root, page)) as handle:
        return LINK.findall(_without_code(handle.read()))


def broken(page: str, root: str = ROOT) -> list:
    out = []
    for href in links(page, root):
        parts = urllib.parse.urlsplit(href)
        if parts.scheme or parts.netloc or href.startswith("mailto:"):
            continue
        target = os.path.normpath(os.path.join(root, os.path.dirname(page), urllib.parse.unquote(parts.path))) \
            if parts.path else os.path.join(root, page)
        if not target.startswith(root + os.sep) or not os.path.exists(target):
            out.append(href)
        elif parts.fragment and target.endswith(".md") and parts.fragment not in anchors(target):
            out.append(href)
    return out


def test_the_pages_are_found():
    assert {"README.md", "CONTRIBUTING.md", "docs/rbac.md", "docs/usage.md", "docs/dev/testing.md",
            "roles/install/README.md"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_resolves(page):
    assert broken(page) == [], "%s links to what the repository does not have" % page


def test_the_check_finds_a_broken_link(tmp_path):
    assert "supported-versions" in anchors(os.path.join(ROOT, "README.md"))
    # what the stale text of docs/rbac.md had: a link written for the README, relative to the wrong folder
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# R\n")
    (tmp_path / "docs" / "rbac.md").write_text("# Least privilege\n## How it is `tested`\n")
    (tmp_path / "docs" / "page.md").write_text(
        "# T\n[rbac](docs/rbac.md) [ok](../README.md) [a](#t) [b](#nope) [c](rbac.md#how-it-is-tested) "
        "[d](rbac.md#least) `[e](nothing.md)`\n```\n[f](nothing.md)\n```\n")
    assert broken("docs/page.md", str(tmp_path)) == ["docs/rbac.md", "#nope", "rbac.md#least"]
