"""The Python sources of the collection and their imports, read with ``ast`` (the unit tests of what ships and of
module_utils' layers read them this one way)."""
from __future__ import annotations

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def imports(name, source):
    """(module, names imported from it or None, relative) for every import of the file."""
    package = os.path.dirname(name).replace('/', '.')
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, False
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ''
            if node.level:
                base = package.split('.')[:len(package.split('.')) - node.level + 1]
                module = '.'.join(base + ([module] if module else []))
            yield module, [alias.name for alias in node.names], bool(node.level)


def plugin_sources():
    """{path: source} of every Python file under plugins/ in this checkout (what ships as plugins)."""
    out = {}
    for folder, _dirs, names in os.walk(os.path.join(ROOT, 'plugins')):
        for name in names:
            if name.endswith('.py'):
                full = os.path.join(folder, name)
                with open(full, encoding='utf-8') as handle:
                    out[os.path.relpath(full, ROOT).replace(os.sep, '/')] = handle.read()
    return out
