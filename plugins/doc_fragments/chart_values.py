# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The module options that set one value of the Kueue chart each (kueue_helm installs them, kueue_drift_info declares
them): plugins/module_utils/helm/helm_values.py CHART_VALUE_OPTIONS holds their argument spec and chart paths, this
fragment their documentation. In the collection's roles and playbooks each one is the variable C(kueue_helm_<option>)
(hack/gen_role_specs.py).
"""


class ModuleDocFragment:

    DOCUMENTATION = r"""
options:
  manager_priority_class:
    description:
      - The PriorityClass of the Kueue controller-manager Pods (the chart's
        C(controllerManager.manager.priorityClassName)), for example V(system-cluster-critical), so that the scheduler
        keeps Kueue running before batch Pods when the nodes are full.
      - M(kueueops.aks.kueue_helm) refuses a name the cluster has no PriorityClass of before anything is written (the
        Deployment's Pods would otherwise be refused and Kueue would never become ready);
        M(kueueops.aks.kueue_drift_info) compares it with the release's values as the other declared values.
      - Refused when O(values) or O(values_files) set the same chart value.
      - Unset, the chart's default applies (no priority class).
    type: str
"""
