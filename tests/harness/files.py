"""Files the harness and the test runs keep up to date: written only when their content differs, atomically."""
from __future__ import annotations

import os


def write_if_changed(path: str, data: bytes, mode: int = 0o600) -> bool:
    """Make ``path`` hold ``data``: left alone when it already does, else written to a temporary file of this process
    (``mode``) and renamed over it, so a reader never sees half a file. True when it was written."""
    try:
        with open(path, "rb") as handle:
            if handle.read() == data:
                return False
    except OSError:
        pass
    tmp = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)
    return True
