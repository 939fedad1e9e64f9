"""Native Slurm on three real nodes: slurmctld on the controller (also the login node), slurmd on two
workers, users' homes on GlusterFS, one MUNGE key. Jobs run as a cluster user; a second run restarts
nothing; bad inputs fail before any change."""

from __future__ import annotations

import re
import time
import uuid

import pytest
from helpers import get_host, inventory_hosts, journal_on_failure, run_playbook

CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
testinfra_hosts = [CONTROLLER]
SLURM_PLAYBOOK = "../../playbooks/slurm.yml"
USER, UID, GID = "alice", 2001, 2001
HOME = f"/gfsv/home/{USER}"
CONF = "/etc/slurm/slurm.conf"

PI_PROGRAM = """\
import socket
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = 4_000_000
h = 1.0 / n
x = (np.arange(rank, n, size, dtype=np.float64) + 0.5) * h
mypi = comm.reduce(np.sum(4.0 / (1.0 + x * x)) * h, op=MPI.SUM, root=0)
hosts = comm.gather(socket.gethostname(), root=0)
if rank == 0:
    print("ranks %d on hosts %s" % (size, ",".join(sorted(set(hosts)))))
    print("pi is approximately %.16f, Error is %.16f" % (mypi, abs(mypi - np.pi)))
"""

# 8 ranks on 2 nodes of 2 CPUs each: --overcommit lets Slurm place 4 tasks per node, and mpirun
# (Open MPI starts its daemons with srun inside the allocation) uses those slots. No cgroups, no
# ptrace-based single copy and no RDMA in the containers: shared memory and TCP only.
PI_JOB = f"""\
#!/bin/bash
#SBATCH --job-name=mpi-pi
#SBATCH --nodes=2
#SBATCH --ntasks=8
#SBATCH --overcommit
#SBATCH --output={HOME}/mpi-pi-%j.out
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun -np 8 --oversubscribe --bind-to none python3 {HOME}/mpi_pi.py
"""


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
    host = controller()
    host.check_output(f"cat > {HOME}/mpi_pi.py <<'EOF'\n{PI_PROGRAM}EOF")
    host.check_output(f"cat > {HOME}/mpi_pi.sh <<'EOF'\n{PI_JOB}EOF")
    host.check_output(f"chown {USER}:{USER} {HOME}/mpi_pi.py {HOME}/mpi_pi.sh")
    submitted = host.run(as_user("timeout 300 sbatch --wait --parsable mpi_pi.sh"))
    job_id = submitted.stdout.strip().split(";")[0]
    output = host.run(f"cat {HOME}/mpi-pi-{job_id}.out").stdout
    assert submitted.rc == 0, (submitted.stderr, output)
    assert f"ranks 8 on hosts {','.join(WORKERS)}" in output, output
    match = re.search(r"pi is approximately (3\.14159265\d*), Error is ([0-9.e-]+)", output)
    assert match and float(match.group(2)) < 1e-6, output


def test_file_written_by_a_job_on_one_worker_is_read_by_a_job_on_the_other():
    token = f"from {WORKERS[0]} {uuid.uuid4()}"
    host = controller()
    host.check_output(as_user(f"srun --nodes=1 --nodelist={WORKERS[0]} sh -c \"echo '{token}' > {HOME}/shared.txt\""))
    assert host.check_output(as_user(f"srun --nodes=1 --nodelist={WORKERS[1]} cat {HOME}/shared.txt")) == token
    assert host.check_output(as_user(f"srun --nodes=1 --nodelist={WORKERS[1]} stat -c %u {HOME}/shared.txt")) == str(UID)


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
        assert conf_checksums() == before_conf and daemon_ids() == before_ids
        return
    assert_failed_before_any_change(run, before_conf, before_ids, *words)


def test_host_name_that_cannot_be_a_slurm_node_name_fails_before_any_change(tmp_path):
    # A second inventory adds slurmd1 again under a dotted name to the worker group.
    extra_inventory = tmp_path / "bad_name.yml"
    extra_inventory.write_text(
        "all:\n  children:\n    slurm_worker:\n      hosts:\n        slurmd1.bad:\n"
        f"          ansible_host: {WORKERS[0]}\n          ansible_connection: community.docker.docker\n"
        "          ansible_python_interpreter: /usr/bin/python3\n"
    )
    before_conf, before_ids = conf_checksums(), daemon_ids()
    run = run_playbook(SLURM_PLAYBOOK, "-i", str(extra_inventory))
    assert_failed_before_any_change(run, before_conf, before_ids, "'slurmd1.bad'", "cannot be a Slurm node name", "inventory_hostname")


@pytest.fixture
def munge_key_missing_on_last_worker():
    node = get_host(WORKERS[-1])
    node.check_output("mv /etc/munge/munge.key /root/munge.key.away")
    yield WORKERS[-1]
    node.check_output("mv /root/munge.key.away /etc/munge/munge.key")


def test_missing_munge_key_fails_before_any_change(munge_key_missing_on_last_worker):
    before_conf, before_ids = conf_checksums(), daemon_ids()
    run = run_playbook(SLURM_PLAYBOOK)
    assert_failed_before_any_change(
        run, before_conf, before_ids, f"/etc/munge/munge.key is missing on {munge_key_missing_on_last_worker}", "munge_group", "munge role"
    )
