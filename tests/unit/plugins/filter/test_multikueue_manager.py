"""The multikueue_manager filter (issue 44): the integrations, version and Workload API version of the MultiKueue
manager's Kueue - what this run renders with Helm, else its live Configuration."""

from ansible_collections.kueueops.aks.plugins.filter.multikueue_manager import (
    FilterModule, multikueue_manager, workload_api_version)
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog


def test_the_chart_default_of_the_version_this_run_installs():
    side = multikueue_manager({'render': {'chart_version': '0.19.2', 'release_values': {}}, 'live': None})
    assert side['integrations'] == kueue_catalog.catalog_for('0.19.2').default_frameworks
    assert 'ray.io/rayjob' in side['integrations'] and 'kueue_integrations is not set' in side['source']
    assert side['api_version'] == 'kueue.x-k8s.io/v1beta2' and side['kueue_version'] == '0.19.2'


def test_the_rendered_configuration_wins_over_the_chart_default_and_the_live_one():
    values = {'managerConfig': {'controllerManagerConfigYaml': 'integrations:\n  frameworks: [batch/job, pod]\n'}}
    side = multikueue_manager({'render': {'chart_version': '0.18.4', 'release_values': values},
                               'live': {'integrations': ['ray.io/rayjob'], 'version': 'v0.19.2'}})
    assert side['integrations'] == ['batch/job', 'pod'] and '0.18.4' in side['source']
    # a Configuration without integrations: Kueue's own default
    values = {'managerConfig': {'controllerManagerConfigYaml': 'apiVersion: config.kueue.x-k8s.io/v1beta2\n'}}
    assert multikueue_manager({'render': {'chart_version': '0.19.2', 'release_values': values}})['integrations'] == \
        ['batch/job']


def test_the_live_configuration_and_nothing_known():
    side = multikueue_manager({'render': None, 'live': {'integrations': ['batch/job'], 'version': 'v0.15.0'}})
    assert side == {'integrations': ['batch/job'], 'kueue_version': 'v0.15.0', 'api_version': 'kueue.x-k8s.io/v1beta2',
                    'source': "the manager's live Configuration (Kueue v0.15.0)"}
    assert multikueue_manager({'render': {'changed': False, 'skipped': True}, 'live': {'ok': False}})['integrations'] \
        is None
    assert FilterModule().filters()['multikueue_manager'] is multikueue_manager


def test_the_workload_api_version_is_the_newest_served():
    assert workload_api_version('0.14.8') == 'kueue.x-k8s.io/v1beta1'
    assert workload_api_version('0.15.0') == 'kueue.x-k8s.io/v1beta2'
    assert workload_api_version('9.9.9') is None
