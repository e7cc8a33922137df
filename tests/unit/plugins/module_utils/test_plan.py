# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/kueue/plan.py: kueue_queues' plan as a value, built from plain dicts (no cluster): what is
created, updated, left unchanged and pruned, and why; check mode's and --diff's renderings of it; and the drift, the
same plan judged by declared field."""

import copy
import dataclasses

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.drift import drift
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import plan

V = 'kueue.x-k8s.io/v1beta2'
RF = ('ResourceFlavor', '', 'default')
CQ = ('ClusterQueue', '', 'a')
LQ = ('LocalQueue', 'team-a', 'q')
NEW_NS_LQ = ('LocalQueue', 'team-new', 'q')


def rf():
    return {'apiVersion': V, 'kind': 'ResourceFlavor', 'metadata': {'name': 'default'},
            'spec': {'nodeLabels': {'pool': 'a'}}}


def cq(quota='4', stop=None):
    spec = {'namespaceSelector': {}, 'resourceGroups': [{'coveredResources': ['cpu'], 'flavors': [
        {'name': 'default', 'resources': [{'name': 'cpu', 'nominalQuota': quota}]}]}]}
    if stop:
        spec['stopPolicy'] = stop
    return {'apiVersion': V, 'kind': 'ClusterQueue', 'metadata': {'name': 'a'}, 'spec': spec}


def lq(namespace='team-a'):
    return {'apiVersion': V, 'kind': 'LocalQueue', 'metadata': {'name': 'q', 'namespace': namespace},
            'spec': {'clusterQueue': 'a'}}


def stored(obj, manager='kueueops', rv='7'):
    """``obj`` as the API server stores it after ``manager`` applied it: server fields and its managedFields entry
    owning every declared field."""
    def fields(value):
        return dict(('f:%s' % k, fields(v)) for k, v in value.items()) if isinstance(value, dict) else {}

    out = copy.deepcopy(obj)
    out['metadata'].update(resourceVersion=rv, uid='u-%s' % obj['metadata']['name'])
    own = dict(('f:%s' % k, fields(v)) for k, v in obj.items() if k in ('spec',))
    if 'spec' in own and 'f:resourceGroups' in own['f:spec']:
        own['f:spec']['f:resourceGroups'] = {}  # an atomic list: owned as a whole
    out['metadata']['managedFields'] = [{'manager': manager, 'operation': 'Apply', 'apiVersion': V,
                                         'fieldsType': 'FieldsV1', 'fieldsV1': own}]
    return out


def live_of(*objects):
    out = {}
    for obj in objects:
        out.setdefault(obj['kind'], {})[(obj['kind'], obj['metadata'].get('namespace', ''), obj['metadata']['name'])] \
            = obj
    return out


def test_a_plan_names_each_action_and_why():
    """A new flavor, a ClusterQueue whose dry-run differs, a LocalQueue managedFields settle, a LocalQueue whose
    namespace the run creates, and a pruned ClusterQueue."""
    old = stored(dict(cq(), metadata={'name': 'old'}))
    live = live_of(stored(cq('4')), stored(lq()), old)
    objects = [rf(), cq('8'), lq(), lq('team-new')]
    dry = {RF: stored(rf(), rv='8'), CQ: stored(cq('8'), rv='9'), NEW_NS_LQ: None}
    got = plan.build(objects, live, plan.by_dry_run(dry, {LQ}), [old and ('ClusterQueue', '', 'old')],
                     namespaces={'team-a'})
    assert [(e.key, e.action) for e in got.entries] == [
        (RF, 'created'), (CQ, 'updated'), (LQ, 'unchanged'), (NEW_NS_LQ, 'created'),
        (('ClusterQueue', '', 'old'), 'pruned')]
    reasons = dict((e.key, e.reason) for e in got.entries)
    assert reasons[RF] == 'not in the cluster'
    assert 'dry-run differs' in reasons[CQ]
    assert 'managedFields' in reasons[LQ] and 'no dry-run' in reasons[LQ]
    assert 'its namespace' in reasons[NEW_NS_LQ]
    assert 'no longer declared' in reasons[('ClusterQueue', '', 'old')]
    assert got.namespaces == ('team-new',)
    assert got.pruned == [('ClusterQueue', '', 'old')]
    assert got.to_apply == [rf(), cq('8'), lq('team-new')]
    assert got.writes == 1 + 4  # the namespace, three objects, one prune
    cq_entry = got.entries[1]
    assert cq_entry.before is live['ClusterQueue'][CQ] and cq_entry.after is dry[CQ] and cq_entry.declared == cq('8')
    assert got.action(LQ) == 'unchanged' and got.action(('ClusterQueue', '', 'gone')) == 'pruned'
    assert got.action(('ClusterQueue', '', 'gone'), 'unchanged') == 'unchanged'


def test_a_dry_run_equal_to_the_live_object_is_unchanged_and_a_plan_is_a_value():
    live = live_of(stored(cq()))
    dry = {CQ: stored(cq())}
    one = plan.build([cq()], live, plan.by_dry_run(dry, set()))
    assert [(e.action, e.reason) for e in one.entries] == [('unchanged', 'the server-side dry-run is the live object')]
    assert one == plan.build([cq()], copy.deepcopy(live), plan.by_dry_run(copy.deepcopy(dry), set()))
    assert one.namespaces == () and one.writes == 0 and one.to_apply == []
    assert isinstance(one.entries, tuple) and one == plan.Plan(one.entries) and one != plan.Plan(())
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.entries = ()
    # Another field manager's dry-run result takes fields over: a write.
    taken = plan.build([cq()], live, plan.by_dry_run({CQ: stored(cq(), manager='other')}, set()))
    assert taken.entries[0].action == 'updated'


def test_check_mode_renders_counts_changed_objects_and_diff_from_the_plan():
    live = live_of(stored(cq('4')), stored(lq()), stored(dict(lq(), metadata={'name': 'old', 'namespace': 'team-a'})))
    got = plan.build([cq('8'), lq()], live, plan.by_dry_run({CQ: stored(cq('8'), rv='9')}, {LQ}),
                     [('LocalQueue', 'team-a', 'old')])
    assert got.counts() == {'ClusterQueue': {'created': 0, 'updated': 1, 'unchanged': 0, 'pruned': 0},
                            'LocalQueue': {'created': 0, 'updated': 0, 'unchanged': 1, 'pruned': 1}}
    assert got.changed_objects() == [{'kind': 'ClusterQueue', 'name': 'a', 'action': 'updated'},
                                     {'kind': 'LocalQueue', 'namespace': 'team-a', 'name': 'old', 'action': 'pruned'}]
    diff = got.diff()
    assert [(d['before_header'], d['after_header']) for d in diff] == [
        ('ClusterQueue a (live)', 'ClusterQueue a (applied)'), ('LocalQueue team-a/old (live)', '(pruned)')]
    quota = diff[0]['after']['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota']
    assert quota == '8' and 'managedFields' not in diff[0]['before']['metadata'] and diff[1]['after'] == {}
    # After the writes: only the pruned objects gone count, and the written run's diff holds the applied objects.
    assert got.counts(pruned=[])['LocalQueue']['pruned'] == 0
    assert got.changed_objects(pruned=[]) == [{'kind': 'ClusterQueue', 'name': 'a', 'action': 'updated'}]
    assert len(got.diff(pruned=[])) == 1
    # ... and the pruned objects a DELETE was sent for (gone or still being deleted), not those that were gone already.
    assert [d['before_header'] for d in got.diff(pruned=[('LocalQueue', 'team-a', 'old')])] == [
        'ClusterQueue a (live)', 'LocalQueue team-a/old (live)']
    assert got.diff(pruned=[('LocalQueue', 'team-a', 'other')]) == got.diff(pruned=[])


def test_the_namespaces_a_run_creates_are_those_its_local_queues_lack():
    objects = [lq('team-b'), lq('team-a'), lq('team-b')]
    judge = plan.by_dry_run({}, set((o['kind'], o['metadata']['namespace'], 'q') for o in objects))
    assert plan.build(objects, {}, judge, namespaces={'team-a'}).namespaces == ('team-b',)
    assert plan.build(objects, {}, judge).namespaces == ()  # namespaces not read: none created


def test_settled_objects_skip_the_dry_run_unless_converted_or_held():
    live = live_of(stored(rf()), stored(cq()), stored(lq()))
    objects = [rf(), cq(), lq()]
    same = plan.settled(objects, live, set(), 'kueueops')
    assert same == {RF, CQ, LQ}
    assert plan.settled(objects, live, {CQ}, 'kueueops') == {RF, LQ}  # declared at another version: dry-run it
    assert plan.settled(objects, live, set(), 'someone-else') == set()
    assert plan.settled([cq('8')], live, set(), 'kueueops') == set()
    assert plan.to_judge(objects, same) == []
    assert plan.to_judge(objects, same, hold=True) == []  # nothing changes: nothing held
    assert plan.to_judge(objects, {RF, CQ}, hold=True) == [cq(), lq()]  # something changes: every ClusterQueue too
    assert plan.to_judge(objects, {RF, CQ}) == [lq()]


def test_drift_is_the_same_plan_judged_by_field_without_a_dry_run():
    """kueue_drift_info's plan: the missing objects are kueue_queues' created ones, the extra ones its pruned ones;
    a changed object carries its differing fields and the object as the apply would leave it."""
    edited = stored(cq('4'))
    live = live_of(edited, stored(dict(cq(), metadata={'name': 'old'})))
    found = plan.build([cq('8'), lq()], live, drift.by_fields(), [('ClusterQueue', '', 'old')])
    assert [(e.key, e.action) for e in found.entries] == [
        (CQ, 'updated'), (LQ, 'created'), (('ClusterQueue', '', 'old'), 'pruned')]
    changed = found.entries[0]
    assert [f['field'] for f in changed.fields] == ['spec.resourceGroups[0].flavors[0].resources[0].nominalQuota']
    assert changed.after['spec']['resourceGroups'][0]['flavors'][0]['resources'][0]['nominalQuota'] == '8'
    assert changed.reason == '1 declared field(s) differ from the live object'
    assert found.entries[1].reason == 'declared, not in the cluster'
    assert plan.build([cq('4')], live, drift.by_fields()).entries[0].action == 'unchanged'
    headers = [(d['before_header'], d['after_header']) for d in found.diff(labels=drift.DRIFT_LABELS)]
    assert headers == [('ClusterQueue a (live)', 'ClusterQueue a (declared)'),
                       ('(missing)', 'LocalQueue team-a/q (declared)'),
                       ('ClusterQueue old (live)', '(no longer declared)')]


def test_ref_names_an_object_as_every_result_lists_it():
    assert plan.ref(LQ, 'created') == {'kind': 'LocalQueue', 'namespace': 'team-a', 'name': 'q', 'action': 'created'}
    assert plan.ref(CQ) == {'kind': 'ClusterQueue', 'name': 'a'}
