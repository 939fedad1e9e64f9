"""Issue 54: a user list that cannot break the cluster.

A cluster user named like a system account (Debian's backup) or like one of the collection's own service accounts
(munge: the lab's run rewrote munged's account on every node and munged failed at its next restart) fails the run
before any change, in check mode too, naming the host, the user and the fix; munged restarts fine afterwards."""

from __future__ import annotations

import pytest
from helpers import get_host, inventory_hosts, journal_on_failure, run_playbook
from slurm_checks import GID, UID, USER

CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
NODES = [CONTROLLER] + WORKERS
testinfra_hosts = [CONTROLLER]
SLURM_PLAYBOOK = "../../playbooks/slurm.yml"
ALICE = {"name": USER, "uid": UID, "gid": GID}


def munge_state() -> dict[str, str]:
    """On every node: munge's account, the key's owner and mode, munged's PID and start time."""
    return {
        n: get_host(n).check_output(
            "getent passwd munge; stat -c '%U:%G %a' /etc/munge/munge.key; systemctl show -p MainPID -p ActiveEnterTimestampMonotonic munge"
        )
        for n in NODES
    }


def assert_munged_restarts_and_decodes_across_nodes():
    for n in NODES:
        host = get_host(n)
        with journal_on_failure(host, "munge"):
            assert host.run("systemctl restart munge").rc == 0
            assert host.service("munge").is_running
    credential = get_host(CONTROLLER).check_output("munge -n")
    for n in WORKERS:
        assert get_host(n).run(f"echo '{credential}' | unmunge").rc == 0, n


BAD_USERS = [
    pytest.param({"name": "munge", "uid": 2050, "gid": 2050}, "munge is a system account of this node (UID ", id="collection-service-account"),
    pytest.param({"name": "backup", "uid": 2051, "gid": 2051}, "backup is a system account of this node (UID 34, below 1000)",
                 id="debian-system-account"),
]


@pytest.mark.parametrize("bad,reason", BAD_USERS)
def test_a_user_named_like_a_system_account_fails_before_any_change_and_munged_restarts(bad, reason):
    before = munge_state()
    run = run_playbook(SLURM_PLAYBOOK, extra_vars={"hpclab_cluster_users": [ALICE, bad]})
    assert run.rc != 0 and run.total_changed == 0, run
    for words in (f"{CONTROLLER}: slurm_master_users (default hpclab_cluster_users): {reason}", "Fix: take these users out of",
                  "slurm_master_users_min_uid"):
        assert words in run.output, (words, run)
    assert "users | Cluster users" not in run.output, run
    assert munge_state() == before
    assert_munged_restarts_and_decodes_across_nodes()


def test_a_user_named_munge_fails_in_check_mode_too():
    run = run_playbook(SLURM_PLAYBOOK, check=True, extra_vars={"hpclab_cluster_users": [ALICE, BAD_USERS[0].values[0]]})
    assert run.rc != 0 and run.total_changed == 0, run
    assert "munge is a system account of this node" in run.output, run

