# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/kube/module.py, KueueOpsModule: a real AnsibleModule given its arguments as
ansible-playbook would, its exit read from what it prints (the modules' own runs are in tests/integration)."""

import contextlib
import json
from unittest import mock

import pytest

from ansible.module_utils import basic

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_import import ApiException
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import KueueOpsModule, ModuleRun

try:
    from ansible.module_utils.testing import patch_module_args  # ansible-core 2.19 and later
except ImportError:  # ansible-core 2.16 (the compat job)
    @contextlib.contextmanager
    def patch_module_args(args):
        with mock.patch.object(basic, '_ANSIBLE_ARGS', json.dumps({'ANSIBLE_MODULE_ARGS': args}).encode()):
            yield


@pytest.fixture(autouse=True)
def output_profile():
    """ansible-core 2.19 encodes what a module prints with the profile its arguments came with; the modules here
    exit after patch_module_args returned, so the profile stays set for the whole test."""
    if hasattr(basic, '_ANSIBLE_PROFILE'):
        with mock.patch.object(basic, '_ANSIBLE_PROFILE', 'legacy'):
            yield
    else:
        yield


SPEC = dict(namespace=dict(type='str', default='kueue-system'), timeout=dict(type='int', default=300))


def module(args=None, **kwargs):
    with patch_module_args(dict(args or {})):
        return KueueOpsModule(dict(SPEC), supports_check_mode=True, **kwargs)


def exit_of(capsys, fn):
    """What the module printed when ``fn`` made it exit, and its exit code."""
    with pytest.raises(SystemExit) as exited:
        fn()
    return json.loads(capsys.readouterr().out), exited.value.code


def test_the_connection_options_join_the_spec_unless_told_not_to():
    assert 'kubeconfig' in module().argument_spec and 'context' in module().argument_spec
    assert 'kubeconfig' not in module(kube=False).argument_spec
    assert module({'timeout': 5}).params['timeout'] == 5 and module().check_mode is False


def test_refusals_name_the_field_and_the_fix(capsys):
    out, code = exit_of(capsys, lambda: module({'timeout': 0}).check_seconds('timeout'))
    assert code == 1 and out['failed'] and out['changed'] is False
    assert out['msg'] == 'timeout: must be a positive number of seconds. Fix: give the seconds the whole run may take.'
    out, _code = exit_of(capsys, lambda: module({'timeout': -1}).check_seconds('timeout', minimum=0))
    assert out['msg'] == 'timeout: must be zero or more seconds. Fix: give a non-negative number of seconds.'
    out, _code = exit_of(capsys, lambda: module({'namespace': 'Not_A_Label'}).check_namespace('namespace'))
    assert out['msg'].startswith('namespace: ') and 'Fix: ' in out['msg']
    # Nothing to refuse: the checks return.
    module({'timeout': 0}).check_seconds('timeout', minimum=0)
    module().check_namespace('namespace')
    module().refuse_first([None, None])
    problems = [None, KueueOpsError('second', field='b'), KueueOpsError('third', field='c')]
    out, _code = exit_of(capsys, lambda: module().refuse_first(problems))
    assert out['msg'] == 'b: second.'


class Problems(Exception):
    def message(self):
        return '2 problem(s); nothing was written'

    def failure_result(self):
        return {'problems': [{'field': 'spec'}], 'changed': False}


def test_run_returns_the_result_or_fails_with_the_message(capsys):
    assert module().run(lambda: {'changed': True}) == {'changed': True}
    out, code = exit_of(capsys, lambda: module().run(lambda: (_ for _ in ()).throw(
        KueueOpsError('the chart is not there', field='chart_ref', fix='give another')), state_file='/s'))
    assert code == 1 and out['msg'] == 'chart_ref: the chart is not there. Fix: give another.'
    assert out['state_file'] == '/s' and 'exception' not in out  # no traceback attached
    # An error with failure_result adds its keys (and may say what changed).
    out, _code = exit_of(capsys, lambda: module().run(lambda: (_ for _ in ()).throw(Problems()), changed=True))
    assert out['msg'] == '2 problem(s); nothing was written' and out['problems'] == [{'field': 'spec'}]
    assert out['changed'] is False
    # A Kubernetes error is described as such; anything else by the module's describe, if it gives one.
    forbidden = ApiException(status=403, reason='Forbidden')
    out, _code = exit_of(capsys, lambda: module().run(lambda: (_ for _ in ()).throw(forbidden)))
    assert out['msg'].startswith('impersonate_user: ') and 'grant the RBAC permission' in out['msg']
    out, _code = exit_of(capsys, lambda: module().run(lambda: (_ for _ in ()).throw(ValueError('odd')),
                                                      describe=lambda exc: 'described: %s' % exc))
    assert out['msg'] == 'described: odd'
    out, _code = exit_of(capsys, lambda: module().run(lambda: (_ for _ in ()).throw(ValueError('odd'))))
    assert out['msg'] == 'ValueError: odd.'


def test_module_run_carries_what_the_module_hands_its_work():
    masked = {'s3cret'}
    run = ModuleRun({'a': 1}, check_mode=True, diff=True, no_log_values=masked)
    assert (run.p, run.check_mode, run.diff_mode, run.warnings) == ({'a': 1}, True, True, [])
    assert run.no_log_values is masked  # the module's own set: secrets found on the way are masked too
    fresh, other = ModuleRun({}), ModuleRun({})
    fresh.no_log_values.add('x')
    fresh.warnings.append('w')
    assert other.no_log_values == set() and other.warnings == []  # never shared between runs
