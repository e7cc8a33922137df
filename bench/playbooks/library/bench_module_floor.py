#!/usr/bin/python
# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bench only (not part of the collection): the floor of any Ansible module given kueue_queues' arguments.

It takes the options of bench/playbooks/kueue_queues.yml's task (the 1,068 objects as ``resources``) and does
nothing with them: no import beyond AnsibleModule, no request. Its run is what every module pays for the same
arguments - ansible-playbook templating and finalising the list, building the AnsiballZ payload, passing the
objects as JSON, starting Python, importing ansible.module_utils.basic from the payload, checking the argument
spec and returning a result - so kueue_queues' re-run minus this run is the collection's own share (bench/run.py,
"module floor").
"""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(
        kubeconfig=dict(type='path'),
        resources=dict(type='list', elements='dict'),
        create_namespaces=dict(type='bool', default=False),
        timeout=dict(type='int', default=300),
    ), supports_check_mode=True)
    module.exit_json(changed=False, objects=len(module.params['resources'] or []))


if __name__ == '__main__':
    main()
