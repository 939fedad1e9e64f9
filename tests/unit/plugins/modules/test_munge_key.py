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
