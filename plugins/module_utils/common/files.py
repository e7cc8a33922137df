# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Files the collection writes on the controller that hold secrets or state: written atomically (a temporary file
in the same folder, fsync, rename) and created 0600 whatever the umask. Used for kueue_extension's
``kubeconfig_dest`` and kueue_gitops' state file. Pure: no Ansible."""

import os
import tempfile

from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError


def discard(remove, path):
    """Best-effort clean-up after a failed write: ``remove(path)`` (``os.unlink``, ``os.rmdir``), an OSError
    ignored so that the error of the write is the one reported."""
    try:
        remove(path)
    except OSError:
        pass


def file_matches(path, data, mode=0o600):
    """Whether ``path`` holds exactly ``data`` (bytes) with permissions ``mode``."""
    try:
        with open(path, 'rb') as handle:
            same = handle.read() == data
        return same and (os.stat(path).st_mode & 0o777) == mode
    except OSError:
        return False


def write_private_file(path, data, field, folder_fix='create the folder first, or choose another path', mode=0o600):
    """Write ``data`` (bytes) to ``path`` atomically, created with ``mode`` whatever the umask; a missing folder or
    a failed write is a ``KueueOpsError`` of ``field``."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise KueueOpsError('folder %s does not exist' % folder, field=field, fix=folder_fix)
    fd, tmp = tempfile.mkstemp(prefix='.kueueops-', dir=folder)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except OSError as exc:
        discard(os.unlink, tmp)
        raise KueueOpsError('cannot write %s: %s' % (path, exc.strerror or exc), field=field,
                            fix='choose a writable path on the controller')
