# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: kueue_release
author: kueueops contributors
version_added: 1.0.0
short_description: The Kueue release of a chart or managed extension version
description:
  - Returns the Kueue release (C(MAJOR.MINOR.PATCH)) that a version names, whatever its form - a Helm chart version
    (V(0.19.2)), a Kueue tag (V(v0.19.2)) or a version of the AKS managed extension in AKS's own form
    (V(0.19.2-aks.0.4.4), Kueue 0.19.2 in AKS's packaging 0.4.4). Two versions of the same release map to the same
    text, so a chart version and the extension version that installs it can be matched.
  - C(playbooks/migrate.yml) uses it to keep the Kueue release across a migration between Helm and the extension.
options:
  _input:
    description: The version text.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The chart version that installs the same Kueue as the extension
  ansible.builtin.debug:
    msg: "{{ '0.19.2-aks.0.4.4' | kueueops.aks.kueue_release }}"   # 0.19.2

- name: The Kueue releases the extension's release train offers
  ansible.builtin.debug:
    msg: "{{ offered | map('kueueops.aks.kueue_release') | list }}"   # ['0.19.2', '0.18.4']
  vars:
    offered: [0.19.2-aks.0.4.4, 0.18.4-aks.0.4.4]
"""

RETURN = r"""
_value:
  description: The Kueue release, C(MAJOR.MINOR.PATCH) (a missing patch is 0).
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.kueueops.aks.plugins.module_utils.common import versions


def kueue_release(version):
    parsed = versions.parse(version)
    if parsed is None:
        raise AnsibleFilterError('kueue_release: %r is not a version (expected 0.19.2, v0.19.2 or 0.19.2-aks.0.4.4)'
                                 % (version,))
    return parsed.release_text


class FilterModule(object):
    def filters(self):
        return {'kueue_release': kueue_release}
