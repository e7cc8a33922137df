"""hack/gen_kueue_catalog.py --changelog (issue 39): a minor the Go module proxy does not serve is derived from
another record plus what hack/kueue_changelog.yml says of it, and carries the fields only release notes give
(published and broken patches, release candidates, removed gates, CRD versions listed, chart values, what is
unconfirmed). Built from a small synthetic record here; the committed data is checked against the committed YAML."""
import copy
import importlib.util
import os

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SPEC = importlib.util.spec_from_file_location("gen_kueue_catalog", os.path.join(ROOT, "hack", "gen_kueue_catalog.py"))
gen = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gen)

BASE = {
    "source": "generated from git tag v0.9.2",
    "patch": "0.9.2",
    "config_api_version": "config.kueue.x-k8s.io/v1beta2",
    "config_api_versions_compiled": ["v1beta1", "v1beta2"],
    "default_frameworks": ["batch/job"],
    "frameworks": ["batch/job", "pod"],
    "feature_gates": {"Old": (True, "beta", False, "0.5"), "Kept": (False, "alpha", False, "0.8"),
                      "Dep": (True, "beta", False, "0.9")},
    "gate_dependencies": {"Old": ["Kept"], "Dep": ["Kept"]},
    "crds": {"workloads.kueue.x-k8s.io": {"served": ["v1beta1", "v1beta2"], "storage": "v1beta2"}},
    "kueue_api_served": ["v1beta1", "v1beta2"],
    "kueue_api_storage": "v1beta2",
    "patches_scanned": ["0.9.0", "0.9.1", "0.9.2"],
    "gate_min_patch": {},
    "framework_min_patch": {},
}

FACTS = yaml.safe_load("""
'0.10':
  source: >-
    CHANGELOG-0.10.md
    at abc
  derive_from: '0.9'
  patch: 0.10.3
  published_patches: [0.10.0, 0.10.1, 0.10.2, 0.10.3]
  prereleases: [0.10.0-rc.0]
  broken_patches:
    0.10.1: &why
      reason: >-
        its CRDs
        break things (#1)
      fixed_in: 0.10.2
      source: issue 1
    0.10.0: *why
  kueue_api_served: [v1beta2]
  kueue_api_storage: v1beta2
  crd_served: [v1beta2]
  crd_listed: [v1beta1, v1beta2]
  gates_removed:
    Old: "#10 (2026-01-01)"
  gates:
    New: [true, beta, false]
    Kept: [true, beta, false]
  chart_values:
    - key: a.b
      change: moved
      to: c.d
      text: >-
        moved
        there
      source: CHANGELOG
  unconfirmed: [published_patches from one issue]
  changelog:
    - kind: note
      name: n
      severity: action
      text: >-
        read
        this
      source: CHANGELOG
'0.11':
  source: plans only
  derive_from: '0.10'
  patch: 0.11.0
  prerelease_only: true
  published_patches: []
  kueue_api_served: [v1beta2]
  kueue_api_storage: v1beta2
  crd_served: [v1beta2]
  gates_removed: [Kept]
""")


def derive(facts=FACTS):
    return gen.apply_changelog({"0.9": copy.deepcopy(BASE)}, copy.deepcopy(facts))


def test_derived_record_carries_the_release_note_fields():
    rec = derive()["0.10"]
    assert rec["source"] == "CHANGELOG-0.10.md at abc" and rec["patch"] == "0.10.3"
    assert rec["published_patches"] == ["0.10.0", "0.10.1", "0.10.2", "0.10.3"]
    assert rec["prereleases"] == ["0.10.0-rc.0"] and rec["prerelease_only"] is False
    # One entry per broken version, in version order, its texts folded to one line.
    assert list(rec["broken_patches"]) == ["0.10.0", "0.10.1"]
    assert rec["broken_patches"]["0.10.0"] == {"reason": "its CRDs break things (#1)", "fixed_in": "0.10.2",
                                               "source": "issue 1"}
    assert rec["broken_patches"]["0.10.0"] is not rec["broken_patches"]["0.10.1"]  # no YAML anchor shared
    assert rec["gates_removed"] == {"Old": {"removed_in": "0.10", "source": "#10 (2026-01-01)"}}
    assert rec["crd_listed"] == ["v1beta1", "v1beta2"] and rec["kueue_api_served"] == ["v1beta2"]
    assert rec["crds"] == {"workloads.kueue.x-k8s.io": {"served": ["v1beta2"], "storage": "v1beta2"}}
    assert rec["chart_values"] == [{"key": "a.b", "change": "moved", "to": "c.d", "text": "moved there",
                                    "source": "CHANGELOG"}]
    assert rec["unconfirmed"] == ["published_patches from one issue"]
    assert rec["release_notes_only"] is True
    assert rec["changelog"] == [{"kind": "note", "name": "n", "severity": "action", "text": "read this",
                                 "source": "CHANGELOG"}]


def test_derived_gates_drop_the_removed_keep_the_rest_and_their_first_version():
    rec = derive()["0.10"]
    assert rec["feature_gates"] == {"Dep": (True, "beta", False, "0.9"), "Kept": (True, "beta", False, "0.8"),
                                    "New": (True, "beta", False, "0.10")}
    assert rec["gate_dependencies"] == {"Dep": ["Kept"]}  # Old's went with it


def test_a_minor_derives_from_one_derived_before_it_and_takes_defaults():
    records = derive()
    rec = records["0.11"]
    assert rec["prerelease_only"] is True and rec["published_patches"] == [] and rec["prereleases"] == []
    assert rec["broken_patches"] == {} and rec["chart_values"] == [] and rec["unconfirmed"] == []
    assert rec["crd_listed"] == ["v1beta2"]  # no crd_listed: the served versions
    # A list of names is accepted for gates_removed; the release that removed them is the entry's minor.
    assert rec["gates_removed"] == {"Kept": {"removed_in": "0.11"}}
    assert sorted(rec["feature_gates"]) == ["Dep", "New"] and rec["gate_dependencies"] == {}
    assert "changelog" not in rec and rec["release_notes_only"] is True
    # Nothing of 0.10's own release notes leaks into 0.11.
    assert records["0.10"]["broken_patches"] and not rec["broken_patches"]


def test_published_patches_default_to_the_patch():
    facts = copy.deepcopy(FACTS)
    del facts["0.10"]["published_patches"]
    assert derive(facts)["0.10"]["published_patches"] == ["0.10.3"]


def test_generated_minors_are_left_as_they_are():
    records = derive()
    assert records["0.9"] == BASE
    assert "release_notes_only" not in records["0.9"] and "published_patches" not in records["0.9"]


def test_the_renderer_writes_the_new_fields_back_as_they_were():
    records = derive()
    ns = {}
    exec(gen.render(records).split("\n", 1)[1], ns)  # skip the BEGIN marker line
    assert ns["GENERATED"] == records


def test_committed_data_is_the_committed_changelog_applied():
    """kueue_catalog_data.py is what `--changelog hack/kueue_changelog.yml` writes: applying the YAML again to
    the committed records changes nothing (the generated minors stay, the derived ones come out the same)."""
    _text, _start, _end, records = gen.load_existing()
    with open(os.path.join(ROOT, "hack", "kueue_changelog.yml"), encoding="utf-8") as handle:
        facts = yaml.safe_load(handle)
    assert gen.apply_changelog(copy.deepcopy(records), facts) == records
    derived = [m for m, e in facts.items() if "derive_from" in e]
    assert derived
    for minor in records:
        assert records[minor].get("release_notes_only", False) is (minor in derived), minor
