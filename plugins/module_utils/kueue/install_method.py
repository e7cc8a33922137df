# -*- coding: utf-8 -*-
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How Kueue is installed, from what the cluster alone shows (used by kueueops.aks.kueue_info).

The AKS managed extension ``microsoft.kueue`` is itself a Helm release (named like the extension, in its release
namespace), so a Helm release of Kueue does not by itself mean an unmanaged (OSS) install. AKS's extension manager
keeps, for every extension instance, an ``ExtensionConfig`` object (group ``aks.clusterconfig.azure.com`` on AKS,
``clusterconfig.azure.com`` on Arc-enabled clusters, version ``v1beta1``) in the extension's release namespace,
named like the extension, with ``spec.extensionType``. A release counts as the extension's own only when such an
object of type ``microsoft.kueue`` names it AND the extension's ``kueue-extension`` Deployment runs: never on the
release's name alone, which an OSS user may choose too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

KUEUE_CHART = 'kueue'
EXTENSION_TYPE = 'microsoft.kueue'
# The ExtensionConfig API groups, AKS's first; both serve version v1beta1.
EXTENSION_CONFIG_GROUPS = ('aks.clusterconfig.azure.com', 'clusterconfig.azure.com')
EXTENSION_CONFIG_VERSION = 'v1beta1'
EXTENSION_CONFIG_PLURAL = 'extensionconfigs'


def kueue_extension_configs(items, namespace):
    """The ExtensionConfig objects (dicts) in ``namespace`` whose extension type is microsoft.kueue (any case),
    as [{name, namespace, extension_type, version}], sorted by name."""
    out = []
    for item in items or []:
        if not isinstance(item, dict):
            continue
        meta = item.get('metadata') or {}
        spec = item.get('spec') or {}
        ext_type = spec.get('extensionType')
        if meta.get('namespace') != namespace or not meta.get('name'):
            continue
        if not isinstance(ext_type, str) or ext_type.lower() != EXTENSION_TYPE:
            continue
        out.append({'name': meta['name'], 'namespace': namespace, 'extension_type': ext_type,
                    'version': spec.get('version')})
    return sorted(out, key=lambda c: c['name'])


def pick_release(releases, release_name):
    """The release named ``release_name``, else the (only, or first by name) release of the kueue chart."""
    for release in releases:
        if release.get('name') == release_name:
            return release
    for release in releases:
        if release.get('chart') == KUEUE_CHART:
            return release
    return None


def classify(releases, release_name, extension_deployment, extension_configs):
    """How Kueue is installed in one namespace.

    ``releases``: the Helm releases recorded there ([{name, chart, ...}]); ``extension_deployment``: whether the
    kueue-extension Deployment runs there; ``extension_configs``: kueue_extension_configs() of that namespace.
    Returns {install_method, helm_release, extension_release, releases}: install_method is 'helm', 'extension',
    'both' or 'none'; helm_release the unmanaged release of Kueue (or None); extension_release the release the
    extension manages (or None); releases the input, each with ``extension_managed`` (bool) added.
    """
    config_names = set(c['name'] for c in extension_configs or [])
    managed_names = set(r['name'] for r in releases if extension_deployment and r.get('name') in config_names)
    marked = [dict(r, extension_managed=r.get('name') in managed_names) for r in releases]
    unmanaged = [r for r in marked if not r['extension_managed']]
    managed = [r for r in marked if r['extension_managed']]
    helm_release = pick_release(unmanaged, release_name)
    extension_release = pick_release(managed, release_name) or (managed[0] if managed else None)
    if helm_release is not None and extension_deployment:
        method = 'both'
    elif helm_release is not None:
        method = 'helm'
    elif extension_deployment:
        method = 'extension'
    else:
        method = 'none'
    return {'install_method': method, 'helm_release': helm_release, 'extension_release': extension_release,
            'releases': marked}
