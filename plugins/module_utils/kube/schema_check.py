# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A declared object against the OpenAPI schema of the CRD version the cluster serves, before the dry-run, for
what is certain: a scalar of the wrong type (an integer field written as a string, a string field as a number,
a boolean as a word), a mapping where a list is declared (and the reverse), and a field the schema does not
declare. The dry-run would refuse each of these with server-side apply's typed-patch error (HTTP 500, no field)
or with the structural schema's words; here each is one problem with the field path and the fix
(server_errors words them). Everything else (enums, patterns, bounds, CEL rules, webhooks) stays the API
server's to judge. Pure logic: no cluster, no Ansible.
"""

from ansible_collections.kueueops.aks.plugins.module_utils.kube import server_errors


def problems(obj, schema, kind_label):
    """[(field, problem, fix)] for ``obj`` against ``schema`` (a CRD version's ``openAPIV3Schema``)."""
    out = []
    _walk(obj, schema or {}, '', kind_label, out)
    return out


def _walk(value, schema, path, kind_label, out):
    if value is None or not isinstance(schema, dict):
        return
    if schema.get('x-kubernetes-int-or-string'):
        if isinstance(value, (dict, list, bool)):
            out.append(server_errors.type_problem(path, 'any scalar', value))
        return
    kind = schema.get('type')
    if kind == 'object':
        if not isinstance(value, dict):
            out.append(server_errors.type_problem(path, 'map', value))
            return
        props = schema.get('properties') or {}
        extra = schema.get('additionalProperties')
        for name, child in value.items():
            where = server_errors.child(path, name)
            if name in props:
                _walk(child, props[name], where, kind_label, out)
            elif isinstance(extra, dict):
                _walk(child, extra, where, kind_label, out)
            elif props and not extra and not schema.get('x-kubernetes-preserve-unknown-fields'):
                out.append(server_errors.unknown_field(where, kind_label, sorted(props)))
    elif kind == 'array':
        if not isinstance(value, list):
            out.append(server_errors.type_problem(path, 'list', value))
            return
        for idx, item in enumerate(value):
            _walk(item, schema.get('items') or {}, server_errors.child(path, idx), kind_label, out)
    elif kind == 'string':
        if not isinstance(value, str):
            out.append(server_errors.type_problem(path, 'string', value))
    elif kind in ('integer', 'number'):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            out.append(server_errors.type_problem(path, 'numeric (int or float)', value))
    elif kind == 'boolean':
        if not isinstance(value, bool):
            out.append(server_errors.type_problem(path, 'boolean', value))


def served_schema(crd, version):
    """The ``openAPIV3Schema`` of ``version`` in a CustomResourceDefinition, or None."""
    for item in ((crd or {}).get('spec') or {}).get('versions') or []:
        if item.get('name') == version and item.get('served'):
            return ((item.get('schema') or {}).get('openAPIV3Schema')) or None
    return None
