"""yaml_docs.load_all: libyaml's parser when PyYAML has it, giving exactly what PyYAML's pure-Python SafeLoader
gives (the objects, the empty documents, the refusal of what is not YAML)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.kueueops.aks.plugins.module_utils.backup import backup
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import reader
from ansible_collections.kueueops.aks.plugins.module_utils.common import yaml_docs

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def test_the_c_parser_is_used_when_pyyaml_has_it():
    assert yaml.__with_libyaml__, "the test venv's PyYAML has libyaml (its wheels do)"
    assert yaml_docs.SAFE_LOADER is yaml.CSafeLoader


def test_same_objects_as_the_pure_python_loader_on_the_benchmark_configuration():
    text = subprocess.run([sys.executable, os.path.join(REPO, "bench", "gen_config.py"), "--fraction", "0.2"],
                          capture_output=True, text=True, check=True).stdout
    expected = list(yaml.safe_load_all(text))
    assert len([d for d in expected if d]) > 100
    assert yaml_docs.load_all(text) == expected


def test_same_objects_as_the_pure_python_loader_on_awkward_scalars_and_a_backup_file():
    objects = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                "metadata": {"name": "f%d" % i, "labels": {"k": v}, "annotations": {"note": "é ✓ \u2028 tab\there"}},
                "spec": {"nodeLabels": {"a": v}, "tolerations": [{"key": "k", "value": v, "effect": "NoSchedule"}]}}
               for i, v in enumerate(["yes", "no", "on", "0x1F", "1e3", "010", "~", "", "null", "2026-12-04", "a: b",
                                      "- x", "#c", "'q'", '"d"', "multi\nline\n", "  lead", "trail  ", "12:30"])]
    text = backup.dump_objects("ResourceFlavor", "kueue.x-k8s.io/v1beta2", objects).decode("utf-8")
    assert [d for d in yaml_docs.load_all(text) if d] == list(yaml.safe_load_all(text)) == \
        reader.sort_objects(objects)
    assert yaml_docs.load_all("---\n---\na: 1\n") == [None, {"a": 1}]


@pytest.mark.parametrize("text", ["a: [b", "a: b: c", "\tx: 1", "- a\nb: c"])
def test_what_is_not_yaml_is_a_yaml_error(text):
    with pytest.raises(yaml.YAMLError):
        list(yaml.safe_load_all(text))
    with pytest.raises(yaml.YAMLError):
        yaml_docs.load_all(text)
