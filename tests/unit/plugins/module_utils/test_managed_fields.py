"""managed_fields: the local "an apply would change nothing" decision, one test per reason to ask the API server.
The proof against the real API server (never "unchanged" where the dry-run says "changed") is
tests/integration/test_fast_path.py."""

import copy

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import managed_fields as mf

V = 'kueue.x-k8s.io/v1beta2'


def declared():
    return {'apiVersion': V, 'kind': 'ClusterQueue', 'metadata': {'name': 'team-a', 'labels': {'team': 'a'}},
            'spec': {'cohortName': 'all', 'namespaceSelector': {},
                     'resourceGroups': [{'coveredResources': ['cpu'],
                                         'flavors': [{'name': 'default',
                                                      'resources': [{'name': 'cpu', 'nominalQuota': '8'}]}]}]}}


OWN_FIELDS = {'f:metadata': {'f:labels': {'f:team': {}}},
              'f:spec': {'f:cohortName': {}, 'f:namespaceSelector': {}, 'f:resourceGroups': {}}}


def live_of(obj, fields=None, manager='kueueops', api_version=V, extra_entries=()):
    live = copy.deepcopy(obj)
    live['metadata'].update(resourceVersion='7', uid='u', generation=1, finalizers=['kueue.x-k8s.io/resource-in-use'])
    live['spec']['queueingStrategy'] = 'BestEffortFIFO'  # a schema default nobody owns
    live['status'] = {'conditions': [{'type': 'Active', 'status': 'True'}]}
    live['metadata']['managedFields'] = [
        {'manager': manager, 'operation': 'Apply', 'apiVersion': api_version, 'fieldsType': 'FieldsV1',
         'fieldsV1': copy.deepcopy(OWN_FIELDS if fields is None else fields)},
        {'manager': 'kueue', 'operation': 'Update', 'apiVersion': V, 'fieldsType': 'FieldsV1',
         'fieldsV1': {'f:metadata': {'f:finalizers': {'.': {}, 'v:"kueue.x-k8s.io/resource-in-use"': {}}}}},
        {'manager': 'kueue', 'operation': 'Update', 'apiVersion': V, 'subresource': 'status',
         'fieldsV1': {'f:status': {'f:conditions': {}}}},
    ] + list(extra_entries)
    return live


def test_the_same_object_as_last_applied_is_unchanged():
    assert mf.unchanged_reason(declared(), live_of(declared())) is None


def test_a_quantity_in_another_spelling_is_the_same_amount():
    live = live_of(declared())
    live['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] = '8000m'
    assert mf.unchanged_reason(declared(), live) is None


def test_an_object_not_in_the_cluster_or_a_secret_asks_the_server():
    assert 'not in the cluster' in mf.unchanged_reason(declared(), None)
    secret = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 's', 'namespace': 'kueue-system'},
              'stringData': {'kubeconfig': 'x'}}
    assert 'Secret' in mf.unchanged_reason(secret, copy.deepcopy(secret))


def test_no_entry_of_this_manager_asks_the_server():
    assert 'not applied by kueueops' in mf.unchanged_reason(declared(), live_of(declared(), manager='kubectl'))
    assert mf.unchanged_reason(declared(), live_of(declared()), manager='someone-else') is not None


def test_an_object_that_declares_nothing_but_its_name_is_unchanged():
    """A ResourceFlavor without spec: the apply owns no field, and the API server keeps no entry for an empty
    field set (seen on Kubernetes 1.34), so the live object has none of this manager's; only its identity counts."""
    flavor = {'apiVersion': V, 'kind': 'ResourceFlavor', 'metadata': {'name': 'default'}}
    live = copy.deepcopy(flavor)
    live['spec'] = {}  # Kueue's webhook writes it, nobody owns it
    live['metadata'].update(resourceVersion='3', finalizers=['kueue.x-k8s.io/resource-in-use'], managedFields=[
        {'manager': 'kubectl-edit', 'operation': 'Update', 'apiVersion': V, 'fieldsType': 'FieldsV1',
         'fieldsV1': {'f:metadata': {'f:labels': {'f:x': {}}}}}])
    live['metadata']['labels'] = {'x': 'y'}  # another manager's field: an apply that owns nothing keeps it
    assert mf.unchanged_reason(flavor, live) is None
    # At another version it is a conversion: ask.
    assert mf.unchanged_reason(dict(flavor, apiVersion='kueue.x-k8s.io/v1beta1'), live) is not None
    # Something declared (a label, an empty spec) and no entry: ask, as before.
    assert 'not applied' in mf.unchanged_reason(dict(flavor, spec={}), live)
    labelled = copy.deepcopy(flavor)
    labelled['metadata']['labels'] = {'x': 'y'}
    assert 'not applied' in mf.unchanged_reason(labelled, live)


def test_an_entry_at_another_version_asks_the_server():
    reason = mf.unchanged_reason(declared(), live_of(declared(), api_version='kueue.x-k8s.io/v1beta1'))
    assert 'v1beta1' in reason
    live = live_of(declared())
    live['apiVersion'] = 'kueue.x-k8s.io/v1beta1'
    assert mf.unchanged_reason(declared(), live) is not None


def test_a_changed_value_asks_the_server():
    obj = declared()
    obj['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] = '16'
    assert 'differ' in mf.unchanged_reason(obj, live_of(declared()))
    obj = declared()
    obj['metadata']['labels']['team'] = 'b'
    assert 'differ' in mf.unchanged_reason(obj, live_of(declared()))


def test_a_field_dropped_from_the_declaration_asks_the_server():
    """The apply would remove a field this manager owns (or give up owning it)."""
    obj = declared()
    del obj['spec']['cohortName']
    assert 'differ' in mf.unchanged_reason(obj, live_of(declared()))


def test_a_field_newly_declared_asks_the_server():
    """Declared but not owned: the apply would take it over, even where the live value is the same."""
    obj = declared()
    obj['spec']['queueingStrategy'] = 'BestEffortFIFO'
    assert 'differ' in mf.unchanged_reason(obj, live_of(declared()))


def test_fields_a_webhook_added_under_this_manager_ask_the_server():
    fields = copy.deepcopy(OWN_FIELDS)
    fields['f:spec']['f:stopPolicy'] = {}
    live = live_of(declared(), fields=fields)
    live['spec']['stopPolicy'] = 'None'
    assert 'differ' in mf.unchanged_reason(declared(), live)


def test_an_owned_field_gone_from_the_live_object_asks_the_server():
    live = live_of(declared())
    del live['spec']['cohortName']
    assert 'lacks' in mf.unchanged_reason(declared(), live)
    obj = declared()
    del obj['spec']['cohortName']  # even when the declaration dropped it too: the field set would change
    assert 'lacks' in mf.unchanged_reason(obj, live)


def test_a_field_another_manager_also_owns_asks_the_server():
    other = {'manager': 'kubectl-edit', 'operation': 'Update', 'apiVersion': V, 'fieldsType': 'FieldsV1',
             'fieldsV1': {'f:spec': {'f:cohortName': {}}}}
    assert 'kubectl-edit' in mf.unchanged_reason(declared(), live_of(declared(), extra_entries=[other]))
    # Owning a parent of a declared field is an overlap too.
    other['fieldsV1'] = {'f:metadata': {'f:labels': {}}}
    assert 'kubectl-edit' in mf.unchanged_reason(declared(), live_of(declared(), extra_entries=[other]))
    # A field of its own beside ours is not.
    other['fieldsV1'] = {'f:metadata': {'f:labels': {'f:owner': {}}}}
    assert mf.unchanged_reason(declared(), live_of(declared(), extra_entries=[other])) is None


def test_associative_and_set_lists():
    obj = {'apiVersion': V, 'kind': 'ResourceFlavor', 'metadata': {'name': 'gpu'},
           'spec': {'nodeLabels': {'pool': 'gpu'},
                    'tolerations': [{'key': 'a', 'operator': 'Exists', 'effect': 'NoSchedule'},
                                    {'key': 'b', 'operator': 'Exists', 'effect': 'NoSchedule'}]}}
    fields = {'f:spec': {'f:nodeLabels': {'.': {}, 'f:pool': {}}, 'f:tolerations': {}}}
    live = copy.deepcopy(obj)
    live['metadata']['managedFields'] = [{'manager': 'kueueops', 'operation': 'Apply', 'apiVersion': V,
                                          'fieldsType': 'FieldsV1', 'fieldsV1': fields}]
    assert mf.unchanged_reason(obj, live) is None
    # Keyed elements: projected in the live order, with only the owned members.
    owned = {'f:a': {'k:{"name":"x"}': {'.': {}, 'f:name': {}, 'f:v': {}}, 'k:{"name":"y"}': {'f:name': {}}}}
    value = {'a': [{'name': 'y', 'other': 1}, {'name': 'x', 'v': 2, 'other': 3}]}
    assert mf.project(value, owned) == {'a': [{'name': 'y'}, {'name': 'x', 'v': 2}]}
    assert mf.project({'s': ['p', 'q', 'r']}, {'f:s': {'v:"r"': {}, 'v:"p"': {}}}) == {'s': ['p', 'r']}


def test_a_field_set_not_understood_asks_the_server():
    for fields in ({'f:spec': {'i:0': {}}}, {'f:spec': {'f:resourceGroups': {'f:x': {}}}},
                   {'f:spec': {'f:cohortName': {'f:x': {}}}},
                   {'f:spec': {'f:resourceGroups': {'k:{"name":"missing"}': {}}}}):
        assert 'not read locally' in mf.unchanged_reason(declared(), live_of(declared(), fields=fields)), fields


def test_a_malformed_field_set_asks_the_server_and_raises_nothing():
    for fields in (['spec'], {'f:spec': ['x']}, {'f:spec': {'f:resourceGroups': {'k:{not json': {}}}}):
        assert 'not read locally' in mf.unchanged_reason(declared(), live_of(declared(), fields=fields)), fields


def test_dropping_subresource_entries_changes_no_decision():
    """The live state of a run keeps no managedFields entry of a subresource (Kueue's status writes): the local
    decision is the same with and without them, for an unchanged object and for each reason to ask."""
    status = {'manager': 'kueue', 'operation': 'Update', 'apiVersion': V, 'subresource': 'status',
              'fieldsV1': {'f:spec': {'f:cohortName': {}}}}  # even one that names a declared field
    cases = [live_of(declared()), live_of(declared(), extra_entries=[status])]
    other = live_of(declared(), extra_entries=[{'manager': 'kubectl', 'operation': 'Apply', 'apiVersion': V,
                                                'fieldsV1': {'f:spec': {'f:cohortName': {}}}}])
    changed = live_of(declared())
    changed['spec']['cohortName'] = 'other'
    cases += [other, changed, live_of(declared(), manager='someone-else')]
    for live in cases:
        before = mf.unchanged_reason(declared(), live)
        trimmed = mf.drop_subresource_entries(copy.deepcopy(live))
        assert [e.get('subresource') for e in trimmed['metadata']['managedFields']] == \
            [None] * (len(live['metadata']['managedFields']) - sum(1 for e in live['metadata']['managedFields']
                                                                   if e.get('subresource')))
        assert mf.unchanged_reason(declared(), trimmed) == before
    assert mf.unchanged_reason(declared(), cases[0]) is None
    assert mf.unchanged_reason(declared(), other) is not None
    # Only subresource entries go; the object's own Apply and the finalizer Update stay, in order.
    trimmed = mf.drop_subresource_entries(live_of(declared(), extra_entries=[status]))
    assert [(e['manager'], e['operation']) for e in trimmed['metadata']['managedFields']] == \
        [('kueueops', 'Apply'), ('kueue', 'Update')]
    assert mf.drop_subresource_entries({'metadata': {}}) == {'metadata': {}}
