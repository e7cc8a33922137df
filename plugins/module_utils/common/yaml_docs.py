# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Reading YAML documents in bulk (a ``src`` file of ``kueue_queues``, a backup's files, a Helm release's manifest):
libyaml's parser through PyYAML's ``CSafeLoader`` when PyYAML was built with it (its wheels are), else PyYAML's
pure-Python ``SafeLoader``. Both build the objects with the same ``SafeConstructor``, so the result is the same;
the C parser reads the 10,680 objects of bench/gen_config.py --scale 10 (2.6 MB) in about 0.8 CPU s against 8.0.
Only reading: a backup is written by PyYAML's own emitter (``backup.dump_objects``), whose bytes the backup format
keeps the same for the same objects. Also the one import of PyYAML for every module_utils file (``yaml``,
``HAS_YAML``). Pure: no Ansible."""

try:
    import yaml
except ImportError:  # pragma: no cover - the module reports the missing library
    yaml = None
    SAFE_LOADER = None
else:
    SAFE_LOADER = getattr(yaml, 'CSafeLoader', None) or yaml.SafeLoader
# The collection's one import of PyYAML: every module_utils file takes ``yaml`` (None without PyYAML, which
# ansible-core itself requires) and ``HAS_YAML`` from here.
HAS_YAML = yaml is not None


def load_all(stream):
    """Every document of ``stream`` (text, or a file opened as text), empty ones as None; ``yaml.YAMLError`` when
    it is not YAML."""
    return list(yaml.load_all(stream, Loader=SAFE_LOADER))
