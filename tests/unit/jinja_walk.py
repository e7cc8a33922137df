"""The Jinja expressions of a loaded YAML document of tasks or plays, for the tests that read them
(test_playbook_vars.py: the variables a playbook reads; test_template_compat.py: expressions every ansible-core parses
alike)."""
from __future__ import annotations

# The keys whose string value is a bare Jinja expression, not a template.
CONDITIONS = {"when", "that", "failed_when", "changed_when", "until"}


def expressions(data, key=None):
    """(key, text, bare) of every Jinja expression of a document: a condition's string (bare: an expression), or a
    string holding a template (``{{ }}`` or ``{% %}``); key is the mapping key the string is the value of."""
    if isinstance(data, dict):
        for name, value in data.items():
            yield from expressions(value, name)
    elif isinstance(data, list):
        for value in data:
            yield from expressions(value, key)
    elif isinstance(data, str):
        if key in CONDITIONS:
            yield key, data, True
        elif "{{" in data or "{%" in data:
            yield key, data, False
