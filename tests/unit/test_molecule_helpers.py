"""molecule/_shared/helpers.py's PlaybookRun on a real ansible-playbook output (tests/unit/fixtures/ansible): the
recap it reads, and total_changed refusing to answer when the recap is missing or does not name every host that a
task ran on (a reformatted or cut recap would otherwise sum to 0 and pass every "changed=0" assertion)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "molecule" / "_shared"))

from helpers import PlaybookRun  # noqa: E402  pylint: disable=wrong-import-position,import-error

OUTPUT = (ROOT / "tests" / "unit" / "fixtures" / "ansible" / "playbook-run-every-result.txt").read_text(encoding="utf-8")


def run_of(stdout: str, rc: int = 2) -> PlaybookRun:
    return PlaybookRun(subprocess.CompletedProcess(["ansible-playbook"], rc, stdout, ""))


def test_the_recap_and_the_hosts_are_read():
    run = run_of(OUTPUT)
    assert run.recap == {
        "node1": {"ok": 4, "changed": 1, "unreachable": 0, "failed": 0},
        "node2": {"ok": 5, "changed": 0, "unreachable": 0, "failed": 1},
    }
    assert run.hosts == ["node1", "node2"]  # "ok: [node2 -> node1]" is node2's result
    assert run.total_changed == 1


def test_no_recap_is_no_answer():
    run = run_of(OUTPUT.split("PLAY RECAP", 1)[0])
    with pytest.raises(AssertionError, match="no PLAY RECAP line"):
        print(run.total_changed)


def test_a_recap_without_a_host_that_tasks_ran_on_is_no_answer():
    cut = "\n".join(line for line in OUTPUT.splitlines() if not line.startswith("node1 "))
    run = run_of(cut)
    with pytest.raises(AssertionError, match=r"does not name \['node1'\]"):
        print(run.total_changed)


def test_a_reformatted_recap_is_no_answer():
    run = run_of(OUTPUT.replace("changed=", "changes="))
    with pytest.raises(AssertionError, match="no PLAY RECAP line"):
        print(run.total_changed)
