"""docs/rbac.md's table counts the rules of every ClusterRole and Role in docs/rbac/*.yaml; it must say what the files
hold (it said 4 Role rules for uninstall.yaml, which has 5)."""
import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _roles(path):
    """(kind, namespace, rule count) of every ClusterRole and Role in the file (List items included)."""
    def walk(doc):
        if doc.get('kind') == 'List':
            for item in doc.get('items') or []:
                yield from walk(item)
        else:
            yield doc
    with open(path) as handle:
        docs = [d for d in yaml.safe_load_all(handle) if d]
    return [(d['kind'], d['metadata'].get('namespace', ''), len(d.get('rules') or []))
            for top in docs for d in walk(top) if d['kind'] in ('ClusterRole', 'Role')]


def _table():
    """file -> (ClusterRole rules cell, Role rules cell) of docs/rbac.md's first table."""
    rows = {}
    with open(os.path.join(ROOT, 'docs', 'rbac.md')) as handle:
        for line in handle:
            m = re.match(r'^\| \[`([a-z-]+\.yaml)`\]\(rbac/[a-z-]+\.yaml\) \|[^|]*\| ([^|]+) \| ([^|]+) \|', line)
            if m:
                rows[m.group(1)] = (m.group(2).strip(), m.group(3).strip())
    return rows


def _numbers(cell):
    return [int(n) for n in re.findall(r'\b(\d+)\b', cell)]


def test_the_table_counts_the_rules_of_every_file():
    table = _table()
    files = sorted(f for f in os.listdir(os.path.join(ROOT, 'docs', 'rbac')) if f.endswith('.yaml'))
    assert sorted(table) == files
    for name in files:
        roles = _roles(os.path.join(ROOT, 'docs', 'rbac', name))
        cluster_cell, role_cell = table[name]
        assert sorted(_numbers(cluster_cell)) == sorted(n for kind, _, n in roles if kind == 'ClusterRole'), name
        role_counts = dict((ns, n) for kind, ns, n in roles if kind == 'Role')
        written = dict((ns, int(n)) for n, ns in re.findall(r'(\d+) in `([a-z-]+)`', role_cell))
        assert written == role_counts, name
