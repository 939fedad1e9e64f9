"""_files: atomic writes on a real temporary directory, and names of ids without a name."""

from __future__ import annotations

import os
import pwd

import pytest

from ansible_collections.hpclab.cluster.plugins.module_utils import _files


def test_write_atomically_replaces_with_owner_and_mode_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "slurm.conf"
    path.write_text("old\n")
    _files.write_atomically(str(path), b"new\n", os.getuid(), os.getgid(), 0o640)
    assert path.read_bytes() == b"new\n" and path.stat().st_mode & 0o7777 == 0o640
    assert os.listdir(tmp_path) == ["slurm.conf"]


def test_write_atomically_removes_its_temporary_file_when_it_fails(tmp_path, monkeypatch):
    def refuse(*args):
        raise PermissionError("chown refused")

    monkeypatch.setattr(_files.os, "chown", refuse)
    with pytest.raises(PermissionError):
        _files.write_atomically(str(tmp_path / "a"), b"x", 0, 0, 0o644)
    assert os.listdir(tmp_path) == []


def test_read_file_gives_stat_and_content_or_none(tmp_path):
    (tmp_path / "a").write_bytes(b"abc")
    st, content = _files.read_file(str(tmp_path / "a"))
    assert content == b"abc" and st.st_size == 3
    assert _files.read_file(str(tmp_path / "missing")) is None


def test_id_name_falls_back_to_the_number():
    assert _files.id_name(pwd.getpwuid, os.getuid()) == pwd.getpwuid(os.getuid()).pw_name
    assert _files.id_name(pwd.getpwuid, 2**31 - 7) == str(2**31 - 7)
