"""The deb_packages module's decisions, with apt-get and dpkg-query answering their real captured output."""

from __future__ import annotations

import json
import pathlib

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.hpclab.cluster.plugins.modules import deb_packages

FIXTURES = pathlib.Path(__file__).parents[2] / "fixtures" / "apt"
SIX = ["munge", "slurmd", "slurm-client", "openmpi-bin", "python3-mpi4py", "python3-numpy"]
FRESH_QUERY = (FIXTURES / "dpkg-query-mixed.stdout").read_text()  # none of SIX is installed there


class Node:
    """What each command answers: a list of (rc, stdout, stderr) per command word, used in turn."""

    def __init__(self, monkeypatch, answers: dict, lists_age: float):
        self.answers = {k: list(v) for k, v in answers.items()}
        self.calls: list[list[str]] = []
        node = self

        def run_command(module, argv, environ_update=None, **kwargs):
            assert environ_update["LC_ALL"] == "C" and environ_update["DEBIAN_FRONTEND"] == "noninteractive"
            node.calls.append(argv)
            key = "simulate" if "--simulate" in argv else argv[1] if argv[0] == "apt-get" else argv[0]
            return node.answers[key].pop(0)

        monkeypatch.setattr(AnsibleModule, "run_command", run_command)
        monkeypatch.setattr(deb_packages, "_mtimes", lambda: [deb_packages.time.time() - lists_age])
        monkeypatch.setattr(deb_packages.time, "sleep", lambda seconds: None)

    def words(self) -> list[str]:
        return ["simulate" if "--simulate" in a else a[1] if a[0] == "apt-get" else a[0] for a in self.calls]


def ok(name: str) -> tuple[int, str, str]:
    return 0, (FIXTURES / name).read_text(), ""


def run(capsys, **args) -> dict:
    with patch_module_args({"name": SIX, **args}), pytest.raises(SystemExit):
        deb_packages.main()
    return json.loads(capsys.readouterr().out)


def test_installed_packages_only_ask_dpkg(monkeypatch, capsys):
    node = Node(monkeypatch, {"dpkg-query": [ok("dpkg-query-installed.stdout")]}, lists_age=10 ** 6)
    result = run(capsys)
    assert result["changed"] is False and result["missing"] == [] and result["commands"] == []
    assert node.words() == ["dpkg-query"]


def test_old_lists_updated_then_one_install(monkeypatch, capsys):
    node = Node(monkeypatch, {"dpkg-query": [(1, FRESH_QUERY, "dpkg-query: no packages found matching slurmd\n")],
                              "update": [(0, "", "")], "install": [ok("apt-get-install.stdout")]}, lists_age=7200)
    result = run(capsys, _ansible_diff=True)
    assert result["changed"] is True and result["cache_updated"] is True
    assert result["missing"] == SIX
    assert node.words() == ["dpkg-query", "update", "install"]
    assert node.calls[-1][-6:] == SIX and "--no-install-recommends" in node.calls[-1]
    assert len(result["packages"]) == 50
    assert "munge 0.5.15-2+deb12u1\n" in result["diff"]["after"] and result["diff"]["before"] == ""


def test_fresh_lists_not_updated(monkeypatch, capsys):
    node = Node(monkeypatch, {"dpkg-query": [(1, FRESH_QUERY, "")], "install": [ok("apt-get-install.stdout")]},
                lists_age=60)
    result = run(capsys)
    assert result["cache_updated"] is False and node.words() == ["dpkg-query", "install"]


def test_install_that_fails_on_lists_not_updated_updates_and_tries_once_more(monkeypatch, capsys):
    node = Node(monkeypatch, {"dpkg-query": [(1, FRESH_QUERY, "")],
                              "install": [(100, "", "E: Failed to fetch http://deb.debian.org/... 404  Not Found"),
                                          ok("apt-get-install.stdout")],
                              "update": [(0, "", "")]}, lists_age=60)
    result = run(capsys)
    assert result["changed"] is True and result["cache_updated"] is True
    assert node.words() == ["dpkg-query", "install", "update", "install"]


def test_install_failure_names_the_packages_and_apt_gets_words(monkeypatch, capsys):
    node = Node(monkeypatch, {"dpkg-query": [(1, FRESH_QUERY, "")], "update": [(0, "", "")],
                              "install": [(100, "", "E: Unable to locate package python3-numpy")]}, lists_age=7200)
    result = run(capsys)
    assert result["failed"] is True and result["rc"] == 100
    assert "munge, slurmd" in result["msg"] and "Unable to locate package python3-numpy" in result["msg"]
    assert node.words() == ["dpkg-query", "update", "install"]


def test_update_retried_then_fails(monkeypatch, capsys):
    node = Node(monkeypatch, {"dpkg-query": [(1, FRESH_QUERY, "")],
                              "update": [(100, "", "E: Could not get lock /var/lib/apt/lists/lock")] * 3},
                lists_age=7200)
    result = run(capsys)
    assert result["failed"] is True and "apt-get update failed 3 times" in result["msg"]
    assert node.words() == ["dpkg-query", "update", "update", "update"]


def test_check_mode_simulates_and_changes_nothing(monkeypatch, capsys):
    node = Node(monkeypatch, {"dpkg-query": [(1, FRESH_QUERY, "")], "simulate": [ok("apt-get-simulate.stdout")]},
                lists_age=7200)
    result = run(capsys, _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] is True and result["cache_updated"] is False
    assert node.words() == ["dpkg-query", "simulate"]
    assert [c[1] for c in result["commands"]] == ["update", "install"]
    assert "--simulate" not in result["commands"][-1]
    assert len(result["packages"]) == 50 and "python3-numpy" in result["diff"]["after"]


def test_check_mode_never_fails_when_apt_cannot_plan(monkeypatch, capsys):
    stderr = (FIXTURES / "apt-get-simulate-unknown.stderr").read_text()
    warned: list[str] = []
    monkeypatch.setattr(AnsibleModule, "warn", lambda module, text: warned.append(text))
    Node(monkeypatch, {"dpkg-query": [(1, FRESH_QUERY, "")],
                       "simulate": [(100, (FIXTURES / "apt-get-simulate-unknown.stdout").read_text(), stderr)]},
         lists_age=60)
    result = run(capsys, _ansible_check_mode=True)
    assert result.get("failed") is not True and result["changed"] is True
    assert [p["name"] for p in result["packages"]] == SIX
    assert len(warned) == 1 and "Unable to locate package no-such-package" in warned[0]


def test_bad_names_fail_before_any_command(monkeypatch, capsys):
    node = Node(monkeypatch, {}, lists_age=60)
    result = run(capsys, name=["munge", "slurmd=22.05.8-4"])
    assert result["failed"] is True and "slurmd=22.05.8-4" in result["msg"] and node.calls == []
