"""Pure logic of the managed Kueue extension (module_utils/azure/extension.py) and the Azure connection options."""

import os

import pytest
import yaml

from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
    ServiceRequestError,
)
from azure.identity import ClientSecretCredential

from ansible_collections.kueueops.aks.plugins.doc_fragments import azure_auth as azure_doc
from ansible_collections.kueueops.aks.plugins.module_utils.azure import extension as x
from ansible_collections.kueueops.aks.plugins.module_utils.common import kubernetes_support
from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_auth import (
    AZURE_AUTH_ARGSPEC,
    AZURE_CONNECTION_ARGSPEC,
    build_credential,
)
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError

SUB = '00000000-0000-0000-0000-000000000001'
TENANT = '00000000-0000-0000-0000-0000000000aa'


def params(**kw):
    base = dict(name='kueue', extension_type='microsoft.kueue', release_train='preview', version=None,
                auto_upgrade_mode=None, release_namespace='kueue-system', configuration_settings=None,
                configuration_protected_settings=None, update_protected_settings='on_create')
    base.update(kw)
    return base


def arm(props=None, name='kueue', **extra):
    """An extension as ARM returns it for the default options."""
    base = {'extensionType': 'microsoft.kueue', 'releaseTrain': 'Preview', 'autoUpgradeMinorVersion': True,
            'scope': {'cluster': {'releaseNamespace': 'kueue-system'}}, 'currentVersion': '0.14.2',
            'provisioningState': 'Succeeded', 'extensionState': 'Available', 'configurationSettings': {}}
    base.update(props or {})
    ext = {'id': '/subscriptions/%s/.../extensions/%s' % (SUB, name), 'name': name, 'properties': base}
    ext.update(extra)
    return ext


def cluster(version='1.34.2', sku='Base', nap=None, power='Running', location='westeurope'):
    props = {'kubernetesVersion': version, 'currentKubernetesVersion': version, 'powerState': {'code': power}}
    if nap:
        props['nodeProvisioningProfile'] = {'mode': nap}
    return {'location': location, 'sku': {'name': sku, 'tier': 'Standard'}, 'properties': props}


# ---- inputs -----------------------------------------------------------------

def test_settings_are_strings():
    assert x.normalize_settings({'a': True, 'b': False, 'c': 3, 'd': 'x', 'e': 1.5}, 'f') == {
        'a': 'true', 'b': 'false', 'c': '3', 'd': 'x', 'e': '1.5'}
    assert x.normalize_settings(None, 'f') is None
    with pytest.raises(KueueOpsError) as info:
        x.normalize_settings({'a': [1]}, 'configuration_settings')
    assert info.value.field == 'configuration_settings' and 'a must be' in info.value.message()


@pytest.mark.parametrize('kw,field', [
    (dict(name='Kueue_1'), 'name'),
    (dict(release_namespace='Kueue System'), 'release_namespace'),
    (dict(version='newest'), 'version'),
    (dict(auto_upgrade_mode='none'), 'auto_upgrade_mode'),
    (dict(release_train=' '), 'release_train'),
    (dict(release_train='nightly'), 'release_train'),
    (dict(configuration_settings={'k': 'a'}, configuration_protected_settings={'k': 'b'}),
     'configuration_protected_settings'),
])
def test_validate_params_names_the_field(kw, field):
    with pytest.raises(KueueOpsError) as info:
        x.validate_params(params(**kw))
    assert info.value.field == field and 'Fix:' in info.value.message()


def test_validate_params_accepts_defaults_and_pins():
    x.validate_params(params())
    x.validate_params(params(name='aks-kueue', version='v0.14.2', auto_upgrade_mode='none'))
    x.validate_params(params(version='0.15.0-rc.1', auto_upgrade_mode='patch'))
    x.validate_params(params(release_train='Stable'))


def test_upgrade_properties_follow_train_or_pin():
    assert x.upgrade_properties(params()) == {'releaseTrain': 'preview', 'autoUpgradeMinorVersion': True}
    assert x.upgrade_properties(params(auto_upgrade_mode='patch')) == {
        'releaseTrain': 'preview', 'autoUpgradeMinorVersion': True, 'autoUpgradeMode': 'patch'}
    # A pinned version requires autoUpgradeMinorVersion=false; mode defaults to none.
    assert x.upgrade_properties(params(version='v0.14.2')) == {
        'releaseTrain': 'preview', 'autoUpgradeMinorVersion': False, 'version': '0.14.2', 'autoUpgradeMode': 'none'}
    assert x.upgrade_properties(params(version='0.14.2', auto_upgrade_mode='compatible'))['autoUpgradeMinorVersion'] is False


def test_desired_properties_put_body():
    props = x.desired_properties(params(configuration_settings={'a': True},
                                        configuration_protected_settings={'token': 's3cret'}))
    assert props == {'extensionType': 'microsoft.kueue', 'scope': {'cluster': {'releaseNamespace': 'kueue-system'}},
                     'releaseTrain': 'preview', 'autoUpgradeMinorVersion': True,
                     'configurationSettings': {'a': 'true'}, 'configurationProtectedSettings': {'token': 's3cret'}}
    assert 'configurationProtectedSettings' not in x.desired_properties(
        params(configuration_protected_settings={'token': 's'}), with_protected=False)


# ---- comparison -------------------------------------------------------------

def test_matching_extension_has_no_changes():
    assert x.compare(params(), arm()) == ([], [])
    # release train case and an unset configuration_settings option are not differences
    assert x.compare(params(), arm({'configurationSettings': {'x': 'y'}})) == ([], [])
    pinned = arm({'autoUpgradeMinorVersion': False, 'version': '0.14.2', 'autoUpgradeMode': 'none'})
    assert x.compare(params(version='v0.14.2'), pinned) == ([], [])


def test_settings_changes_and_removals():
    changes, _ = x.compare(params(configuration_settings={'a': 1}), arm({'configurationSettings': {'a': '2', 'b': 'x'}}))
    assert changes == ['configuration_settings']
    body = x.patch_body(params(configuration_settings={'a': 1}), arm({'configurationSettings': {'a': '2', 'b': 'x'}}),
                        changes)
    assert body == {'properties': {'configurationSettings': {'a': '1'}}}
    assert x.compare(params(configuration_settings={}), arm({'configurationSettings': {}})) == ([], [])


def test_version_pin_unpin_and_mode():
    changes, _ = x.compare(params(version='0.15.0'), arm({'autoUpgradeMinorVersion': False, 'version': '0.14.2',
                                                          'autoUpgradeMode': 'none'}))
    assert changes == ['version']
    changes, _ = x.compare(params(version='0.14.2'), arm())  # following the train -> pin
    assert 'version' not in changes and 'auto_upgrade_mode' in changes
    body = x.patch_body(params(version='0.14.2'), arm(), changes)
    assert body['properties'] == {'releaseTrain': 'preview', 'autoUpgradeMinorVersion': False, 'version': '0.14.2',
                                  'autoUpgradeMode': 'none'}
    pinned = arm({'autoUpgradeMinorVersion': False, 'version': '0.14.2', 'autoUpgradeMode': 'none'})
    changes, _ = x.compare(params(), pinned)  # unpin
    assert changes == ['version']
    assert x.patch_body(params(), pinned, changes)['properties'] == {
        'releaseTrain': 'preview', 'autoUpgradeMinorVersion': True, 'version': None}
    assert x.compare(params(auto_upgrade_mode='compatible'), arm())[0] == []  # ARM's documented default
    assert x.compare(params(auto_upgrade_mode='patch'), arm())[0] == ['auto_upgrade_mode']
    assert x.compare(params(release_train='stable'), arm())[0] == ['release_train']


def test_immutable_fields():
    _, immutable = x.compare(params(release_namespace='other', extension_type='microsoft.other'), arm())
    assert immutable == ['extension_type', 'release_namespace']


def test_protected_settings_policy():
    secret = params(configuration_protected_settings={'token': 's3cret'})
    # on_create: values cannot be read back; an existing extension is not changed for them...
    assert x.compare(secret, arm()) == ([], [])
    # ... unless ARM reports a different set of names
    assert x.compare(secret, arm({'configurationProtectedSettings': {'other': ''}}))[0] == [
        'configuration_protected_settings']
    assert x.compare(secret, arm({'configurationProtectedSettings': {'token': ''}}))[0] == []
    # always: sent on every run
    always = params(configuration_protected_settings={'token': 's3cret'}, update_protected_settings='always')
    changes, _ = x.compare(always, arm())
    assert changes == ['configuration_protected_settings']
    assert x.patch_body(always, arm(), changes) == {'properties': {'configurationProtectedSettings': {'token': 's3cret'}}}


def test_states():
    assert x.is_ready(arm())
    assert x.is_ready(arm({'extensionState': None})) and x.is_ready(arm({'extensionState': 'Ready'}))
    assert not x.is_ready(arm({'extensionState': 'Pending'}))
    assert not x.is_ready(arm({'provisioningState': 'Creating'}))
    assert x.is_busy(arm({'provisioningState': 'Updating'})) and not x.is_busy(arm())
    assert x.is_failed(arm({'provisioningState': 'Canceled'})) and not x.is_busy(arm({'provisioningState': 'Failed'}))


# ---- output -------------------------------------------------------------------

def test_redaction_and_diff_never_hold_secret_values():
    ext = arm({'configurationProtectedSettings': {'token': 's3cret'}})
    red = x.redact_extension(ext)
    assert red['properties']['configurationProtectedSettings'] == {'token': x.REDACTED}
    assert ext['properties']['configurationProtectedSettings'] == {'token': 's3cret'}  # a copy
    assert 's3cret' not in repr(x.diff_view(extension=ext))
    view = x.diff_view(params=params(configuration_protected_settings={'token': 's3cret'}, configuration_settings={'a': 1}))
    assert 's3cret' not in repr(view) and view['configuration_protected_settings'] == {'token': x.REDACTED}
    assert view['configuration_settings'] == {'a': '1'} and view['release_namespace'] == 'kueue-system'
    assert x.diff_view(extension=arm())['release_train'] == 'Preview'
    assert x.redact_extension(None) is None


def test_failure_message_has_error_info_and_statuses():
    ext = arm({'provisioningState': 'Failed', 'errorInfo': {
        'code': 'ExtensionOperationFailed', 'message': 'helm install failed',
        'details': [{'code': 'HelmError', 'message': 'timed out waiting for the condition'}]},
        'statuses': [{'code': 'InstallationFailed', 'level': 'Error', 'message': 'pods not ready'}]})
    text = x.failure_message(ext)
    assert text == ('ExtensionOperationFailed: helm install failed; HelmError: timed out waiting for the condition; '
                    '[Error] pods not ready')
    assert x.failure_message(arm()) == 'no errorInfo or statuses reported'


# ---- preflight ------------------------------------------------------------------

def test_preflight_passes_a_supported_cluster():
    failures, warnings, facts = x.preflight_cluster(cluster(), 'preview')
    assert failures == []
    assert facts == {'kubernetes_version': '1.34.2', 'sku': 'Base', 'node_provisioning_mode': None,
                     'location': 'westeurope'}
    assert len(warnings) == 1 and 'westeurope' in warnings[0] and 'preview' in warnings[0]
    assert x.preflight_cluster(cluster(), 'stable')[1] == []
    assert x.preflight_cluster(cluster(version='1.35.0', nap='Manual'), 'stable')[0] == []


@pytest.mark.parametrize('kw,needle', [
    (dict(version='1.33.5'), '1.33.5'),
    (dict(version='1.9.0'), 'needs 1.34'),
    (dict(sku='Automatic'), 'AKS Automatic'),
    (dict(nap='Auto'), 'node auto-provisioning'),
    (dict(power='Stopped'), 'stopped'),
])
def test_preflight_failures_have_reason_and_fix(kw, needle):
    failures, _, _ = x.preflight_cluster(cluster(**kw))
    assert len(failures) == 1
    assert needle in failures[0].message() and 'Fix:' in failures[0].message()
    assert failures[0].field == 'cluster_name'


def test_preflight_reports_every_failure_and_prefers_current_version():
    failures, _, _ = x.preflight_cluster(cluster(version='1.32.0', sku='Automatic', nap='Auto'))
    assert len(failures) == 3
    mixed = cluster()
    mixed['properties']['kubernetesVersion'] = '1.34'
    mixed['properties']['currentKubernetesVersion'] = '1.33.9'  # mid-upgrade: what runs counts
    assert x.kubernetes_version(mixed) == '1.33.9' and x.preflight_cluster(mixed)[0]
    assert kubernetes_support.minor_of('v1.34.1') == (1, 34) and kubernetes_support.minor_of(None) is None
    _, warnings, _ = x.preflight_cluster({'properties': {}})
    assert any('no Kubernetes version' in w for w in warnings)


def test_unmanaged_kueue_detection():
    managers = [('kueue-system', 'kueue-controller-manager'), ('batch', 'kueue-controller-manager')]
    assert x.unmanaged_kueue(managers, ['kueue-system']) == ['batch/kueue-controller-manager']
    assert x.unmanaged_kueue(managers[:1], ['kueue-system']) == []
    assert x.unmanaged_kueue(managers[:1], []) == ['kueue-system/kueue-controller-manager']
    err = x.unmanaged_kueue_error(['batch/kueue-controller-manager'])
    assert 'playbooks/migrate.yml' in err.message() and 'batch/kueue-controller-manager' in err.message()


def test_explicit_kube_options(tmp_path):
    existing = tmp_path / 'kc'
    existing.write_text('apiVersion: v1')
    assert x.explicit_kube_options(None, 'https://127.0.0.1:6443')
    assert x.explicit_kube_options({'clusters': []}, None)
    assert x.explicit_kube_options(str(existing), None)
    assert not x.explicit_kube_options(str(existing), None, kubeconfig_dest=str(existing))
    assert not x.explicit_kube_options(str(tmp_path / 'missing'), None)
    assert not x.explicit_kube_options('', None) and not x.explicit_kube_options(None, None)
    # Several paths (issue 13): explicit when each exists and none is the file the module writes.
    other = tmp_path / 'other'
    other.write_text('x')
    assert x.explicit_kube_options(str(existing) + os.pathsep + str(other), None)
    assert not x.explicit_kube_options(str(existing) + os.pathsep + str(tmp_path / 'missing'), None)
    assert not x.explicit_kube_options(str(other) + os.pathsep + str(existing), None, kubeconfig_dest=str(existing))


# ---- errors ---------------------------------------------------------------------

class FakeResponse:
    def __init__(self, status, body, reason='Error'):
        import json
        self.status_code = status
        self.reason = reason
        self.headers = {'content-type': 'application/json'}
        self._body = json.dumps(body).encode()
        self.content_type = 'application/json'
        self.request = None

    def text(self, encoding=None):
        return self._body.decode()

    def body(self):
        return self._body


def http_error(cls, status, code, message):
    return cls(response=FakeResponse(status, {'error': {'code': code, 'message': message}}))


@pytest.mark.parametrize('code,field', [
    ('ResourceGroupNotFound', 'resource_group'),
    ('ResourceNotFound', 'cluster_name'),
])
def test_not_found_names_the_option(code, field):
    err = x.describe_azure_error(http_error(ResourceNotFoundError, 404, code, 'not found'), 'reading managed cluster aks')
    assert err.field == field and code in err.message() and 'reading managed cluster aks' in err.message()


def test_http_errors():
    err = x.describe_azure_error(http_error(HttpResponseError, 403, 'AuthorizationFailed', 'no access'), 'x')
    assert err.field == 'client_id' and 'AuthorizationFailed' in err.message()
    err = x.describe_azure_error(http_error(HttpResponseError, 429, 'TooManyRequests', 'slow down'), 'x')
    assert 'after retries' in err.message()
    err = x.describe_azure_error(http_error(HttpResponseError, 400, 'InvalidVersion', 'no such version'), 'x')
    assert 'InvalidVersion' in err.message()


def test_auth_errors_name_the_field_and_hide_the_secret():
    exc = ClientAuthenticationError(message='ClientSecretCredential.get_token failed: AADSTS7000215: Invalid client '
                                            'secret provided for app; secret was hunter2-secret')
    err = x.describe_azure_error(exc, 'reading managed cluster aks', {'secret': 'hunter2-secret'},
                                 secrets=['hunter2-secret'])
    assert err.field == 'secret' and 'hunter2-secret' not in err.message() and 'AADSTS7000215' in err.message()
    err = x.describe_azure_error(ClientAuthenticationError(message='AADSTS700016: Application not found'), 'x')
    assert err.field == 'client_id'
    err = x.describe_azure_error(ClientAuthenticationError(message='AADSTS90002: Tenant not found'), 'x')
    assert err.field == 'tenant'
    err = x.describe_azure_error(ClientAuthenticationError(message='invalid_client'), 'x', {'secret': 's'})
    assert err.field == 'secret'
    err = x.describe_azure_error(ClientAuthenticationError(message="Authentication failed: HTTPSConnection(host="
                                                                   "'127.0.0.1', port=1): Failed to establish a new "
                                                                   "connection: [Errno 111] Connection refused"), 'x')
    assert err.field == 'cloud_environment'
    err = x.describe_azure_error(ClientAuthenticationError(message='SSLError: [SSL: CERTIFICATE_VERIFY_FAILED]'), 'x')
    assert err.field == 'ca_bundle'
    err = x.describe_azure_error(ClientAuthenticationError(message='something else'), 'x')
    assert err.field == 'auth_source'


def test_connection_errors():
    err = x.describe_azure_error(ServiceRequestError('[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed'), 'x')
    assert err.field == 'ca_bundle'
    err = x.describe_azure_error(ServiceRequestError('Connection refused'), 'x')
    assert err.field == 'cloud_environment'
    err = x.describe_azure_error(ValueError('odd'), 'x')
    assert 'ValueError' in err.message()


# ---- Azure connection options (azure_auth additions) ------------------------------

def test_connection_fragment_matches_argspec():
    options = yaml.safe_load(azure_doc.ModuleDocFragment.CONNECTION)['options']
    assert set(options) == set(AZURE_CONNECTION_ARGSPEC) == {'ca_bundle'}
    assert options['ca_bundle']['type'] == AZURE_CONNECTION_ARGSPEC['ca_bundle']['type'] == 'path'
    assert 'AZURE_CA_BUNDLE' in ' '.join(options['ca_bundle']['description'])
    assert AZURE_CONNECTION_ARGSPEC['ca_bundle']['fallback'][1] == ['AZURE_CA_BUNDLE']


def auth_params(**kw):
    base = dict((name, spec.get('default')) for name, spec in AZURE_AUTH_ARGSPEC.items())
    base.update(client_id='app', secret='pw', tenant=TENANT, subscription_id=SUB)
    base.update(kw)
    return base


def test_custom_cloud_with_ca_bundle(tmp_path):
    ca = tmp_path / 'ca.pem'
    ca.write_text('-----BEGIN CERTIFICATE-----\n')
    session = build_credential(auth_params(cloud_environment='https://127.0.0.1:8443', ca_bundle=str(ca)),
                               environ={'AZURE_AUTHORITY_HOST': 'https://127.0.0.1:8443'})
    assert session.client_kwargs() == {'base_url': 'https://127.0.0.1:8443/',
                                       'credential_scopes': ['https://127.0.0.1:8443/.default'],
                                       'connection_verify': str(ca)}
    cred = session.credential
    assert isinstance(cred, ClientSecretCredential)
    assert cred._client._pipeline._transport.connection_config.verify == str(ca)
    # A custom authority is not in Microsoft's instance discovery list.
    assert cred._instance_discovery is False


def test_public_cloud_keeps_instance_discovery_and_system_ca():
    session = build_credential(auth_params(), environ={})
    assert 'connection_verify' not in session.client_kwargs()
    assert session.credential._instance_discovery is not False


def test_missing_ca_bundle_names_the_option(tmp_path):
    with pytest.raises(KueueOpsError) as info:
        build_credential(auth_params(ca_bundle=str(tmp_path / 'none.pem')), environ={})
    assert info.value.field == 'ca_bundle'


def test_extension_type_versions_url_is_the_cluster_scoped_list():
    url = x.extension_type_versions_url('sub-1', 'rg 1', 'aks', 'microsoft.kueue', 'preview')
    path, query = url.split('?')
    assert path == ('/subscriptions/sub-1/resourceGroups/rg%201/providers/Microsoft.ContainerService/managedClusters/'
                    'aks/providers/Microsoft.KubernetesConfiguration/extensionTypes/microsoft.kueue/versions')
    assert query == 'api-version=2026-04-01&releaseTrain=preview'


def test_offered_versions_reads_every_page_once():
    pages = [{'value': [{'name': '0.14.2', 'properties': {'version': '0.14.2'}}, {'name': 'v0.14.1'}],
              'nextLink': 'https://next'},
             {'value': [{'properties': {'version': '0.14.2'}}, {'properties': {'version': '0.13.9'}}]}, {}]
    assert x.offered_versions(pages) == ['0.14.2', '0.14.1', '0.13.9']


@pytest.mark.parametrize('params,offered,field,words', [
    (dict(version='0.15.0', release_train='preview'), ['0.14.2', '0.14.1'], 'version',
     ['0.15.0 is not a version of microsoft.kueue offered to cluster aks in release train preview',
      'offered: 0.14.2, 0.14.1', 'omit version']),
    (dict(version=None, release_train='stable'), [], 'release_train', ['stable offers no version', 'preview']),
    (dict(version='0.14.2', release_train='stable'), [], 'release_train', ['stable offers no version']),
])
def test_version_offer_error_names_the_option_and_the_offer(params, offered, field, words):
    err = x.version_offer_error(params, offered, 'aks')
    assert err.field == field
    assert all(w in err.message() for w in words), err.message()


def test_version_offer_error_names_the_offered_form_of_the_same_kueue_release():
    offered = ['0.19.2-aks.0.4.4', '0.18.4-aks.0.4.4']
    for pinned in ('0.19.2', '0.19.2-aks.9.9.9'):
        err = x.version_offer_error(dict(version=pinned, release_train='preview'), offered, 'aks')
        assert err.field == 'version' and '(offered: 0.19.2-aks.0.4.4, 0.18.4-aks.0.4.4)' in err.message()
        assert err.fix == ('pin 0.19.2-aks.0.4.4 (Kueue 0.19.2 as the release train offers it), or omit version to '
                           'follow the release train'), err.fix
    err = x.version_offer_error(dict(version='0.16.0-aks.0.4.4', release_train='preview'), offered, 'aks')
    assert err.fix == 'pin one of the offered versions, or omit version to follow the release train'
    assert x.version_offer_error(dict(version='0.18.4-aks.0.4.4', release_train='preview'), offered, 'aks') is None


@pytest.mark.parametrize('version', [None, '0.14.1', 'v0.14.1', ' 0.14.1 '])
def test_version_offer_error_accepts_offered_or_unpinned(version):
    assert x.version_offer_error(dict(version=version, release_train='preview'), ['0.14.2', '0.14.1'], 'aks') is None


# ----------------------------------------------------------------- the release train's rules (issue 39)
OFFERED = ['0.19.2-aks.0.4.4', '0.18.6-aks.0.4.5', '0.18.4-aks.0.4.4', '0.17.0-aks.0.4.4']


def pinned(version, **props):
    return arm(dict(dict(version=version, currentVersion=version, autoUpgradeMinorVersion=False,
                         provisioningState='Succeeded'), **props))


def test_latest_on_an_existing_extension_pins_the_newest_patch_of_its_minor():
    version, notices = x.resolve_version(params(version='latest'), pinned('0.18.4-aks.0.4.4'), OFFERED)
    assert version == '0.18.6-aks.0.4.5'
    assert len(notices) == 1 and notices[0].startswith('Kueue 0.19.2-aks.0.4.4 is published, a newer minor than the '
                                                       'installed 0.18.4-aks.0.4.4')
    # an extension that follows its train (no properties.version) is pinned at its installed minor
    following = arm(dict(currentVersion='0.18.4-aks.0.4.4', autoUpgradeMinorVersion=True,
                         provisioningState='Succeeded'))
    assert x.resolve_version(params(version='latest'), following, OFFERED)[0] == '0.18.6-aks.0.4.5'
    # never a downgrade, never a minor the train no longer offers: the installed version stays
    assert x.resolve_version(params(version='latest'), pinned('0.16.2-aks.0.4.4'), OFFERED)[0] == '0.16.2-aks.0.4.4'
    assert x.resolve_version(params(version='latest'), pinned('0.18.9-aks.0.4.4'), OFFERED)[0] == '0.18.9-aks.0.4.4'


def test_latest_on_a_fresh_cluster_and_when_arm_cannot_list():
    assert x.resolve_version(params(version='latest'), None, OFFERED + ['9.1.0-aks.0.5.0'])[0] == '0.19.2-aks.0.4.4'
    failed = arm(dict(currentVersion='0.18.4-aks.0.4.4', provisioningState='Failed'))  # created again: fresh
    assert x.resolve_version(params(version='latest'), failed, OFFERED)[0] == '0.19.2-aks.0.4.4'
    version, notices = x.resolve_version(params(version='latest'), pinned('0.18.4-aks.0.4.4'), None)
    assert version == '0.18.4-aks.0.4.4' and 'could not be listed' in notices[0]
    with pytest.raises(KueueOpsError) as err:
        x.resolve_version(params(version='latest'), None, None)
    assert err.value.field == 'version' and 'Fix:' in err.value.message()
    with pytest.raises(KueueOpsError) as err:
        x.resolve_version(params(version='latest'), None, ['9.1.0-aks.0.5.0'])
    assert err.value.field == 'version' and '9.1.0-aks.0.5.0' in err.value.problem


def test_a_pin_of_another_minor_is_refused_unless_allowed():
    with pytest.raises(KueueOpsError) as err:
        x.resolve_version(params(version='0.19.2-aks.0.4.4'), pinned('0.18.4-aks.0.4.4'), OFFERED)
    assert err.value.field == 'version' and 'playbooks/upgrade.yml -e kueue_extension_version=0.19.2-aks.0.4.4' in (
        err.value.message())
    assert x.resolve_version(params(version='0.19.2-aks.0.4.4', allow_minor_change=True), pinned('0.18.4-aks.0.4.4'),
                             OFFERED) == ('0.19.2-aks.0.4.4', [])
    assert x.resolve_version(params(version='0.18.6-aks.0.4.5'), pinned('0.18.4-aks.0.4.4'), OFFERED)[0] == (
        '0.18.6-aks.0.4.5')
    assert x.resolve_version(params(), pinned('0.18.4-aks.0.4.4'), OFFERED) == (None, [])  # follows the train


def test_following_the_train_is_warned():
    assert 'AKS upgrades it to a new Kueue minor by itself' in x.follows_train_warning(params(), None)
    assert x.follows_train_warning(params(version='0.18.4-aks.0.4.4'), None) is None
