# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The attributes every kueueops.aks module documents, in one place.

DOCUMENTATION: what check_mode, diff_mode, platform and action_group mean (the descriptions of
ansible.builtin.action_common_attributes), that every module runs wherever Python runs, and that it belongs to
the action group kueueops.aks.kueue (meta/runtime.yml). A module states its own check and diff support.
INFO_MODULE: with DOCUMENTATION, for a module that only reads (check mode full, no diff).
NO_DIFF: with DOCUMENTATION, for a module that writes but returns no diff (it states its own check mode).
"""


class ModuleDocFragment:

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target, if not
      supported the action will be skipped.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff
      mode.
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: all
  action_group:
    description: Action is part of action_group(s), for convenient setting of module_defaults.
    support: full
    membership:
      - kueueops.aks.kueue
"""

    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: This action does not modify state.
  diff_mode:
    support: N/A
    details: This action does not modify state.
"""

    NO_DIFF = r"""
options: {}
attributes:
  diff_mode:
    support: none
"""
