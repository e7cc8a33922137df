# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""``KueueOpsModule``: the one wrapper every kueueops.aks module runs in (issue 14, item 4).

It is an ``AnsibleModule`` that

* adds the Kubernetes connection options (``KUBE_AUTH_ARGSPEC``, the ``kube_auth`` doc fragment) unless the module
  talks to no cluster (each module says ``supports_check_mode`` itself, as its ``attributes`` document it);
* refuses bad input with one shape, before anything is contacted: ``refuse(problem, field, fix)`` and
  ``refuse_first(problems)`` give ``<field>: <problem>. Fix: <fix>.``; ``check_namespace`` and ``check_seconds``
  are the checks several modules share;
* builds the Kubernetes client once (``api_client``: the library check, the kubeconfig's secrets added to
  ``no_log_values``, the options resolved, or a clean failure);
* runs the module's work with ``run(fn)``: a ``ModuleFailure`` is reported exactly as raised, a ``KueueOpsError``
  (or any error with ``message()`` and, for extra result keys, ``failure_result()``) fails with its message,
  anything else is read as a Kubernetes or connection error (``describe_kube_error``) or by the module's own
  ``describe``; the failure is reported outside the ``except`` block, so no traceback reaches the user.

Secrets: Ansible masks every value of ``no_log_values`` in what the module returns; text the module builds itself
goes through ``errors.scrub`` (marker ``errors.REDACTED``).
"""

import copy

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kueueops.aks.plugins.module_utils.kube import cluster_identity
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError, ModuleFailure, namespace_name_error
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import (
    KUBE_AUTH_ARGSPEC,
    context_name,
    describe_kube_error,
    get_api_client,
)
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster


class ModuleRun:
    """What a module hands the class that does its work (``helm_install.KueueHelm``, ``extension_arm.KueueExtension``):
    its options (``p``), check and diff mode, the values Ansible masks in the output (``no_log_values``: secrets
    the work finds join it) and the ``warnings`` the work collects for the result. Plain values, so the class runs
    without an ``AnsibleModule`` in unit tests."""

    def __init__(self, params, check_mode=False, diff=False, no_log_values=None):
        self.p = params
        self.check_mode = check_mode
        self.diff_mode = diff
        self.no_log_values = no_log_values if no_log_values is not None else set()
        self.warnings = []


class KueueOpsModule(AnsibleModule):
    """An AnsibleModule with the collection's options, checks and error mapping."""

    def __init__(self, argument_spec, kube=True, **kwargs):
        spec = dict(argument_spec)
        if kube:
            spec.update(copy.deepcopy(KUBE_AUTH_ARGSPEC))  # AnsibleModule may write into the option specs
        super().__init__(argument_spec=spec, **kwargs)
        self._api_client = None

    # ------------------------------------------------------------ bad input
    def refuse(self, problem, field, fix=None, **result):
        """Fail on bad input (nothing was contacted or changed)."""
        result.setdefault('changed', False)
        self.fail_json(msg=KueueOpsError(problem, field=field, fix=fix).message(), **result)

    def refuse_first(self, problems, **result):
        """Fail with the first of ``problems`` (KueueOpsErrors or None) that is not None, if any."""
        result.setdefault('changed', False)
        for problem in problems:
            if problem is not None:
                self.fail_json(msg=problem.message(), **result)

    def check_namespace(self, field, value=None):
        """A namespace name (``field``'s value unless ``value`` is given) must be a DNS label."""
        self.refuse_first([namespace_name_error(self.params[field] if value is None else value, field)])

    def check_seconds(self, field, minimum=1):
        """``field`` is a number of seconds, at least ``minimum`` (1: positive, 0: zero or more)."""
        if self.params[field] < minimum:
            if minimum > 0:
                self.refuse('must be a positive number of seconds', field, 'give the seconds the whole run may take')
            self.refuse('must be zero or more seconds', field, 'give a non-negative number of seconds')

    # ------------------------------------------------------------ the cluster
    @property
    def api_client(self):
        """The Kubernetes ApiClient of the connection options, built once (a bad option fails the module)."""
        if self._api_client is None:
            self._api_client = get_api_client(self)
        return self._api_client

    @property
    def host(self):
        return self._api_client.configuration.host if self._api_client is not None else None

    def cluster_identity(self, resource_id=None, name=None):
        """The identity of the cluster the connection options reach (cluster_identity.read: the kube-system UID,
        with the API server URL, the kubeconfig context and ``resource_id``/``name`` as readable names)."""
        return cluster_identity.read(Cluster(self.api_client), server=self.api_client.configuration.host,
                                     context=context_name(self.params), resource_id=resource_id, name=name)

    # ------------------------------------------------------------ running
    def failure(self, exc, describe=None):
        """The fail_json arguments for ``exc``."""
        if isinstance(exc, ModuleFailure):
            return dict(exc.result)
        if isinstance(exc, KueueOpsError) or callable(getattr(exc, 'failure_result', None)):
            out = {'msg': exc.message()}
            out.update(getattr(exc, 'failure_result', dict)())
            return out
        if describe is not None:
            return {'msg': describe(exc)}
        return {'msg': describe_kube_error(exc, host=self.host).message()}

    def run(self, fn, describe=None, warnings=None, **failed):
        """``fn()``'s result; on an error, fail with its message (``failed``: extra keys of the failure,
        ``describe(exc)``: the message of an error that is not the collection's own). ``warnings``: a list ``fn``
        fills as it goes, shown whether it succeeds or fails (not with a ``ModuleFailure``, which is reported
        exactly as raised)."""
        failure = None
        try:
            result = fn()
        except ModuleFailure as exc:
            failure, warnings = self.failure(exc), None
        except Exception as exc:  # pylint: disable=broad-except
            failure = dict(failed, **self.failure(exc, describe))
        for warning in warnings or ():
            self.warn(warning)
        if failure is not None:
            # Outside the except block: a user-facing message, no traceback attached.
            self.fail_json(**failure)
        return result
