#!/usr/bin/python
# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: kueue_jobs_info
short_description: List the Jobs that carry a Kueue queue label, suspended (queued) or running, by namespace
version_added: 1.0.0
description:
  - Lists the batch Jobs labelled C(kueue.x-k8s.io/queue-name) and sorts them, per namespace, into V(suspended)
    (C(spec.suspend=true); queued, they create no pods), V(running) (not suspended and not finished) and
    V(finished) (C(Complete) or C(Failed)).
  - What an admin needs after uninstalling Kueue - running Jobs continue without Kueue, queued Jobs stay suspended
    until Kueue is back and creates new Workloads for them - and before restoring.
  - Read-only; never reports a change.
author:
  - kueueops contributors (@kueueops)
options:
  namespaces:
    description: Only these namespaces (all namespaces when empty).
    type: list
    elements: str
    default: []
  label:
    description: The queue label.
    type: str
    default: kueue.x-k8s.io/queue-name
extends_documentation_fragment:
  - kueueops.aks.attributes
  - kueueops.aks.attributes.info_module
  - kueueops.aks.kube_auth
"""

EXAMPLES = r"""
- name: Which Jobs wait for Kueue
  kueueops.aks.kueue_jobs_info:
  register: jobs

- name: Print them
  ansible.builtin.debug:
    msg: "{{ jobs.namespaces }}"
"""

RETURN = r"""
namespaces:
  description: Per namespace, the suspended, running and finished Jobs, each with its name and queue.
  returned: success
  type: dict
  sample: {team-a: {suspended: [{name: train-1, queue: user-queue}], running: [], finished: []}}
suspended:
  description: How many Jobs with a queue label are suspended.
  returned: success
  type: int
running:
  description: How many Jobs with a queue label are running (not suspended, not finished).
  returned: success
  type: int
finished:
  description: How many Jobs with a queue label are finished.
  returned: success
  type: int
"""

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import label_key_error, namespace_name_error
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_api import condition_true
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster, path
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule


def classify(job):
    """'suspended', 'running' or 'finished' for a Job as a dict (API field names)."""
    if condition_true(job, 'Complete') or condition_true(job, 'Failed'):
        return 'finished'
    if (job.get('spec') or {}).get('suspend'):
        return 'suspended'
    return 'running'


def summarise(jobs, label):
    out = {}
    for job in jobs:
        meta = job.get('metadata') or {}
        state = classify(job)
        entry = out.setdefault(meta.get('namespace') or '', {'suspended': [], 'running': [], 'finished': []})
        entry[state].append({'name': meta.get('name'), 'queue': (meta.get('labels') or {}).get(label)})
    for entry in out.values():
        for items in entry.values():
            items.sort(key=lambda i: i['name'] or '')
    return dict(sorted(out.items()))


def list_jobs(api_client, label, namespaces):
    """The Jobs (dicts, API field names) that carry ``label``, in ``namespaces`` (every namespace when empty)."""
    cluster = Cluster(api_client)
    jobs = []
    for namespace in namespaces or [None]:  # None: /apis/batch/v1/jobs, the Jobs of every namespace
        jobs.extend(cluster.items(path('batch/v1', 'jobs', namespace), labelSelector=label))
    return jobs


def main():
    module = KueueOpsModule(dict(
        namespaces=dict(type='list', elements='str', default=[]),
        label=dict(type='str', default='kueue.x-k8s.io/queue-name'),
    ), supports_check_mode=True)
    module.refuse_first([label_key_error(module.params['label'], 'label')] +
                        [namespace_name_error(ns, 'namespaces[%d]' % idx)
                         for idx, ns in enumerate(module.params['namespaces'])])
    api_client = module.api_client
    jobs = module.run(lambda: list_jobs(api_client, module.params['label'], module.params['namespaces']))
    namespaces = summarise(jobs, module.params['label'])
    module.exit_json(changed=False, namespaces=namespaces,
                     suspended=sum(len(n['suspended']) for n in namespaces.values()),
                     running=sum(len(n['running']) for n in namespaces.values()),
                     finished=sum(len(n['finished']) for n in namespaces.values()))


if __name__ == '__main__':
    main()
