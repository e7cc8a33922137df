"""The supported and tested Kubernetes minors, stated once (issue 45): module_utils/common/kubernetes_support.py, which the
extension's preflight and kueue_helm use, says what hack/versions.env gives CI."""
import os
import re

from ansible_collections.kueueops.aks.plugins.module_utils.azure import extension
from ansible_collections.kueueops.aks.plugins.module_utils.common import kubernetes_support as ks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def _versions_env():
    text = open(os.path.join(ROOT, 'hack', 'versions.env')).read()
    return dict(re.findall(r'^([A-Z_0-9]+)=(\S+)$', text, re.M))


def test_the_tested_minors_are_what_ci_runs():
    env = _versions_env()
    assert ks.minor_of(env['KUBE_VERSION']) == ks.MIN_KUBERNETES
    assert ks.minor_of(env['KUBE_VERSION_NEWEST']) == ks.NEWEST_TESTED_KUBERNETES
    assert ks.tested_text() == '%d.%d to %d.%d' % (ks.MIN_KUBERNETES + ks.NEWEST_TESTED_KUBERNETES)


def test_the_readme_states_the_tested_minors():
    readme = open(os.path.join(ROOT, 'README.md')).read()
    assert 'Kubernetes %s' % ks.tested_text() in readme


def test_a_newer_minor_is_warned_about_naming_the_newest_tested():
    newest = '%d.%d' % ks.NEWEST_TESTED_KUBERNETES
    above = '%d.%d.1' % (ks.NEWEST_TESTED_KUBERNETES[0], ks.NEWEST_TESTED_KUBERNETES[1] + 1)
    warning = ks.newer_than_tested_warning('v' + above)
    assert warning and above in warning and '(%s;' % newest in warning and 'not refused' in warning
    for quiet in ('%d.%d.9' % ks.NEWEST_TESTED_KUBERNETES, '1.34.5', 'v1.33.0', None, '', 'garbage'):
        assert ks.newer_than_tested_warning(quiet) is None, quiet


def test_the_extension_preflight_refuses_below_and_warns_above():
    def cluster(version):
        return {'properties': {'currentKubernetesVersion': version}, 'sku': {'name': 'Base'}}
    failures, _warnings, _facts = extension.preflight_cluster(cluster('1.33.7'))
    assert failures and 'needs 1.34 or later' in failures[0].message()
    failures, warnings, _facts = extension.preflight_cluster(cluster('1.38.0'))
    assert not failures and [w for w in warnings if 'newer than the newest minor' in w and '1.38.0' in w]
    failures, warnings, _facts = extension.preflight_cluster(cluster('1.37.2'))
    assert not failures and not [w for w in warnings if 'newer than the newest minor' in w]
