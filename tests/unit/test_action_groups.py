"""Action groups by option set (issue 13, item 2): meta/runtime.yml's groups hold only modules that accept
every option their group is documented for. `kueue` = every module, which all extend the kube_auth fragment
(the Kubernetes options); `azure` = exactly the modules that extend azure_auth and azure_auth.connection.
The modules' own argument specs are compared with the fragments in test_doc_fragments.py and by sanity's
validate-modules; tests/integration/test_auth_options.py sets every option through the groups on a cluster."""
import os

import yaml

from tests.integration.ansible import module_docs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(REPO, "plugins", "modules")) if f.endswith(".py"))


def fragments(module):
    with open(os.path.join(REPO, "plugins", "modules", module + ".py")) as handle:
        text = handle.read()
    doc = text.split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0]
    return yaml.safe_load(doc).get("extends_documentation_fragment") or []


def test_groups_hold_only_modules_that_take_their_options():
    with open(os.path.join(REPO, "meta", "runtime.yml")) as handle:
        groups = yaml.safe_load(handle)["action_groups"]
    assert set(groups) == {"kueue", "azure"}
    assert sorted(groups["kueue"]) == MODULES
    assert all("kueueops.aks.kube_auth" in fragments(m) for m in groups["kueue"])
    azure = sorted(m for m in MODULES if "kueueops.aks.azure_auth" in fragments(m))
    assert azure == sorted(groups["azure"]) == ["kueue_capacity_info", "kueue_extension"]
    assert all("kueueops.aks.azure_auth.connection" in fragments(m) for m in azure)


def test_docs_name_the_group_of_each_option_set():
    from ansible_collections.kueueops.aks.plugins.doc_fragments import azure_auth, kube_auth

    assert "group/kueueops.aks.kueue" in kube_auth.ModuleDocFragment.DOCUMENTATION
    azure_doc = azure_auth.ModuleDocFragment.DOCUMENTATION
    assert "group/kueueops.aks.azure" in azure_doc
    # The Azure options are not said to go in the kueue group (that is what failed before).
    notes = yaml.safe_load(azure_doc)["notes"]
    assert not [n for n in notes if "group/kueueops.aks.kueue" in n and "holds the Kubernetes options" not in n]
    with open(os.path.join(REPO, "meta", "runtime.yml")) as handle:
        comments = handle.read()
    assert "group/kueueops.aks.azure: {subscription_id" in comments
    assert "group/kueueops.aks.kueue: {subscription_id" not in comments


def test_every_module_documents_its_attributes():
    """check_mode, diff_mode, platform and action_group for every module, from the one attributes fragment; the
    action groups documented are those of meta/runtime.yml; a module that claims check mode declares
    supports_check_mode, one that claims diff mode reads module._diff (the integration test
    test_auth_options.py runs both)."""
    with open(os.path.join(REPO, "meta", "runtime.yml")) as handle:
        groups = yaml.safe_load(handle)["action_groups"]
    docs = module_docs(*MODULES)
    assert sorted(docs) == MODULES
    for module in MODULES:
        with open(os.path.join(REPO, "plugins", "modules", module + ".py")) as handle:
            text = handle.read()
        assert "kueueops.aks.attributes" in fragments(module), module
        attrs = docs[module]["attributes"]
        assert set(attrs) == {"check_mode", "diff_mode", "platform", "action_group"}, module
        assert all(attr.get("description") for attr in attrs.values()), module
        assert attrs["platform"]["platforms"] == "all", module
        assert sorted(attrs["action_group"]["membership"]) == sorted(
            "kueueops.aks." + group for group, members in groups.items() if module in members), module
        assert attrs["check_mode"]["support"] in ("full", "partial", "none"), module
        assert attrs["diff_mode"]["support"] in ("full", "partial", "none", "N/A"), module
        assert ("supports_check_mode=True" in text) == (attrs["check_mode"]["support"] != "none"), module
        if attrs["diff_mode"]["support"] in ("full", "partial"):
            assert "_diff" in text or "diff=module._diff" in text, module
        # The Python libraries a module needs are listed once (the fragments list the auth libraries).
        names = [r.split()[0].lower() for r in docs[module].get("requirements") or []]
        assert len(names) == len(set(names)), (module, names)
