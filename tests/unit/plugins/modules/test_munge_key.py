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


FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "systemd")


def captured(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture
def systemctl(monkeypatch):
    """Records the systemctl command lines; answers from ANSWERS (argv[1] -> (rc, out, err)), else success."""
    calls = []
    answers = {}

    def run_command(module, argv, **kwargs):
        calls.append(argv[1:])
        return answers.get(argv[1], (0, "", ""))

    monkeypatch.setattr(munge_key.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(munge_key.AnsibleModule, "get_bin_path", lambda module, name, required=False: "/usr/bin/" + name)
    return calls, answers


def test_written_key_restarts_the_unit_in_the_same_call(tmp_path, capsys, systemctl):
    calls, _answers = systemctl
    result = run(capsys, content=KEY_B64, path=str(tmp_path / "munge.key"), restart="munge")
    assert result["changed"] is True and result["key_written"] is True and result["restarted"] is True
    assert calls == [["is-enabled", "munge"], ["enable", "--quiet", "munge"], ["restart", "munge"]]


def test_unit_already_enabled_is_only_restarted(tmp_path, capsys, systemctl):
    calls, answers = systemctl
    answers["is-enabled"] = (0, captured("is-enabled-munge-enabled.stdout"), "")
    result = run(capsys, content=KEY_B64, path=str(tmp_path / "munge.key"), restart="munge")
    assert result["changed"] is True and result["key_written"] is True and result["restarted"] is True
    assert calls == [["is-enabled", "munge"], ["restart", "munge"]]


@pytest.mark.parametrize(
    "answer",
    [(1, captured("is-enabled-munge-disabled.stdout"), ""), (1, "", captured("is-enabled-missing-unit.stderr"))],
    ids=["disabled", "missing-unit"],
)
def test_unit_not_enabled_is_enabled_before_the_restart(tmp_path, capsys, systemctl, answer):
    calls, answers = systemctl
    answers["is-enabled"] = answer
    run(capsys, content=KEY_B64, path=str(tmp_path / "munge.key"), restart="munge")
    assert calls == [["is-enabled", "munge"], ["enable", "--quiet", "munge"], ["restart", "munge"]]


def test_key_in_place_leaves_the_unit_alone(tmp_path, capsys, systemctl):
    calls, _answers = systemctl
    path = tmp_path / "munge.key"
    path.write_bytes(KEY)
    path.chmod(0o644)
    result = run(capsys, content=KEY_B64, path=str(path), restart="munge")
    # Only the mode changed: munged does not re-read the key for that.
    assert result["changed"] is True and result["key_written"] is False and result["restarted"] is False
    again = run(capsys, content=KEY_B64, path=str(path), restart="munge")
    assert again["changed"] is False and again["restarted"] is False
    assert calls == []


def test_check_mode_reports_the_restart_and_runs_nothing(tmp_path, capsys, systemctl):
    calls, _answers = systemctl
    result = run(capsys, content=KEY_B64, path=str(tmp_path / "munge.key"), restart="munge", _ansible_check_mode=True)
    assert result["changed"] is True and result["restarted"] is True
    assert calls == [] and not (tmp_path / "munge.key").exists()


def test_failed_restart_names_the_command_and_keeps_the_key(tmp_path, capsys, systemctl):
    calls, answers = systemctl
    answers["restart"] = (1, "", captured("restart-munge-bad-key.stderr"))
    path = tmp_path / "munge.key"
    result = run(capsys, content=KEY_B64, path=str(path), restart="munge")
    assert result["failed"] is True and result["key_written"] is True and result["changed"] is True
    assert "'restart munge' failed (rc=1)" in result["msg"]
    assert "Job for munge.service failed" in result["msg"] and "journalctl -u munge" in result["msg"]
    assert path.read_bytes() == KEY
    assert calls == [["is-enabled", "munge"], ["enable", "--quiet", "munge"], ["restart", "munge"]]


def test_failed_enable_stops_before_the_restart(tmp_path, capsys, systemctl):
    calls, answers = systemctl
    answers["enable"] = (1, "", captured("enable-missing-unit.stderr"))
    result = run(capsys, content=KEY_B64, path=str(tmp_path / "munge.key"), restart="nosuch")
    assert result["failed"] is True
    assert "'enable --quiet nosuch' failed (rc=1): Failed to enable unit: Unit file nosuch.service does not exist." in result["msg"]
    assert calls == [["is-enabled", "nosuch"], ["enable", "--quiet", "nosuch"]]
