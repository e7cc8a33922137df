import json

from kubernetes.client.exceptions import ApiException

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import (
    KueueOpsError,
    ModuleFailure,
    api_exception_message,
    forbidden_permissions,
)


def _api_exc(status, reason, body):
    exc = ApiException(status=status, reason=reason)
    exc.body = body
    return exc


def test_message_with_field_and_fix():
    err = KueueOpsError('file /nope does not exist.', field='kubeconfig', fix='give an existing path.')
    assert err.message() == 'kubeconfig: file /nope does not exist. Fix: give an existing path.'
    assert str(err) == err.message()
    assert err.field == 'kubeconfig' and err.fix == 'give an existing path.'


def test_message_without_field_or_fix():
    assert KueueOpsError('boom').message() == 'boom.'


def test_forbidden_names_verb_resource_group_namespace():
    body = json.dumps({
        'kind': 'Status', 'status': 'Failure', 'reason': 'Forbidden', 'code': 403,
        'message': 'localqueues.kueue.x-k8s.io is forbidden: User "bob" cannot list resource "localqueues" '
                   'in API group "kueue.x-k8s.io" in the namespace "team-a"',
    })
    msg = api_exception_message(_api_exc(403, 'Forbidden', body))
    assert msg.startswith('Kubernetes API error 403 Forbidden: permission denied: cannot list localqueues.kueue.x-k8s.io in namespace team-a')
    assert '\n' not in msg


def test_forbidden_core_group_cluster_scope():
    body = json.dumps({'message': 'nodes is forbidden: User "bob" cannot get resource "nodes" in API group "" at the cluster scope'})
    msg = api_exception_message(_api_exc(403, 'Forbidden', body))
    assert 'cannot get nodes (' in msg


def test_status_message_used_for_other_codes():
    body = json.dumps({'kind': 'Status', 'message': 'clusterqueues.kueue.x-k8s.io "cq" not found', 'code': 404})
    assert api_exception_message(_api_exc(404, 'Not Found', body)) == \
        'Kubernetes API error 404 Not Found: clusterqueues.kueue.x-k8s.io "cq" not found'


def test_unauthorized_points_at_credentials():
    msg = api_exception_message(_api_exc(401, 'Unauthorized', b'{"message": "Unauthorized"}'))
    assert 'api_key' in msg and msg.startswith('Kubernetes API error 401 Unauthorized')


def test_non_json_body_is_one_short_line():
    msg = api_exception_message(_api_exc(502, 'Bad Gateway', '<html>proxy\nerror</html>'))
    assert msg == 'Kubernetes API error 502 Bad Gateway: <html>proxy'


def test_no_body():
    assert api_exception_message(_api_exc(500, 'Internal Server Error', None)) == 'Kubernetes API error 500 Internal Server Error'


# helm v3's stderr when the user may not create CRDs (captured on the local control plane as a user
# bound to docs/rbac/install.yaml without that verb): the same 403 once per CRD of the chart.
HELM_CRD_FORBIDDEN = (
    'helm upgrade failed (rc=1): Pulled: 127.0.0.1:51107/kueue/charts/kueue:0.19.2\nError: 11 errors occurred:\n'
    + ''.join('\t* customresourcedefinitions.apiextensions.k8s.io is forbidden: User "rbac-install" cannot create '
              'resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope\n'
              for _ in range(11)))


def test_forbidden_permissions_once_each_in_order():
    text = HELM_CRD_FORBIDDEN + ('secrets is forbidden: User "u" cannot list resource "secrets" in API group "" '
                                 'in the namespace "kueue-system"')
    assert forbidden_permissions(text) == ['cannot create customresourcedefinitions.apiextensions.k8s.io',
                                           'cannot list secrets in namespace kueue-system']
    assert forbidden_permissions('') == [] and forbidden_permissions(None) == []
    assert forbidden_permissions('helm upgrade failed: timed out waiting for the condition') == []


def test_kueueops_error_quoting_a_403_starts_with_the_permission():
    msg = KueueOpsError(HELM_CRD_FORBIDDEN).message()
    assert msg.startswith('permission denied: cannot create customresourcedefinitions.apiextensions.k8s.io; helm upgrade')
    assert msg.count('permission denied') == 1
    assert msg.endswith('Fix: grant it to the identity that runs the playbook (kueueops.aks docs/rbac.md lists '
                        'what each entry point needs).')
    # A fix given by the caller is kept; a message already naming the permission is left alone.
    assert KueueOpsError(HELM_CRD_FORBIDDEN, fix='ask the cluster admin').message().endswith(
        'Fix: ask the cluster admin.')
    already = 'Kubernetes API error 403 Forbidden: permission denied: cannot get nodes (nodes is forbidden: User "b" ' \
              'cannot get resource "nodes" in API group "" at the cluster scope)'
    assert KueueOpsError(already).message() == already + '.'


def test_escalation_refusals_name_escalate_and_bind():
    escalate = ('clusterroles.rbac.authorization.k8s.io "kueue-manager-role" is forbidden: user "rbac-install" '
                '(groups=["kueueops-install" "system:authenticated"]) is attempting to grant RBAC permissions not '
                'currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}')
    aggregation = ('clusterroles.rbac.authorization.k8s.io "kueue-batch-admin-role" is forbidden: must have '
                   'cluster-admin privileges to use the aggregationRule')
    bind = ('rolebindings.rbac.authorization.k8s.io "kueue-visibility-server-auth-reader" is forbidden: user '
            '"rbac-install" (groups=["kueueops-install" "system:authenticated"]) is attempting to grant RBAC '
            'permissions not currently held:\n{APIGroups:[""], Resources:["configmaps"], Verbs:["get"]}')
    assert forbidden_permissions(escalate + '\n' + aggregation + '\n' + escalate) == [
        'cannot escalate clusterroles.rbac.authorization.k8s.io (to create or update kueue-manager-role, '
        'kueue-batch-admin-role)']
    assert forbidden_permissions(bind) == [
        'cannot bind roles.rbac.authorization.k8s.io (referenced by rolebinding kueue-visibility-server-auth-reader)']
    many = '\n'.join('clusterroles.rbac.authorization.k8s.io "r%d" is forbidden: must have cluster-admin privileges to '
                     'use the aggregationRule' % i for i in range(5))
    assert forbidden_permissions(many) == [
        'cannot escalate clusterroles.rbac.authorization.k8s.io (to create or update r0, r1, r2 and 2 more)']


def test_api_exception_403_escalation():
    body = json.dumps({'kind': 'Status', 'code': 403, 'reason': 'Forbidden', 'message': (
        'clusterroles.rbac.authorization.k8s.io "r" is forbidden: must have cluster-admin privileges to use the '
        'aggregationRule')})
    msg = api_exception_message(_api_exc(403, 'Forbidden', body))
    assert msg.startswith('Kubernetes API error 403 Forbidden: permission denied: cannot escalate '
                          'clusterroles.rbac.authorization.k8s.io (to create or update r) (')


def test_namespace_and_label_key_checks_name_the_field_and_the_fix():
    from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import label_key_error, namespace_name_error
    assert namespace_name_error('team-a', 'namespaces[0]') is None
    for bad in ('Team_A', 'kueue system', '-a', 'a' * 64, '', None):
        msg = namespace_name_error(bad, 'namespaces[0]').message()
        assert msg.startswith('namespaces[0]: ') and 'Fix: use a DNS-1123 label' in msg, msg
    for good in ('kueue.x-k8s.io/queue-name', 'queue', 'a.b/C_d-e.f'):
        assert label_key_error(good, 'label') is None, good
    for bad in ('queue name!', 'a/b/c', 'Bad_Prefix/x', '/x', 'x/', '', 'a' * 64):
        msg = label_key_error(bad, 'label').message()
        assert msg.startswith('label: ') and 'Fix: give a label key' in msg, msg


def test_module_failure_carries_fail_json_arguments_as_given():
    exc = ModuleFailure(msg='host: unreachable.', release=None, changed=False)
    assert exc.result == {'msg': 'host: unreachable.', 'release': None, 'changed': False}
    assert str(exc) == 'host: unreachable.' and not isinstance(exc, KueueOpsError)


def test_object_name_check_names_the_field_the_kind_and_the_fix():
    from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import object_name_error
    for good in ('multikueue', 'mk.check-1', 'a' * 253):
        assert object_name_error(good, 'multikueue_admission_check', 'AdmissionCheck') is None, good
    for bad in ('MultiKueue', 'mk_check', '-a', 'a.', 'a' * 254, '', None, 3):
        msg = object_name_error(bad, 'multikueue_admission_check', 'AdmissionCheck').message()
        assert msg.startswith('multikueue_admission_check: %r is not a valid AdmissionCheck name' % (bad,)), msg
        assert 'Fix: use a DNS-1123 subdomain' in msg, msg
