# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/azure/azure_sdk.py: the Azure SDK imported on first use (a missing SDK reported:
test_azure_auth.test_require_azure_identity)."""

import json
import os
import subprocess
import sys
import textwrap

from ansible_collections.kueueops.aks.plugins.module_utils.azure import azure_sdk
from ansible_collections.kueueops.aks.plugins.module_utils.azure.arm import AZURE_MGMT_MODULES

# .../collections/ansible_collections/kueueops/aks/plugins/module_utils/azure/azure_sdk.py -> .../collections
COLLECTIONS = os.path.abspath(os.path.join(os.path.dirname(azure_sdk.__file__), *[os.pardir] * 6))


def test_azure_error_stands_in_until_azure_core_is_imported(monkeypatch):
    from azure.core.exceptions import AzureError, HttpResponseError
    assert azure_sdk.azure_error('AzureError') is AzureError
    assert azure_sdk.azure_error('HttpResponseError') is HttpResponseError
    monkeypatch.delitem(sys.modules, 'azure.core.exceptions')
    stand_in = azure_sdk.azure_error('AzureError')
    assert stand_in is not AzureError and issubclass(stand_in, Exception)
    assert not isinstance(AzureError('x'), stand_in)  # catches nothing but what cannot exist yet


def test_the_kubernetes_only_modules_do_not_import_the_azure_sdk():
    """kueue_capacity_info without resource_group/cluster_name, and every module that imports extension.py, load no
    Azure SDK (0.29 CPU s of a kueue_capacity_info run, measured); the ARM path imports it when it connects."""
    code = textwrap.dedent("""
    import json, sys
    from ansible_collections.kueueops.aks.plugins.modules import kueue_capacity_info, kueue_extension, kueue_drift_info
    before = sorted(m for m in sys.modules if m == 'azure' or m.startswith('azure.'))
    from ansible_collections.kueueops.aks.plugins.module_utils.azure import arm
    error = arm.azure_mgmt_import_error()
    after = [m for m in arm.AZURE_MGMT_MODULES if m in sys.modules]
    print(json.dumps({'before': before, 'error': error, 'after': after}))
    """)
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {'before': [], 'error': None, 'after': list(AZURE_MGMT_MODULES)}
