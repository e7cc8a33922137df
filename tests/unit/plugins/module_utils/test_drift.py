# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/drift/drift.py: the comparisons (pure); the cluster half is tested on the local
control plane (tests/integration/test_drift.py)."""

import base64
import copy
import json

import pytest
import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.drift import drift
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import REDACTED, KueueOpsError

API = 'kueue.x-k8s.io/v1beta2'


def cq(nominal='16', **spec):
    body = {'cohortName': 'research', 'resourceGroups': [{'coveredResources': ['cpu'], 'flavors': [
        {'name': 'on-demand', 'resources': [{'name': 'cpu', 'nominalQuota': nominal}]}]}]}
    body.update(spec)
    return {'apiVersion': API, 'kind': 'ClusterQueue', 'metadata': {'name': 'team-a'}, 'spec': body}


def applied(obj, manager='kueueops', others=()):
    """``obj`` as the API server stores it after ``manager`` applied it (its managedFields own every spec field),
    with server fields and what a webhook defaults."""
    live = copy.deepcopy(obj)
    live['metadata'].update(resourceVersion='7', uid='u', generation=1)
    live['spec'].setdefault('queueingStrategy', 'BestEffortFIFO')  # a default: not drift

    def fields(value):
        if isinstance(value, dict):
            return dict(('f:%s' % k, fields(v)) for k, v in value.items())
        return {}

    own = {'f:spec': fields(obj['spec'])}
    own['f:spec']['f:resourceGroups'] = {}  # an atomic list: owned as a whole
    entries = [{'manager': manager, 'operation': 'Apply', 'apiVersion': obj['apiVersion'], 'fieldsType': 'FieldsV1',
                'fieldsV1': own}]
    entries.extend(others)
    live['metadata']['managedFields'] = entries
    live['status'] = {'admittedWorkloads': 0}
    return live


def test_paths_are_shown_as_kubectl_writes_them():
    assert drift.path_text(('spec', 'resourceGroups', 0, 'flavors', 1, 'name')) == 'spec.resourceGroups[0].flavors[1].name'
    assert drift.path_text(()) == ''


def test_an_unchanged_object_has_no_differences_defaults_and_status_aside():
    assert drift.object_differences(cq(), applied(cq())) == []


def test_a_quota_edited_by_another_manager_names_the_field_and_both_values():
    live = applied(cq())
    live['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] = '40'
    live['metadata']['managedFields'].append({'manager': 'kubectl-edit', 'operation': 'Update', 'apiVersion': API,
                                              'fieldsV1': {'f:spec': {'f:resourceGroups': {}}}})
    assert drift.object_differences(cq(), live) == [
        {'field': 'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota', 'declared': '16', 'live': '40'}]


def test_the_same_amount_in_another_spelling_is_not_drift():
    live = applied(cq('16'))
    live['metadata']['managedFields'][0]['fieldsV1']['f:spec']['f:cohortName'] = {}
    live['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] = '16000m'
    assert drift.object_differences(cq(16), live) == []


def test_a_field_set_by_kueues_webhook_and_attributed_to_the_applier_is_not_drift():
    live = applied(cq(stopPolicy='None'))  # as if Kueue's defaulting webhook had set it during the apply
    assert drift.object_differences(cq(), live) == []


def test_a_list_of_another_length_is_one_difference_at_the_list():
    live = applied(cq())
    live['spec']['resourceGroups'][0]['flavors'].append({'name': 'spot', 'resources': []})
    found = drift.object_differences(cq(), live)
    assert [f['field'] for f in found] == ['spec.resourceGroups[0].flavors']
    assert len(found[0]['live']) == 2 and len(found[0]['declared']) == 1


def test_secret_values_are_never_shown_only_that_they_differ():
    declared = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'w1', 'namespace': 'kueue-system'},
                'stringData': {'kubeconfig': 'token: new-secret'}}
    live = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'w1', 'namespace': 'kueue-system'},
            'data': {'kubeconfig': base64.b64encode(b'token: old-secret').decode()}}
    found = drift.object_differences(declared, live)
    assert found == [{'field': 'data.kubeconfig', 'declared': REDACTED, 'live': REDACTED}]
    assert 'secret' not in json.dumps(found).replace('VALUE_REDACTED', '')
    live['data']['kubeconfig'] = base64.b64encode(b'token: new-secret').decode()
    assert drift.object_differences(declared, live) == []


def test_object_drift_sorts_missing_changed_extra_and_undeclared():
    rf = {'apiVersion': API, 'kind': 'ResourceFlavor', 'metadata': {'name': 'on-demand'}, 'spec': {}}
    lq = {'apiVersion': API, 'kind': 'LocalQueue', 'metadata': {'name': 'q', 'namespace': 'team-a'},
          'spec': {'clusterQueue': 'team-a'}}
    live_cq = applied(cq())
    live_cq['spec']['cohortName'] = 'other'
    old = applied(cq())
    old['metadata']['name'] = 'retired'
    by_hand = applied(cq())
    by_hand['metadata']['name'] = 'by-hand'
    by_hand['metadata']['managedFields'] = [{'manager': 'kubectl-create', 'operation': 'Update'}]
    aks = copy.deepcopy(by_hand)
    aks['metadata']['name'] = 'aks-cpu'
    live = {'ResourceFlavor': {('ResourceFlavor', '', 'on-demand'): dict(rf, metadata={'name': 'on-demand'})},
            'ClusterQueue': {('ClusterQueue', '', 'team-a'): live_cq, ('ClusterQueue', '', 'retired'): old,
                             ('ClusterQueue', '', 'by-hand'): by_hand, ('ClusterQueue', '', 'aks-cpu'): aks},
            'LocalQueue': {}}
    out = drift.object_drift([rf, cq(), lq], live, aks_managed=True, diff=True)
    assert out['missing'] == [{'kind': 'LocalQueue', 'namespace': 'team-a', 'name': 'q'}]
    assert [(c['name'], [f['field'] for f in c['fields']]) for c in out['changed']] == [('team-a', ['spec.cohortName'])]
    assert out['extra'] == [{'kind': 'ClusterQueue', 'name': 'retired'}]
    assert out['undeclared'] == [{'kind': 'ClusterQueue', 'name': 'by-hand', 'managers': ['kubectl-create']}]
    headers = [(d['before_header'], d['after_header']) for d in out['diff']]
    assert ('ClusterQueue team-a (live)', 'ClusterQueue team-a (declared)') in headers
    assert ('(missing)', 'LocalQueue team-a/q (declared)') in headers
    assert ('ClusterQueue retired (live)', '(no longer declared)') in headers
    after = [d for d in out['diff'] if d['before_header'].startswith('ClusterQueue team-a')][0]['after']
    assert after['spec']['cohortName'] == 'research' and after['spec']['queueingStrategy'] == 'BestEffortFIFO'
    # Without the managed extension, aks-* objects are ordinary undeclared objects.
    names = [u['name'] for u in drift.object_drift([rf, cq(), lq], live)['undeclared']]
    assert names == ['aks-cpu', 'by-hand']


# ------------------------------------------------------------------ install
CHART_CONFIG = 'apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks:\n  - batch/job\n'


def release(config=None, manifest_extra=None):
    cfg = yaml.safe_load(CHART_CONFIG)
    if config and 'managerConfig' in config:
        cfg = yaml.safe_load(config['managerConfig']['controllerManagerConfigYaml'])
    cfg.update(manifest_extra or {'internalCertManagement': {'enable': True}})
    manifest = '---\n' + yaml.safe_dump({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'kueue-manager-config'},
                                         'data': {'controller_manager_config.yaml': yaml.safe_dump(cfg)}})
    return {'name': 'kueue', 'config': config or {}, 'manifest': manifest,
            'chart': {'metadata': {'version': '0.19.2'},
                      'values': {'managerConfig': {'controllerManagerConfigYaml': CHART_CONFIG}}}}


def live_configmap(extra=None, frameworks=('batch/job',)):
    cfg = yaml.safe_load(CHART_CONFIG)
    cfg['integrations']['frameworks'] = list(frameworks)
    cfg['internalCertManagement'] = {'enable': True}
    cfg.update(extra or {})
    return yaml.safe_dump(cfg)


def test_a_clean_helm_install_has_no_differences():
    desired = drift.declared_values(release(), {})
    assert desired == {}
    assert drift.helm_differences(release(), desired, ['--config=x'], live_configmap(), '0.19.2') == []


def test_gates_and_frameworks_declared_and_installed_the_same_are_no_drift():
    params = {'feature_gates': {'TopologyAwareScheduling': True}, 'integrations': ['batch/job', 'pod']}
    desired = drift.declared_values(release(), params)
    rel = release(config=desired)
    args = ['--feature-gates=TopologyAwareScheduling=true']
    assert drift.helm_differences(rel, desired, args, live_configmap(frameworks=['batch/job', 'pod'])) == []


def test_an_edited_configmap_names_each_key():
    found = drift.helm_differences(release(), {}, [], live_configmap(
        extra={'waitForPodsReady': {'enable': True}}, frameworks=['batch/job', 'pod']))
    assert [(d['source'], d['key'], d['declared'], d['live']) for d in found] == [
        ('manager configuration', 'integrations.frameworks', ['batch/job'], ['batch/job', 'pod']),
        ('manager configuration', 'waitForPodsReady', '(absent)', {'enable': True})]


def test_release_values_that_differ_name_the_key_inside_the_configuration_string():
    declared = drift.declared_values(release(), {'integrations': ['batch/job', 'pod']})
    installed = drift.declared_values(release(), {'integrations': ['batch/job']})
    installed['controllerManager'] = {'replicas': 2}
    found = drift.helm_differences(release(config=installed), declared, [], live_configmap())
    keys = [(d['source'], d['key']) for d in found]
    assert ('helm values', 'controllerManager') in keys
    assert ('helm values', 'managerConfig.controllerManagerConfigYaml: integrations.frameworks') in keys
    assert ('manager configuration', 'integrations.frameworks') in keys


def test_a_gate_turned_off_on_the_deployment_and_a_version_differ():
    desired = drift.declared_values(release(), {'feature_gates': {'TopologyAwareScheduling': True}})
    found = drift.helm_differences(release(config=desired), desired,
                                   ['--feature-gates=TopologyAwareScheduling=false'], live_configmap(), '0.18.4')
    assert {'source': 'chart version', 'key': 'kueue_version', 'declared': '0.18.4', 'live': '0.19.2'} in found
    assert {'source': 'feature gates', 'key': 'TopologyAwareScheduling', 'declared': True, 'live': False} in found
    assert drift.helm_differences(release(config=desired), desired,
                                  ['--feature-gates=TopologyAwareScheduling=true'], live_configmap(), 'latest') == []


def test_an_unknown_gate_is_refused_naming_feature_gates():
    with pytest.raises(KueueOpsError) as err:
        drift.declared_values(release(), {'feature_gates': {'NoSuchGate': True}})
    assert err.value.field == 'feature_gates'


def test_extension_settings_are_compared_key_by_key_as_arm_strings():
    extension = {'name': 'kueue', 'properties': {'version': '0.19.2-aks.0.4.4', 'configurationSettings': {
        'controllerManager.featureGates.TopologyAwareScheduling': 'false', 'added.by.hand': 'x'}}}
    declared = {'controllerManager.featureGates.TopologyAwareScheduling': True, 'managerConfig.replicas': 2}
    found = drift.extension_differences(extension, declared, '0.19.2-aks.0.4.4')
    assert found == [
        {'source': 'extension settings', 'key': 'added.by.hand', 'declared': '(absent)', 'live': 'x'},
        {'source': 'extension settings', 'key': 'controllerManager.featureGates.TopologyAwareScheduling',
         'declared': 'true', 'live': 'false'},
        {'source': 'extension settings', 'key': 'managerConfig.replicas', 'declared': '2', 'live': '(absent)'}]
    assert drift.extension_differences(extension, {'added.by.hand': 'x',
                                                   'controllerManager.featureGates.TopologyAwareScheduling': False}) == []
    assert drift.extension_differences({}, {})[0]['live'] == '(absent)'
    assert drift.extension_differences(extension, {'added.by.hand': 'x', 'controllerManager.featureGates.'
                                                   'TopologyAwareScheduling': 'false'}, '0.18.4-aks.0.4.4') == [
        {'source': 'extension version', 'key': 'kueue_extension_version', 'declared': '0.18.4-aks.0.4.4',
         'live': '0.19.2-aks.0.4.4'}]
    # latest (the role's default, issue 39) is the installed minor's newest patch: not a declared pin to compare
    assert drift.extension_differences(extension, {'added.by.hand': 'x', 'controllerManager.featureGates.'
                                                   'TopologyAwareScheduling': 'false'}, 'latest') == []


@pytest.mark.parametrize('params,field', [
    ({'configuration_settings': {'a': [1]}}, 'configuration_settings'),
    ({'extension': {'properties': 'x'}}, 'extension'),
    ({'version': 'newest'}, 'version'),
    ({'values': {'featureGates': []}}, 'values'),
    ({'values_files': ['/nonexistent/values.yaml']}, 'values_files'),
])
def test_bad_parameters_are_refused_before_the_cluster_is_read(params, field):
    with pytest.raises(KueueOpsError) as err:
        drift.check_params(params)
    assert err.value.field == field and err.value.fix
