"""The kueue_release filter: the Kueue release of a chart, tag or managed extension version (versions.parse)."""

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kueueops.aks.plugins.filter.kueue_release import FilterModule, kueue_release


@pytest.mark.parametrize('version, release', [
    ('0.19.2', '0.19.2'), ('v0.19.2', '0.19.2'), ('0.19.2-aks.0.4.4', '0.19.2'), ('0.19.6-aks.0.4.4', '0.19.6'),
    ('0.19', '0.19.0'),
])
def test_the_release_of_each_form(version, release):
    assert kueue_release(version) == release


@pytest.mark.parametrize('version', ['latest', '', None, '0.19.2-aks_1'])
def test_not_a_version_names_the_input(version):
    with pytest.raises(AnsibleFilterError, match='kueue_release: .* is not a version'):
        kueue_release(version)


def test_registered_name():
    assert FilterModule().filters() == {'kueue_release': kueue_release}
