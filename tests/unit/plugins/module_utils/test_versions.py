# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/common/versions.py, the one version parser, and for its four readers."""

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.azure import extension as x
from ansible_collections.kueueops.aks.plugins.module_utils.common import kubernetes_support
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog
from ansible_collections.kueueops.aks.plugins.module_utils.common import versions
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_runner import HelmRunner


@pytest.mark.parametrize('text,parsed', [
    ('v0.19.2', (0, 19, 2, '', '')),
    ('0.19.2', (0, 19, 2, '', '')),
    (' V0.13.10 ', (0, 13, 10, '', '')),
    ('0.19', (0, 19, None, '', '')),
    ('0.19.6-aks.0.4.4', (0, 19, 6, '-', 'aks.0.4.4')),  # the managed extension: Kueue 0.19.6, AKS packaging 0.4.4
    ('0.20.0-rc.1', (0, 20, 0, '-', 'rc.1')),
    ('v3.19.5+g1234abc', (3, 19, 5, '+', 'g1234abc')),  # helm's own version with its build
    ('1.34.1', (1, 34, 1, '', '')),
])
def test_parse(text, parsed):
    assert tuple(versions.parse(text)) == parsed


@pytest.mark.parametrize('text', [None, '', 'latest', 'v1', '1', '0.19.', '0.19.2-', '0.19.2 rc', 'x0.19.2', '0.19.2.1',
                                  '0.19.2-aks_1', '.19.2', '0.-1.2'])
def test_not_a_version(text):
    assert versions.parse(text) is None


def test_patch_required_core_and_text():
    assert versions.parse('0.19', patch=True) is None
    aks = versions.parse('v0.19.6-aks.0.4.4', patch=True)
    assert aks.core == (0, 19, 6) and aks.minor_text == '0.19' and aks.text == '0.19.6-aks.0.4.4'
    assert versions.parse('0.19').core == (0, 19, 0) and versions.parse('0.19').text == '0.19'
    # Ordering of releases is numeric, not textual.
    assert versions.parse('0.9.1').core < versions.parse('0.10.0').core < versions.parse('0.19.6-aks.0.4.4').core


def test_the_readers_agree():
    # Kueue versions (the catalog), the extension's version, Kubernetes versions and helm's, through one parser.
    assert kueue_catalog.parse_version('v0.18.4') == (0, 18, 4) and kueue_catalog.minor_of('0.19.6-aks.0.4.4') == '0.19'
    assert kueue_catalog.parse_version('0.19') == (0, 19, None) and kueue_catalog.parse_version('latest') is None
    assert kubernetes_support.minor_of('1.34.1') == (1, 34) and kubernetes_support.minor_of('v1.33') == (1, 33) \
        and kubernetes_support.minor_of('') is None
    base = dict(name='kueue', extension_type='microsoft.kueue', release_train='preview', auto_upgrade_mode=None,
                release_namespace='kueue-system', configuration_settings=None, configuration_protected_settings=None,
                update_protected_settings='on_create')
    x.validate_params(dict(base, version='0.19.6-aks.0.4.4'))
    x.validate_params(dict(base, version='latest'))  # the release train's rules pin it (release_train)
    for bad in ('0.19', 'newest', '0.19.6-'):
        with pytest.raises(KueueOpsError) as err:
            x.validate_params(dict(base, version=bad))
        assert err.value.field == 'version'
    assert HelmRunner(lambda args, **_kw: (0, 'v3.19.5+g1234abc', ''), '/usr/bin/helm').version == (3, 19, 5)
    with pytest.raises(KueueOpsError) as err:
        HelmRunner(lambda args, **_kw: (0, 'v3.19', ''), '/usr/bin/helm')
    assert err.value.field == 'binary_path' and 'cannot tell the version of helm' in str(err.value)


def test_same_release_matches_the_chart_and_the_extension_forms():
    offered = ['0.19.2-aks.0.4.4', '0.18.4-aks.0.4.4', '0.19.2-aks.0.4.5']
    assert versions.same_release(offered, '0.19.2') == ['0.19.2-aks.0.4.4', '0.19.2-aks.0.4.5']
    assert versions.same_release(offered, 'v0.18.4-aks.9.9.9') == ['0.18.4-aks.0.4.4']
    assert versions.same_release(['0.19.2', '0.18.4'], '0.19.2-aks.0.4.4') == ['0.19.2']  # and back
    assert versions.same_release(offered, '0.16.0') == [] and versions.same_release(offered, 'latest') == []
    assert versions.same_release(['x', '0.19.2'], '0.19.2') == ['0.19.2']


def test_minor_key_orders_minors_of_every_form_numerically():
    for text in ('0.19', 'v0.19.2', '0.19.6-aks.0.4.4'):
        assert versions.minor_key(text) == (0, 19)
    assert versions.minor_key('0.9') < versions.minor_key('0.10')  # not as text
    assert versions.minor_key('latest') is None and versions.minor_key(None) is None
    # the catalog's minors and the upgrade's crossed minors are ordered by it
    known = kueue_catalog.known_minors()
    assert known == sorted(known, key=versions.minor_key)
