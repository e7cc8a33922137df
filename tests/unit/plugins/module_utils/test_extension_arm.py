"""module_utils/azure/extension_arm.py: the decisions of kueue_extension on plain values (the ARM-facing proof is
tests/integration/test_kueue_extension.py and test_extension_path.py, against the ARM emulator)."""

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.azure import arm as azure_arm
from ansible_collections.kueueops.aks.plugins.module_utils.azure import extension_arm as ea
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, ModuleFailure
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import KUBE_AUTH_ARGSPEC

SECRET = 's3cr3t-protected-value'


def params(**kw):
    base = dict(state='present', resource_group='rg', cluster_name='aks1', name='kueue',
                extension_type='microsoft.kueue', release_train='preview', version=None, auto_upgrade_mode=None,
                release_namespace='kueue-system', configuration_settings=None, configuration_protected_settings=None,
                update_protected_settings='on_create', wait=True, timeout=900, return_kubeconfig=False,
                kubeconfig_dest=None, kubeconfig=None, host=None, secret=None)
    base.update(kw)
    return base


def arm(props=None, name='kueue'):
    base = {'extensionType': 'microsoft.kueue', 'releaseTrain': 'Preview', 'autoUpgradeMinorVersion': True,
            'scope': {'cluster': {'releaseNamespace': 'kueue-system'}}, 'currentVersion': '0.14.2',
            'provisioningState': 'Succeeded', 'extensionState': 'Available', 'configurationSettings': {}}
    base.update(props or {})
    return {'id': '/subscriptions/x/.../extensions/%s' % name, 'name': name, 'properties': base}


def test_no_ansible_basic_at_import():
    with open(ea.__file__) as handle:
        assert 'ansible.module_utils.basic' not in handle.read()
    assert 'AnsibleModule' not in vars(ea)


def test_secrets_of():
    assert azure_arm.secrets_of(params(secret='sp', configuration_protected_settings={'a': SECRET})) == ['sp', SECRET]
    assert azure_arm.secrets_of(params()) == [None]


# ---- before Azure is contacted -------------------------------------------------

def test_check_run():
    ea.check_run(params(), no_log=False)
    with pytest.raises(KueueOpsError) as err:
        ea.check_run(params(return_kubeconfig=True), no_log=False)
    assert err.value.message() == ('return_kubeconfig: the kubeconfig holds credentials and the task does not set '
                                   'no_log. Fix: add no_log: true to the task, or write it to a 0600 file with '
                                   'kubeconfig_dest.')
    ea.check_run(params(return_kubeconfig=True), no_log=True)
    with pytest.raises(KueueOpsError) as err:
        ea.check_run(params(timeout=0, name='Bad Name'), no_log=False)
    assert err.value.message() == 'timeout: must be positive. Fix: give the seconds to wait, for example 900.'
    with pytest.raises(KueueOpsError) as err:
        ea.check_run(params(name='Bad Name'), no_log=False)
    assert err.value.field == 'name'  # then validate_params
    with pytest.raises(KueueOpsError) as err:
        ea.check_run(params(state='absent', list_versions=True), no_log=False)
    assert err.value.field == 'list_versions' and 'state=present' in err.value.fix
    ea.check_run(params(list_versions=True), no_log=False)


class Listing(ea.KueueExtension):
    """KueueExtension with the ARM list replaced: counts the lists it sends."""

    def __init__(self, offered, **kw):
        super().__init__(params(list_versions=True, **kw), check_mode=True)
        self.offer, self.lists = offered, 0

    def _list_offered_versions(self):
        self.lists += 1
        return self.offer


def test_list_versions_lists_once_and_refuses_a_version_not_offered():
    run = Listing(['0.19.2-aks.0.4.4', '0.18.4-aks.0.4.4'], version='0.19.2-aks.0.4.4')
    assert run.list_versions() == ['0.19.2-aks.0.4.4', '0.18.4-aks.0.4.4']
    assert run.offered_versions() == run.list_versions() and run.lists == 1  # the preflight reuses the list
    with pytest.raises(KueueOpsError) as err:
        Listing(['0.19.2-aks.0.4.4'], version='0.16.0-aks.0.4.4').list_versions()
    assert err.value.field == 'version' and 'offered: 0.19.2-aks.0.4.4' in err.value.message()
    with pytest.raises(KueueOpsError) as err:
        Listing([]).list_versions()
    assert err.value.field == 'release_train'
    unreadable = Listing(None, version='0.16.0-aks.0.4.4')  # not listed (warned): ARM checks the version
    assert unreadable.list_versions() is None and unreadable.offered_versions() is None and unreadable.lists == 1


# ---- the plan of state=present ---------------------------------------------------

def test_present_plan_create_update_none():
    assert ea.present_plan(params(), None) == ('created', ['extension'])
    assert ea.present_plan(params(), arm()) == ('none', [])
    settings = params(configuration_settings={'a': 'b'})
    assert ea.present_plan(settings, arm()) == ('updated', ['configuration_settings'])
    assert ea.present_plan(params(version='0.14.3'), arm()) == ('updated', ['version', 'auto_upgrade_mode'])


def test_present_plan_a_failed_extension_is_created_again():
    assert ea.present_plan(params(), arm({'provisioningState': 'Failed'})) == ('created', ['provisioning_state'])
    assert ea.present_plan(params(configuration_settings={'a': 'b'}), arm({'provisioningState': 'Canceled'})) == (
        'created', ['configuration_settings'])


def test_present_plan_refuses_what_cannot_change():
    current = arm({'extensionType': 'other.kueue', 'scope': {'cluster': {'releaseNamespace': 'elsewhere'}}})
    with pytest.raises(KueueOpsError) as err:
        ea.present_plan(params(), current)
    assert err.value.field == 'extension_type'
    assert err.value.problem == ('extension kueue exists with extension_type other.kueue, release_namespace '
                                 'elsewhere; extension_type and release_namespace cannot change on an existing '
                                 'extension')


def test_after_view():
    before = {'name': 'kueue', 'configuration_settings': {'old': 'x'}, 'auto_upgrade_mode': 'patch'}
    after = ea.after_view(params(), before)
    assert after['configuration_settings'] == {'old': 'x'} and after['auto_upgrade_mode'] == 'patch'
    assert after['release_namespace'] == 'kueue-system' and before == {
        'name': 'kueue', 'configuration_settings': {'old': 'x'}, 'auto_upgrade_mode': 'patch'}
    after = ea.after_view(params(configuration_settings={'a': 'b'}, auto_upgrade_mode='none', version='0.14.2'),
                          before)
    assert after['configuration_settings'] == {'a': 'b'} and after['auto_upgrade_mode'] == 'none'
    shown = ea.after_view(params(configuration_protected_settings={'token': SECRET}), {})
    assert SECRET not in repr(shown) and list(shown['configuration_protected_settings']) == ['token']


@pytest.mark.parametrize('operation,changes,needed', [
    ('created', ['extension'], True), ('updated', ['version'], True), ('updated', ['release_train'], True),
    ('updated', ['configuration_settings'], False), ('none', [], False)])
def test_check_versions_needed(operation, changes, needed):
    assert ea.check_versions_needed(operation, changes) is needed


def test_kept_settings_warning():
    current = arm({'configurationSettings': {'a': 'b', 'kept': 'x', 'also': 'y'}})
    assert ea.kept_settings_warning(params(), current) is None  # configuration_settings not given
    assert ea.kept_settings_warning(params(configuration_settings={'a': 'b', 'kept': 'x', 'also': 'y'}),
                                    current) is None
    assert ea.kept_settings_warning(params(configuration_settings={'a': 'b'}), current) == (
        'ARM kept the configuration settings also, kept that configuration_settings does not list; remove and '
        're-create the extension to drop them')


# ---- messages --------------------------------------------------------------------

def test_timed_out_error():
    assert ea.timed_out_error('creating extension kueue', 900).message() == (
        'timeout: creating extension kueue did not finish within 900s. Fix: raise timeout; the operation may still '
        'finish in Azure, run the task again to see.')
    err = ea.timed_out_error('x', 5, arm({'provisioningState': 'Creating', 'extensionState': None}))
    assert err.problem == 'x did not finish within 5s (provisioningState Creating, extensionState None)'


def test_failed_error_scrubs_secrets():
    error = {'code': 'Bad', 'message': 'token %s refused' % SECRET}
    current = arm({'provisioningState': 'Failed', 'errorInfo': error})
    err = ea.failed_error(current, 'creating extension kueue', [None, SECRET])
    assert SECRET not in err.message() and err.field == 'name'
    assert err.problem.startswith('creating extension kueue: the extension is Failed: Bad: token ')
    assert 'an extension whose state is Failed is created again' in err.fix
    assert 'force_delete=true' in ea.failed_error(current, 'deleting', [SECRET], deleting=True).fix


def test_preflight_error():
    err = ea.preflight_error([KueueOpsError('too old', field='cluster_name', fix='upgrade'),
                              KueueOpsError('automatic', field='preflight')])
    assert err.message() == ('cluster_name: preflight failed: (1) cluster_name: too old. Fix: upgrade. '
                             '(2) preflight: automatic.')


def test_deletion_warning():
    assert ea.deletion_warning(params()) == (
        'deleting extension kueue deletes every Kueue custom resource in cluster aks1 (queues, flavors, cohorts, '
        'priority classes); Jobs and Pods stay')


# ---- how the preflight reaches the cluster -----------------------------------------

def test_kube_params_the_modules_options_when_they_point_at_something():
    fetched = []
    options, source = ea.kube_params(params(host='https://127.0.0.1:6443', api_key='t'), lambda: fetched.append(1))
    assert source == 'the Kubernetes options' and fetched == []
    assert set(options) == set(KUBE_AUTH_ARGSPEC) and options['host'] == 'https://127.0.0.1:6443'


def test_kube_params_else_the_fetched_credentials_with_the_proxy(tmp_path):
    kubeconfig = {'apiVersion': 'v1', 'clusters': []}
    options, source = ea.kube_params(params(kubeconfig=str(tmp_path / 'absent'), context='c', proxy='http://p:3128',
                                            no_proxy='x', api_key='ignored'), lambda: kubeconfig)
    assert source == 'the cluster credentials from ARM'
    assert options['kubeconfig'] is kubeconfig and options['proxy'] == 'http://p:3128' and options['no_proxy'] == 'x'
    assert options['context'] is None and options['api_key'] is None


# ---- a missing library is a ModuleFailure, reported as it is -------------------------

def test_missing_libraries(monkeypatch):
    runner = ea.KueueExtension(params(), no_log_values=set())
    assert (runner.check_mode, runner.diff_mode, runner.no_log) == (False, False, False)
    monkeypatch.setattr(ea, 'yaml', None)
    with pytest.raises(ModuleFailure) as err:
        runner.kubeconfig_dict()
    assert set(err.value.result) == {'msg'} and 'PyYAML' in err.value.result['msg']
    assert 'to read the cluster kubeconfig' in err.value.result['msg']
    monkeypatch.setattr(ea, 'kubernetes_missing', lambda: dict(msg='no kubernetes', exception='trace'))
    with pytest.raises(ModuleFailure) as err:
        runner.kueue_deployments()
    assert err.value.result == dict(msg='no kubernetes', exception='trace')


class Failing:
    """What require_azure_sdk needs of a module: fail_json, recorded."""

    def __init__(self):
        self.failed = None

    def fail_json(self, **kwargs):
        self.failed = kwargs
        raise SystemExit(1)


def test_require_azure_sdk_names_the_missing_library_and_the_fix(azure_sdk_missing):
    module = Failing()
    azure_arm.require_azure_sdk(module, 'azure-mgmt-containerservice', reason='to read the agent pools')
    assert module.failed is None  # everything installed: nothing said
    azure_sdk_missing('azure.mgmt.containerservice')
    with pytest.raises(SystemExit):
        azure_arm.require_azure_sdk(module, 'azure-mgmt-containerservice', reason='to read the agent pools')
    msg = module.failed['msg']
    assert 'azure-mgmt-containerservice' in msg, msg
    assert 'to read the agent pools; run `pip install -r requirements.txt` from the kueueops.aks collection in the ' \
           'Python that runs the module' in msg, msg
    assert "'azure.mgmt.containerservice'" in module.failed['exception']


def test_require_azure_sdk_asks_for_azure_identity_first(azure_sdk_missing):
    module = Failing()
    azure_sdk_missing('azure.identity', 'azure.mgmt.containerservice')
    with pytest.raises(SystemExit):
        azure_arm.require_azure_sdk(module, 'azure-mgmt-containerservice', reason='to read the agent pools')
    assert 'azure-identity' in module.failed['msg'] and "'azure.identity'" in module.failed['exception']
