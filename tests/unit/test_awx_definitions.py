"""The AWX definitions in awx/controller_configuration.yml agree with what they launch:
survey variables are inputs of the role entry points the playbook runs (names, types,
defaults, choices), or variables the playbook itself reads; credential types inject only
variables the modules read (issue 7)."""

import os
import re

import pytest
import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.azure.azure_auth import AZURE_AUTH_ARGSPEC, AZURE_CONNECTION_ARGSPEC
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kube_client import KUBE_AUTH_ARGSPEC

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AWX = yaml.safe_load(open(os.path.join(ROOT, 'awx', 'controller_configuration.yml')))
SPECS = yaml.safe_load(open(os.path.join(ROOT, 'roles', 'kueue', 'meta', 'entry_points.yml')))['entry_points']
TEMPLATES = AWX['controller_templates']

# AWX survey question type -> the argument-spec types it can feed (surveys have no boolean:
# a true/false multiple choice is converted by the argument spec validation).
SURVEY_TYPES = {
    'text': {'str', 'path', 'raw'},
    'textarea': {'str', 'raw', 'list', 'dict'},
    'password': {'str', 'raw'},
    'integer': {'int', 'raw'},
    'float': {'float', 'raw'},
    'multiplechoice': {'str', 'bool', 'raw'},
    'multiselect': {'list'},
}


def options_for(template):
    options = {}
    for entry in template['kueueops_entry_points']:
        options.update(SPECS[entry]['options'])
    options.update(template.get('kueueops_playbook_vars') or {})
    return options


def as_spec_value(value, spec_type):
    if spec_type == 'bool' and isinstance(value, str):
        return {'true': True, 'false': False}[value]
    return value


@pytest.mark.parametrize('template', TEMPLATES, ids=[t['name'] for t in TEMPLATES])
def test_survey_matches_the_argument_specs(template):
    playbook = os.path.join(ROOT, template['playbook'])
    assert os.path.isfile(playbook), template['playbook']
    text = open(playbook).read()
    # and the shared role's task files the playbook runs (tasks_from: restore, confirm), read as part of it
    for name in sorted(set(re.findall(r'tasks_from:\s*(\w+)', text))):
        task_file = os.path.join(ROOT, 'roles', 'kueue', 'tasks', name + '.yml')
        if os.path.isfile(task_file):
            text += open(task_file).read()
    for entry in template['kueueops_entry_points']:
        assert entry in SPECS
        # the job role kueueops.aks.<entry> (whose options are the entry point's: tests/unit/test_role_specs.py),
        # or the entry point of the shared role itself
        assert re.search(r'name:\s*kueueops\.aks\.%s\s*$' % entry, text, re.M) \
            or re.search(r'tasks_from:\s*%s\b' % entry, text) or (entry == 'install' and 'tasks_from: main' in text), \
            '%s does not run the entry point %s' % (template['playbook'], entry)
    for name in template.get('kueueops_playbook_vars') or {}:
        assert name in text, '%s does not read %s' % (template['playbook'], name)
    options = options_for(template)
    assert template['survey_enabled'] and template['survey_spec']['spec']
    for question in template['survey_spec']['spec']:
        var = question['variable']
        assert var in options, '%s: survey variable %s is not an input of %s' % (
            template['name'], var, template['kueueops_entry_points'])
        spec = options[var]
        spec_type = spec.get('type', 'str')
        assert spec_type in SURVEY_TYPES[question['type']], (var, question['type'], spec_type)
        if question['type'] == 'multiplechoice':
            choices = [as_spec_value(c, spec_type) for c in question['choices']]
            if spec_type == 'bool':
                assert sorted(choices) == [False, True]
            elif spec.get('choices'):
                assert set(choices) <= set(spec['choices']), (var, choices, spec['choices'])
        if 'default' in question and 'default' in spec:
            assert as_spec_value(question['default'], spec_type) == spec['default'], var
        if spec.get('required'):
            assert question.get('required'), '%s is required by the argument spec' % var


def test_every_role_entry_point_has_a_template():
    launched = {e for t in TEMPLATES for e in t['kueueops_entry_points']}
    assert {'install', 'configure_queues', 'uninstall_with_backup'} <= launched
    assert {os.path.basename(t['playbook']) for t in TEMPLATES} >= {
        'site.yml', 'configure_queues.yml', 'uninstall.yml', 'restore.yml', 'status.yml'}


def test_credential_types_inject_what_the_modules_read():
    read = set()
    for spec in list(KUBE_AUTH_ARGSPEC.values()) + list(AZURE_AUTH_ARGSPEC.values()) + list(AZURE_CONNECTION_ARGSPEC.values()):
        fallback = spec.get('fallback')
        if fallback:
            read.update(fallback[1])
    read.add('AZURE_AUTHORITY_HOST')  # read by azure_auth.resolve_cloud for custom clouds
    for ctype in AWX['controller_credential_types']:
        fields = {f['id']: f for f in ctype['inputs']['fields']}
        for var, value in ctype['injectors'].get('env', {}).items():
            assert var in read, '%s injects %s, which no module reads' % (ctype['name'], var)
            for ref in re.findall(r'\{\{\s*(\w+)', value):
                assert ref in fields or ref == 'tower', (ctype['name'], ref)
        for key, value in ctype['injectors'].get('file', {}).items():
            ref = re.findall(r'\{\{\s*(\w+)', value)[0]
            assert fields[ref].get('multiline'), key
        for field in fields.values():
            if field['id'] in ('kubeconfig',):
                assert field.get('secret'), 'the kubeconfig is a secret input'


def test_the_nightly_schedule_launches_the_drift_report_with_its_survey_variables():
    schedules = AWX['controller_schedules']
    by_name = dict((t['name'], t) for t in TEMPLATES)
    for schedule in schedules:
        template = by_name[schedule['unified_job_template']]
        assert re.match(r'^DTSTART:\d{8}T\d{6}Z RRULE:FREQ=DAILY;INTERVAL=1$', schedule['rrule']), schedule['rrule']
        survey = dict((q['variable'], q) for q in template['survey_spec']['spec'])
        assert set(schedule['extra_data']) <= set(survey), schedule['extra_data']
        assert all(name in schedule['extra_data'] for name, q in survey.items() if q.get('required'))
    nightly = [s for s in schedules if s['unified_job_template'] == 'Kueue - drift report']
    assert nightly and nightly[0]['extra_data']['kueue_fail_on_drift'] is True
    assert by_name['Kueue - drift report']['playbook'] == 'playbooks/status.yml'
