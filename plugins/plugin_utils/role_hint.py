# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The controller side of this collection's modules (their action plugins, plugins/action/): when a module task
of the kueue role or of this collection's playbooks fails, its one failure message also names the role variable
of every module option it names: "binary_path: helm was not found ... In the kueue role and playbooks:
binary_path is kueue_helm_binary." So the user of the role reads the failure once, with the names they set
(kueue_version), not the module option (chart_version) first and the same failure again from a rescue.
A module task elsewhere (a user's own playbook) runs and fails exactly as without this.

They also run with Python's cyclic garbage collector paused (``gc_paused``). The task worker builds the module's
AnsiballZ payload first: ansible-core parses every module_utils file the module imports into a syntax tree
(``recursive_finder``, 65-516 KB of this collection's and 400 KB of ansible's own per module), and the many young
objects of those trees set the collector off again and again, though reference counting frees them all. Paused,
a module task's worker used 0.10 to 0.31 CPU s less (site.yml's kueue_capacity_info 0.53 -> 0.23, kueue_queues 0.46
-> 0.21; about 1 CPU s of a site.yml run of 8). The worker is a process forked for this one task; the collector's
state is given back when the task ends, so whatever cyclic garbage the task left is collected then.
"""

import contextlib
import dataclasses
import gc
import os
import re

from ansible.plugins.action.normal import ActionModule as NormalAction

from ansible_collections.kueueops.aks.plugins.plugin_utils import role_variables

# Which role (and playbook) variable sets each module option, by module; "kube" for the options every module has.
OPTION_VARIABLES = {
    'kube': {
        'kubeconfig': 'kueue_kubeconfig',
        'context': 'kueue_kube_context',
        'host': 'kueue_kubeconfig (the server of its context)',
    },
    # kueue_helm: generated from the module's options (role_variables.py), added below.
    'kueue_verify': {
        'namespace': 'kueue_namespace',
        'release_name': 'kueue_release_name',
        'feature_gates': 'kueue_feature_gates',
        'integrations': 'kueue_integrations',
        'smoke_test': 'kueue_smoke_test_queues',
        'smoke_test_requests': 'kueue_smoke_test_requests',
        'multikueue_admission_check': 'kueue_multikueue_admission_check',
        'multikueue_token_horizon': 'kueue_multikueue_token_warn_horizon',
    },
    'kueue_multikueue_worker': {
        'namespace': 'kueue_namespace',
        'service_account': 'kueue_multikueue_service_account',
        'token_type': 'kueue_multikueue_token_type',
        'token_ttl': 'kueue_multikueue_token_ttl',
        'rotate': 'kueue_multikueue_rotate_tokens',
        'server': 'kueue_multikueue_worker_server',
        'ca_data': 'kueue_multikueue_worker_ca',
        'cluster_name': 'kueue_multikueue_cluster_name',
    },
    'kueue_queues': {
        'resources': 'kueue_resources',
        'src': 'kueue_resources_src',
        'secrets': 'kueue_secrets',
        'prune': 'kueue_prune',
        'force': 'kueue_force',
        'hold_admission': 'kueue_hold_admission',
        'create_namespaces': 'kueue_create_namespaces',
        'kueue_namespace': 'kueue_namespace',
        'timeout': 'kueue_queues_timeout',
        'allow_other_cluster': 'kueue_restore_allow_other_cluster (the inventory hosts to restore into)',
    },
    'kueue_extension': {
        'resource_group': 'kueue_aks_resource_group',
        'cluster_name': 'kueue_aks_cluster_name',
        'name': 'kueue_extension_name',
        'release_train': 'kueue_extension_release_train',
        'version': 'kueue_extension_version',
        'auto_upgrade_mode': 'kueue_extension_auto_upgrade_mode',
        'release_namespace': 'kueue_namespace',
        'configuration_settings': 'kueue_extension_configuration_settings',
        'configuration_protected_settings': 'kueue_extension_configuration_protected_settings',
        'update_protected_settings': 'kueue_extension_update_protected_settings',
        'timeout': 'kueue_extension_timeout',
        'admin_credentials': 'kueue_aks_admin_credentials',
    },
    'kueue_backup': {
        'dest': 'kueue_backup_dir',
        'verify_path': 'kueue_backup_path',
        'include_secrets': 'kueue_backup_include_secrets',
        'include_aks_managed': 'kueue_backup_include_aks_managed',
        'aks_extension': 'kueue_backup_aks_extension',
        'cluster_name': 'kueue_backup_cluster_name',
        'cluster_resource_id': 'kueue_backup_cluster_resource_id',
        'kueue_namespace': 'kueue_namespace',
        'allow_other_cluster': 'kueue_restore_allow_other_cluster (the inventory hosts to restore into)',
    },
    'kueue_gitops': {
        'objects': 'kueue_gitops_pause',
        'state_file': 'kueue_gitops_state_file',
    },
    'kueue_info': {
        'kueue_namespace': 'kueue_namespace',
        'release_name': 'kueue_release_name',
    },
    'kueue_jobs_info': {
    },
    'kueue_capacity_info': {
        'resources': 'kueue_resources',
        'src': 'kueue_resources_src',
        'strict': 'kueue_capacity_check (strict)',
        'resource_group': 'kueue_aks_resource_group',
        'cluster_name': 'kueue_aks_cluster_name',
    },
    'kueue_drift_info': {
        'resources': 'kueue_resources',
        'src': 'kueue_resources_src',
        'secrets': 'kueue_secrets',
        'kueue_namespace': 'kueue_namespace',
        'version': 'kueue_version',
        'configuration_settings': 'kueue_extension_configuration_settings',
        'extension_version': 'kueue_extension_version',
    },
    'kueue_storage_migration': {
        'timeout': 'kueue_upgrade_migration_timeout',
        'page_size': 'kueue_upgrade_migration_page_size',
    },
}

# The Azure options (azure_auth.AZURE_AUTH_ARGSPEC and the CA bundle) of the modules that call ARM.
AZURE_VARIABLES = {
    'auth_source': 'kueue_azure_auth_source (or ANSIBLE_AZURE_AUTH_SOURCE)',
    'subscription_id': 'kueue_azure_subscription_id (or AZURE_SUBSCRIPTION_ID)',
    'client_id': 'kueue_azure_client_id (or AZURE_CLIENT_ID)',
    'secret': 'kueue_azure_secret (or AZURE_SECRET)',
    'tenant': 'kueue_azure_tenant (or AZURE_TENANT)',
    'profile': 'kueue_azure_profile (or AZURE_PROFILE)',
    'cloud_environment': 'kueue_azure_cloud_environment (or AZURE_CLOUD_ENVIRONMENT)',
    'ca_bundle': 'kueue_azure_ca_bundle (or AZURE_CA_BUNDLE)',
}
for _module in ('kueue_extension', 'kueue_capacity_info'):
    OPTION_VARIABLES[_module].update(AZURE_VARIABLES)

# kueue_helm's options as the roles and playbooks set them, and those of kueue_upgrade_plan and kueue_drift_info that
# kueue_helm has too, set by the same variables (role_variables.py, written by hack/gen_role_specs.py from the module).
OPTION_VARIABLES['kueue_helm'] = dict(role_variables.HELM)
for _module, _options in role_variables.HELM_OPTIONS_OF.items():
    OPTION_VARIABLES.setdefault(_module, {}).update((option, role_variables.HELM[option]) for option in _options)
OPTION_VARIABLES['kueue_upgrade_plan'].update(
    target_version='kueue_version (kueue_extension_version on the managed extension)', kueue_namespace='kueue_namespace')

_OPTION = re.compile(r'[a-z][a-z0-9]*_[a-z0-9_]+')
_LEADING = re.compile(r'^([a-z_]+):')
COLLECTION_ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), '..', '..'))
_OWN = tuple(os.path.join(COLLECTION_ROOT, folder) + os.sep for folder in ('roles', 'playbooks'))


def hint(message, module):
    """' In the kueue role and playbooks: <option> is <variable>; ...' for the options ``message`` names (those
    with an underscore wherever they appear; one-word options only as the message's leading "option:"), else ''."""
    if module not in OPTION_VARIABLES:
        return ''
    options = dict(OPTION_VARIABLES['kube'])
    options.update(OPTION_VARIABLES[module])
    leading = _LEADING.match(message)
    candidates = set(_OPTION.findall(message)) | set([leading.group(1)] if leading else [])
    named = ['%s is %s' % (option, variable) for option, variable in options.items() if option in candidates]
    return ' In the kueue role and playbooks: %s.' % '; '.join(named) if named else ''


def in_collection(task_path):
    """Whether a task (its ``get_path()``, FILE:LINE) is written in this collection's roles or playbooks."""
    path = (task_path or '').rsplit(':', 1)[0]
    return bool(path) and os.path.realpath(path).startswith(_OWN)


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector off for the block, on again after it if it was on (see the module doc)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class RoleHintAction(NormalAction):
    """Runs the module as ansible.builtin's normal action does, the garbage collector paused; adds the hint to a
    failure of the role's tasks."""

    def run(self, tmp=None, task_vars=None):
        with gc_paused():
            result = super(RoleHintAction, self).run(tmp, task_vars)
        if result.get('failed') and in_collection(self._task.get_path()):
            message = str(result.get('msg') or 'the task failed').strip()
            result['msg'] = message + hint(message, self._task.action.rsplit('.', 1)[-1])
            _retell(result, message)
        return result


def _retell(result, message):
    """ansible-core 2.19 keeps the module's failure as an error summary too (its "[ERROR]: Task failed:" line):
    the same words as ``msg`` there. Earlier releases have none."""
    summary = result.get('exception')
    event = getattr(summary, 'event', None)
    if event is None or getattr(event, 'msg', None) != message or not dataclasses.is_dataclass(summary):
        return
    try:
        result['exception'] = dataclasses.replace(summary, event=dataclasses.replace(event, msg=result['msg']))
    except (TypeError, ValueError):
        pass
