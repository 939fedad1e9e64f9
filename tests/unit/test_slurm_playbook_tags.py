"""playbooks/slurm.yml runs the Docker engine and macvlan role under every tag of the Slurm roles' steps (a run limited
by --tags to a container-mode step needs the macvlan addresses) and under no other: the tag list written in the
playbook is the set of tags in the two roles' tasks/main.yml, with no tag of another layer."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def role_tags(role: str) -> set[str]:
    """The tags of the role's steps: each import or include in its tasks/main.yml carries them."""
    tasks = yaml.safe_load((ROOT / "roles" / role / "tasks" / "main.yml").read_text())
    return {tag for task in tasks for tag in task.get("tags", [])} - {"always"}


def test_the_engine_and_macvlan_role_runs_under_every_tag_of_the_slurm_roles_and_no_other():
    facts_play = yaml.safe_load((ROOT / "playbooks" / "slurm.yml").read_text())[0]
    task = next(t for t in facts_play["tasks"] if t["name"] == "Docker engine and macvlan network")
    expected = role_tags("slurm_master") | role_tags("slurm_worker")
    assert "slurm_master_configure" in expected and "slurm_worker_service" in expected, expected
    assert set(task["tags"]) == expected
    assert task["ansible.builtin.include_role"]["apply"] == {"tags": ["always"]}


def test_the_read_only_facts_and_gpu_tasks_run_under_any_tags():
    facts_play = yaml.safe_load((ROOT / "playbooks" / "slurm.yml").read_text())[0]
    others = [t for t in facts_play["tasks"] if t["name"] != "Docker engine and macvlan network"]
    assert len(others) == 3  # the controller's layout, the hardware facts, the GPUs
    assert all(t["tags"] == ["always"] for t in others)
    assert "tags" not in facts_play
