"""Native Slurm on four real nodes: slurmctld on the controller (also the login node), slurmd on three
workers, users' homes on GlusterFS (the third worker holds no brick and mounts the volume as a client),
one MUNGE key. Jobs run as a cluster user; a second run restarts nothing; bad inputs fail before any
change."""

from __future__ import annotations

import re
import subprocess
import time
import uuid

import pytest
from slurm_checks import GID, HOME, UID, USER, check_file_shared_between_jobs, check_mpi_pi, dotted_name_inventory, munge_key_away
from slurm_checks import native_as_user as as_user
from helpers import case_key, get_host, inventory_hosts, journal_on_failure, run_playbook, run_playbooks_side_by_side

CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
BRICK_HOSTS = inventory_hosts("glusterfs")
# The worker without a brick (a GlusterFS client), as the reference design's GPU server.
CLIENT = next(w for w in WORKERS if w not in BRICK_HOSTS)
# Every worker idle, as sinfo --format=%t,%N prints it.
ALL_IDLE = "idle,slurmd[1-3]"
testinfra_hosts = [CONTROLLER]
SLURM_PLAYBOOK = "../../playbooks/slurm.yml"
CONF = "/etc/slurm/slurm.conf"


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
    assert line.startswith("NodeName=slurmd[1-3] ") and 0.90 * memtotal_kb / 1024 < real_memory <= 0.95 * memtotal_kb / 1024


def test_sinfo_shows_every_worker_idle_in_the_default_partition():
    host = controller()
    for _attempt in range(30):
        out = host.check_output("sinfo --noheader --format=%P,%a,%D,%t,%N")
        if out == "batch*,up,3,idle,slurmd[1-3]":
            break
        time.sleep(2)
    with journal_on_failure(host, "slurmctld"):
        assert out == "batch*,up,3,idle,slurmd[1-3]"


def test_cluster_user_has_the_same_ids_on_every_node():
    ids = {h: get_host(h).check_output(f"id -u {USER}; id -g {USER}; getent passwd {USER} | cut -d: -f6") for h in [CONTROLLER] + WORKERS}
    assert set(ids.values()) == {f"{UID}\n{GID}\n{HOME}"}


def test_home_on_the_shared_volume_owned_by_the_user():
    home = controller().file(HOME)
    assert (home.is_directory, home.uid, home.gid, home.mode) == (True, UID, GID, 0o700)


def test_srun_on_every_node_answers_from_every_worker():
    out = controller().check_output(as_user(f"srun --nodes={len(WORKERS)} hostname"))
    assert sorted(out.split()) == WORKERS


def test_mpi_pi_batch_job_over_two_nodes():
    check_mpi_pi(controller(), as_user, [w for w in WORKERS if w in BRICK_HOSTS])


def test_file_written_by_a_job_on_one_worker_is_read_by_a_job_on_the_other():
    check_file_shared_between_jobs(controller(), as_user, WORKERS)


# The worker without a brick (issue 19): a GlusterFS client, where the users' homes exist as on the others.
def test_the_worker_without_a_brick_mounts_the_volume_as_a_client_and_is_no_peer():
    mount = get_host(CLIENT).mount_point("/gfsv")
    assert mount.exists and mount.filesystem == "fuse.glusterfs", mount
    fstab = get_host(CLIENT).file("/etc/fstab").content_string
    line = next(line for line in fstab.splitlines() if " /gfsv " in line)
    assert "backup-volfile-servers=" in line, line
    assert CLIENT not in controller().check_output("gluster pool list")


def read_from_the_client(name: str) -> str:
    return controller().check_output(as_user(f"srun --nodes=1 --nodelist={CLIENT} cat {HOME}/{name}"))


def test_a_job_on_the_worker_without_a_brick_reads_a_file_written_on_a_brick_node():
    token = f"written on {CONTROLLER} {uuid.uuid4()}"
    controller().check_output(as_user(f"sh -c \"echo '{token}' > {HOME}/from-brick.txt\""))
    assert read_from_the_client("from-brick.txt") == token


def test_the_worker_without_a_brick_rejoins_after_a_restart_with_the_volume_mounted():
    token = f"before the restart {uuid.uuid4()}"
    controller().check_output(as_user(f"sh -c \"echo '{token}' > {HOME}/restart.txt\""))
    subprocess.run(["docker", "restart", CLIENT], capture_output=True, text=True, timeout=180, check=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        mounted = get_host(CLIENT).run("findmnt -n -o FSTYPE /gfsv").stdout.strip() == "fuse.glusterfs"
        if mounted and wait_for_idle_workers() == ALL_IDLE:
            break
        time.sleep(3)
    with journal_on_failure(get_host(CLIENT), "slurmd"):
        assert get_host(CLIENT).mount_point("/gfsv").filesystem == "fuse.glusterfs"
        assert wait_for_idle_workers() == ALL_IDLE
    assert read_from_the_client("restart.txt") == token


def layer_daemon_ids() -> dict[str, str]:
    """Unit, MainPID and start time of the other layers' daemons on each node (glusterd, NFS-Ganesha, munged,
    Prometheus, Alertmanager, node_exporter), one systemctl call per node: they change on any restart."""
    groups = {group: inventory_hosts(group) for group in ("glusterfs", "nfs_ganesha", "monitoring")}
    ids = {}
    for name in inventory_hosts("all"):
        units = (["glusterd"] if name in groups["glusterfs"] else []) + (["nfs-ganesha"] if name in groups["nfs_ganesha"] else []) \
            + (["prometheus", "prometheus-alertmanager"] if name in groups["monitoring"] else []) + ["munge", "prometheus-node-exporter"]
        ids[name] = get_host(name).check_output("systemctl show -p Id -p MainPID -p ActiveEnterTimestampMonotonic " + " ".join(units))
    return ids


# The whole converge (storage, MUNGE, Slurm, monitoring) again: nothing changes, no daemon of any layer restarts.
# Its check mode is test_slurm_ops.py's last test, after the day-2 operations.
def test_a_run_that_changes_nothing_restarts_nothing():
    before, layers_before = daemon_ids(), layer_daemon_ids()
    run = run_playbook()
    assert run.rc == 0, run
    assert run.total_changed == 0, run
    assert daemon_ids() == before
    assert layer_daemon_ids() == layers_before


def wait_for_idle_workers():
    host = controller()
    for _attempt in range(30):
        out = host.check_output("sinfo --noheader --format=%t,%N")
        if out == ALL_IDLE:
            return out
        time.sleep(2)
    return out


def start_time(ids: str) -> int:
    return int(re.search(r"ActiveEnterTimestampMonotonic=(\d+)", ids).group(1))


# Three runs of the Slurm playbook, each building on the last (one run fewer than two tests starting from the converged
# state): a reloadable change, then a change of the node lines (with the reloadable one undone), then back.
def test_reloadable_change_is_reconfigured_then_changed_node_lines_restart_slurmctld_then_every_slurmd():
    before = daemon_ids()
    run = run_playbook(SLURM_PLAYBOOK, extra_vars={"slurm_master_max_time": 60})
    assert run.rc == 0, run
    assert "Reconfigure slurm" in run.output, run
    assert daemon_ids() == before
    assert controller().check_output("sinfo --noheader --format=%l") == "1:00:00"
    run = run_playbook(SLURM_PLAYBOOK, extra_vars={"slurm_master_memory_fraction": 0.9})
    assert run.rc == 0, run
    after = daemon_ids()
    assert all(after[unit] != before[unit] for unit in before), after
    ctld = start_time(after[f"{CONTROLLER}/slurmctld"])
    assert all(start_time(after[f"{w}/slurmd"]) > ctld for w in WORKERS), after
    line = next(line for line in controller().file(CONF).content_string.splitlines() if line.startswith("NodeName="))
    real_memory = re.search(r"RealMemory=(\d+)", line).group(1)
    assert f"RealMemory={real_memory}" in controller().check_output(f"scontrol show node {WORKERS[0]}")
    assert wait_for_idle_workers() == ALL_IDLE
    assert controller().check_output("sinfo --noheader --format=%l") == "infinite"
    back = run_playbook(SLURM_PLAYBOOK)
    assert back.rc == 0, back
    assert wait_for_idle_workers() == ALL_IDLE


# An admin who changed a slurm.conf setting runs only the configure steps (--tags): the checks, the controller's
# settings and the nodes' facts still come first, every node gets the file and the daemons reconfigure.
TAGS_CONFIGURE = ("--tags", "slurm_master_configure,slurm_worker_configure")


def test_a_run_limited_by_tags_to_the_configure_steps_writes_every_slurm_conf_and_reconfigures():
    before = daemon_ids()
    run = run_playbook(SLURM_PLAYBOOK, *TAGS_CONFIGURE, extra_vars={"slurm_master_max_time": 60})
    assert run.rc == 0, run
    assert "Reconfigure slurm" in run.output, run
    assert len(set(conf_checksums().values())) == 1
    assert "MaxTime=60" in controller().file(CONF).content_string
    assert controller().check_output("sinfo --noheader --format=%l") == "1:00:00"
    assert daemon_ids() == before
    back = run_playbook(SLURM_PLAYBOOK, *TAGS_CONFIGURE)
    assert back.rc == 0, back
    assert controller().check_output("sinfo --noheader --format=%l") == "infinite"
    assert daemon_ids() == before
    assert wait_for_idle_workers() == ALL_IDLE


TAGS_SERVICE = ("--tags", "slurm_master_service,slurm_worker_service")


def test_a_run_limited_by_tags_to_the_service_steps_starts_a_stopped_slurmd_and_nothing_else():
    """The service steps alone (no slurm.conf written in the run): it failed with 'slurm_common_result' is undefined."""
    stopped = WORKERS[-1]
    before = daemon_ids()
    get_host(stopped).check_output("systemctl stop slurmd")
    run = run_playbook(SLURM_PLAYBOOK, *TAGS_SERVICE)
    assert run.rc == 0, run
    assert {h: r["changed"] for h, r in run.recap.items() if r["changed"]} == {stopped: 1}, run
    assert "Start slurmd at boot and now" in run.output, run
    assert get_host(stopped).service("slurmd").is_running
    after = daemon_ids()
    assert {k: v for k, v in after.items() if not k.startswith(f"{stopped}/")} == {
        k: v for k, v in before.items() if not k.startswith(f"{stopped}/")
    }
    assert wait_for_idle_workers() == ALL_IDLE
    again = run_playbook(SLURM_PLAYBOOK, *TAGS_SERVICE)
    assert again.rc == 0 and again.total_changed == 0, again
    assert daemon_ids() == after


def test_a_run_restarts_the_slurmctld_and_the_slurmd_that_run_but_do_not_answer():
    """Issue 53: a run that changes nothing asks each daemon whether it answers. slurmctld and one slurmd are stopped
    (SIGSTOP: their units active, the daemons not answering): the service steps restart those two and no other, the
    controller answers and every worker returns idle; the next run changes nothing."""
    hung = WORKERS[0]
    before = daemon_ids()
    controller().check_output("pkill --signal STOP --exact slurmctld")
    get_host(hung).check_output("pkill --signal STOP --exact slurmd")
    run = run_playbook(SLURM_PLAYBOOK, *TAGS_SERVICE)
    assert run.rc == 0, run
    assert {h: r["changed"] for h, r in run.recap.items() if r["changed"]} == {CONTROLLER: 1, hung: 1}, run
    assert "Restart slurmctld that runs but does not answer" in run.output, run
    assert "Restart slurmd that runs but does not answer" in run.output, run
    after = daemon_ids()
    restarted = {f"{CONTROLLER}/slurmctld", f"{hung}/slurmd"}
    assert all(after[unit] != before[unit] for unit in restarted), (before, after)
    assert {k: v for k, v in after.items() if k not in restarted} == {k: v for k, v in before.items() if k not in restarted}
    assert "is UP" in controller().check_output("scontrol ping")
    assert wait_for_idle_workers() == ALL_IDLE
    again = run_playbook(SLURM_PLAYBOOK, *TAGS_SERVICE)
    assert again.rc == 0 and again.total_changed == 0, again
    assert daemon_ids() == after


def assert_failed_before_any_change(run, before_conf, before_ids, *words):
    assert run.rc != 0, run
    for word in words + ("Fix:",):
        assert word in run.output, (word, run)
    assert run.total_changed == 0, run
    assert "preflight |" in run.output and "configure | " not in run.output, run
    assert conf_checksums() == before_conf
    assert daemon_ids() == before_ids
    # The cluster still answers as before: sinfo on the controller, every worker idle.
    assert wait_for_idle_workers() == ALL_IDLE


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
        {"slurm_master_shared_home_hosts": BRICK_HOSTS},
        [f"{CLIENT}: the cluster users' homes under /gfsv/home will not exist there", "glusterfs_clients"],
        id="worker-that-does-not-mount-the-shared-volume",
    ),
    pytest.param(
        {"slurm_worker_mode": "container", "slurm_master_mode": "native"},
        ["slurm_worker_mode is 'container'", "docker_macvlan"],
        id="worker-container-mode-without-macvlan",
    ),
]


@pytest.fixture(scope="module")
def bad_input_runs():
    """Every bad input's run, side by side, and the files and daemons before them."""
    before = conf_checksums(), daemon_ids()
    return before, run_playbooks_side_by_side(SLURM_PLAYBOOK, [case.values[0] for case in BAD_INPUTS])


@pytest.mark.parametrize("extra_vars,words", BAD_INPUTS)
def test_bad_input_fails_before_any_change(bad_input_runs, extra_vars, words):
    (before_conf, before_ids), runs = bad_input_runs
    run = runs[case_key(extra_vars)]
    if "slurm_worker_mode" in extra_vars:
        # The controller's play has nothing to change; the workers' fails in its preflight.
        assert run.rc != 0 and run.total_changed == 0 and "slurm_worker_mode" in run.output and "Fix:" in run.output, run
        assert f"but {WORKERS[0]} has no address on the macvlan network" in run.output, run
        assert conf_checksums() == before_conf and daemon_ids() == before_ids
        assert wait_for_idle_workers() == ALL_IDLE
        return
    assert_failed_before_any_change(run, before_conf, before_ids, *words)


# The checks are tagged always: a run limited to one step by --tags fails before any change as a whole run does.
def test_bad_input_in_a_run_limited_by_tags_fails_before_any_change():
    before_conf, before_ids = conf_checksums(), daemon_ids()
    run = run_playbook(SLURM_PLAYBOOK, "--tags", "slurm_worker_configure", extra_vars={"slurm_master_config": {"SlurmdTimout": 300}})
    assert_failed_before_any_change(run, before_conf, before_ids, "slurm_master_config has keys that are not slurm.conf keys", "'SlurmdTimout'")


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
