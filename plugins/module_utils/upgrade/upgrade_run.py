# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kueue_upgrade_plan against a cluster: the installed version (Helm's release records, or the extension's version
the role read from ARM), the target and the published versions of each crossed minor (helm, through
helm_session.HelmSession, the read side of kueue_helm's session, or the release train's offered versions), then
upgrade.make_plan."""

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import queues, release_train
from ansible_collections.kueueops.aks.plugins.module_utils.upgrade import upgrade
from ansible_collections.kueueops.aks.plugins.module_utils.common import versions
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_session import HelmSession
from ansible_collections.kueueops.aks.plugins.module_utils.kube.module import ModuleRun
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_storage import helm_releases
from ansible_collections.kueueops.aks.plugins.module_utils.helm.helm_values import deep_merge, load_values_files
from ansible_collections.kueueops.aks.plugins.module_utils.kube.kueue_cluster import Cluster
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.manager_config import read_manager


class Planner(ModuleRun):
    def __init__(self, params, connect, run_command, no_log_values=None):
        super().__init__(params, check_mode=True, no_log_values=no_log_values)
        self.connect = connect
        self.run_command = run_command

    def inventory(self):
        try:
            declared = queues.load_inputs(self.p.get('resources'), self.p.get('src'))
        except queues.LoadError as exc:
            raise KueueOpsError(exc.text, field=exc.field, fix='give a readable YAML file or folder of Kueue manifests')
        return {'feature_gates': self.p['feature_gates'] or {}, 'integrations': self.p['integrations'],
                'declared': declared, 'values': self.values(), 'values_given': self.p.get('values') or {}}

    def values(self):
        """The Helm values the hops install, as kueue_helm reads them: the values files, then ``values`` over them."""
        return deep_merge(load_values_files(self.p.get('values_files') or []), self.p.get('values') or {})

    def check_inputs(self, refuse):
        """Refuse what cannot be planned, before anything is contacted (``refuse(problem, field, fix)``)."""
        p = self.p
        target = (p['target_version'] or '').strip()
        if target != 'latest' and versions.parse(target, patch=True) is None:
            refuse('%r is not a Kueue version' % target, 'target_version',
                   'give an exact version such as 0.19.2 (the extension: 0.19.2-aks.0.4.4), or latest')
        if p['install_method'] == 'extension':
            if not p['current_version'] or versions.parse(p['current_version'], patch=True) is None:
                refuse('the managed extension path needs the installed extension version, got %r'
                       % p['current_version'], 'current_version',
                       'pass the version kueue_extension reports for the extension (the upgrade role does)')
            bad = [v for v in p['available_versions'] if versions.parse(v, patch=True) is None]
            if bad:
                refuse('%s %s not a version' % (', '.join(bad), 'is' if len(bad) == 1 else 'are'),
                       'available_versions', 'pass the versions the release train offers, as ARM lists them')
        else:
            if p['current_version']:
                refuse('on the Helm path the installed version is read from the Helm release', 'current_version',
                       'remove current_version')
            if not p['chart_ref'].startswith('oci://'):
                refuse('%r is not an oci:// reference: the hops are resolved in an OCI registry' % p['chart_ref'],
                       'chart_ref', 'give oci://REGISTRY/REPO/kueue (a mirror of registry.k8s.io/kueue/charts/kueue)')

    def run(self):
        if self.p['install_method'] == 'extension':
            return self.run_extension()
        params = dict(self.p, chart_version=self.p['target_version'], release_namespace=self.p['kueue_namespace'])
        helm = HelmSession(params, self.connect, self.run_command, check_mode=True, no_log_values=self.no_log_values)
        result = helm.session(lambda runner, _result: self.run_helm(helm, runner))
        self.warnings.extend(helm.warnings)
        return result

    def run_helm(self, helm, runner):
        ns, name = self.p['kueue_namespace'], self.p['release_name']
        releases = helm_releases(helm.cluster, ns)
        release = next((r for r in releases if r['name'] == name), None)
        if release is None:
            raise KueueOpsError('no Helm release %s of Kueue in %s (found: %s)'
                                % (name, ns, ', '.join(r['name'] for r in releases) or 'none'), field='release_name',
                                fix='install Kueue first (playbooks/site.yml), or name its release in release_name')
        helm.login(runner)
        try:
            target = helm.resolve_version(runner)
        except KueueOpsError as exc:
            if exc.field == 'chart_version':
                exc.field = 'target_version'
            raise
        found = {}

        def published(minor):
            if minor not in found:
                found[minor] = helm.newest_of_minor(runner, minor)
            return found[minor]
        plan = self.plan(release['chart_version'], target, published, helm.api)
        return dict(plan, release=release, changed=False)

    def run_extension(self):
        p = self.p
        offered = sorted(p['available_versions'], key=lambda v: versions.parse(v).core)
        target = p['target_version'].strip()
        if target == 'latest':
            target = release_train.newest_known(offered)
            if target is None:
                raise KueueOpsError('the release train offers no good version of a Kueue minor this collection knows '
                                    '(offered: %s)' % (', '.join(offered) or 'none'), field='available_versions',
                                    fix='check the release train (kueue_extension_release_train), or update the '
                                        'kueueops.aks collection')
        else:
            release_train.check_not_broken(target, 'target_version')
        if offered and target not in offered:
            same = versions.same_release(offered, target)
            raise KueueOpsError('the release train does not offer %s (it offers %s)' % (target, ', '.join(offered)),
                                field='target_version',
                                fix=('give %s, Kueue %s as the release train offers it, or latest' % (
                                    same[-1], versions.parse(target).release_text)) if same else
                                'give one of the offered versions, or latest')

        def published(minor):
            return (release_train.good(offered, minor=minor) or [None])[0]
        plan = self.plan(p['current_version'], target, published, self.connect())
        return dict(plan, changed=False)

    def plan(self, current, target, published, api_client):
        cluster, namespace = Cluster(api_client), self.p['kueue_namespace']
        return upgrade.make_plan(current, target, published, cluster, lambda: read_manager(cluster, namespace),
                                 self.inventory())
