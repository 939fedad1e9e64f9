"""Issue 54: a user list that cannot break the cluster.

A cluster user named like a system account (Debian's backup) or like one of the collection's own service accounts
(munge: the lab's run rewrote munged's account on every node and munged failed at its next restart) fails the run
before any change, in check mode too, naming the host, the user and the fix; munged restarts fine afterwards. A user
taken out of the list is locked on every node (no login shell, expired: cannot log in, cannot submit a job), keeps
their files, and a run after that changes nothing; listed again, they log in and run jobs again;
hpclab_users_remove: true deletes the account, never the home.
Runs last in the scenario (it adds and removes a user of its own, bob)."""

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
BOB = {"name": "bob", "uid": 2002, "gid": 2002}
BOB_HOME = "/gfsv/home/bob"
# An admin who changes only the user list may run the users steps alone: the checks still come first (tagged always).
# The lock, and the run after it, go through the whole playbook.
TAGS_USERS = ("--tags", "slurm_master_users,slurm_worker_users")


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


def as_bob(command: str, shell: str = "") -> str:
    """COMMAND as bob through su, as a login would go (PAM's account check: an expired account is refused)."""
    return f"su {'-s ' + shell + ' ' if shell else ''}bob -c \"cd {BOB_HOME} && {command}\""


@pytest.fixture(scope="module")
def bob_was_a_cluster_user():
    """bob listed, his file written by a job; at the end his home goes (the scenario's other tests do not know him)."""
    run = run_playbook(SLURM_PLAYBOOK, *TAGS_USERS, extra_vars={"hpclab_cluster_users": [ALICE, BOB]})
    assert run.rc == 0, run
    controller = get_host(CONTROLLER)
    out = controller.run(as_bob(f"srun --nodes=1 --nodelist={WORKERS[0]} sh -c 'echo mine > {BOB_HOME}/kept.txt; hostname'"))
    assert (out.rc, out.stdout.strip()) == (0, WORKERS[0]), out
    yield
    for n in NODES:
        get_host(n).run("userdel bob; groupdel bob")
    controller.run(f"rm -rf {BOB_HOME}")


def test_a_listed_user_has_the_collections_mark(bob_was_a_cluster_user):
    for n in NODES:
        assert get_host(n).check_output("getent passwd bob") == f"bob:x:2002:2002:hpclab cluster user:{BOB_HOME}:/bin/bash", n


def test_a_user_taken_out_of_the_list_is_locked_on_every_node_and_keeps_his_files(bob_was_a_cluster_user):
    run = run_playbook(SLURM_PLAYBOOK)  # the inventory's list: alice only
    assert run.rc == 0, run
    for n in NODES:
        host = get_host(n)
        assert host.check_output("getent passwd bob") == f"bob:x:2002:2002:hpclab cluster user:{BOB_HOME}:/usr/sbin/nologin", n
        password, expires = host.check_output("getent shadow bob").split(":")[1::6][:2]
        assert password.startswith("!") and expires == "1", (n, password, expires)
    kept = get_host(WORKERS[1]).file(f"{BOB_HOME}/kept.txt")
    assert (kept.content_string, kept.uid, kept.gid) == ("mine\n", 2002, 2002)
    # Alice is untouched.
    assert get_host(CONTROLLER).check_output("getent passwd alice").endswith(":/bin/bash")


def test_a_locked_user_cannot_log_in_nor_submit_a_job(bob_was_a_cluster_user):
    controller = get_host(CONTROLLER)
    login = controller.run(as_bob("id -u"))
    assert login.rc != 0 and "2002" not in login.stdout, login
    # Even with a shell given by root: the account has expired.
    job = controller.run(as_bob(f"srun --nodes=1 --nodelist={WORKERS[0]} hostname", shell="/bin/sh"))
    assert job.rc != 0 and WORKERS[0] not in job.stdout and "expired" in job.stderr + job.stdout, job
    batch = controller.run(as_bob("sbatch --wrap true", shell="/bin/sh"))
    assert batch.rc != 0 and "Submitted" not in batch.stdout, batch


def test_a_run_after_the_lock_changes_nothing(bob_was_a_cluster_user):
    run = run_playbook(SLURM_PLAYBOOK)
    assert run.rc == 0 and run.total_changed == 0, run


def test_a_user_listed_again_logs_in_and_runs_jobs_again(bob_was_a_cluster_user):
    run = run_playbook(SLURM_PLAYBOOK, *TAGS_USERS, extra_vars={"hpclab_cluster_users": [ALICE, BOB]})
    assert run.rc == 0, run
    for n in NODES:
        assert get_host(n).check_output("getent passwd bob").endswith(":/bin/bash"), n
        assert get_host(n).check_output("getent shadow bob").split(":")[7] == "", n
    out = get_host(CONTROLLER).run(as_bob(f"srun --nodes=1 --nodelist={WORKERS[1]} cat {BOB_HOME}/kept.txt"))
    assert (out.rc, out.stdout) == (0, "mine\n"), out


def test_hpclab_users_remove_deletes_the_account_and_keeps_the_home(bob_was_a_cluster_user):
    run = run_playbook(SLURM_PLAYBOOK, *TAGS_USERS, extra_vars={"hpclab_users_remove": True})
    assert run.rc == 0, run
    for n in NODES:
        assert get_host(n).run("getent passwd bob").rc == 2, n
    kept = get_host(CONTROLLER).file(f"{BOB_HOME}/kept.txt")
    assert (kept.content_string, kept.uid) == ("mine\n", 2002)
