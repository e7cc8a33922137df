"""No function in plugins/ is longer than 80 lines or takes more than 7 parameters (issue 42), generated data aside
(``*_data.py``, written by hack/gen_kueue_catalog.py). A long procedure is split into named steps; a long parameter
list becomes a value (``HelmUpgrade``, ``Contents``, ``WatchRules``). The sources are read with ``ast``, as the other
unit tests of what ships read them (python_sources)."""
from __future__ import annotations

import ast

from tests.unit.python_sources import plugin_sources

MAX_LINES = 80
MAX_PARAMS = 7


def oversized(sources):
    """``path:function (N lines, M parameters)`` of every function over either limit (``self``/``cls`` not counted;
    ``*args`` and ``**kwargs`` count one each)."""
    out = []
    for path, source in sorted(sources.items()):
        if path.endswith('_data.py'):
            continue
        for node in ast.walk(ast.parse(source, path)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
            if params and params[0] in ('self', 'cls'):
                params = params[1:]
            count = len(params) + bool(args.vararg) + bool(args.kwarg)
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_LINES or count > MAX_PARAMS:
                out.append('%s:%s (%d lines, %d parameters)' % (path, node.name, lines, count))
    return out


def test_no_function_in_plugins_is_over_80_lines_or_7_parameters():
    assert oversized(plugin_sources()) == []


def test_the_check_sees_a_long_function_and_a_long_parameter_list():
    body = ''.join('    x = %d\n' % i for i in range(MAX_LINES))
    wide = '    def wide(self, a, b, c, d, e, f, g, *rest):\n        pass\n'
    fine = '    def fine(self, a, b, c, d, e, f, g):\n        pass\n'
    sources = {'plugins/module_utils/x.py': 'def long():\n' + body + '\n\nclass C:\n' + wide + '\n' + fine,
               'plugins/module_utils/x_data.py': 'def generated():\n' + body}
    assert oversized(sources) == ['plugins/module_utils/x.py:long (81 lines, 0 parameters)',
                                  'plugins/module_utils/x.py:wide (2 lines, 8 parameters)']
