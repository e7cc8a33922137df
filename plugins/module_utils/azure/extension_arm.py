# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The AKS managed Kueue extension through Azure Resource Manager: the part of kueueops.aks.kueue_extension that
talks to Azure (the ARM clients, the long-running operations and their waits, the cluster credentials, the
preflight's reads). ``extension.py`` holds the pure logic over the ARM JSON that it uses.

``KueueExtension`` takes the module's options as a plain dict and what it uses of the AnsibleModule as plain values
(``check_mode``, ``diff``, ``no_log``: whether the task sets it, ``no_log_values``: the set Ansible masks in the
output). It raises ``KueueOpsError`` (or any exception, which the module describes with
``extension.describe_azure_error``), and ``ModuleFailure`` for a missing library (reported as it is). Waits go
through ``wait``, Kubernetes reads through ``kueue_cluster.Cluster``.

The decisions are plain functions, unit-tested without Azure: ``check_run`` (what is refused before ARM is
contacted), ``present_plan`` (create, update or nothing, and what changes), ``after_view`` (the diff's after),
``kept_settings_warning``, ``preflight_error`` and the messages of a timeout or a failed operation.
"""

import os

from ansible_collections.kueueops.aks.plugins.module_utils.azure import extension as x
from ansible_collections.kueueops.aks.plugins.module_utils.azure.arm import POLL_SECONDS, AksArm, secrets_of
from ansible_collections.kueueops.aks.plugins.module_utils.common import files
from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_sdk import azure_error, azure_module
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, ModuleFailure, scrub
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import (
    KUBE_AUTH_ARGSPEC,
    build_api_client,
    describe_kube_error,
    kubeconfig_secret_values,
    kubernetes_missing,
    missing_library,
)

from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import MANAGER_DEPLOYMENT, Cluster, path
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import ModuleRun
from ansible_collections.kueueops.aks.plugins.module_utils.kube.wait import Deadline, poll_until

from ansible_collections.kueueops.aks.plugins.module_utils.common.yaml_docs import yaml

KUBE_TIMEOUT = 30


# ------------------------------------------------------------------ pure decisions
def check_run(params, no_log):
    """What is refused before Azure is contacted; ``no_log``: whether the task sets it."""
    if params['return_kubeconfig'] and not no_log:
        raise KueueOpsError('the kubeconfig holds credentials and the task does not set no_log',
                            field='return_kubeconfig',
                            fix='add no_log: true to the task, or write it to a 0600 file with kubeconfig_dest')
    if params['timeout'] <= 0:
        raise KueueOpsError('must be positive', field='timeout', fix='give the seconds to wait, for example 900')
    if params.get('list_versions') and params['state'] == 'absent':
        raise KueueOpsError('the offered versions are listed for state=present only', field='list_versions',
                            fix='remove list_versions, or use state=present (with check mode to change nothing)')
    x.validate_params(params)


def timed_out_error(what, timeout, extension=None):
    """``what`` did not finish within ``timeout`` seconds; ``extension``: its last ARM JSON, if read."""
    state = ''
    if extension:
        props = extension.get('properties') or {}
        state = ' (provisioningState %s, extensionState %s)' % (props.get('provisioningState'),
                                                                props.get('extensionState'))
    return KueueOpsError('%s did not finish within %ss%s' % (what, timeout, state), field='timeout',
                         fix='raise timeout; the operation may still finish in Azure, run the task again to see')


def failed_error(extension, what, secrets, deleting=False):
    """The extension is Failed or Canceled: its own errorInfo and statuses, ``secrets`` scrubbed."""
    props = extension.get('properties') or {}
    if deleting:
        fix = ('run the task again to retry the deletion, or set force_delete=true to remove the extension '
               'resource even if the cluster cannot be cleaned up')
    else:
        fix = ('correct the cause named above (settings, version, cluster capacity) and run again; an extension '
               'whose state is Failed is created again')
    return KueueOpsError('%s: the extension is %s: %s' % (what, props.get('provisioningState'),
                                                          scrub(x.failure_message(extension), secrets)),
                         field='name', fix=fix)


def present_plan(params, current):
    """``(operation, changes)`` for state=present: ``created`` (none yet, or Failed), ``updated`` or ``none``;
    a change of what cannot change on an existing extension is refused."""
    if current is None:
        return 'created', ['extension']
    changes, immutable = x.compare(params, current)
    if immutable:
        props = current.get('properties') or {}
        have = ', '.join('%s %s' % (field, props.get('extensionType') if field == 'extension_type'
                                    else x.release_namespace_of(props)) for field in immutable)
        raise KueueOpsError(
            'extension %s exists with %s; %s cannot change on an existing extension'
            % (params['name'], have, ' and '.join(immutable)), field=immutable[0],
            fix='use the existing value, or remove the extension first (state=absent; back up with the kueue '
                'role\'s uninstall_with_backup) and create it again')
    if x.is_failed(current):
        return 'created', changes or ['provisioning_state']
    return ('updated' if changes else 'none'), changes


def after_view(params, before):
    """The diff's after: ``before`` with what the options set (settings and auto-upgrade only when given)."""
    after = dict(before)
    after.update(dict((k, v) for k, v in x.diff_view(params=params).items()
                      if not (k == 'configuration_settings' and params.get('configuration_settings') is None)
                      and not (k == 'auto_upgrade_mode' and v is None)))
    return after


def check_versions_needed(operation, changes):
    """Whether the preflight lists the offered versions: on create, or when the version or release train changes."""
    return operation == 'created' or bool(set(changes) & set(['version', 'release_train']))


def kept_settings_warning(params, current):
    """ARM merges configurationSettings on update: the settings it kept that the options do not list, as a warning
    (None when configuration_settings is not given or nothing was kept)."""
    wanted = x.desired_properties(params).get('configurationSettings')
    kept = sorted(set((current.get('properties') or {}).get('configurationSettings') or {}) - set(wanted or {}))
    if wanted is not None and kept:
        return ('ARM kept the configuration settings %s that configuration_settings does not list; '
                'remove and re-create the extension to drop them' % ', '.join(kept))
    return None


def preflight_error(failures):
    """Every preflight failure in one error, numbered, naming the first one's option."""
    return KueueOpsError('preflight failed: ' + ' '.join(
        '(%d) %s' % (idx + 1, err.message()) for idx, err in enumerate(failures)),
        field=failures[0].field, fix=None)


def deletion_warning(params):
    return ('deleting extension %s deletes every Kueue custom resource in cluster %s (queues, '
            'flavors, cohorts, priority classes); Jobs and Pods stay' % (params['name'], params['cluster_name']))


def kube_params(params, fetched_kubeconfig):
    """``(options, source)`` to reach the cluster's API server: the module's Kubernetes options when they point at
    something, else the credentials ``fetched_kubeconfig()`` returns with the module's proxy options."""
    if x.explicit_kube_options(params.get('kubeconfig'), params.get('host'), params.get('kubeconfig_dest')):
        return dict((key, params.get(key)) for key in KUBE_AUTH_ARGSPEC), 'the Kubernetes options'
    options = dict((key, None) for key in KUBE_AUTH_ARGSPEC)
    # How to reach the API server still applies to the fetched credentials' cluster.
    for key in ('proxy', 'no_proxy', 'proxy_headers'):
        options[key] = params.get(key)
    options['kubeconfig'] = fetched_kubeconfig()
    return options, 'the cluster credentials from ARM'


# ------------------------------------------------------------------ Azure
class KueueExtension(AksArm, ModuleRun):
    def __init__(self, params, check_mode=False, diff=False, no_log=False, no_log_values=None):
        super().__init__(params, check_mode=check_mode, diff=diff, no_log_values=no_log_values)
        self.no_log = no_log
        self.secrets = secrets_of(params)
        self.deadline = None
        self._kubeconfig_bytes = None
        self._offered = ()  # () until listed; then the list, or None when it could not be read

    # ------------------------------------------------------------------ ARM
    def ext_args(self):
        return (self.p['resource_group'], x.CLUSTER_RP, x.CLUSTER_RESOURCE, self.p['cluster_name'], self.p['name'])

    def get_extension(self):
        try:
            return self.ext.extensions.get(*self.ext_args()).as_dict()
        except azure_error('AzureError') as exc:
            if isinstance(exc, azure_error('ResourceNotFoundError')):
                return None
            raise self.azure(exc, 'reading extension %s' % self.p['name'])

    def remaining(self):
        """What is left of the task's timeout, at least 1 s (the SDK's pollers take it as their own timeout)."""
        return max(1.0, self.deadline.remaining())

    def timed_out(self, what, extension=None):
        return timed_out_error(what, self.p['timeout'], extension)

    def failed(self, extension, what, deleting=False):
        return failed_error(extension, what, self.secrets, deleting)

    def follow(self, poller, what, deleting=False):
        """Wait for an LRO poller; on an operation failure report the extension's own errorInfo."""
        try:
            poller.wait(timeout=self.remaining())
            if not poller.done():
                try:
                    current = self.get_extension()
                except KueueOpsError:
                    current = None
                raise self.timed_out(what, current)
            return poller.result()
        except azure_error('AzureError') as exc:
            current = self.get_extension()
            if current is not None and x.is_failed(current):
                raise self.failed(current, what, deleting)
            raise self.azure(exc, what)

    def wait_ready(self, what):
        """Read the extension until Succeeded (and Available); fail on Failed/Canceled or the timeout."""
        def read():
            current = self.get_extension()
            if current is None:
                raise KueueOpsError('%s: the extension disappeared while waiting for it' % what, field='name',
                                    fix='something else deleted it; run the task again')
            if not x.is_ready(current) and x.is_failed(current):
                raise self.failed(current, what)
            return current

        current, ready = poll_until(read, x.is_ready, self.deadline, POLL_SECONDS)
        if not ready:
            raise self.timed_out(what, current)
        return current

    def wait_settled(self, current):
        """Let an operation that another actor started end before deciding anything."""
        if current is None or not x.is_busy(current):
            return current
        current, settled = poll_until(self.get_extension, lambda cur: cur is None or not x.is_busy(cur),
                                      self.deadline, POLL_SECONDS)
        if not settled:
            raise self.timed_out('the running operation on extension %s' % self.p['name'], current)
        return current

    def wait_gone(self, what):
        def read():
            current = self.get_extension()
            if current is not None and x.is_failed(current):
                raise self.failed(current, what, deleting=True)
            return current

        current, gone = poll_until(read, lambda cur: cur is None, self.deadline, POLL_SECONDS)
        if not gone:
            raise self.timed_out(what, current)

    # ------------------------------------------------------------------ credentials and Kubernetes
    def kubeconfig_bytes(self):
        if self._kubeconfig_bytes is None:
            admin = self.p['admin_credentials']
            what = 'fetching the cluster %s credentials' % ('admin' if admin else 'user')
            ops = self.aks.managed_clusters
            try:
                if admin:
                    result = ops.list_cluster_admin_credentials(self.p['resource_group'], self.p['cluster_name'])
                else:
                    result = ops.list_cluster_user_credentials(self.p['resource_group'], self.p['cluster_name'])
            except azure_error('AzureError') as exc:
                err = self.azure(exc, what)
                if admin:
                    err.fix = (err.fix or '') + '; clusters with local accounts disabled refuse admin credentials: ' \
                                                'set admin_credentials=false'
                raise err
            kubeconfigs = result.kubeconfigs or []
            if not kubeconfigs or not kubeconfigs[0].value:
                raise KueueOpsError('ARM returned no kubeconfig while %s' % what, field='cluster_name',
                                    fix='check that the cluster is running')
            self._kubeconfig_bytes = bytes(kubeconfigs[0].value)
        return self._kubeconfig_bytes

    def kubeconfig_dict(self):
        if yaml is None:
            raise ModuleFailure(**missing_library('PyYAML', reason='to read the cluster kubeconfig'))
        try:
            data = yaml.safe_load(self.kubeconfig_bytes().decode('utf-8'))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise KueueOpsError('the kubeconfig ARM returned is not YAML: %s' % type(exc).__name__,
                                field='cluster_name')
        if not isinstance(data, dict):
            raise KueueOpsError('the kubeconfig ARM returned is not a mapping', field='cluster_name')
        if not self.p['return_kubeconfig']:
            self.no_log_values.update(kubeconfig_secret_values(data))
        return data

    def kueue_deployments(self):
        missing = kubernetes_missing()
        if missing:
            raise ModuleFailure(**missing)
        params, source = kube_params(self.p, self.kubeconfig_dict)
        api = build_api_client(params)
        cluster = Cluster(api, timeout=KUBE_TIMEOUT)
        deployments = path('apps/v1', 'deployments')
        try:
            managers = set()
            for selector in (dict(fieldSelector='metadata.name=%s' % MANAGER_DEPLOYMENT),
                             dict(labelSelector=x.KUEUE_MANAGER_LABELS)):
                for item in cluster.items(deployments, **selector):
                    managers.add((item['metadata']['namespace'], item['metadata']['name']))
            extension_ns = set(item['metadata']['namespace'] for item in cluster.items(
                deployments, fieldSelector='metadata.name=%s' % x.EXTENSION_DEPLOYMENT))
        except Exception as exc:  # pylint: disable=broad-except
            err = describe_kube_error(exc, host=api.configuration.host)
            raise KueueOpsError('preflight: cannot list the Deployments of the cluster with %s: %s'
                                % (source, err.problem), field=err.field or 'preflight',
                                fix='%s; or set the Kubernetes options (kubeconfig, context) to reach the cluster, or '
                                    'preflight=false to skip the checks' % (err.fix or 'check access to the cluster'))
        return sorted('%s/%s' % item for item in managers), x.unmanaged_kueue(managers, extension_ns)

    def offered_versions(self):
        """The versions ARM offers the cluster in release_train (ExtensionTypes_ClusterListVersions, every page), read
        once per run; None, with a warning, when they cannot be listed: ARM then checks the version when the extension
        is written."""
        if self._offered == ():
            self._offered = self._list_offered_versions()
        return self._offered

    def _list_offered_versions(self):
        p = self.p
        url = x.extension_type_versions_url(self.subscription_id, p['resource_group'], p['cluster_name'],
                                            p['extension_type'], p['release_train'])
        pages = []
        try:
            while url and len(pages) < 100:
                response = self.ext.send_request(azure_module('azure.core.rest').HttpRequest('GET', url))
                if response.status_code != 200:
                    raise azure_error('HttpResponseError')(response=response)
                pages.append(response.json())
                url = pages[-1].get('nextLink')
        except (azure_error('AzureError'), ValueError) as exc:
            err = self.azure(exc, 'listing the versions of %s offered to cluster %s' % (p['extension_type'],
                                                                                        p['cluster_name']))
            self.warnings.append('preflight: the offered versions were not checked (%s); ARM checks the version when '
                                 'the extension is written' % err.problem)
            return None
        return x.offered_versions(pages)

    def preflight(self, cluster, check_versions=False):
        failures, warnings, facts = x.preflight_cluster(cluster, self.p['release_train'])
        self.warnings.extend(warnings)
        if check_versions:
            facts['offered_versions'] = self.offered_versions()
            if facts['offered_versions'] is not None:
                offer = x.version_offer_error(self.p, facts['offered_versions'], self.p['cluster_name'])
                if offer:
                    failures.append(offer)
        if failures:
            raise preflight_error(failures)
        found, unmanaged = self.kueue_deployments()
        facts['kueue_deployments'] = found
        if unmanaged:
            raise x.unmanaged_kueue_error(unmanaged)
        facts['ran'] = True
        return facts

    def write_kubeconfig(self, result):
        dest = self.p.get('kubeconfig_dest')
        if not dest:
            return False
        dest = os.path.abspath(dest)
        data = self.kubeconfig_bytes()
        result['kubeconfig_path'] = dest
        if files.file_matches(dest, data):
            return False
        if not self.check_mode:
            files.write_private_file(dest, data, 'kubeconfig_dest')
        return True

    # ------------------------------------------------------------------ states
    def run(self):
        p = self.p
        check_run(p, self.no_log)
        self.connect()
        self.deadline = Deadline(p['timeout'])
        cluster = self.get_cluster()
        current = self.get_extension()
        if p['wait'] and not self.check_mode:
            current = self.wait_settled(current)
        if p['state'] == 'absent':
            return self.absent(current)
        return self.present(cluster, current)

    def diff(self, before, after):
        if self.diff_mode:
            return dict(before=before, after=after)
        return None

    def list_versions(self):
        """list_versions: the offered versions whatever the run changes, and a pinned version they do not hold
        refused before anything is written."""
        offered = self.offered_versions()
        if offered is not None:
            offer = x.version_offer_error(self.p, offered, self.p['cluster_name'])
            if offer:
                raise offer
        return offered

    def present(self, cluster, current):
        p = self.p
        result = dict(changed=False, operation='none', changes=[], preflight={'ran': False})
        self.resolve(current, result)
        p = self.p
        if p['list_versions']:
            result['offered_versions'] = self.list_versions()
        before = x.diff_view(extension=current) if current is not None else {}
        operation, changes = present_plan(p, current)
        result['changes'] = changes
        after = after_view(p, before)
        if operation != 'none':
            result.update(changed=True, operation=operation)
            diff = self.diff(before, after)
            if diff:
                result['diff'] = diff
            if p['preflight']:
                result['preflight'] = self.preflight(cluster, check_versions=check_versions_needed(operation, changes))
                if 'offered_versions' in result['preflight']:
                    result['offered_versions'] = result['preflight']['offered_versions']
            if not self.check_mode:
                current = self.write(operation, current, changes)
        elif p['wait'] and not self.check_mode and not x.is_ready(current):
            current = self.wait_ready('waiting for extension %s to become ready' % p['name'])
        if current is not None:
            result['extension'] = x.redact_extension(current)
        if self.write_kubeconfig(result):
            result['changed'] = True
        if p['return_kubeconfig']:
            result['kubeconfig'] = self.kubeconfig_dict()
        return result

    def resolve(self, current, result):
        """The version by the release train's rules (extension.resolve_version): ``latest`` becomes the exact version
        pinned, a pin of another minor or a broken release is refused before anything is written; the notices join
        the warnings and the result."""
        latest = x.normalize_version(self.p.get('version')) == 'latest'
        version, notices = x.resolve_version(self.p, current, self.offered_versions() if latest else ())
        self.p = dict(self.p, version=version)
        if self.p['preflight']:  # the role's read-only uses of the module (no version, no preflight) say nothing
            notices.append(x.follows_train_warning(self.p, current))
        result['notices'] = [n for n in notices if n]
        self.warnings.extend(result['notices'])
        installed = x.installed_version(current)
        if installed:
            result['installed_version'] = installed
        if version:
            result['version'] = version

    def write(self, operation, current, changes):
        p = self.p
        what = '%s extension %s' % ('creating' if operation == 'created' else 'updating', p['name'])
        try:
            if operation == 'created':
                body = {'properties': x.desired_properties(p)}
                poller = self.ext.extensions.begin_create(*self.ext_args(), extension=body, polling=p['wait'])
            else:
                body = x.patch_body(p, current, changes)
                poller = self.ext.extensions.begin_update(*self.ext_args(), patch_extension=body, polling=p['wait'])
        except azure_error('AzureError') as exc:
            raise self.azure(exc, what)
        if not p['wait']:
            return self.get_extension()
        self.follow(poller, what)
        current = self.wait_ready(what)
        warning = kept_settings_warning(p, current)
        if warning:
            self.warnings.append(warning)
        return current

    def absent(self, current):
        p = self.p
        result = dict(changed=False, operation='none', changes=[])
        if current is None:
            return result
        result.update(changed=True, operation='deleted', changes=['extension'])
        diff = self.diff(x.diff_view(extension=current), {})
        if diff:
            result['diff'] = diff
        self.warnings.append(deletion_warning(p))
        if self.check_mode:
            result['extension'] = x.redact_extension(current)
            return result
        what = 'deleting extension %s' % p['name']
        try:
            poller = self.ext.extensions.begin_delete(*self.ext_args(), force_delete=p['force_delete'] or None,
                                                      polling=p['wait'])
        except azure_error('AzureError') as exc:
            raise self.azure(exc, what)
        if p['wait']:
            self.follow(poller, what, deleting=True)
            self.wait_gone(what)
        return result
