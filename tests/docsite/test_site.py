"""The docs site renders in a browser (issue 43): headless Chromium, Debian's package (hack/chromium.sh), opens the
built site (make docs: hack/docs.sh) from file:// URLs in a network namespace with nothing but loopback
(hack/offline.sh), and the DOM it builds is checked: the index, and one page of each kind (module, role, filter,
guide; and the shared role's page, which must not be a copy of the job roles'), each with its title, its option
tables listing what the plugin's or role's documentation declares, only resources of the site itself, and no relative
link to a page or anchor that does not exist.

    make docs && .venv/bin/python -m pytest -q -p no:cacheprovider tests/docsite

KUEUEOPS_DOCS_SITE names another built site (default build/docs/build/html). hack/sanity.sh runs both.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
from html.parser import HTMLParser

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.path.abspath(os.environ.get("KUEUEOPS_DOCS_SITE") or os.path.join(ROOT, "build", "docs", "build", "html"))
COLLECTION = "kueueops.aks"


class Page(HTMLParser):
    """What the checks need of a DOM: title, h1, ids, links, loaded resources, option tables' option names."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.h1 = []
        self.ids = set()
        self.links = []
        self.resources = []
        self.option_tables = 0
        self.options = []          # the names of the option rows, in order (ansible-option-title)
        self._in = None            # "title", "h1" or "option" while collecting that text
        self._text = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key) and (key == "id" or tag == "a"):
                self.ids.add(attrs[key])
        classes = (attrs.get("class") or "").split()
        if tag == "a" and attrs.get("href") is not None:
            self.links.append(attrs["href"])
        elif tag in ("script", "img") and attrs.get("src"):
            self.resources.append(attrs["src"])
        elif tag == "link" and "stylesheet" in (attrs.get("rel") or "").split():
            self.resources.append(attrs.get("href", ""))
        if tag == "table" and "ansible-option-table" in classes:
            self.option_tables += 1
        if tag == "title" or tag == "h1":
            self._in, self._text = tag, []
        elif tag == "p" and "ansible-option-title" in classes:
            self._in, self._text = "option", []

    def handle_endtag(self, tag):
        if self._in and (tag == self._in or (self._in == "option" and tag == "p")):
            text = " ".join("".join(self._text).split())
            if self._in == "title":
                self.title = text
            elif self._in == "h1":
                self.h1.append(text.rstrip("\uf0c1 "))
            else:
                self.options.append(text)
            self._in = None

    def handle_data(self, data):
        if self._in:
            self._text.append(data)


@pytest.fixture(scope="session")
def chromium():
    index = os.path.join(SITE, "index.html")
    assert os.path.isfile(index), "no docs site in %s: build it with make docs (hack/docs.sh)" % SITE
    return subprocess.run([os.path.join(ROOT, "hack", "chromium.sh")], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="session")
def open_page(chromium):
    """The DOM Chromium builds of a page of the site (its scripts run), cached per page."""
    doms = {}

    def dom(page: str) -> Page:
        if page not in doms:
            path = os.path.join(SITE, page)
            assert os.path.isfile(path), "%s is not in the site" % page
            with tempfile.TemporaryDirectory() as profile:
                run = subprocess.run(
                    [os.path.join(ROOT, "hack", "offline.sh"), chromium, "--headless", "--no-sandbox", "--disable-gpu",
                     "--no-first-run", "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--user-data-dir=" + profile, "--dump-dom", "file://" + path],
                    capture_output=True, text=True, timeout=120)
            assert run.returncode == 0 and "</html>" in run.stdout, (page, run.returncode, run.stderr[-2000:])
            doms[page] = Page(run.stdout)
        return doms[page]
    return dom


def _static_ids(path: str) -> set:
    with open(path, encoding="utf-8") as handle:
        return Page(handle.read()).ids


def broken_links(page: str, dom: Page) -> list:
    """The relative links of a page whose file, or anchor in it, is not in the site."""
    broken, ids = [], {}
    here = os.path.dirname(os.path.join(SITE, page))
    for href in dom.links:
        parts = urllib.parse.urlsplit(href)
        if parts.scheme or parts.netloc or href.startswith("mailto:"):
            continue    # a link out of the site
        target = os.path.normpath(os.path.join(here, urllib.parse.unquote(parts.path))) if parts.path else \
            os.path.join(SITE, page)
        if not target.startswith(SITE + os.sep) or not os.path.isfile(target):
            broken.append(href)
            continue
        if parts.fragment:
            if target not in ids:
                ids[target] = dom.ids if target == os.path.join(SITE, page) else _static_ids(target)
            if urllib.parse.unquote(parts.fragment) not in ids[target]:
                broken.append(href)
    return broken


def _doc(kind: str, name: str) -> dict:
    """The documentation ansible-doc gives of a plugin of the collection (doc fragments merged)."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".venv", "collections"))
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "-t", kind, "--json",
                          "%s.%s" % (COLLECTION, name)], capture_output=True, text=True, check=True, env=env).stdout
    return json.loads(out)["%s.%s" % (COLLECTION, name)]["doc"]


def _names(directory: str, suffix: str) -> list:
    return sorted(f[:-len(suffix)] for f in os.listdir(os.path.join(ROOT, directory))
                  if f.endswith(suffix) and not f.startswith("_"))


def _guides() -> list:
    with open(os.path.join(ROOT, "docs", "docsite", "extra-docs.yml")) as handle:
        return [guide for section in yaml.safe_load(handle)["sections"] for guide in section["toctree"]]


def _check_page(page: str, dom: Page):
    assert dom.title and dom.h1, (page, dom.title, dom.h1)
    assert dom.title.startswith(dom.h1[0]), (page, dom.title, dom.h1)
    assert dom.title.endswith("\u2014 %s documentation" % COLLECTION), (page, dom.title)
    assert broken_links(page, dom) == [], page
    # everything the page loads is the site's own: it renders offline, and never calls out
    assert [r for r in dom.resources if urllib.parse.urlsplit(r).scheme or r.startswith("//")] == [], page


def test_the_index_links_every_module_filter_role_and_guide(open_page):
    dom = open_page("index.html")
    _check_page("index.html", dom)
    pages = set(urllib.parse.urlsplit(href).path for href in dom.links)
    expected = ({"%s_module.html" % m for m in _names("plugins/modules", ".py")}
                | {"%s_filter.html" % f for f in _names("plugins/filter", ".py")}
                | {"%s_role.html" % r for r in sorted(os.listdir(os.path.join(ROOT, "roles")))}
                | {"docsite/%s.html" % g for g in _guides()})
    assert expected - pages == set(), "the index does not link these pages"


def test_a_module_page(open_page):
    dom = open_page("kueue_helm_module.html")
    _check_page("kueue_helm_module.html", dom)
    doc = _doc("module", "kueue_helm")
    assert dom.h1[0] == "%s.kueue_helm module – %s" % (COLLECTION, doc["short_description"])
    # the parameter table, then the attributes and return value tables: every documented option has its row
    assert dom.option_tables >= 2
    assert set(doc["options"]) <= set(dom.options), set(doc["options"]) - set(dom.options)
    assert set(doc["options"]) >= {"chart_ref", "chart_version", "kubeconfig"}


def test_a_role_page(open_page):
    dom = open_page("install_role.html")
    _check_page("install_role.html", dom)
    with open(os.path.join(ROOT, "roles", "install", "meta", "argument_specs.yml")) as handle:
        main = yaml.safe_load(handle)["argument_specs"]["main"]
    assert dom.h1[0] == "%s.install role – %s" % (COLLECTION, main["short_description"])
    assert dom.option_tables == 1
    assert dom.options == sorted(main["options"]), "the entry point's table lists every option, by name"


def test_the_shared_role_page_lists_its_entry_points_without_a_copy_of_the_job_roles_options(open_page):
    dom = open_page("kueue_role.html")
    _check_page("kueue_role.html", dom)
    assert dom.option_tables == 0 and dom.options == []
    with open(os.path.join(ROOT, "roles", "kueue", "meta", "argument_specs.yml")) as handle:
        entry_points = yaml.safe_load(handle)["argument_specs"]
    assert set(entry_points) == {"main", "install", "configure_queues", "uninstall_with_backup", "upgrade", "multikueue"}
    for entry in entry_points:
        assert "ansible-collections-kueueops-aks-kueue-role-entrypoint-" + entry.replace("_", "-") in dom.ids, entry
    pages = set(urllib.parse.urlsplit(href).path for href in dom.links)
    assert {"%s_role.html" % r for r in entry_points if r != "main"} <= pages, "each entry point links its job role"


def test_a_filter_page(open_page):
    dom = open_page("kueue_release_filter.html")
    _check_page("kueue_release_filter.html", dom)
    doc = _doc("filter", "kueue_release")
    assert dom.h1[0] == "%s.kueue_release filter – %s" % (COLLECTION, doc["short_description"])
    # the input table (its _input option), the other options if any, the return value table
    expected = ["Input" if name == "_input" else name for name in doc["options"]] + ["Return value"]
    assert dom.option_tables == 2 and sorted(dom.options) == sorted(expected), dom.options


@pytest.mark.parametrize("guide", ["playbooks"])
def test_a_guide_page(open_page, guide):
    page = "docsite/%s.html" % guide
    dom = open_page(page)
    _check_page(page, dom)
    with open(os.path.join(ROOT, "docs", "docsite", "rst", guide + ".rst")) as handle:
        text = handle.read()
    lines = text.splitlines()
    # the title: the first line underlined (a line of one punctuation character, at least as long)
    title = next(lines[i - 1].strip() for i in range(1, len(lines)) if lines[i] and len(set(lines[i])) == 1
                 and lines[i][0] in "=-*#~^" and lines[i - 1].strip() and len(lines[i]) >= len(lines[i - 1].strip()))
    assert dom.h1[0] == title
    # every plugin or role page the guide references is linked (and resolves: broken_links above)
    referenced = set("%s_%s.html" % ref for ref in re.findall(r"ansible_collections\.kueueops\.aks\.(\w+)_(module|role|filter)", text)
                     + re.findall(r":ans(?:plugin|opt):`kueueops\.aks\.(\w+)#(module|role|filter)\b", text))
    linked = set(os.path.basename(urllib.parse.urlsplit(href).path) for href in dom.links)
    assert referenced and referenced <= linked, referenced - linked
