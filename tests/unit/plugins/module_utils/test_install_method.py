"""Pure detection logic of kueue_info (module_utils/kueue/install_method.py): which Helm release of Kueue is the AKS
managed extension's own, from the cluster alone."""

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import install_method as im

NS = 'kueue-system'


def release(name, chart='kueue'):
    return {'name': name, 'namespace': NS, 'revision': 1, 'status': 'deployed', 'chart': chart}


def ext_config(name, ext_type='microsoft.kueue', namespace=NS, version='0.19.2'):
    return {'apiVersion': 'aks.clusterconfig.azure.com/v1beta1', 'kind': 'ExtensionConfig',
            'metadata': {'name': name, 'namespace': namespace},
            'spec': {'extensionType': ext_type, 'version': version}}


def configs(*items):
    return im.kueue_extension_configs(list(items), NS)


def test_kueue_extension_configs_keeps_only_microsoft_kueue_in_the_namespace():
    got = configs(ext_config('kueue', 'Microsoft.Kueue'), ext_config('flux', 'microsoft.flux'),
                  ext_config('other', namespace='elsewhere'), {'metadata': {'namespace': NS}, 'spec': {}},
                  {'metadata': {'name': 'typeless', 'namespace': NS}, 'spec': {'extensionType': 3}}, 'garbage')
    assert got == [{'name': 'kueue', 'namespace': NS, 'extension_type': 'Microsoft.Kueue', 'version': '0.19.2'}]
    assert im.kueue_extension_configs(None, NS) == []


@pytest.mark.parametrize('releases, deployment, cfgs, method, helm, ext', [
    # The extension alone: its release is named in its ExtensionConfig and its Deployment runs.
    ([release('kueue')], True, [ext_config('kueue')], 'extension', None, 'kueue'),
    # An extension named otherwise (kueue_extension_name), and an unrelated release in the namespace.
    ([release('ext-a'), release('grafana', 'grafana')], True, [ext_config('ext-a')], 'extension', None, 'ext-a'),
    # An OSS install: no Deployment, no ExtensionConfig.
    ([release('kueue')], False, [], 'helm', 'kueue', None),
    # The name alone proves nothing: an OSS release named like the extension, with an ExtensionConfig left behind
    # but no kueue-extension Deployment, is unmanaged.
    ([release('kueue')], False, [ext_config('kueue')], 'helm', 'kueue', None),
    # An OSS release beside the extension: both.
    ([release('kueue'), release('oss')], True, [ext_config('kueue')], 'both', 'oss', 'kueue'),
    ([release('oss', 'kueue')], True, [ext_config('kueue')], 'both', 'oss', None),
    # No ExtensionConfig to read (older AKS, no RBAC on it): cannot tell, both (ARM decides).
    ([release('kueue')], True, [], 'both', 'kueue', None),
    # An ExtensionConfig of another type does not count (configs() filters it out).
    ([release('kueue')], True, [ext_config('kueue', 'microsoft.flux')], 'both', 'kueue', None),
    # The Deployment without any release (e.g. a failed install): extension.
    ([], True, [ext_config('kueue')], 'extension', None, None),
    ([], False, [], 'none', None, None),
    # A namespace with only other charts' releases: nothing of Kueue.
    ([release('grafana', 'grafana')], False, [], 'none', None, None),
])
def test_classify(releases, deployment, cfgs, method, helm, ext):
    got = im.classify(releases, 'kueue', deployment, configs(*cfgs))
    assert got['install_method'] == method
    assert (got['helm_release'] or {}).get('name') == helm
    assert (got['extension_release'] or {}).get('name') == ext
    assert [r['name'] for r in got['releases']] == [r['name'] for r in releases]
    assert [r['name'] for r in got['releases'] if r['extension_managed']] == ([ext] if ext else [])
    assert all('extension_managed' not in r for r in releases)  # the input is left as it was


def test_classify_prefers_the_release_named_release_name():
    got = im.classify([release('a'), release('mine'), release('z')], 'mine', False, [])
    assert got['helm_release']['name'] == 'mine'
    got = im.classify([release('a', 'other'), release('b'), release('c')], 'mine', False, [])
    assert got['helm_release']['name'] == 'b'
