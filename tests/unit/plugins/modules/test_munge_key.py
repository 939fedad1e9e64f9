"""The munge_key module's glue on a real temporary directory: check mode, diff, refusal, write."""

from __future__ import annotations

import base64
import grp
import hashlib
import json
import os
import pwd

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.hpclab.cluster.plugins.modules import munge_key

KEY = bytes(range(128))
KEY_B64 = base64.b64encode(KEY).decode()
ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


def run(capsys, **args):
    args = {"owner": ME, "group": MY_GROUP, **args}
    with patch_module_args(args), pytest.raises(SystemExit):
        munge_key.main()
    return json.loads(capsys.readouterr().out)


def test_creates_key_0400(tmp_path, capsys):
    path = tmp_path / "munge.key"
    result = run(capsys, content=KEY_B64, path=str(path))
    assert result["changed"] is True
    assert path.read_bytes() == KEY
    assert path.stat().st_mode & 0o777 == 0o400
    assert result["sha256"] == hashlib.sha256(KEY).hexdigest()
    assert KEY_B64 not in json.dumps(result)


def test_second_run_changes_nothing(tmp_path, capsys):
    path = tmp_path / "munge.key"
    run(capsys, content=KEY_B64, path=str(path))
    assert run(capsys, content=KEY_B64, path=str(path))["changed"] is False


def test_check_mode_writes_nothing_and_diffs_fingerprints(tmp_path, capsys):
    path = tmp_path / "munge.key"
    result = run(capsys, content=KEY_B64, path=str(path), _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] is True
    assert not path.exists()
    assert result["diff"]["before"] == {}
    assert result["diff"]["after"]["sha256"] == hashlib.sha256(KEY).hexdigest()
    assert list(tmp_path.iterdir()) == []


def test_foreign_key_refused_without_rotate(tmp_path, capsys):
    path = tmp_path / "munge.key"
    path.write_bytes(b"x" * 64)
    result = run(capsys, content=KEY_B64, path=str(path))
    assert result["failed"] is True
    assert "rotate=true" in result["msg"]
    assert path.read_bytes() == b"x" * 64


def test_foreign_key_replaced_with_rotate(tmp_path, capsys):
    path = tmp_path / "munge.key"
    path.write_bytes(b"x" * 64)
    result = run(capsys, content=KEY_B64, path=str(path), rotate=True)
    assert result["changed"] is True
    assert result["previous_sha256"] == hashlib.sha256(b"x" * 64).hexdigest()
    assert path.read_bytes() == KEY


def test_mode_fixed_without_rewriting(tmp_path, capsys):
    path = tmp_path / "munge.key"
    path.write_bytes(KEY)
    path.chmod(0o644)
    result = run(capsys, content=KEY_B64, path=str(path))
    assert result["changed"] is True and result["key_written"] is False
    assert path.stat().st_mode & 0o777 == 0o400


def test_invalid_content_fails(tmp_path, capsys):
    result = run(capsys, content="short", path=str(tmp_path / "munge.key"))
    assert result["failed"] is True
    assert "content is not valid base64" in result["msg"]


def test_directory_created_with_its_mode_in_the_same_call(tmp_path, capsys):
    directory = tmp_path / "munge"
    result = run(capsys, content=KEY_B64, path=str(directory / "munge.key"), directory_mode="0700")
    assert result["changed"] is True and result["directory_changed"] is True and result["key_written"] is True
    assert directory.stat().st_mode & 0o7777 == 0o700
    assert (directory / "munge.key").read_bytes() == KEY
    again = run(capsys, content=KEY_B64, path=str(directory / "munge.key"), directory_mode="0700")
    assert again["changed"] is False and again["directory_changed"] is False


def test_directory_mode_fixed_without_rewriting_the_key(tmp_path, capsys):
    directory = tmp_path / "munge"
    run(capsys, content=KEY_B64, path=str(directory / "munge.key"), directory_mode="0700")
    directory.chmod(0o755)
    inode = (directory / "munge.key").stat().st_ino
    result = run(capsys, content=KEY_B64, path=str(directory / "munge.key"), directory_mode="0700", _ansible_diff=True)
    assert result["changed"] is True and result["directory_changed"] is True and result["key_written"] is False
    assert directory.stat().st_mode & 0o7777 == 0o700
    assert (directory / "munge.key").stat().st_ino == inode
    assert result["diff"]["before"]["directory"]["mode"] == "0755" and result["diff"]["after"]["directory"]["mode"] == "0700"


def test_check_mode_reports_a_missing_directory_and_creates_nothing(tmp_path, capsys):
    directory = tmp_path / "munge"
    result = run(capsys, content=KEY_B64, path=str(directory / "munge.key"), directory_mode="0700", _ansible_check_mode=True)
    assert result["changed"] is True and result["directory_changed"] is True
    assert not directory.exists()


def test_directory_mode_must_be_octal(tmp_path, capsys):
    result = run(capsys, content=KEY_B64, path=str(tmp_path / "munge.key"), directory_mode="rwx")
    assert result["failed"] is True and "directory_mode 'rwx'" in result["msg"]


def test_no_temporary_file_is_left_beside_the_key(tmp_path, capsys):
    path = tmp_path / "munge.key"
    path.write_bytes(b"x" * 64)
    run(capsys, content=KEY_B64, path=str(path), rotate=True)
    assert os.listdir(tmp_path) == ["munge.key"]


def test_write_key_removes_its_temporary_file_when_it_fails(tmp_path, monkeypatch):
    def refuse(*args):
        raise PermissionError("chown refused")

    monkeypatch.setattr(munge_key.os, "chown", refuse)
    with pytest.raises(PermissionError):
        munge_key.write_key(str(tmp_path / "munge.key"), KEY, 0, 0, 0o400)
    assert os.listdir(tmp_path) == []


def test_write_key_replaces_the_key_with_owner_and_mode(tmp_path):
    path = tmp_path / "munge.key"
    path.write_bytes(b"old")
    munge_key.write_key(str(path), KEY, os.getuid(), os.getgid(), 0o400)
    assert path.read_bytes() == KEY and path.stat().st_mode & 0o7777 == 0o400


def test_read_file_gives_stat_and_content_or_none(tmp_path):
    (tmp_path / "a").write_bytes(b"abc")
    st, content = munge_key.read_file(str(tmp_path / "a"))
    assert content == b"abc" and st.st_size == 3
    assert munge_key.read_file(str(tmp_path / "missing")) is None


def test_id_name_falls_back_to_the_number():
    assert munge_key.id_name(pwd.getpwuid, os.getuid()) == ME
    assert munge_key.id_name(pwd.getpwuid, 2**31 - 7) == str(2**31 - 7)


def test_runs_no_command(tmp_path, capsys, monkeypatch):
    """Restarting munged is the role's handler's job: the module writes the key and nothing else."""

    def refuse(module, *args, **kwargs):
        raise AssertionError(f"munge_key ran a command: {args}")

    monkeypatch.setattr(munge_key.AnsibleModule, "run_command", refuse)
    result = run(capsys, content=KEY_B64, path=str(tmp_path / "munge.key"))
    assert result["changed"] is True and result["key_written"] is True
    assert "restarted" not in result


def test_restart_is_no_option(tmp_path, capsys):
    result = run(capsys, content=KEY_B64, path=str(tmp_path / "munge.key"), restart="munge")
    assert result["failed"] is True and "restart" in result["msg"]
    assert not (tmp_path / "munge.key").exists()
