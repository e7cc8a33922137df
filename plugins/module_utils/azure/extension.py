# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The AKS managed Kueue extension (``microsoft.kueue``): the logic of kueueops.aks.kueue_extension.

Pure functions over the ARM JSON of an extension (``Microsoft.KubernetesConfiguration/extensions``,
API 2025-03-01) and of a managed cluster (``Microsoft.ContainerService/managedClusters``), importable
and testable without Ansible or Azure:

- ``validate_params`` / ``desired_properties``: the module options as the extension's ``properties``;
- ``compare``: what differs between the desired and the current extension, and what cannot change;
- ``patch_body``: the PATCH that turns the current extension into the desired one;
- ``preflight_cluster`` / ``unmanaged_kueue``: the managed extension's prerequisites;
- ``redact_extension`` / ``diff_view`` / ``failure_message``: what is shown to the user;
- ``describe_azure_error``: an azure-core exception as a ``KueueOpsError`` naming the option at fault.
"""

import copy
import os
import re
import urllib.parse

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import REDACTED, KueueOpsError, namespace_name_error, scrub
from ansible_collections.kueueops.aks.plugins.module_utils.common import kubernetes_support, versions
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import release_train
from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_sdk import azure_error
from ansible_collections.kueueops.aks.plugins.module_utils.azure.extension_settings import normalize_settings, normalize_version

CLUSTER_RP = 'Microsoft.ContainerService'
CLUSTER_RESOURCE = 'managedClusters'
EXTENSION_TYPE = 'microsoft.kueue'
AUTO_UPGRADE_MODES = ('none', 'patch', 'compatible')
MIGRATE = 'playbooks/migrate.yml'

SUCCEEDED = 'succeeded'
FAILED_STATES = ('failed', 'canceled')
# The AKS documentation's value, and the REST spec example's (GetExtensionWithExtensionState.json).
HEALTHY_EXTENSION_STATES = ('available', 'ready')
# Kueue manager Deployments: the chart's name, and the chart's labels for a renamed release.
KUEUE_MANAGER_LABELS = 'app.kubernetes.io/name=kueue,control-plane=controller-manager'
EXTENSION_DEPLOYMENT = 'kueue-extension'

# ARM: 1-253 characters; AKS extension names are DNS subdomains.
_NAME_RE = re.compile(r'^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$')
# The release trains of AKS cluster extensions (ARM refuses any other, case-insensitively).
RELEASE_TRAINS = ('stable', 'preview')


# --------------------------------------------------------------------------- inputs

def validate_params(params):
    """Check option combinations the argument spec cannot express. Raise ``KueueOpsError``."""
    name = params.get('name') or ''
    if not _NAME_RE.match(name):
        raise KueueOpsError('%r is not a valid extension name' % name, field='name',
                            fix='use lowercase letters, digits, "-" and "." (at most 253 characters), '
                                'for example the default kueue')
    problem = namespace_name_error(params.get('release_namespace') or '', 'release_namespace')
    if problem is not None:
        raise problem
    version = params.get('version')
    if version is not None and str(version).strip() != 'latest' and versions.parse(version, patch=True) is None:
        raise KueueOpsError('%r is not a version of the extension' % version, field='version',
                            fix='give an exact version in AKS\'s form such as 0.19.6-aks.0.4.4 (see the extension '
                                'type\'s versions with '
                                '`az k8s-extension extension-types list-versions-by-cluster`), latest, or omit it to '
                                'follow release_train')
    mode = params.get('auto_upgrade_mode')
    if mode == 'none' and version is None:
        raise KueueOpsError('auto_upgrade_mode=none needs a pinned version (without one the extension follows '
                            'release_train)', field='auto_upgrade_mode',
                            fix='set version to the extension version to stay on, or drop auto_upgrade_mode')
    train = (params.get('release_train') or '').strip()
    if not train:
        raise KueueOpsError('release_train is empty', field='release_train', fix='use preview (the default) or stable')
    if train.lower() not in RELEASE_TRAINS:
        # ARM answers 400 to any other train; refuse it before anything is sent.
        raise KueueOpsError('%r is not a release train of the managed Kueue extension' % train, field='release_train',
                            fix='use preview (the default) or stable')
    normalize_settings(params.get('configuration_settings'), 'configuration_settings')
    normalize_settings(params.get('configuration_protected_settings'), 'configuration_protected_settings')
    overlap = set(params.get('configuration_settings') or {}) & set(params.get('configuration_protected_settings') or {})
    if overlap:
        raise KueueOpsError('%s set both as a setting and as a protected setting' % ', '.join(sorted(overlap)),
                            field='configuration_protected_settings', fix='give each key in one of the two only')


def installed_version(current):
    """The Kueue extension version on the cluster (``currentVersion``, else the pinned ``version``), None when there
    is no extension or it is Failed (it is created again)."""
    if current is None or is_failed(current):
        return None
    props = _props(current)
    return normalize_version(props.get('currentVersion') or props.get('version'))


def follows_train_warning(params, current):
    """The warning for an extension that follows its release train (no version: ``autoUpgradeMinorVersion`` on), as
    the options ask or as it is left; None when it is pinned."""
    if params.get('version'):
        return None
    return ('extension %s follows release train %s with autoUpgradeMinorVersion on: AKS upgrades it to a new Kueue '
            'minor by itself, without the plan, the verified backup and the checks of %s. The kueue role pins the '
            'extension (kueue_extension_version: latest, the newest patch of the installed minor) unless '
            'kueue_extension_auto_upgrade_minor_version is true'
            % (params.get('name'), params.get('release_train'), release_train.UPGRADE_PLAYBOOK))


def resolve_version(params, current, offered):
    """``(version, notices)``: the exact version the options pin, by the release train's rules (release_train);
    ``version`` None when the extension follows its train. ``offered``: the versions ARM offers the cluster (None
    when they could not be listed). ``latest`` is the newest good offered patch of the installed minor (or of the
    newest minor the catalog knows, on a fresh cluster); an exact version of another minor than the installed one
    is refused unless ``allow_minor_change``; a known-broken Kueue release is refused."""
    wanted = normalize_version(params.get('version'))
    installed = installed_version(current)
    notices = []
    if wanted is None:
        return None, notices
    if wanted != 'latest':
        release_train.check_not_broken(wanted, 'version')
        if not params.get('allow_minor_change'):
            release_train.check_minor(installed, wanted, 'version', variable='kueue_extension_version')
        return wanted, notices
    if offered is None:
        if installed:
            return installed, ['the versions the release train offers could not be listed: the extension stays at '
                               'the installed %s' % installed]
        raise KueueOpsError('version latest needs the versions release train %s offers the cluster, and ARM did not '
                            'list them' % params.get('release_train'), field='version',
                            fix='pin an exact version (AKS\'s form, such as 0.19.6-aks.0.4.4), or run again once ARM '
                                'answers')
    newest = (release_train.good(offered) or [None])[0]
    if installed:
        notices.append(release_train.newer_minor_notice(installed, newest, variable='kueue_extension_version'))
        same = release_train.good(offered, minor=release_train.minor_of(installed))
        chosen = same[0] if same else installed
        if versions.parse(chosen).core < versions.parse(installed).core:
            chosen = installed  # never a downgrade: ARM offered an older packaging only
    else:
        chosen = release_train.newest_known(offered)
        if chosen is None:
            raise KueueOpsError('release train %s offers no good version of a Kueue minor this collection knows '
                                '(offered: %s)' % (params.get('release_train'), ', '.join(offered) or 'none'),
                                field='version', fix='pin one of the offered versions, or update the kueueops.aks '
                                                     'collection')
        notices.append(release_train.unknown_minor_notice(newest, chosen))
    notices.append(release_train.release_notes_notice(chosen))
    return chosen, [n for n in notices if n]


def upgrade_properties(params):
    """``autoUpgradeMinorVersion``, ``autoUpgradeMode``, ``releaseTrain`` and ``version`` for the options.

    - No ``version``: the extension follows ``release_train`` (autoUpgradeMinorVersion=true);
      ``auto_upgrade_mode`` patch or compatible is sent when given, else ARM's default applies.
    - A pinned ``version``: ARM requires autoUpgradeMinorVersion=false; ``auto_upgrade_mode``
      (default none) says which upgrades ARM may still apply on top of the pin.
    """
    version = normalize_version(params.get('version'))
    mode = params.get('auto_upgrade_mode')
    props = {'releaseTrain': params.get('release_train')}
    if version:
        props.update(autoUpgradeMinorVersion=False, version=version, autoUpgradeMode=mode or 'none')
    else:
        props['autoUpgradeMinorVersion'] = True
        if mode:
            props['autoUpgradeMode'] = mode
    return props


def desired_properties(params, with_protected=True):
    """The ``properties`` of the extension the options describe (the PUT body's properties)."""
    props = {
        'extensionType': params.get('extension_type'),
        'scope': {'cluster': {'releaseNamespace': params.get('release_namespace')}},
    }
    props.update(upgrade_properties(params))
    settings = normalize_settings(params.get('configuration_settings'), 'configuration_settings')
    if settings is not None:
        props['configurationSettings'] = settings
    protected = normalize_settings(params.get('configuration_protected_settings'), 'configuration_protected_settings')
    if with_protected and protected:
        props['configurationProtectedSettings'] = protected
    return props


# --------------------------------------------------------------------------- comparison

def _mapping(value):
    """``value`` when it is a mapping, else ``{}`` (ARM JSON read defensively)."""
    return value if isinstance(value, dict) else {}


def _props(extension):
    return _mapping(_mapping(extension).get('properties'))


def _lower(value):
    return str(value).lower() if value is not None else None


def release_namespace_of(props):
    scope = _mapping(props.get('scope'))
    cluster = _mapping(scope.get('cluster'))
    if cluster.get('releaseNamespace'):
        return cluster['releaseNamespace']
    return _mapping(scope.get('namespace')).get('targetNamespace')


def protected_setting_names(props):
    """The names of the protected settings when ARM reports them (never their values), else None."""
    protected = props.get('configurationProtectedSettings')
    if isinstance(protected, dict) and protected:
        return set(protected)
    return None


def compare(params, current):
    """Return ``(changes, immutable)``: option names whose value differs, and those that cannot change in place.

    ``current`` is the extension's ARM JSON. Protected settings are compared as the module
    documents: never by value (ARM does not return values); by their names when ARM reports them.
    """
    desired = desired_properties(params)
    props = _props(current)
    changes, immutable = [], []

    if _lower(props.get('extensionType')) != _lower(desired['extensionType']):
        immutable.append('extension_type')
    if release_namespace_of(props) != desired['scope']['cluster']['releaseNamespace']:
        immutable.append('release_namespace')

    if desired.get('version'):
        have = normalize_version(props.get('version') or props.get('currentVersion'))
        if have != desired['version']:
            changes.append('version')
        if props.get('autoUpgradeMinorVersion') is not False:
            changes.append('auto_upgrade_mode')
    elif props.get('autoUpgradeMinorVersion') is False:
        changes.append('version')
    if _lower(props.get('releaseTrain')) not in (None, _lower(desired['releaseTrain'])):
        changes.append('release_train')
    if 'autoUpgradeMode' in desired and 'auto_upgrade_mode' not in changes:
        # ARM documents "compatible" as the default when the property is not set.
        if _lower(props.get('autoUpgradeMode') or 'compatible') != desired['autoUpgradeMode']:
            changes.append('auto_upgrade_mode')
    if 'configurationSettings' in desired and (props.get('configurationSettings') or {}) != desired['configurationSettings']:
        changes.append('configuration_settings')

    if params.get('configuration_protected_settings') is not None:
        names = protected_setting_names(props)
        if params.get('update_protected_settings') == 'always':
            changes.append('configuration_protected_settings')
        elif names is not None and names != set(params['configuration_protected_settings']):
            changes.append('configuration_protected_settings')
    return changes, immutable


def patch_body(params, current, changes):
    """The PATCH body (``{"properties": {...}}``) for the ``changes`` found by ``compare``.

    ``configurationSettings`` is sent whole (the desired map, which replaces the extension's); a
    null for a removed key is not sent, since the API types the map's values as strings.
    """
    desired = desired_properties(params)
    props = {}
    if set(changes) & set(['version', 'release_train', 'auto_upgrade_mode']):
        for key in ('releaseTrain', 'autoUpgradeMinorVersion', 'version', 'autoUpgradeMode'):
            if key in desired:
                props[key] = desired[key]
        if 'version' not in desired and _props(current).get('version'):
            props['version'] = None
    if 'configuration_settings' in changes:
        props['configurationSettings'] = dict(desired['configurationSettings'])
    if 'configuration_protected_settings' in changes:
        props['configurationProtectedSettings'] = desired.get('configurationProtectedSettings') or {}
    return {'properties': props}


def is_failed(extension):
    return _lower(_props(extension).get('provisioningState')) in FAILED_STATES


def is_ready(extension):
    """provisioningState Succeeded and, when ARM reports it, extensionState Available (or Ready)."""
    props = _props(extension)
    if _lower(props.get('provisioningState')) != SUCCEEDED:
        return False
    state = props.get('extensionState')
    return state is None or _lower(state) in HEALTHY_EXTENSION_STATES


def is_busy(extension):
    """Another operation runs on the extension (Creating, Updating, Deleting)."""
    state = _lower(_props(extension).get('provisioningState'))
    return state is not None and state != SUCCEEDED and state not in FAILED_STATES


# --------------------------------------------------------------------------- output

def redact_extension(extension):
    """A deep copy of the extension JSON without secret values (protected settings keep their names only)."""
    if extension is None:
        return None
    redacted = copy.deepcopy(extension)
    props = redacted.get('properties')
    if isinstance(props, dict) and isinstance(props.get('configurationProtectedSettings'), dict):
        props['configurationProtectedSettings'] = dict(
            (key, REDACTED) for key in props['configurationProtectedSettings'])
    return redacted


def diff_view(params=None, extension=None):
    """The comparable part of an extension for diff mode, from the options or from ARM JSON; no secret values."""
    if extension is None and params is None:
        return {}
    if extension is not None:
        props = _props(extension)
        protected = sorted(protected_setting_names(props) or [])
        name = extension.get('name')
    else:
        props = desired_properties(params, with_protected=False)
        protected = sorted(params.get('configuration_protected_settings') or [])
        name = params.get('name')
    view = {
        'name': name,
        'extension_type': props.get('extensionType'),
        'release_namespace': release_namespace_of(props),
        'release_train': props.get('releaseTrain'),
        'version': props.get('version'),
        'auto_upgrade_minor_version': props.get('autoUpgradeMinorVersion'),
        'auto_upgrade_mode': props.get('autoUpgradeMode'),
        'configuration_settings': props.get('configurationSettings') or {},
    }
    if protected:
        view['configuration_protected_settings'] = dict((key, REDACTED) for key in protected)
    return view


def failure_message(extension):
    """errorInfo and the statuses' messages of a Failed/Canceled extension, as one line."""
    props = _props(extension)
    parts = []
    error = props.get('errorInfo') or {}
    if error:
        head = error.get('code') or 'error'
        parts.append('%s: %s' % (head, error.get('message') or ''))
        for detail in error.get('details') or []:
            parts.append('%s: %s' % (detail.get('code') or 'detail', detail.get('message') or ''))
    for status in props.get('statuses') or []:
        text = status.get('message') or status.get('displayStatus')
        if text:
            parts.append('%s%s' % ('[%s] ' % status['level'] if status.get('level') else '', text))
    return '; '.join(part.strip() for part in parts) or 'no errorInfo or statuses reported'


# --------------------------------------------------------------------------- preflight

def kubernetes_version(cluster):
    props = (cluster or {}).get('properties') or {}
    return props.get('currentKubernetesVersion') or props.get('kubernetesVersion')


def preflight_cluster(cluster, release_train='preview'):
    """Check a managedCluster JSON against the managed Kueue extension's prerequisites.

    Return ``(failures, warnings, facts)``: ``KueueOpsError`` per unmet prerequisite (reason and fix),
    warning strings for things that may change, and what was read.
    """
    cluster = cluster or {}
    props = cluster.get('properties') or {}
    sku = cluster.get('sku') or {}
    nap = (props.get('nodeProvisioningProfile') or {}).get('mode')
    version = kubernetes_version(cluster)
    facts = {
        'kubernetes_version': version,
        'sku': sku.get('name'),
        'node_provisioning_mode': nap,
        'location': cluster.get('location'),
    }
    failures, warnings = [], []
    minor = kubernetes_support.minor_of(version)
    least = '%d.%d' % kubernetes_support.MIN_KUBERNETES
    if minor is None:
        warnings.append('the cluster reports no Kubernetes version; the managed Kueue extension needs %s or later'
                        % least)
    elif minor < kubernetes_support.MIN_KUBERNETES:
        failures.append(KueueOpsError(
            'the cluster runs Kubernetes %s; the managed Kueue extension needs %s or later' % (version, least),
            field='cluster_name',
            fix='upgrade the cluster first (az aks upgrade --kubernetes-version %s or later), or install the '
                'upstream chart with kueueops.aks.kueue_helm' % least))
    newer = kubernetes_support.newer_than_tested_warning(version)  # None when unknown, older or tested
    if newer:
        warnings.append(newer)
    if _lower(sku.get('name')) == 'automatic':
        failures.append(KueueOpsError(
            'the cluster is AKS Automatic (sku.name Automatic), which the managed Kueue extension does not support '
            'yet', field='cluster_name',
            fix='use an AKS Standard (sku.name Base) cluster, or install the upstream chart with '
                'kueueops.aks.kueue_helm'))
    if _lower(nap) == 'auto':
        failures.append(KueueOpsError(
            'node auto-provisioning is on (nodeProvisioningProfile.mode Auto); the managed Kueue extension supports '
            'only the cluster autoscaler', field='cluster_name',
            fix='set the node provisioning mode to Manual and use the cluster autoscaler on the node pools, or '
                'install the upstream chart with kueueops.aks.kueue_helm'))
    state = _lower(((props.get('powerState') or {}).get('code')))
    if state == 'stopped':
        failures.append(KueueOpsError('the cluster is stopped', field='cluster_name',
                                      fix='start it (az aks start) before installing the extension'))
    if _lower(release_train) == 'preview':
        warnings.append('the managed Kueue extension is in preview: its availability by region (cluster in %s), '
                        'versions and settings may change; check the AKS documentation before relying on it'
                        % (cluster.get('location') or 'an unknown region'))
    return failures, warnings, facts


# ExtensionTypes_ClusterListVersions (Microsoft.KubernetesConfiguration/extensionTypes, stable 2026-04-01): the
# versions of an extension type that ARM offers to one cluster, by release train. No SDK for this API ships in the
# stable azure-mgmt packages, so the module sends it through the extensions client's pipeline (send_request).
EXTENSION_TYPES_API_VERSION = '2026-04-01'


def extension_type_versions_url(subscription_id, resource_group, cluster_name, extension_type, release_train):
    quote = urllib.parse.quote
    return ('/subscriptions/%s/resourceGroups/%s/providers/%s/%s/%s/providers/Microsoft.KubernetesConfiguration/'
            'extensionTypes/%s/versions?%s' % (
                quote(subscription_id, safe=''), quote(resource_group, safe=''), CLUSTER_RP, CLUSTER_RESOURCE,
                quote(cluster_name, safe=''), quote(extension_type, safe=''),
                urllib.parse.urlencode({'api-version': EXTENSION_TYPES_API_VERSION, 'releaseTrain': release_train})))


def offered_versions(pages):
    """The version strings of ExtensionTypeVersionsList pages (``value[].properties.version``, else the name)."""
    found = []
    for page in pages:
        for item in (page or {}).get('value') or []:
            version = normalize_version(((item or {}).get('properties') or {}).get('version') or (item or {}).get('name'))
            if version and version not in found:
                found.append(version)
    return found


def version_offer_error(params, offered, cluster_name):
    """A ``KueueOpsError`` when the release train offers no version, or not the pinned one; else None."""
    train = params.get('release_train')
    ext_type = params.get('extension_type') or EXTENSION_TYPE
    if not offered:
        return KueueOpsError('release train %s offers no version of %s to cluster %s' % (train, ext_type, cluster_name),
                             field='release_train',
                             fix='use a release train that offers the extension type to this cluster (%s; see `az '
                                 'k8s-extension extension-types list-versions-by-cluster`)' % ' or '.join(RELEASE_TRAINS))
    version = normalize_version(params.get('version'))
    if version and version not in offered:
        same = versions.same_release(offered, version)
        fix = 'pin one of the offered versions, or omit version to follow the release train'
        if same:
            # A chart version (0.19.2) or another packaging of the same Kueue release: name the one ARM offers.
            fix = 'pin %s (Kueue %s as the release train offers it), or omit version to follow the release train' % (
                same[0], versions.parse(version).release_text)
        return KueueOpsError('%s is not a version of %s offered to cluster %s in release train %s (offered: %s)' % (
            version, ext_type, cluster_name, train, ', '.join(offered)), field='version', fix=fix)
    return None


def unmanaged_kueue(managers, extension_namespaces):
    """Kueue manager Deployments (``namespace/name``) not accompanied by the extension's ``kueue-extension``.

    ``managers``: iterable of ``(namespace, name)``; ``extension_namespaces``: namespaces holding a
    ``kueue-extension`` Deployment.
    """
    extension_namespaces = set(extension_namespaces)
    return sorted(set('%s/%s' % (ns, name) for ns, name in managers if ns not in extension_namespaces))


def explicit_kube_options(kubeconfig, host, kubeconfig_dest=None):
    """Whether the module's Kubernetes options point at something the preflight can use.

    A ``host``, a kubeconfig dictionary, or the path of an existing kubeconfig (several joined by
    os.pathsep, each existing) that is not the file this module writes (``kubeconfig_dest``, often also set
    as ``kubeconfig`` for the following tasks through module_defaults). Otherwise the preflight uses the
    credentials fetched from ARM.
    """
    if host or isinstance(kubeconfig, dict):
        return True
    if not isinstance(kubeconfig, str) or not kubeconfig:
        return False
    paths = [os.path.abspath(os.path.expanduser(part)) for part in kubeconfig.split(os.pathsep) if part]
    if not paths or not all(os.path.isfile(path) for path in paths):
        return False
    return not kubeconfig_dest or os.path.abspath(os.path.expanduser(kubeconfig_dest)) not in paths


def unmanaged_kueue_error(found):
    return KueueOpsError(
        'an unmanaged (open-source) Kueue already runs in the cluster (%s); the managed extension is a cluster '
        'singleton and its installation rejects it' % ', '.join(found), field='preflight',
        fix='migrate with %s (back up the Kueue objects, uninstall the Helm release, install the extension, '
            'restore), or keep the open-source Kueue' % MIGRATE)


# --------------------------------------------------------------------------- errors

_AUTH_FIELDS = (
    ('AADSTS7000215', 'secret', 'check the client secret of the service principal (it may have expired)'),
    ('AADSTS7000222', 'secret', 'the client secret expired; create a new one for the service principal'),
    ('AADSTS700016', 'client_id', 'check client_id: no application with that id exists in the tenant'),
    ('AADSTS90002', 'tenant', 'check tenant: no such Microsoft Entra tenant'),
    ('AADSTS900023', 'tenant', 'check tenant: it must be a tenant id (GUID) or domain name'),
)


_CONNECTION_MARKERS = ('Failed to establish a new connection', 'Connection refused', 'Name or service not known',
                       'Max retries exceeded', 'timed out', 'Temporary failure in name resolution')


def _arm_error(exc):
    error = getattr(exc, 'error', None)
    code = getattr(error, 'code', None) if error is not None else None
    message = getattr(error, 'message', None) if error is not None else None
    status = getattr(exc, 'status_code', None)
    if not status and getattr(exc, 'response', None) is not None:
        status = getattr(exc.response, 'status_code', None)
    if not message:
        message = str(getattr(exc, 'message', None) or exc).splitlines()[0] if str(exc) else ''
    return status, code, message


def describe_azure_error(exc, what, params=None, secrets=()):
    """Turn an azure-core exception raised while doing ``what`` into a ``KueueOpsError``.

    ``secrets`` are scrubbed from the message (the module also registers them as no_log values).
    """
    params = params or {}
    if isinstance(exc, KueueOpsError):
        return exc
    if isinstance(exc, azure_error('ClientAuthenticationError')) and getattr(exc, 'status_code', None) in (None, 400, 401):
        text = scrub(getattr(exc, 'message', None) or exc, secrets)
        first = text.strip().splitlines()[0] if text.strip() else 'the credential was rejected'
        if 'CERTIFICATE_VERIFY_FAILED' in text or 'SSLError' in text:
            return KueueOpsError('TLS verification of the Microsoft Entra authority failed while %s: %s' % (what, first),
                                 field='ca_bundle',
                                 fix='give the CA that signed the authority\'s certificate in ca_bundle (or '
                                     'AZURE_CA_BUNDLE)')
        if any(marker in text for marker in _CONNECTION_MARKERS):
            return KueueOpsError('cannot reach the Microsoft Entra authority while %s: %s' % (what, first),
                                 field='cloud_environment',
                                 fix='check cloud_environment and, for a custom endpoint, AZURE_AUTHORITY_HOST; and the '
                                     'network path and proxy')
        field, fix = 'auth_source', ('check the Azure credentials (client_id, secret and tenant of the service '
                                     'principal, or the identity of auth_source)')
        for code, code_field, code_fix in _AUTH_FIELDS:
            if code in text:
                field, fix = code_field, code_fix
                break
        else:
            if params.get('secret') and ('invalid_client' in text or 'unauthorized_client' in text):
                field = 'secret'
        return KueueOpsError('authentication to Azure failed while %s: %s' % (what, first), field=field, fix=fix)
    if isinstance(exc, (azure_error('ServiceRequestError'), azure_error('ServiceResponseError'))):
        text = scrub(exc, secrets)
        if 'CERTIFICATE_VERIFY_FAILED' in text or 'SSL' in text:
            return KueueOpsError('TLS verification failed while %s: %s' % (what, text.splitlines()[0]),
                                 field='ca_bundle',
                                 fix='give the CA that signed the endpoint\'s certificate in ca_bundle '
                                     '(or AZURE_CA_BUNDLE)')
        return KueueOpsError('cannot reach Azure while %s: %s' % (what, text.splitlines()[0] if text else ''),
                             field='cloud_environment',
                             fix='check cloud_environment (or AZURE_CLOUD_ENVIRONMENT / AZURE_AUTHORITY_HOST), '
                                 'the network path and proxy')
    if isinstance(exc, azure_error('HttpResponseError')):
        status, code, message = _arm_error(exc)
        message = scrub(message or '', secrets)
        head = 'ARM %s%s while %s: %s' % (status or '', ' %s' % code if code else '', what, message)
        if status == 404 or isinstance(exc, azure_error('ResourceNotFoundError')):
            if code == 'ResourceGroupNotFound':
                return KueueOpsError(head, field='resource_group',
                                     fix='check resource_group (and subscription_id): the resource group must exist')
            if code == 'SubscriptionNotFound' or 'subscription' in (code or '').lower():
                return KueueOpsError(head, field='subscription_id', fix='check subscription_id')
            return KueueOpsError(head, field='cluster_name',
                                 fix='check cluster_name and resource_group: the AKS cluster must exist')
        if status in (401,):
            return KueueOpsError(head, field='auth_source',
                                 fix='the token was rejected: check tenant, subscription_id and cloud_environment')
        if status == 403:
            return KueueOpsError(head, field='client_id',
                                 fix='grant the identity a role on the cluster that allows '
                                     'Microsoft.KubernetesConfiguration/extensions/* and '
                                     'Microsoft.ContainerService/managedClusters/read and listClusterUserCredential '
                                     '(for example Contributor or Azure Kubernetes Service Cluster Admin)')
        if status == 409:
            return KueueOpsError(head, field='name',
                                 fix='another operation runs on the extension or the cluster; retry when it ends')
        if status == 400:
            return KueueOpsError(head, field=None,
                                 fix='check the options against the extension\'s settings and versions')
        if status in (429, 500, 502, 503, 504):
            return KueueOpsError(head + ' (still failing after retries)', field=None,
                                 fix='retry later; Azure throttled or failed transiently')
        return KueueOpsError(head)
    return KueueOpsError('%s while %s: %s' % (type(exc).__name__, what, scrub(exc, secrets)))
