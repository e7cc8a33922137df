# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one import of the Azure SDK for every module of the collection, as kube_import.py is for the kubernetes
client: ``azure_module(name)`` imports an SDK module on first use, ``azure_error(name)`` names an azure-core exception
class without importing azure-core. Nothing of Ansible: extension.py's pure logic and azure_auth.py both use it.
"""

import importlib
import sys
import traceback

# The Azure SDK is imported when a module first needs it, not with the module: kueue_capacity_info without an AKS
# cluster (every configure_queues run) and the other Kubernetes-only paths never load it (0.29 CPU s of a 0.78 s
# kueue_capacity_info run, measured: docs/dev/ci-time.md).
_SDK_IMPORT_ERRORS = {}


class _NotLoaded(Exception):
    """Stands for an azure-core exception class while azure-core is not imported: none of its exceptions exists yet."""


def azure_module(name):
    """The Azure SDK module ``name`` (``azure.identity``, ``azure.mgmt.containerservice``...), imported on the first
    call; None when it cannot be imported (``azure_import_error(name)`` has the traceback)."""
    if name not in sys.modules and name not in _SDK_IMPORT_ERRORS:
        try:
            importlib.import_module(name)
        except ImportError:
            _SDK_IMPORT_ERRORS[name] = traceback.format_exc()
    return sys.modules.get(name)


def azure_import_error(name):
    """The traceback of the failed import of ``name`` (after ``azure_module(name)`` returned None), else None."""
    return _SDK_IMPORT_ERRORS.get(name)


def azure_error(name):
    """The azure-core exception class ``name`` (``AzureError``, ``HttpResponseError``...) for ``except`` and
    ``isinstance``; without importing azure-core: until something imported it, no such exception can have been
    raised, and a class nothing raises stands for it."""
    module = sys.modules.get('azure.core.exceptions')
    return getattr(module, name) if module is not None else _NotLoaded
