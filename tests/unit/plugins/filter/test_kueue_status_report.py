"""The kueue_status_report filter (the renderer, module_utils/kueue/report.py, is tested in
tests/unit/plugins/module_utils/test_report.py): pure logic."""

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kueueops.aks.plugins.filter.kueue_status_report import FilterModule, kueue_status_report

# A kueue_verify result with one failed check and no queues (the renderer's cases are in test_report.py).
RESULT = {'ok': False, 'version': 'v0.19.2', 'install_method': 'helm', 'failed_checks': ['webhook-roundtrip'],
          'checks': [{'name': 'webhook-roundtrip', 'ok': False, 'reason': 'dry-run timed out'}]}


def test_unknown_format():
    with pytest.raises(AnsibleFilterError, match='format must be one of'):
        kueue_status_report(RESULT, format='pdf')


def test_filter_accepts_one_result_or_a_mapping():
    assert FilterModule().filters()['kueue_status_report'] is kueue_status_report
    single = kueue_status_report(RESULT, cluster='aks-prod')
    assert single[0].startswith('aks-prod: ')
    many = kueue_status_report({'x': RESULT, 'y': RESULT})
    assert [line for line in many if line.endswith('webhook-roundtrip') and ': Kueue' in line] == [
        'x: Kueue v0.19.2 (helm): 1 check(s) failed: webhook-roundtrip',
        'y: Kueue v0.19.2 (helm): 1 check(s) failed: webhook-roundtrip']


def test_filter_refuses_what_is_not_a_verify_result():
    with pytest.raises(AnsibleFilterError, match="not a kueue_verify result"):
        kueue_status_report({'x': {'changed': False}})
    with pytest.raises(AnsibleFilterError, match='expects a kueue_verify result'):
        kueue_status_report(['x'])
