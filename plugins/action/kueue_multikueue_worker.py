# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller side of kueueops.aks.kueue_multikueue_worker: the module runs as usual; a failure in the kueue role
or this collection's playbooks also names the role variables of the options it names (plugin_utils/role_hint.py)."""

from ansible_collections.kueueops.aks.plugins.plugin_utils.role_hint import RoleHintAction


class ActionModule(RoleHintAction):
    pass
