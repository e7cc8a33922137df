# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Whether a server-side apply would leave an object as it is, decided locally from the live object.

A re-run with nothing to do should not cost a server-side dry-run per object (issue 17). The API server's own
record of the last apply is the live object's ``managedFields`` entry of this collection's field manager: the
fields it owns (``fieldsV1``) and the API version it was applied at. An apply of the declared object ``D``
changes nothing when

- the entry exists, was written by an Apply at the version ``D`` is sent at (no conversion) (or ``D`` declares
  nothing but its identity, e.g. a ResourceFlavor without ``spec``: such an apply owns no field, and the API
  server keeps no entry for an empty field set), and
- the live object projected onto that entry's fields equals ``D`` exactly: every field ``D`` declares is owned
  with the value ``D`` gives it (quantities compared by amount), and no owned field is missing from ``D`` (an
  apply would drop it), and
- no other manager owns any of those fields (an apply could then conflict, or share ownership differently).

Anything else is a doubt, answered ``None`` with the reason, and the caller asks the API server with a dry-run
as before: an object that does not exist yet, a Secret (``stringData`` is never read back), an entry missing or
at another version, a field set this reader does not understand, an associative list whose order differs, a
value or an owned field that differs. Fields that Kueue's webhooks or the API server add on their own and
attribute to the applier make the projection differ from ``D``: those objects simply keep the dry-run.

Pure: no Ansible, no client. ``tests/unit/plugins/module_utils/test_managed_fields.py`` covers each reason;
``tests/integration/test_fast_path.py`` proves against the real API server that a local "unchanged" is never
an apply that would change the object.
"""

import copy
import json

from ansible_collections.kueueops.aks.plugins.module_utils.kueue.queues import (
    FIELD_MANAGER, canonical_quantities, own_apply_entry)


def drop_subresource_entries(obj):
    """``obj`` (a live object, changed in place) without the ``managedFields`` entries of a subresource (Kueue's
    ``status`` writes). No decision of a run reads them: ``unchanged_reason`` skips them, ``own_apply_entry`` and
    ``managed_by`` look for this collection's Apply of the object itself, and ``comparable`` drops managedFields.
    They are about half of a live LocalQueue in memory (its status field set names every flavor and resource), so
    a run over 10,000 queues keeps the live state it needs in half the memory (issue 17, ten times the scale)."""
    meta = obj.get('metadata') if isinstance(obj, dict) else None
    entries = meta.get('managedFields') if isinstance(meta, dict) else None
    if isinstance(entries, list):
        meta['managedFields'] = [e for e in entries if not (isinstance(e, dict) and e.get('subresource'))]
    return obj


class Unsure(Exception):
    """The field set holds something this reader does not interpret; ask the API server."""


def project(value, fields):
    """``value`` restricted to the fields of a ``fieldsV1`` set (an empty set: the whole value, a leaf).

    ``f:name`` selects a member of a mapping, ``k:{...}`` the element of an associative list with those keys,
    ``v:...`` an element of a set list; ``.`` (the element itself) adds nothing. Anything else, and a field or
    element named in the set that ``value`` lacks (an apply would then change the field set), raises
    ``Unsure``."""
    if not isinstance(fields, dict):
        raise Unsure('a field set that is not a mapping')
    if not fields:
        return copy.deepcopy(value)
    if isinstance(value, dict):
        out = {}
        for key, sub in fields.items():
            if key == '.':
                continue
            if not key.startswith('f:'):
                raise Unsure('%s in a mapping' % key[:2])
            name = key[2:]
            if name not in value:
                raise Unsure('an owned field %s that the object lacks' % name)
            out[name] = project(value[name], sub)
        return out
    if isinstance(value, list):
        picked = []
        for key, sub in fields.items():
            if key == '.':
                continue
            try:
                wanted = json.loads(key[2:]) if key[:2] in ('k:', 'v:') else None
            except ValueError:
                raise Unsure('a list key that is not JSON')
            if key.startswith('k:'):
                if not isinstance(wanted, dict):
                    raise Unsure('list key %s' % key)
                found = [i for i, item in enumerate(value)
                         if isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items())]
                if len(found) != 1:
                    raise Unsure('%d list elements for %s' % (len(found), key))
                picked.append((found[0], project(value[found[0]], sub)))
            elif key.startswith('v:'):
                found = [i for i, item in enumerate(value) if item == wanted]
                if len(found) != 1:
                    raise Unsure('%d set elements for %s' % (len(found), key))
                picked.append((found[0], copy.deepcopy(wanted)))
            else:
                raise Unsure('%s in a list' % key[:2])
        return [item for _index, item in sorted(picked, key=lambda pair: pair[0])]
    raise Unsure('fields below a scalar')


def _leaves(fields, prefix=()):
    """Every path of a ``fieldsV1`` set down to its leaves (``.`` markers left out)."""
    out = set()
    for key, sub in (fields if isinstance(fields, dict) else {}).items():
        if key == '.':
            continue
        if sub:
            out.update(_leaves(sub, prefix + (key,)))
        else:
            out.add(prefix + (key,))
    return out


def _overlaps(mine, theirs):
    """Whether two sets of leaf paths share a field (one path is the other's ancestor, or equal)."""
    for path in theirs:
        for length in range(1, len(path) + 1):
            if path[:length] in mine:
                return True
    for path in mine:
        for length in range(1, len(path)):
            if path[:length] in theirs:
                return True
    return False


def _declared(obj):
    """What an apply of ``obj`` asks to own: the object without apiVersion, kind, name and namespace (identity,
    never listed in ``managedFields``)."""
    out = copy.deepcopy(obj)
    out.pop('apiVersion', None)
    out.pop('kind', None)
    meta = out.get('metadata')
    if isinstance(meta, dict):
        meta.pop('name', None)
        meta.pop('namespace', None)
        if not meta:
            out.pop('metadata')
    return out


def unchanged_reason(obj, live, manager=FIELD_MANAGER):
    """``None`` when applying ``obj`` (the declared object, at the version it is sent) would change neither
    ``live`` nor its managedFields; otherwise why the API server must be asked (a short phrase)."""
    if live is None:
        return 'not in the cluster yet'
    if obj.get('kind') == 'Secret':
        return 'a Secret (its stringData is never read back)'
    entry = own_apply_entry(live, manager)
    if entry is None:
        if not _declared(obj) and live.get('apiVersion') == obj.get('apiVersion'):
            # Nothing declared but the identity (a ResourceFlavor without spec): an apply owns no field, so it
            # changes nothing, and the API server keeps no managedFields entry for an empty field set, so there
            # never is one to compare with.
            return None
        return 'not applied by %s yet' % manager
    if entry.get('apiVersion') != obj.get('apiVersion') or live.get('apiVersion') != obj.get('apiVersion'):
        return 'last applied at %s, declared at %s' % (entry.get('apiVersion'), obj.get('apiVersion'))
    if entry.get('fieldsType', 'FieldsV1') != 'FieldsV1':
        return 'managedFields of type %s' % entry.get('fieldsType')
    fields = entry.get('fieldsV1') or {}
    try:
        owned = project(live, fields)
    except Unsure as exc:
        return 'a field set not read locally (%s)' % exc
    if canonical_quantities(owned) != canonical_quantities(_declared(obj)):
        return 'owned fields differ from the declared ones'
    mine = _leaves(fields)
    for other in (live.get('metadata') or {}).get('managedFields') or []:
        if other is entry or other.get('subresource'):
            continue
        if _overlaps(mine, _leaves(other.get('fieldsV1'))):
            return 'a declared field is also owned by %s' % other.get('manager')
    return None
