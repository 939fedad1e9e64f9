"""Native Slurm on three real nodes: slurmctld on the controller (also the login node), slurmd on two
workers, users' homes on GlusterFS, one MUNGE key. Jobs run as a cluster user; a second run restarts
nothing; bad inputs fail before any change."""

from __future__ import annotations

import re
import time

import pytest
from slurm_checks import GID, HOME, UID, USER, check_file_shared_between_jobs, check_mpi_pi, dotted_name_inventory, munge_key_away
from helpers import get_host, inventory_hosts, journal_on_failure, run_playbook

CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
testinfra_hosts = [CONTROLLER]
SLURM_PLAYBOOK = "../../playbooks/slurm.yml"
CONF = "/etc/slurm/slurm.conf"


def as_user(command: str) -> str:
    """A shell command run as the cluster user from its shared home, as a user would."""
    return f"cd {HOME} && runuser -u {USER} -- {command}"


def controller():
    return get_host(CONTROLLER)


def daemon_ids() -> dict[str, str]:
    """MainPID and start time of slurmctld and of every slurmd: they change on any restart."""
    ids = {}
    for name, unit in [(CONTROLLER, "slurmctld")] + [(w, "slurmd") for w in WORKERS]:
        ids[f"{name}/{unit}"] = get_host(name).check_output(
            f"systemctl show -p MainPID -p ActiveEnterTimestampMonotonic {unit}"
        )
    return ids


def conf_checksums() -> dict[str, str]:
    return {h: get_host(h).check_output(f"sha256sum {CONF}").split()[0] for h in [CONTROLLER] + WORKERS}


def test_slurmctld_running_and_enabled():
    host = controller()
    with journal_on_failure(host, "slurmctld"):
        assert host.service("slurmctld").is_running and host.service("slurmctld").is_enabled


@pytest.mark.parametrize("worker", WORKERS)
def test_slurmd_running_and_enabled(worker):
    host = get_host(worker)
    with journal_on_failure(host, "slurmd"):
        assert host.service("slurmd").is_running and host.service("slurmd").is_enabled


def test_slurmctld_listens_on_6817():
    assert controller().socket("tcp://0.0.0.0:6817").is_listening


def test_same_slurm_conf_on_every_node():
    assert len(set(conf_checksums().values())) == 1


def test_node_lines_from_worker_facts_with_95_percent_memory():
    memtotal_kb = int(get_host(WORKERS[0]).check_output("awk '/^MemTotal/ {print $2}' /proc/meminfo"))
    line = next(line for line in controller().file(CONF).content_string.splitlines() if line.startswith("NodeName="))
    real_memory = int(re.search(r"RealMemory=(\d+)", line).group(1))
    assert line.startswith("NodeName=slurmd[1-2] ") and 0.90 * memtotal_kb / 1024 < real_memory <= 0.95 * memtotal_kb / 1024


def test_sinfo_shows_both_workers_idle_in_the_default_partition():
    host = controller()
    for _attempt in range(30):
        out = host.check_output("sinfo --noheader --format=%P,%a,%D,%t,%N")
        if out == "batch*,up,2,idle,slurmd[1-2]":
            break
        time.sleep(2)
    with journal_on_failure(host, "slurmctld"):
        assert out == "batch*,up,2,idle,slurmd[1-2]"


def test_cluster_user_has_the_same_ids_on_every_node():
    ids = {h: get_host(h).check_output(f"id -u {USER}; id -g {USER}; getent passwd {USER} | cut -d: -f6") for h in [CONTROLLER] + WORKERS}
    assert set(ids.values()) == {f"{UID}\n{GID}\n{HOME}"}


def test_home_on_the_shared_volume_owned_by_the_user():
    home = controller().file(HOME)
    assert (home.is_directory, home.uid, home.gid, home.mode) == (True, UID, GID, 0o700)


def test_srun_on_two_nodes_answers_from_both_workers():
    out = controller().check_output(as_user("srun --nodes=2 hostname"))
    assert sorted(out.split()) == WORKERS


def test_mpi_pi_batch_job_over_two_nodes():
    check_mpi_pi(controller(), as_user, WORKERS)


def test_file_written_by_a_job_on_one_worker_is_read_by_a_job_on_the_other():
    check_file_shared_between_jobs(controller(), as_user, WORKERS)


def test_a_run_that_changes_nothing_restarts_nothing():
    before = daemon_ids()
    run = run_playbook()
    assert run.rc == 0, run
    assert run.total_changed == 0, run
    assert daemon_ids() == before


def test_check_mode_changes_nothing():
    run = run_playbook(check=True)
    assert run.rc == 0, run
    assert run.total_changed == 0, run


def wait_for_idle_workers():
    host = controller()
    for _attempt in range(30):
        out = host.check_output("sinfo --noheader --format=%t,%N")
        if out == "idle,slurmd[1-2]":
            return out
        time.sleep(2)
    return out


def start_time(ids: str) -> int:
    return int(re.search(r"ActiveEnterTimestampMonotonic=(\d+)", ids).group(1))


def test_reloadable_change_is_reconfigured_without_a_restart():
    before = daemon_ids()
    run = run_playbook(SLURM_PLAYBOOK, extra_vars={"slurm_master_max_time": 60})
    assert run.rc == 0, run
    assert "Reconfigure slurm" in run.output, run
    assert daemon_ids() == before
    assert controller().check_output("sinfo --noheader --format=%l") == "1:00:00"
    back = run_playbook(SLURM_PLAYBOOK)
    assert back.rc == 0, back
    assert daemon_ids() == before
    assert controller().check_output("sinfo --noheader --format=%l") == "infinite"


def test_changed_node_lines_restart_slurmctld_then_every_slurmd():
    before = daemon_ids()
    run = run_playbook(SLURM_PLAYBOOK, extra_vars={"slurm_master_memory_fraction": 0.9})
    assert run.rc == 0, run
    after = daemon_ids()
    assert all(after[unit] != before[unit] for unit in before), after
    ctld = start_time(after[f"{CONTROLLER}/slurmctld"])
    assert all(start_time(after[f"{w}/slurmd"]) > ctld for w in WORKERS), after
    line = next(line for line in controller().file(CONF).content_string.splitlines() if line.startswith("NodeName="))
    real_memory = re.search(r"RealMemory=(\d+)", line).group(1)
    assert f"RealMemory={real_memory}" in controller().check_output(f"scontrol show node {WORKERS[0]}")
    assert wait_for_idle_workers() == "idle,slurmd[1-2]"
    back = run_playbook(SLURM_PLAYBOOK)
    assert back.rc == 0, back
    assert wait_for_idle_workers() == "idle,slurmd[1-2]"


def assert_failed_before_any_change(run, before_conf, before_ids, *words):
    assert run.rc != 0, run
    for word in words + ("Fix:",):
        assert word in run.output, (word, run)
    assert run.total_changed == 0, run
    assert "preflight |" in run.output and "configure | " not in run.output, run
    assert conf_checksums() == before_conf
    assert daemon_ids() == before_ids
    # The cluster still answers as before: sinfo on the controller, both workers idle.
    assert wait_for_idle_workers() == "idle,slurmd[1-2]"


BAD_INPUTS = [
    pytest.param(
        {"slurm_master_partitions": {"batch": [WORKERS[0]]}},
        ["slurm_master_partitions", f"worker '{WORKERS[1]}' is in no partition"],
        id="worker-in-no-partition",
    ),
    pytest.param(
        {"slurm_master_partitions": {"batch": ["slurm_worker"], "extra": ["ghost9"]}},
        ["slurm_master_partitions", "'ghost9' is not a host of the worker group"],
        id="partition-names-unknown-host",
    ),
    pytest.param(
        {"slurm_master_config": {"SlurmdTimout": 300}},
        ["slurm_master_config has keys that are not slurm.conf keys of Slurm 22.05", "'SlurmdTimout'", "SlurmdTimeout"],
        id="misspelt-slurm-conf-key",
    ),
    pytest.param(
        {"slurm_worker_mode": "container", "slurm_master_mode": "native"},
        ["slurm_worker_mode is 'container'", "docker_macvlan"],
        id="worker-container-mode-without-macvlan",
    ),
]


@pytest.mark.parametrize("extra_vars,words", BAD_INPUTS)
def test_bad_input_fails_before_any_change(extra_vars, words):
    before_conf, before_ids = conf_checksums(), daemon_ids()
    run = run_playbook(SLURM_PLAYBOOK, extra_vars=extra_vars)
    if "slurm_worker_mode" in extra_vars:
        # The controller's play has nothing to change; the workers' fails in its preflight.
        assert run.rc != 0 and run.total_changed == 0 and "slurm_worker_mode" in run.output and "Fix:" in run.output, run
        assert f"but {WORKERS[0]} has no address on the macvlan network" in run.output, run
        assert conf_checksums() == before_conf and daemon_ids() == before_ids
        assert wait_for_idle_workers() == "idle,slurmd[1-2]"
        return
    assert_failed_before_any_change(run, before_conf, before_ids, *words)


def test_host_name_that_cannot_be_a_slurm_node_name_fails_before_any_change(tmp_path):
    extra_inventory = dotted_name_inventory(tmp_path, "slurmd1.bad", WORKERS[0])
    before_conf, before_ids = conf_checksums(), daemon_ids()
    run = run_playbook(SLURM_PLAYBOOK, "-i", extra_inventory)
    assert_failed_before_any_change(run, before_conf, before_ids, "'slurmd1.bad'", "cannot be a Slurm node name", "inventory_hostname")


@pytest.fixture
def munge_key_missing_on_last_worker():
    with munge_key_away(get_host(WORKERS[-1]), WORKERS[-1]) as name:
        yield name


def test_missing_munge_key_fails_before_any_change(munge_key_missing_on_last_worker):
    before_conf, before_ids = conf_checksums(), daemon_ids()
    run = run_playbook(SLURM_PLAYBOOK)
    assert_failed_before_any_change(
        run, before_conf, before_ids, f"/etc/munge/munge.key is missing on {munge_key_missing_on_last_worker}", "munge_group", "munge role"
    )
