import json

from kubernetes.client.exceptions import ApiException

from ansible_collections.kueueops.aks.plugins.module_utils.errors import KueueOpsError, api_exception_message


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
