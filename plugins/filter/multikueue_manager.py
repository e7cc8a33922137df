# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: multikueue_manager
author: kueueops contributors
version_added: 1.0.0
short_description: What the MultiKueue manager's Kueue will run - its integrations, version and Workload API version
description:
  - The manager side of the MultiKueue preflight of the role entry point C(multikueue) (issue 44). From what this run
    will render (the result of kueueops.aks.kueue_helm in check mode - the chart version it resolved and C(release_values),
    the values it would install) when the run installs Kueue with Helm on the manager; else from the manager's live Configuration
    (the result of kueueops.aks.kueue_verify, its C(integrations) and C(version)).
  - The rendered integrations are those of the values' C(managerConfig.controllerManagerConfigYaml) when the values
    hold one (Kueue's default C(batch/job) when it lists none), else the chart's default integrations of that Kueue
    minor (the catalog, C(default_frameworks)). The Workload API version is the newest version the manager's Kueue
    minor serves its Workloads at (C(v1beta2) from 0.15; Kueue 0.15's manager already reads them at v1beta2).
options:
  _input:
    description: C(render) (a kueue_helm check-mode result, or none), C(live) (a kueue_verify result, or none).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The manager's integrations this run will give it
  ansible.builtin.set_fact:
    manager_side: "{{ {'render': helm_check, 'live': verify_result} | kueueops.aks.multikueue_manager }}"
"""

RETURN = r"""
_value:
  description:
    - C({integrations, kueue_version, api_version, source}); C(integrations) is none when neither a render nor a live
      Configuration is known (Kueue not installed yet on a manager this run does not install with Helm).
  type: dict
"""

import re

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import GROUP
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.manager_config import effective_from_deployment, get_path


def _priority(version):
    """Kubernetes' order of API versions: v1 > v1beta2 > v1beta1 > v1alpha1."""
    match = re.match(r'^v(\d+)(?:(alpha|beta)(\d+))?$', version)
    if not match:
        return (-1, 0, 0)
    return (int(match.group(1)), {'alpha': 0, 'beta': 1}.get(match.group(2), 2), int(match.group(3) or 0))


def workload_api_version(version):
    """The Kueue API version the manager's Kueue ``version`` creates and watches Workloads at on workers: the newest
    version its Workload CRD serves (None for an unknown minor)."""
    release = kueue_catalog.catalog_for(version)
    crd = (getattr(release, 'crds', None) or {}).get('workloads.' + GROUP) if release else None
    served = sorted((crd or {}).get('served') or [], key=_priority)
    return '%s/%s' % (GROUP, served[-1]) if served else None


def multikueue_manager(data):
    data = data or {}
    render, live = data.get('render') or {}, data.get('live') or {}
    integrations = version = source = None
    if render.get('chart_version'):
        version = str(render['chart_version'])
        config_yaml = get_path(render.get('release_values') or {}, 'managerConfig.controllerManagerConfigYaml')
        if config_yaml:
            integrations = effective_from_deployment([], config_yaml)[1]
            source = 'the Configuration this run installs on the manager (Kueue %s)' % version
        else:
            release = kueue_catalog.catalog_for(version)
            integrations = list(release.default_frameworks) if release else None
            source = ('the chart\'s default integrations of Kueue %s, which this run installs on the manager '
                      '(kueue_integrations is not set)' % version)
    elif live.get('integrations'):
        integrations, version = list(live['integrations']), live.get('version')
        source = 'the manager\'s live Configuration (Kueue %s)' % (version or 'version unknown')
    return {'integrations': integrations, 'kueue_version': version, 'source': source,
            'api_version': workload_api_version(version) if version else None}


class FilterModule(object):
    def filters(self):
        return {'multikueue_manager': multikueue_manager}
