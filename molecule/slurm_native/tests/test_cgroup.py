"""cgroup enforcement (issue 19, part 5): the scenario's nodes run with the lab's flags (--cgroupns=host,
/sys/fs/cgroup mounted read-write, a cgroup v1 hybrid host), where every worker allows it, so
slurm_master_cgroup: auto (the default) turns it on. A job that allocates more than its --mem is killed,
a job's tasks see only their CPUs, and every node holds the same cgroup.conf."""

from __future__ import annotations

import re

from helpers import get_host, inventory_hosts, journal_on_failure
from slurm_checks import HOME, native_as_user as as_user

CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
testinfra_hosts = [CONTROLLER]
CGROUP_CONF = "/etc/slurm/cgroup.conf"
# 200 MiB held in one bytearray (zero-filled, so every page is touched).
ALLOCATE_200M = "python3 -c 'b = bytearray(200 * 1024 * 1024); print(len(b))'"


def controller():
    return get_host(CONTROLLER)


def config() -> dict[str, str]:
    """`scontrol show config` as slurmctld runs it: key to value."""
    lines = controller().check_output("scontrol show config").splitlines()
    return {k.strip(): v.strip() for k, sep, v in (line.partition("=") for line in lines) if sep}


def test_every_worker_allows_cgroup_enforcement():
    # What node_hardware_facts reads there, as the role's decision (filter slurm_cgroup_plan) saw it.
    for worker in WORKERS:
        host = get_host(worker)
        assert host.file("/sys/fs/cgroup/systemd/cgroup.procs").exists, worker
        for controller_name in ("cpuset", "memory", "devices", "freezer"):
            assert host.run(f"test -w /sys/fs/cgroup/{controller_name}").rc == 0, (worker, controller_name)


def test_slurmctld_runs_the_cgroup_plugins():
    conf = config()
    # The lab's nodes have no CAP_SYS_NICE (docker run without --cap-add SYS_NICE): task/cgroup alone.
    assert (conf["ProctrackType"], conf["TaskPlugin"], conf["SelectTypeParameters"]) == (
        "proctrack/cgroup", "task/cgroup", "CR_CORE_MEMORY"), conf
    assert int(conf["DefMemPerCPU"]) > 0, conf


def test_the_same_cgroup_conf_on_every_node():
    texts = {h: get_host(h).file(CGROUP_CONF).content_string for h in [CONTROLLER] + WORKERS}
    assert len(set(texts.values())) == 1, texts
    lines = set(texts[CONTROLLER].splitlines())
    assert {"CgroupPlugin=autodetect", "ConstrainCores=yes", "ConstrainRAMSpace=yes", "ConstrainDevices=yes"} <= lines
    assert (get_host(WORKERS[0]).file(CGROUP_CONF).mode, get_host(WORKERS[0]).file(CGROUP_CONF).user) == (0o644, "root")


def test_a_job_that_allocates_more_than_its_memory_is_killed():
    run = controller().run(as_user(f"srun --nodes=1 --mem=50M {ALLOCATE_200M}"))
    with journal_on_failure(get_host(WORKERS[0]), "slurmd"):
        assert run.rc != 0, run
        assert "oom-kill event" in run.stderr or "Out Of Memory" in run.stderr, run.stderr
        assert str(200 * 1024 * 1024) not in run.stdout, run.stdout


def test_a_job_within_its_memory_runs():
    run = controller().run(as_user(f"srun --nodes=1 --mem=300M {ALLOCATE_200M}"))
    assert (run.rc, run.stdout.strip()) == (0, str(200 * 1024 * 1024)), run


def test_a_batch_job_over_its_memory_ends_out_of_memory():
    out = f"{HOME}/oom-%j.out"
    run = controller().run(as_user(
        f"sbatch --wait --parsable --mem=50M --output={out} --wrap \"{ALLOCATE_200M}\""))
    job_id = run.stdout.strip().split(";")[0]
    text = controller().run(f"cat {HOME}/oom-{job_id}.out").stdout
    assert run.rc != 0 and job_id, run
    assert "oom-kill event" in text, text


def test_a_task_sees_only_its_cpus():
    worker = WORKERS[0]
    cpus = int(re.search(r"CPUTot=(\d+)", controller().check_output(f"scontrol show node {worker}")).group(1))
    assert cpus >= 2
    assert controller().check_output(as_user(f"srun --nodelist={worker} --cpus-per-task=1 nproc")) == "1"
    # A task given every CPU of the node sees them all.
    assert controller().check_output(as_user(f"srun --nodelist={worker} --cpus-per-task={cpus} nproc")) == str(cpus)
