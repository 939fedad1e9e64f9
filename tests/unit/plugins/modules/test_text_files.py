"""The text_files module on a real temporary directory: write, second run, attributes, check and diff."""

from __future__ import annotations

import grp
import json
import os
import pwd

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.hpclab.cluster.plugins.modules import text_files

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


def run(capsys, files, **args):
    files = [{"owner": ME, "group": MY_GROUP, **f} for f in files]
    with patch_module_args({"files": files, **args}), pytest.raises(SystemExit):
        text_files.main()
    return json.loads(capsys.readouterr().out)


def test_writes_every_file_then_changes_nothing(tmp_path, capsys):
    files = [{"path": str(tmp_path / "slurm.conf"), "content": "ClusterName=lab\n"},
             {"path": str(tmp_path / "gres.conf"), "content": "# none\n", "mode": "0640"}]
    first = run(capsys, files)
    assert first["changed"] is True and first["written_paths"] == [f["path"] for f in files]
    assert (tmp_path / "slurm.conf").read_text() == "ClusterName=lab\n"
    assert (tmp_path / "gres.conf").stat().st_mode & 0o7777 == 0o640
    second = run(capsys, files)
    assert second["changed"] is False and second["changed_paths"] == []


def test_only_the_file_that_differs_is_written(tmp_path, capsys):
    files = [{"path": str(tmp_path / "a"), "content": "a\n"}, {"path": str(tmp_path / "b"), "content": "b\n"}]
    run(capsys, files)
    inode = (tmp_path / "a").stat().st_ino
    files[1]["content"] = "b2\n"
    result = run(capsys, files, _ansible_diff=True)
    assert result["written_paths"] == [str(tmp_path / "b")]
    assert (tmp_path / "a").stat().st_ino == inode
    assert result["diff"] == [{"before": "b\n", "after": "b2\n", "before_header": str(tmp_path / "b"), "after_header": str(tmp_path / "b")}]


def test_mode_fixed_in_place_without_rewriting(tmp_path, capsys):
    files = [{"path": str(tmp_path / "a"), "content": "a\n"}]
    run(capsys, files)
    (tmp_path / "a").chmod(0o600)
    inode = (tmp_path / "a").stat().st_ino
    result = run(capsys, files, _ansible_diff=True)
    assert result["changed_paths"] == [str(tmp_path / "a")] and result["written_paths"] == []
    assert (tmp_path / "a").stat().st_mode & 0o7777 == 0o644 and (tmp_path / "a").stat().st_ino == inode
    assert "mode=0600" in result["diff"][0]["before"] and "mode=0644" in result["diff"][0]["after"]


def test_check_mode_reports_and_writes_nothing(tmp_path, capsys):
    result = run(capsys, [{"path": str(tmp_path / "a"), "content": "a\n"}], _ansible_check_mode=True)
    assert result["changed"] is True and result["written_paths"] == [str(tmp_path / "a")]
    assert not (tmp_path / "a").exists()


def test_unknown_owner_fails_naming_it_and_writes_nothing(tmp_path, capsys):
    result = run(capsys, [{"path": str(tmp_path / "a"), "content": "a\n", "owner": "nosuchuser42"}])
    assert result["failed"] is True and "'nosuchuser42'" in result["msg"]
    assert not (tmp_path / "a").exists()


def test_missing_directory_fails_naming_the_file(tmp_path, capsys):
    result = run(capsys, [{"path": str(tmp_path / "none" / "a"), "content": "a\n"}])
    assert result["failed"] is True and "its directory does not exist" in result["msg"]


def test_no_temporary_file_is_left_behind(tmp_path, capsys):
    run(capsys, [{"path": str(tmp_path / "a"), "content": "a\n"}])
    assert sorted(os.listdir(tmp_path)) == ["a"]
