# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Kueue release an install takes (issue 39): the one policy of the release train, for the Helm chart
(kueue_helm) and the managed extension (kueue_extension), and the upgrade plan's target (kueue_upgrade_plan).

The rules, on version texts (a chart ``0.19.2`` or the extension's ``0.19.2-aks.0.4.4``) and the catalog
(kueue_catalog: each minor's broken patches, whether it is known from its release notes only):

* **An installed Kueue never crosses a minor by accident.** ``latest`` on a cluster where Kueue is installed is the
  newest good patch of the installed minor; a newer minor that is published is reported (``newer_minor_notice``)
  with the command that crosses it, ``playbooks/upgrade.yml``. An exact version of another minor is refused before
  anything is written (``check_minor``) unless the caller allows it (``allow_minor_change``: the upgrade role's
  hops, after its plan and its verified backup).
* **A fresh cluster** gets the newest good patch of the newest minor the catalog knows; a minor newer than the
  catalog is never chosen by ``latest`` (what upgrading to it requires is unknown), and one known only from its
  release notes is said so (``release_notes_notice``).
* **A known-broken patch** (the catalog's ``broken_patches``: 0.20.0 to 0.20.5) is never chosen and refused when
  pinned, naming why and the first good patch (``check_not_broken``).

Pure logic: nothing here reads a cluster, a registry or ARM.
"""

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog as catalog
from ansible_collections.kueueops.aks.plugins.module_utils.common import versions
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError

UPGRADE_PLAYBOOK = 'playbooks/upgrade.yml'


def _parse(version):
    return versions.parse(version, patch=True)


# The catalog's own reader of a version's minor ('0.19' of 0.19.2 or 0.19.2-aks.0.4.4; None when not a version).
minor_of = catalog.minor_of


def is_prerelease(version):
    """A chart pre-release (``0.21.0-rc.1``); the extension's AKS packaging (``-aks.0.4.4``) is not one."""
    parsed = _parse(version)
    return bool(parsed and parsed.separator == '-' and not parsed.suffix.startswith('aks.'))


def broken(version):
    """``(reason, fixed_in)`` when the catalog knows Kueue ``version`` (any form) as broken, else None."""
    parsed = _parse(version)
    rec = catalog.catalog_for(version) if parsed else None
    if rec is None:
        return None
    entry = rec.broken_patches.get(parsed.release_text)
    if not entry:
        return None
    return entry.get('reason') or 'known to be broken', entry.get('fixed_in')


def broken_releases(minor):
    """The broken Kueue releases of ``minor`` ('0.20'), oldest first (what helm's range excludes)."""
    rec = catalog.catalog_for(minor)
    if rec is None:
        return []
    return sorted(rec.broken_patches, key=lambda v: _parse(v).core)


def check_not_broken(version, field):
    """Refuse a pinned ``version`` the catalog knows as broken, naming why and the first good patch."""
    found = broken(version)
    if found is None:
        return
    reason, fixed_in = found
    release = _parse(version).release_text
    raise KueueOpsError('Kueue %s is known to be broken: %s' % (release, reason.rstrip('.')), field=field,
                        fix=('pin %s or a later patch of %s, or use latest (it never picks a broken patch)'
                             % (fixed_in, minor_of(version))) if fixed_in else
                        'pin a patch of another release, or use latest (it never picks a broken patch)')


def upgrade_pointer(target=None, variable='kueue_version'):
    """The command that crosses a minor, with its plan first."""
    extra = ' -e %s=%s' % (variable, target) if target else ''
    return ('ansible-playbook -i INVENTORY %s%s --check prints the plan (hops, verified backup, what each crossed '
            'minor requires of this cluster); the same command without --check runs it' % (UPGRADE_PLAYBOOK, extra))


def check_minor(installed, wanted, field, variable='kueue_version'):
    """Refuse an exact ``wanted`` version of another minor than the ``installed`` one (None: a fresh cluster)."""
    if not installed or minor_of(installed) is None or minor_of(wanted) is None:
        return
    if minor_of(installed) == minor_of(wanted):
        return
    direction = 'upgrade' if _parse(wanted).core > _parse(installed).core else 'downgrade'
    raise KueueOpsError(
        'Kueue %s is installed, and %s would %s it to another minor (%s -> %s); an install never crosses a minor: '
        'only %s does, after a plan and a verified backup'
        % (installed, wanted, direction, minor_of(installed), minor_of(wanted), UPGRADE_PLAYBOOK),
        field=field,
        fix='keep %s on %s (latest stays on the installed minor, or pin a %s.x patch), or cross the minor with %s'
            % (field, minor_of(installed), minor_of(installed), upgrade_pointer(wanted, variable)))


def good(candidates, minor=None):
    """The candidates that are versions, not pre-releases and not known-broken (of ``minor`` when given), newest
    first."""
    out = [c for c in candidates if _parse(c) is not None and not is_prerelease(c) and broken(c) is None
           and (minor is None or minor_of(c) == minor)]
    return sorted(out, key=lambda v: _parse(v).core, reverse=True)


def newest_known(candidates):
    """The newest good candidate of the newest minor the catalog knows (a fresh install's ``latest``), or None."""
    known = set(catalog.known_minors())
    return next((c for c in good(candidates) if minor_of(c) in known), None)


def known_minors_newest_first():
    """The catalog's minors, newest first."""
    return list(reversed(catalog.known_minors()))  # known_minors() is oldest first


def is_newer_minor(version, than):
    """Whether ``version``'s minor ('0.20', or any version of it) is newer than ``than``'s."""
    mine, theirs = minor_of(version), minor_of(than)
    return bool(mine and theirs) and versions.minor_key(mine) > versions.minor_key(theirs)


def newer_minor_notice(installed, newest, variable='kueue_version'):
    """The warning that a newer minor than the installed one is published, or None."""
    if not newest or not installed or not is_newer_minor(newest, installed):
        return None
    return ('Kueue %s is published, a newer minor than the installed %s: this run stays on %s, as every install '
            'does. To cross the minor: %s.' % (newest, installed, minor_of(installed),
                                               upgrade_pointer(None, variable)))


def unknown_minor_notice(newest, chosen):
    """The warning that ``latest`` skipped a published minor the catalog does not know, or None."""
    if not newest or minor_of(newest) in catalog.known_minors():
        return None
    return ('Kueue %s is published, but this collection\'s catalog does not know %s (it knows up to %s), so latest '
            'installs %s; pin it only once this collection knows it, or update the kueueops.aks collection'
            % (newest, minor_of(newest), catalog.known_minors()[-1], chosen or 'nothing'))


def release_notes_notice(version):
    """The warning for a version whose minor the catalog knows from its release notes only, or None."""
    rec = catalog.catalog_for(version) if _parse(version) else None
    if rec is None or not rec.release_notes_only:
        return None
    return ('Kueue %s is known to this collection from its release notes, CHANGELOG and chart only: its gates, '
            'integrations and Configuration were checked against them, but it was never run on the collection\'s '
            'test control plane' % minor_of(version))


def stored_versions_error(crds, target, field):
    """A KueueOpsError when a Kueue CRD still records objects stored at an API version that Kueue ``target`` does not
    serve (``crds``: storage_migration.crd_state of each), else None: the hop would leave them unreadable, and a
    release that drops the version from its CRDs (0.21) is refused by the API server while storedVersions names it."""
    rec = catalog.catalog_for(target)
    if rec is None:
        return None
    served = set(rec.kueue_api_served)
    stale = [(c['name'], sorted(set(c['stored_versions']) - served)) for c in crds]
    stale = [(name, versions_) for name, versions_ in stale if versions_]
    if not stale:
        return None
    old = sorted(set(v for _name, vs in stale for v in vs))
    return KueueOpsError(
        'the Kueue CRDs still record objects stored as kueue.x-k8s.io/%s (status.storedVersions of %s), which Kueue '
        '%s does not serve: the hop would leave those objects unreadable' % (
            ', '.join(old), ', '.join(name for name, _v in stale), minor_of(target)), field=field,
        fix='rewrite every Kueue object at %s and trim storedVersions first - %s does it before its first hop (its '
            'plan says "first: storage migration"), or run kueueops.aks.kueue_storage_migration at the installed '
            'version' % (rec.kueue_api_storage, UPGRADE_PLAYBOOK))
