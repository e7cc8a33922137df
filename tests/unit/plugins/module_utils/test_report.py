# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/kueue/report.py, the status report renderer: pure logic (its filter,
kueue_status_report, is tested in tests/unit/plugins/filter)."""

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import report

RESULT = {
    'ok': False, 'version': 'v0.19.2', 'install_method': 'helm', 'failed_checks': ['webhook-roundtrip'],
    'checks': [{'name': 'deployment/kueue-controller-manager', 'ok': True, 'reason': '1/1 ready'},
               {'name': 'webhook-roundtrip', 'ok': False, 'reason': 'dry-run <timed out> | retry'}],
    'queues': {
        'cluster_queues': [
            {'name': 'team-a', 'cohort': 'research', 'active': True, 'pending': 3, 'admitted': 2,
             'flavors': [{'name': 'on-demand', 'resources': [{'name': 'cpu', 'used': '4', 'nominal': '32'},
                                                             {'name': 'memory', 'used': '8Gi', 'nominal': '128Gi'}]},
                         {'name': 'spot', 'resources': [{'name': 'cpu', 'used': '0', 'nominal': '64'}]}]},
            {'name': 'team-b', 'active': False, 'reason': 'FlavorNotFound', 'pending': 0, 'admitted': 0}],
        'local_queues': [{'name': 'user-queue', 'namespace': 'team-a', 'cluster_queue': 'team-a', 'active': True,
                          'pending': 3, 'admitted': 2}]},
}


def test_text_lines_are_aligned_tables():
    lines = report.render_lines(RESULT, 'aks-prod')
    assert lines[0] == 'aks-prod: Kueue v0.19.2 (helm): 1 check(s) failed: webhook-roundtrip'
    checks = lines[lines.index('Checks:') + 1:lines.index('ClusterQueues:')]
    assert checks[0].split() == ['result', 'check', 'why']
    assert [row.split()[0] for row in checks[2:]] == ['PASS', 'FAIL']
    # Columns line up: every row starts its second column at the same offset.
    offsets = {row.index(row.split()[1], len(row.split()[0])) for row in checks}
    assert len(offsets) == 1
    cq = ' '.join(lines)
    assert 'on-demand cpu 4/32, memory 8Gi/128Gi; spot cpu 0/64' in cq
    assert 'no (FlavorNotFound)' in cq and 'team-a/user-queue' in cq


def test_all_passed_and_empty_queues():
    ok = {'ok': True, 'version': 'v0.19.2', 'install_method': 'extension', 'failed_checks': [],
          'checks': [{'name': 'crds', 'ok': True, 'reason': '11 established'}], 'queues': {}}
    lines = report.render_lines(ok)
    assert lines[0] == 'Kueue v0.19.2 (extension): all 1 checks passed'
    assert 'ClusterQueues: none' in lines and 'LocalQueues: none' in lines


def test_markdown_escapes_pipes_and_html_escapes_markup():
    md = report.render({'aks-prod': RESULT}, 'markdown')
    assert md.startswith('# Kueue status\n\n## aks-prod')
    assert '| FAIL | webhook-roundtrip | dry-run <timed out> \\| retry |' in md
    page = report.render({'aks-prod': RESULT}, 'html')
    assert '&lt;timed out&gt;' in page and '<timed out>' not in page
    assert '<tr class="fail"><td>FAIL</td>' in page and page.startswith('<!DOCTYPE html>')


def test_several_clusters_sorted():
    text = report.render({'b': RESULT, 'a': RESULT}, 'text')
    assert text.index('a: Kueue') < text.index('b: Kueue')


def test_unknown_format():
    with pytest.raises(ValueError, match='format must be one of'):
        report.render({'a': RESULT}, 'pdf')


DRIFT = {
    'drift': True, 'counts': {'missing': 1, 'changed': 1, 'extra': 1, 'undeclared': 1, 'install': 1},
    'objects': {
        'missing': [{'kind': 'LocalQueue', 'namespace': 'team-a', 'name': 'user-queue'}],
        'changed': [{'kind': 'ClusterQueue', 'name': 'team-a', 'fields': [
            {'field': 'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota', 'declared': '16', 'live': '40'}]}],
        'extra': [{'kind': 'ClusterQueue', 'name': 'retired'}],
        'undeclared': [{'kind': 'ClusterQueue', 'name': 'by-hand', 'managers': ['kubectl-create']}]},
    'install': {'method': 'helm', 'compared': True, 'differences': [
        {'source': 'manager configuration', 'key': 'waitForPodsReady', 'declared': '(absent)',
         'live': {'enable': True, 'timeout': 'x' * 80}}]},
}


def test_drift_tables_name_each_object_field_and_key():
    result = dict(RESULT, drift=DRIFT)
    lines = report.render_lines(result, 'aks-prod')
    assert lines[0].endswith('; drift: 1 missing, 1 changed, 1 extra, 1 undeclared, 1 install key(s) differ')
    text = '\n'.join(lines)
    assert 'Drift: queue objects:' in text and 'Drift: install (helm):' in text
    row = [line for line in lines if 'nominalQuota' in line][0].split()
    assert row == ['changed', 'ClusterQueue', 'team-a', 'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota',
                   '16', '40']
    assert any(line.split()[:3] == ['missing', 'LocalQueue', 'team-a/user-queue'] for line in lines)
    assert any('by kubectl-create' in line and 'by-hand' in line for line in lines)
    # A long value is cut to one cell.
    cell = [line for line in lines if 'waitForPodsReady' in line][0]
    assert cell.rstrip().endswith('...') and len(report.drift_value({'a': 'x' * 200})) == report.VALUE_WIDTH
    md = report.render({'aks-prod': result}, 'markdown')
    assert '### Drift: queue objects' in md and '| changed | ClusterQueue team-a |' in md
    html = report.render({'aks-prod': result}, 'html')
    assert '<tr class="fail"><td>changed</td>' in html


def test_no_drift_and_no_drift_report():
    clean = dict(DRIFT, drift=False, counts=dict.fromkeys(DRIFT['counts'], 0),
                 objects={'missing': [], 'changed': [], 'extra': [], 'undeclared': []},
                 install={'method': 'extension', 'compared': False, 'differences': [], 'note': 'not read from ARM'})
    lines = report.render_lines(dict(RESULT, drift=clean))
    assert lines[0].endswith('; drift: none')
    assert 'Drift: queue objects: none' in lines
    assert any('not compared' in line and 'not read from ARM' in line for line in lines)
    # status.yml without a declared configuration: the report as before, no drift line or table.
    plain = report.render_lines(RESULT)
    assert not any('rift' in line for line in plain)


CAPACITY = {
    'configuration': 'live', 'node_count': 1,
    'flavors': [{'name': 'gpu-a100', 'nodes': ['gpu-1'], 'resources': [
        {'resource': 'nvidia.com/gpu', 'allocatable': '2', 'nominal': '8', 'ratio': 4.0,
         'queues': [{'owner': 'ClusterQueue research', 'nominal': '8', 'max_with_borrowing': '8'}]}]}],
    'findings': [{'severity': 'warning', 'kind': 'over-commit', 'flavor': 'gpu-a100',
                  'message': 'gpu-a100: nominal nvidia.com/gpu 8 is 4.00x what its nodes offer (2)'}],
    'notes': ['pool gpu counted at its autoscaler maximum (3)'],
}


def test_the_report_file_carries_the_capacity_status_yml_attaches():
    # status.yml attaches the kueue_capacity_info result to the status it writes to kueue_status_report.
    lines = report.render_lines(dict(RESULT, capacity=CAPACITY))
    assert lines[0].endswith('; capacity: 1 warning(s)'), lines[0]
    md = report.render({'aks-prod': dict(RESULT, capacity=CAPACITY)}, 'markdown')
    assert '### Capacity' in md and '| gpu-a100 | 1 node(s) | nvidia.com/gpu | 2 | 8 | 4.00x |' in md, md
    assert '| warning | gpu-a100: nominal nvidia.com/gpu 8 is 4.00x' in md
    assert '### Capacity notes' in md and 'counted at its autoscaler maximum' in md
    clean = dict(CAPACITY, findings=[], notes=[])
    assert report.render_lines(dict(RESULT, capacity=clean))[0].endswith('; capacity: no warning')
    # status.yml with kueue_capacity_check off: no capacity line or table.
    assert not any('apacity' in line for line in report.render_lines(RESULT))


def test_the_multikueue_token_table_and_summary():
    """Issue 40: status.yml's report shows each worker token's expiry and counts those to re-issue."""
    result = {"checks": [{"name": "deployment", "ok": True}], "failed_checks": [], "version": "v0.19.2",
              "install_method": "helm", "multikueue_tokens": [
                  {"cluster": "w1", "secret": "mk-w1", "expires": "2026-12-09T00:00:00Z", "seconds_left": 259200,
                   "warning": True, "reason": "expires in 3.0 days"},
                  {"cluster": "w2", "secret": "mk-w2", "expires": "2027-01-01T00:00:00Z", "seconds_left": 2246400,
                   "warning": False, "reason": "expires in 26.0 days"}]}
    text = "\n".join(report.render_lines(result, cluster="manager"))
    assert "MultiKueue: 1 worker token(s) to re-issue" in text
    assert "WARNING: expires in 3.0 days" in text and "expires in 26.0 days" in text and "mk-w2" in text
    assert "MultiKueue worker tokens" not in "\n".join(report.render_lines(dict(result, multikueue_tokens=[])))
