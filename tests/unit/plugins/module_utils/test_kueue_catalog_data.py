# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/kueue/kueue_catalog_data.py: data only, exactly what hack/gen_kueue_catalog.py
writes (what the records mean is tested with the logic, in test_kueue_catalog.py)."""

import importlib.util
import os

from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog as cat
from ansible_collections.kueueops.aks.plugins.module_utils.kueue import kueue_catalog_data as data

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
GEN = os.path.join(ROOT, "hack", "gen_kueue_catalog.py")


def test_the_data_file_is_what_the_generator_writes():
    """kueue_catalog_data.py holds the generated records and nothing else (issue 14, item 7): re-rendering what it
    holds with the generator's own renderer gives the file back, byte for byte; the logic lives in kueue_catalog.py."""
    spec = importlib.util.spec_from_file_location("gen_kueue_catalog", GEN)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text, start, end, records = gen.load_existing()
    assert records == data.GENERATED and cat.GENERATED is data.GENERATED
    assert text[start:end + len(gen.END)] == gen.render(records)
    # Outside the markers: the licence header and the docstring only, no code.
    outside = text[:start] + text[end + len(gen.END):]
    assert "def " not in outside and "import" not in outside and "class " not in outside
    # The logic file holds no generated record.
    with open(cat.__file__.replace(".pyc", ".py"), encoding="utf-8") as handle:
        logic = handle.read()
    assert gen.BEGIN not in logic and "'feature_gates':" not in logic
