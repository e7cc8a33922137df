"""release_train: which Kueue release an install takes (issue 39). Pure logic on version texts and the catalog;
the catalog's broken patches are set per test (the real ones are checked in test_kueue_catalog)."""
import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog as catalog
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import release_train as rt
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError

NEWEST = catalog.known_minors()[-1]


@pytest.fixture
def broken_020(monkeypatch):
    """0.20.0 to 0.20.5 broken, fixed in 0.20.6, whatever the catalog's data says."""
    rec = catalog.catalog_for('0.20')
    monkeypatch.setattr(rec, 'broken_patches', dict(
        ('0.20.%d' % n, {'reason': 'its CRDs still name the conversion webhook', 'fixed_in': '0.20.6'})
        for n in range(6)))
    return rec


def test_minor_and_prerelease_of_every_form():
    assert rt.minor_of('0.19.2') == rt.minor_of('v0.19.2') == rt.minor_of('0.19.2-aks.0.4.4') == '0.19'
    assert rt.minor_of('latest') is None
    assert rt.is_prerelease('0.21.0-rc.1') and not rt.is_prerelease('0.21.0-aks.0.4.4')
    assert not rt.is_prerelease('0.21.0') and not rt.is_prerelease('nonsense')
    assert rt.is_newer_minor('0.20', '0.19.2') and rt.is_newer_minor('0.20.0-aks.0.4.4', '0.19.9')
    assert not rt.is_newer_minor('0.19.9', '0.19.2') and not rt.is_newer_minor('x', '0.19.2')


def test_a_broken_patch_is_refused_with_why_and_the_first_good_one(broken_020):
    assert rt.broken('0.20.3') == ('its CRDs still name the conversion webhook', '0.20.6')
    assert rt.broken('0.20.3-aks.0.4.4') == rt.broken('v0.20.3')  # any form of the release
    assert rt.broken('0.20.6') is None and rt.broken('0.19.2') is None and rt.broken('9.9.9') is None
    assert rt.broken_releases('0.20') == ['0.20.%d' % n for n in range(6)] and rt.broken_releases('9.9') == []
    with pytest.raises(KueueOpsError) as err:
        rt.check_not_broken('0.20.5', 'chart_version')
    assert err.value.message() == (
        'chart_version: Kueue 0.20.5 is known to be broken: its CRDs still name the conversion webhook. Fix: pin '
        '0.20.6 or a later patch of 0.20, or use latest (it never picks a broken patch).')
    rt.check_not_broken('0.20.6', 'chart_version')


@pytest.mark.parametrize('installed, wanted', [('0.18.4', '0.19.2'), ('0.19.2', '0.18.4'),
                                               ('0.18.4-aks.0.4.4', '0.19.2-aks.0.4.4')])
def test_another_minor_on_an_installed_kueue_is_refused_naming_upgrade_yml(installed, wanted):
    with pytest.raises(KueueOpsError) as err:
        rt.check_minor(installed, wanted, 'version', variable='kueue_extension_version')
    msg = err.value.message()
    assert msg.startswith('version: Kueue %s is installed, and %s would' % (installed, wanted))
    assert 'only playbooks/upgrade.yml does' in msg
    assert 'playbooks/upgrade.yml -e kueue_extension_version=%s --check prints the plan' % wanted in msg
    assert ('upgrade' if wanted > installed else 'downgrade') in msg


def test_the_same_minor_or_a_fresh_cluster_is_not_refused():
    rt.check_minor('0.18.4', '0.18.2', 'chart_version')  # a patch, either way
    rt.check_minor(None, '0.19.2', 'chart_version')
    rt.check_minor('0.18.4-aks.0.4.4', '0.18.6-aks.0.4.5', 'version')


def test_good_and_newest_known_skip_broken_prereleases_and_unknown_minors(broken_020):
    offered = ['0.19.2', '0.20.5', '0.20.6', '0.21.0-rc.2', '9.1.0', 'garbage', '0.20.7']
    assert rt.good(offered) == ['9.1.0', '0.20.7', '0.20.6', '0.19.2']
    assert rt.good(offered, minor='0.20') == ['0.20.7', '0.20.6']
    assert rt.newest_known(offered) == '0.20.7'  # 9.1 is newer than the catalog
    assert rt.newest_known(['0.20.0', '0.20.5']) is None
    assert rt.newest_known(['0.20.5', '0.19.2-aks.0.4.4']) == '0.19.2-aks.0.4.4'
    assert rt.known_minors_newest_first()[0] == NEWEST


def test_notices():
    text = rt.newer_minor_notice('0.18.4', '0.19.2')
    assert text.startswith('Kueue 0.19.2 is published, a newer minor than the installed 0.18.4: this run stays on 0.18')
    assert 'playbooks/upgrade.yml --check prints the plan' in text
    assert rt.newer_minor_notice('0.18.4', '0.18.6') is None and rt.newer_minor_notice(None, '0.19.2') is None
    assert rt.newer_minor_notice('0.19.2', '0.18.4') is None and rt.newer_minor_notice('0.18.4', None) is None
    unknown = rt.unknown_minor_notice('9.1.0', '0.19.2')
    assert 'does not know 9.1' in unknown and 'installs 0.19.2' in unknown and NEWEST in unknown
    assert rt.unknown_minor_notice('0.19.2', '0.19.2') is None


def test_a_minor_known_from_its_release_notes_only_is_said_so(monkeypatch):
    rec = catalog.catalog_for('0.20')
    monkeypatch.setattr(rec, 'release_notes_only', True)
    assert 'Kueue 0.20 is known to this collection from its release notes' in rt.release_notes_notice('0.20.6')
    monkeypatch.setattr(rec, 'release_notes_only', False)
    assert rt.release_notes_notice('0.20.6') is None
    assert rt.release_notes_notice('0.19.2') is None and rt.release_notes_notice('latest') is None


def test_a_hop_past_a_version_still_in_stored_versions_is_refused():
    crds = [{'name': 'clusterqueues.kueue.x-k8s.io', 'stored_versions': ['v1beta1', 'v1beta2']},
            {'name': 'workloads.kueue.x-k8s.io', 'stored_versions': ['v1beta2']}]
    err = rt.stored_versions_error(crds, '0.20.6', 'chart_version')
    assert err.field == 'chart_version'
    assert ('the Kueue CRDs still record objects stored as kueue.x-k8s.io/v1beta1 (status.storedVersions of '
            'clusterqueues.kueue.x-k8s.io), which Kueue 0.20 does not serve') in err.message()
    assert 'playbooks/upgrade.yml does it before its first hop' in err.message()
    assert rt.stored_versions_error(crds, '0.19.2', 'chart_version') is None  # 0.19 still serves v1beta1
    assert rt.stored_versions_error(crds[1:], '0.20.6', 'chart_version') is None
    assert rt.stored_versions_error(crds, '9.9.9', 'chart_version') is None  # unknown: the plan refuses it
