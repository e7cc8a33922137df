"""Jinja expressions of the role and playbooks that every supported ansible-core parses alike.

ansible-core before 2.19 doubles every backslash inside a Jinja expression before Jinja reads it
(Templar's escape_backslashes), so a quote escaped inside a string literal, 'AKS\\'s', ends the literal
there on 2.16-2.18: the task fails with "template error ... expected token ')'" instead of printing its
message, while 2.19 prints it. meta/runtime.yml accepts 2.16, so such an escape is a bug; write the
literal in the other kind of quotes ("AKS's") instead. hack/compat.sh runs the playbooks on 2.16; this
catches the escapes in tasks that those runs do not reach (failure messages of rare paths).
"""
from __future__ import annotations

import os
import re

import pytest
import yaml
from jinja_walk import expressions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIRS = ("roles", "playbooks")
BLOCK = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
ESCAPED_QUOTE = re.compile(r"\\['\"]")


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_multi_constructor("!", lambda loader, suffix, node: loader.construct_scalar(node)
                              if isinstance(node, yaml.ScalarNode) else None)


def _yaml_files():
    for top in DIRS:
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if name.endswith((".yml", ".yaml")):
                    yield os.path.join(dirpath, name)


def _offenders(text: str):
    found = []
    for doc in yaml.load_all(text, Loader=_Loader):  # noqa: S506 - a SafeLoader subclass
        for key, value, bare in expressions(doc):
            for expr in [value] if bare else BLOCK.findall(value):
                if ESCAPED_QUOTE.search(expr):
                    found.append("%s: %s" % (key, " ".join(expr.split())[:160]))
    return found


def test_the_check_finds_an_escaped_quote_and_passes_the_other_quotes():
    bad = "- name: x\n  ansible.builtin.fail:\n    msg: >-\n      {{ ('in AKS\\'s config') if a else '' }}\n"
    good = "- name: x\n  ansible.builtin.fail:\n    msg: >-\n      {{ (\"in AKS's config\") if a else '' }}\n"
    cond = "- name: x\n  ansible.builtin.debug: {}\n  when: a == 'it\\'s'\n"
    assert len(_offenders(bad)) == 1 and _offenders(good) == [] and len(_offenders(cond)) == 1


@pytest.mark.parametrize("path", list(_yaml_files()), ids=lambda p: os.path.relpath(p, ROOT))
def test_no_backslash_escaped_quote_in_a_jinja_expression(path):
    with open(path) as handle:
        found = _offenders(handle.read())
    assert not found, "%s: a backslash-escaped quote inside a Jinja expression breaks on ansible-core < 2.19; " \
        "use the other kind of quotes for that literal: %s" % (os.path.relpath(path, ROOT), found)
