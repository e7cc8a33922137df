# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts about Kueue releases that kueue_helm validates against.

Every per-minor record of GENERATED (in kueue_catalog_data.py, data only) was produced by
``hack/gen_kueue_catalog.py``, nothing in that file is typed by hand:

* 0.13 .. 0.19: generated from every patch tag of kubernetes-sigs/kueue
  (``--git <clone> --all-patches 0.13 ... --all-patches 0.19``); the newest
  patch seen gives the record (0.13.10, 0.14.8, 0.15.8, 0.16.9, 0.17.8,
  0.18.6, 0.19.2) and ``gate_min_patch`` lists gates that were back-ported in a
  later patch of the same minor.
* The 0.19.2 output was cross-checked byte for byte against the Go module
  download ``sigs.k8s.io/kueue@v0.19.2`` (``--src`` mode).
* 0.20 and 0.21 (``release_notes_only``): the Go module proxy serves neither, so
  ``--changelog hack/kueue_changelog.yml`` derives them (0.20 from 0.19, 0.21
  from 0.20) with what their release notes and source say; that file quotes a
  source for every fact and lists what is unconfirmed, and each record carries
  its ``source`` and ``unconfirmed``.
  0.20: CHANGELOG-0.20.md (v0.20.0 section, at kueue 144402a) for the new and
  changed gates, defaults and chart values; kube_features.go of kueue main at
  ff69552 (2026-08-22) for the removed gates (with their PRs), the gate
  dependencies and RecomputeAssignmentUponPreemptionTargetsOverlap; PR #14558
  for v1beta1 unserved but still listed (``crd_listed``); issue #15340 for the
  release candidates. Unconfirmed: the published patches 0.20.0 .. 0.20.6 and
  the broken 0.20.0 .. 0.20.5 (kueue#18411, fixed in 0.20.6), from issue 39
  only; gates the CHANGELOG names without a stage or default (off, stage
  ``unknown``); the v1beta1 Configuration no longer compiled in.
  0.21: 0.20's record with v1beta1 dropped from the CRDs (the plan of kueue
  issue #13957) and the chart values a values.schema.json of unknown release
  shows; ``prerelease_only`` (no final 0.21 and no release candidate was
  found, ``patch`` is the planned 0.21.0). Unconfirmed: all of it.

Regenerate / add a minor:  hack/gen_kueue_catalog.py --git <kueue clone> --all-patches 0.20 --write
(a minor generated from source replaces its derived record; drop its entry from hack/kueue_changelog.yml or keep
only its ``changelog`` facts).

Facts per minor:

* ``feature_gates``: name -> (default enabled, stage, locked to default, first
  version listed in Kueue's versioned spec). The effective spec is the last one
  in Kueue's ``defaultVersionedFeatureGates`` list (Kueue sets no emulation
  version, so every 0.x spec applies).
* ``frameworks``: every name registered with ``jobframework.RegisterIntegration``;
  the manager's config validation rejects any other name in
  ``integrations.frameworks``.
* ``config_api_version``: the apiVersion of the chart's default
  ``managerConfig.controllerManagerConfigYaml``.
* ``crds``: CRD name -> served versions and storage version.
* ``gate_dependencies``: gate -> gates that must be enabled with it, else the
  manager refuses to start (pkg/config/validation.go; from kueue main of
  August 2026 on, ``defaultFeatureGateDependencies`` in kube_features.go).
* ``changelog``: facts from Kueue's CHANGELOGs (hack/kueue_changelog.yml):
  config defaults that changed, configurations the manager refuses, notes.

Fields only a derived (``release_notes_only``) record has; a generated one reads
as the defaults in brackets (KueueRelease):

* ``published_patches``: final releases of the minor [``patches_scanned``].
* ``prereleases``: its release candidates [none]; ``prerelease_only``: no final
  release yet, ``patch`` is the planned .0 [False].
* ``broken_patches``: version -> {reason, fixed_in, source}: never chosen by
  ``latest``, refused as a pin [none].
* ``gates_removed``: gate -> {removed_in, source} for the gates the minor removed
  (in the record only, KueueRelease does not read it; for a generated minor:
  the gates of the minor before that it lacks).
* ``crd_listed``: versions in the CRDs' spec.versions, served or not [the
  served ones].
* ``chart_values``: [{key, change: added|moved|removed, to, text, source}] [none].
* ``unconfirmed``: what its release notes could not confirm [none].
"""

import difflib

from ansible_collections.kueueops.aks.plugins.module_utils.common import versions
from ansible_collections.kueueops.aks.plugins.module_utils.kueue.kueue_catalog_data import GENERATED

# Gates the Kubernetes feature-gate library itself understands in every binary.
BUILTIN_GATES = ("AllAlpha", "AllBeta")


class GateInfo:
    """One feature gate as a given Kueue minor defines it."""

    __slots__ = ("name", "default", "stage", "locked", "since")

    def __init__(self, name, default, stage, locked, since):
        self.name = name
        self.default = default
        self.stage = stage
        self.locked = locked
        self.since = since

    def as_dict(self):
        return {"name": self.name, "default": self.default, "stage": self.stage,
                "locked_to_default": self.locked, "since": self.since}


class KueueRelease:
    """The catalog record of one Kueue minor version."""

    def __init__(self, minor, data):
        self.minor = minor
        self.source = data["source"]
        self.newest_patch = data["patch"]
        self.patches_scanned = list(data.get("patches_scanned") or [data["patch"]])
        self.config_api_version = data["config_api_version"]
        self.config_api_versions_compiled = list(data["config_api_versions_compiled"])
        self.default_frameworks = list(data["default_frameworks"])
        self.frameworks = sorted(data["frameworks"])
        self.feature_gates = dict(
            (name, GateInfo(name, t[0], t[1], t[2], t[3])) for name, t in data["feature_gates"].items())
        self.gate_min_patch = dict(data.get("gate_min_patch") or {})
        self.framework_min_patch = dict(data.get("framework_min_patch") or {})
        self.gate_dependencies = dict((k, list(v)) for k, v in (data.get("gate_dependencies") or {}).items())
        self.crds = dict(data["crds"])
        self.crd_names = sorted(self.crds)
        self.kueue_api_served = list(data["kueue_api_served"])
        self.kueue_api_storage = data["kueue_api_storage"]
        # Facts taken from Kueue's CHANGELOG (config defaults that changed, configurations the manager refuses):
        # [{kind, name, text, ...}] (module_utils/upgrade/upgrade.py applies them to a cluster).
        self.changelog = list(data.get("changelog") or [])
        # What only release notes give (issue 39), read as is; a minor generated from source has none of it, so
        # every patch it scanned is published and good, it has no release candidate, every CRD version it lists is
        # served and nothing of it is unconfirmed.
        self.published_patches = list(data.get("published_patches", self.patches_scanned))
        self.broken_patches = dict((str(k), dict(v)) for k, v in (data.get("broken_patches") or {}).items())
        self.prerelease_only = bool(data.get("prerelease_only", False))
        self.prereleases = list(data.get("prereleases") or [])
        self.chart_values = [dict(v) for v in data.get("chart_values") or []]
        self.crd_listed = list(data.get("crd_listed", self.kueue_api_served))
        self.unconfirmed = list(data.get("unconfirmed") or [])
        self.release_notes_only = bool(data.get("release_notes_only", False))

    def gate_names(self):
        return sorted(self.feature_gates)

    def default_gates(self):
        return dict((n, g.default) for n, g in self.feature_gates.items())

    def as_dict(self):
        return {
            "minor": self.minor,
            "source": self.source,
            "newest_patch": self.newest_patch,
            "config_api_version": self.config_api_version,
            "default_frameworks": list(self.default_frameworks),
            "frameworks": list(self.frameworks),
            "feature_gates": dict((n, g.as_dict()) for n, g in sorted(self.feature_gates.items())),
            "crds": dict(self.crds),
            "kueue_api_served": list(self.kueue_api_served),
            "kueue_api_storage": self.kueue_api_storage,
        }


def parse_version(version):
    """'v0.19.2' / '0.19.2' / '0.19' -> (0, 19, 2 or None); None when unparsable."""
    parsed = versions.parse(version)
    return None if parsed is None else parsed[:3]


def minor_of(version):
    """'v0.19.2' -> '0.19'; None when the string is not a version."""
    parsed = parse_version(version)
    if parsed is None:
        return None
    return "%d.%d" % (parsed[0], parsed[1])


def known_minors():
    return sorted(GENERATED, key=versions.minor_key)


_CACHE = {}


def catalog_for(version):
    """The KueueRelease record for a version's minor, or None if unknown."""
    minor = minor_of(version)
    if minor is None or minor not in GENERATED:
        return None
    if minor not in _CACHE:
        _CACHE[minor] = KueueRelease(minor, GENERATED[minor])
    return _CACHE[minor]


def version_warning(version):
    """A warning for a version the catalog does not know, else None."""
    if catalog_for(version) is not None:
        return None
    if minor_of(version) is None:
        return ("Kueue version %r is not a version number; feature gate and integration names "
                "were not validated." % (version,))
    return ("Kueue %s is not in this collection's catalog (known: %s); feature gate and integration "
            "names were not validated and the Configuration apiVersion is taken from the chart's "
            "default values. Regenerate plugins/module_utils/kueue/kueue_catalog.py with "
            "hack/gen_kueue_catalog.py to add it." % (minor_of(version), ", ".join(known_minors())))


def _patch_of(version):
    parsed = parse_version(version)
    return None if parsed is None else parsed[2]


def _suggest(name, valid):
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.75)
    return (" Did you mean %r?" % close[0]) if close else ""


def _patch_too_old(min_patch, version):
    """True when version's patch is known and older than min_patch ('0.18.5')."""
    patch = _patch_of(version)
    if patch is None:
        return False
    return patch < parse_version(min_patch)[2]


def validate_feature_gates(version, gates):
    """Problems with a {name: bool} feature-gate dict for a Kueue version.

    An unknown version returns [] (the caller warns with version_warning()).
    """
    problems = []
    if not gates:
        return problems
    if not isinstance(gates, dict):
        return ["feature_gates must be a mapping of gate name to true/false, got %s." % type(gates).__name__]
    for name, value in gates.items():
        if not isinstance(value, bool):
            problems.append("feature gate %r must be true or false, got %r." % (name, value))
    rel = catalog_for(version)
    if rel is None:
        return problems
    valid = rel.gate_names()
    for name in sorted(gates, key=str):
        value = gates[name]
        if name in BUILTIN_GATES:
            continue
        info = rel.feature_gates.get(name)
        removed = removed_in(name, rel.minor) if info is None else None
        if removed:
            problems.append(
                "feature gate %r was removed in Kueue %s (its last minor was %s), and the Kueue %s manager exits on "
                "startup when it is set; remove it from feature_gates." % (name, removed[0], removed[1], rel.minor))
            continue
        if info is None:
            problems.append(
                "unknown feature gate %r for Kueue %s.%s Valid feature gates: %s."
                % (name, rel.minor, _suggest(str(name), valid), ", ".join(valid)))
            continue
        min_patch = rel.gate_min_patch.get(name)
        if min_patch and _patch_too_old(min_patch, version):
            problems.append(
                "feature gate %r exists only from Kueue %s; Kueue %s does not know it and its manager "
                "would exit on startup." % (name, min_patch, str(version).lstrip("v")))
        if info.locked and isinstance(value, bool) and value != info.default:
            problems.append(
                "feature gate %r is %s and locked to %s in Kueue %s; setting it to %s makes the manager "
                "exit. Remove it from feature_gates."
                % (name, info.stage, str(info.default).lower(), rel.minor, str(value).lower()))
    problems.extend(_dependency_problems(rel, gates))
    return problems


def removed_in(name, minor):
    """``(removed_in, last_minor)`` when feature gate ``name`` existed in a minor before ``minor`` and not since: the
    first minor that no longer has it, and the last one that did; None otherwise."""
    last = None
    for known in known_minors():
        if versions.minor_key(known) > versions.minor_key(minor):
            break
        if name in GENERATED[known]["feature_gates"]:
            last = known
        elif last is not None:
            return known, last
    return None


def _dependency_problems(rel, gates):
    effective = rel.default_gates()
    for name, value in gates.items():
        if name in effective and isinstance(value, bool):
            effective[name] = value
    problems = []
    for gate in sorted(rel.gate_dependencies):
        if not effective.get(gate):
            continue
        missing = [d for d in rel.gate_dependencies[gate] if not effective.get(d)]
        if not missing:
            continue
        touched = gate in gates or any(d in gates for d in missing)
        if not touched:
            continue
        how = "set %s: false as well" % gate if gate not in gates else "enable %s" % ", ".join(missing)
        problems.append(
            "feature gate %s (%s) requires %s to be enabled in Kueue %s, and the manager exits "
            "otherwise; %s." % (gate, "default on" if gate not in gates else "enabled",
                                ", ".join(missing), rel.minor, how))
    return problems


def problems_fix(version, problems):
    """The ``Fix:`` for the problems of validate_feature_gates/validate_integrations: what to change for
    each kind of problem found (an unknown name, a value that is not a boolean, a duplicate...)."""
    text = " ".join(problems)
    fixes = []
    if "was removed in Kueue" in text:
        fixes.append("remove the feature gates Kueue %s removed" % version)
    if "unknown " in text or "exists only from Kueue" in text:
        fixes.append("use names that Kueue %s knows" % version)
    if "must be true or false" in text or "must be a mapping" in text:
        fixes.append("map each feature gate name to true or false")
    if "listed twice" in text:
        fixes.append("list each integration once")
    if "must be a string" in text or "must be a list" in text:
        fixes.append("give integrations as a list of framework names")
    if "locked to" in text or "requires" in text:
        fixes.append("change the feature gates as each problem says")
    return "; ".join(fixes) or "use names and values that Kueue %s knows" % version


def validate_integrations(version, names):
    """Problems with a list of integrations.frameworks names for a Kueue version."""
    problems = []
    if names is None:
        return problems
    if not isinstance(names, (list, tuple)):
        return ["integrations must be a list of framework names, got %s." % type(names).__name__]
    seen = set()
    for name in names:
        if not isinstance(name, str):
            problems.append("integration %r must be a string." % (name,))
            continue
        if name in seen:
            problems.append("integration %r is listed twice; the Kueue manager rejects duplicates." % name)
        seen.add(name)
    rel = catalog_for(version)
    if rel is None:
        return problems
    valid = rel.frameworks
    for name in names:
        if not isinstance(name, str):
            continue
        if name not in valid:
            problems.append(
                "unknown integration framework %r for Kueue %s.%s Valid frameworks: %s."
                % (name, rel.minor, _suggest(name, valid), ", ".join(valid)))
            continue
        min_patch = rel.framework_min_patch.get(name)
        if min_patch and _patch_too_old(min_patch, version):
            problems.append("integration framework %r exists only from Kueue %s." % (name, min_patch))
    return problems
