# Copyright: (c) 2026, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one import of the kubernetes Python client for every module of the collection.

Every other file takes ``k8s`` (``kubernetes.client``), ``k8s_config``, ``k8s_watch``, ``ApiException`` and
``ConfigException`` from here, so that the client is imported one way.

kubernetes < 37 imports all of its API and model modules (about 900) in ``kubernetes/__init__.py`` and
``kubernetes/client/__init__.py``: 0.65 s of CPU in every module process, while a module of this collection uses
a handful of them. Before the import, ``_lazy_packages`` puts the four packages ``kubernetes``,
``kubernetes.client``, ``kubernetes.client.api`` and ``kubernetes.client.models`` in ``sys.modules`` as lazy
packages. A lazy package has the
real package's path and file, so its submodules are imported from the installed client, unchanged. It reads the
``from kubernetes.client.x import Name`` lines of the real ``__init__.py``. On the first access to ``Name`` it
imports ``kubernetes.client.x``. A name that no such line gives (a client release that changed its layout) makes it
run the real ``__init__.py`` in that same module object, which is the eager import a plain ``import kubernetes``
would have done. kubernetes >= 37 is already lazy in this way (its ``__init__`` has ``_exports``): it is imported as
it is, and so is a client that another import loaded first. The import and its figures are measured in
bench/README.md (module import cost).
"""

import importlib
import importlib.util
import os
import re
import sys
import traceback
import types

__all__ = ['ApiException', 'ConfigException', 'HAS_KUBERNETES', 'KUBERNETES_IMPORT_ERROR', 'k8s', 'k8s_config',
           'k8s_watch']

_FROM_LINE = re.compile(r'^\s*from ([\w.]+) import (\w+)(?: as (\w+))?\s*$', re.M)
_LAZY = ('kubernetes', 'kubernetes.client', 'kubernetes.client.api', 'kubernetes.client.models')


def _lazy_package(name, init_file, source):
    """A module object for the package ``name`` (``source``: its ``__init__.py``, read from ``init_file``) whose names
    are imported on first access (see the module doc)."""
    table = {}
    for origin, attr, alias in _FROM_LINE.findall(source):
        if origin.startswith(name + '.'):  # the package's own submodules, as its __init__ imports them
            table[alias or attr] = (origin, attr)
    module = types.ModuleType(name)
    module.__file__ = init_file
    module.__path__ = [os.path.dirname(init_file)]
    module.__package__ = name
    version = re.search(r'^__version__ = ["\']([^"\']+)["\']', source, re.M)
    if version:
        module.__version__ = version.group(1)
    loaded = []

    def __getattr__(attr):
        if attr.startswith('__'):
            raise AttributeError(attr)
        if attr in table:
            origin, real = table[attr]
            value = getattr(importlib.import_module(origin), real)
        else:
            try:
                value = importlib.import_module(name + '.' + attr)
            except ImportError:
                if loaded:
                    raise AttributeError('module %r has no attribute %r' % (name, attr))
                loaded.append(True)
                exec(compile(source, init_file, 'exec'), module.__dict__)  # pylint: disable=exec-used
                if attr not in module.__dict__:
                    raise AttributeError('module %r has no attribute %r' % (name, attr))
                return module.__dict__[attr]
        setattr(module, attr, value)
        return value

    module.__getattr__ = __getattr__
    return module


def _lazy_packages():
    """Install the lazy packages when kubernetes is installed, not yet imported, and eager (< 37)."""
    if any(name in sys.modules for name in _LAZY):
        return
    spec = importlib.util.find_spec('kubernetes')
    if spec is None or not spec.submodule_search_locations:
        return
    root = list(spec.submodule_search_locations)[0]
    sources = {}
    for name in _LAZY:
        init_file = os.path.join(root, *(name.split('.')[1:] + ['__init__.py']))
        with open(init_file) as handle:
            sources[name] = (init_file, handle.read())
    if '_exports' in sources['kubernetes.client'][1]:
        return  # kubernetes >= 37 imports its APIs and models on first access already
    for name in _LAZY:
        module = sys.modules[name] = _lazy_package(name, *sources[name])
        parent, _dot, child = name.rpartition('.')
        if parent:
            setattr(sys.modules[parent], child, module)


try:
    _lazy_packages()
except Exception:  # pylint: disable=broad-except  # any surprise: the plain eager import below
    for _name in _LAZY:
        sys.modules.pop(_name, None)

try:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config
    from kubernetes import watch as k8s_watch
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException
except ImportError:
    k8s = None
    k8s_config = None
    k8s_watch = None

    class ApiException(Exception):
        """Stand-in when the client is missing (require_kubernetes then fails the module first)."""

    class ConfigException(Exception):
        """Stand-in when the client is missing (require_kubernetes then fails the module first)."""

    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
