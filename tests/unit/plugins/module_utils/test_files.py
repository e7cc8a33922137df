# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/common/files.py: private files written atomically."""

import os
import stat

import pytest

from ansible_collections.kueueops.aks.plugins.module_utils.common import files as x
from ansible_collections.kueueops.aks.plugins.module_utils.common.errors import KueueOpsError


def test_private_file_is_0600_and_atomic(tmp_path):
    old = os.umask(0)
    try:
        path = str(tmp_path / 'kubeconfig')
        assert not x.file_matches(path, b'a')
        x.write_private_file(path, b'apiVersion: v1\n', 'kubeconfig_dest')
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert x.file_matches(path, b'apiVersion: v1\n') and not x.file_matches(path, b'other')
        os.chmod(path, 0o644)
        assert not x.file_matches(path, b'apiVersion: v1\n')
        x.write_private_file(path, b'new', 'kubeconfig_dest')
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and open(path, 'rb').read() == b'new'
        assert sorted(os.listdir(str(tmp_path))) == ['kubeconfig']
    finally:
        os.umask(old)
    with pytest.raises(KueueOpsError) as info:
        x.write_private_file(str(tmp_path / 'missing' / 'kc'), b'x', 'kubeconfig_dest')
    assert info.value.field == 'kubeconfig_dest'


def test_a_failed_write_names_the_field_and_leaves_nothing(tmp_path):
    folder = tmp_path / 'ro'
    folder.mkdir()
    target = folder / 'gitops.json'
    os.mkdir(str(target))  # a folder where the file goes: the rename fails
    with pytest.raises(KueueOpsError) as info:
        x.write_private_file(str(target), b'{}', 'state_file')
    assert info.value.field == 'state_file' and 'cannot write' in info.value.message()
    assert sorted(os.listdir(str(folder))) == ['gitops.json']  # no temporary file left


def test_discard_removes_what_is_there_and_ignores_what_is_not(tmp_path):
    left = tmp_path / 'left'
    left.write_bytes(b'x')
    x.discard(os.unlink, str(left))
    assert not left.exists()
    x.discard(os.unlink, str(left))  # gone already: no error
    folder = tmp_path / 'full'
    folder.mkdir()
    (folder / 'f').write_bytes(b'x')
    x.discard(os.rmdir, str(folder))  # not empty: left as it is, no error
    assert folder.is_dir()
