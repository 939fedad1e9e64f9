"""The reference design on three real nodes, each with its own Docker engine: slurmctld in a
container on the controller's node (also the login node), slurmd in a container on each worker's
node, all on one macvlan network with fixed addresses; users' homes on GlusterFS and the MUNGE key of
the munge role. Jobs are submitted from inside the controller container as a cluster user; a second
run restarts nothing; bad inputs fail before any change."""

from __future__ import annotations

import json
import re
import shlex
import time

import pytest
from slurm_checks import GID, HOME, UID, USER, check_file_shared_between_jobs, check_mpi_pi, dotted_name_inventory, munge_key_away
from helpers import case_key, get_host, inventory_hosts, run_playbook, run_playbooks_side_by_side

CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
NODES = [CONTROLLER] + WORKERS
testinfra_hosts = [CONTROLLER]
SLURM_PLAYBOOK = "../../playbooks/slurm.yml"
HOST_CONF = "/etc/hpclab/slurm/slurm.conf"
NETWORK, SUBNET, IP_RANGE = "slurm", "172.31.240.0/24", "172.31.240.192/28"
CONTROLLER_IP = "172.31.240.200"


def node(name: str):
    return get_host(name)


def in_container(name: str, command: str, user: str = "root") -> str:
    """A shell command run inside the Slurm container on node NAME (containers are named after their node)."""
    workdir = HOME if user == USER else "/"
    return f"docker exec -u {user} -w {workdir} {name} bash -c {shlex.quote(command)}"


def as_user(command: str) -> str:
    """A command run as the cluster user in the controller container, from the shared home."""
    return in_container(CONTROLLER, command, user=USER)


def ctl(command: str) -> str:
    return node(CONTROLLER).check_output(in_container(CONTROLLER, command))


def inspect(name: str) -> dict:
    return json.loads(node(name).check_output(f"docker inspect {name}"))[0]


def container_ids() -> dict[str, tuple]:
    """Container id, main PID and start time of every Slurm container: they change on any restart."""
    ids = {}
    for name in NODES:
        info = inspect(name)
        ids[name] = (info["Id"], info["State"]["Pid"], info["State"]["StartedAt"])
    return ids


def conf_checksums() -> dict[str, str]:
    return {h: node(h).check_output(f"sha256sum {HOST_CONF}").split()[0] for h in NODES}


def wait_for_idle_workers():
    out = ""
    for _attempt in range(45):
        out = ctl("sinfo --noheader --format=%t,%N")
        if out == f"idle,{','.join(WORKERS)}" or out == "idle,cn[1-2]":
            return "idle"
        time.sleep(2)
    return out


@pytest.mark.parametrize("name", NODES)
def test_one_daemon_per_container_under_tini_healthy_and_restarting(name):
    daemon = "slurmctld" if name == CONTROLLER else "slurmd"
    info = inspect(name)
    assert info["State"]["Running"] and info["HostConfig"]["RestartPolicy"]["Name"] == "unless-stopped"
    assert info["Config"]["Entrypoint"] == ["/usr/bin/tini", "--"] and info["Config"]["Cmd"] == [daemon, "-D"]
    assert info["Config"]["Hostname"] == name
    processes = node(name).check_output(f"docker exec {name} ps -eo comm=").split()
    # slurmctld forks its own script helper, slurmscriptd (Slurm 22.05). Docker's health check is
    # another `docker exec` that may be running at that moment: runc's init, then the check's command.
    helpers = {"slurmscriptd"} if daemon == "slurmctld" else set()
    transient = {"ps", "scontrol", "bash"}
    assert {p for p in processes if not p.startswith("runc:")} - transient == {"tini", daemon} | helpers, processes
    status = ""
    for _attempt in range(40):
        status = inspect(name)["State"]["Health"]["Status"]
        if status == "healthy":
            break
        time.sleep(3)
    assert status == "healthy", inspect(name)["State"]["Health"]


@pytest.mark.parametrize("name", NODES)
def test_container_is_a_host_of_the_macvlan_network_with_every_member_in_etc_hosts(name):
    host = node(name)
    net = json.loads(host.check_output(f"docker network inspect {NETWORK}"))[0]
    assert net["Driver"] == "macvlan" and net["Options"]["parent"] == "eth0"
    assert net["IPAM"]["Config"][0]["Subnet"] == SUBNET and net["IPAM"]["Config"][0]["IPRange"] == IP_RANGE
    address = inspect(name)["NetworkSettings"]["Networks"][NETWORK]["IPAddress"]
    assert address.startswith("172.31.240.") and 192 <= int(address.rsplit(".", 1)[1]) < 208
    if name == CONTROLLER:
        assert address == CONTROLLER_IP
    hosts = host.check_output(f"docker exec {name} cat /etc/hosts")
    for member in NODES:
        member_ip = inspect(member)["NetworkSettings"]["Networks"][NETWORK]["IPAddress"] if member == name else None
        assert re.search(rf"^172\.31\.240\.\d+\s+{member}$", hosts, re.M), hosts
        if member_ip:
            assert f"{member_ip}\t{member}" in hosts or f"{member_ip} {member}" in hosts


def test_addresses_are_unique():
    addresses = [inspect(n)["NetworkSettings"]["Networks"][NETWORK]["IPAddress"] for n in NODES]
    assert len(set(addresses)) == len(NODES), addresses


def test_daemon_logs_go_to_docker_logs():
    assert "slurmctld version 22.05" in node(CONTROLLER).check_output(f"docker logs {CONTROLLER} 2>&1")
    for worker in WORKERS:
        assert "slurmd version 22.05" in node(worker).check_output(f"docker logs {worker} 2>&1")


def test_no_ssh_server_and_no_password_in_the_images():
    for name in NODES:
        host = node(name)
        assert host.run(f"docker exec {name} test -e /usr/sbin/sshd").rc != 0
        shadow = host.check_output(f"docker exec {name} getent shadow {USER}").split(":")[1]
        assert shadow in ("!", "*", "!*"), "no password login for cluster users"


def test_same_slurm_conf_on_every_node_bind_mounted_read_only():
    assert len(set(conf_checksums().values())) == 1
    for name in NODES:
        mounts = {m["Destination"]: m for m in inspect(name)["Mounts"]}
        assert mounts["/etc/slurm"]["Source"] == "/etc/hpclab/slurm" and not mounts["/etc/slurm"]["RW"]
        assert mounts["/run/munge"]["Source"] == "/run/munge"
        assert mounts[HOME.rsplit("/", 1)[0]]["Source"] == "/gfsv/home"


def test_controller_state_is_kept_on_a_host_volume():
    host = node(CONTROLLER)
    assert host.file("/var/lib/hpclab/slurm/slurmctld/node_state").exists
    assert host.file("/var/lib/hpclab/slurm/slurmctld").uid == 64030


def test_a_credential_made_in_the_controller_container_decodes_in_a_worker_container():
    credential = ctl("munge -n")
    decoded = node(WORKERS[-1]).run(f"echo {shlex.quote(credential)} | docker exec -i {WORKERS[-1]} unmunge")
    assert decoded.rc == 0 and "STATUS:          Success (0)" in decoded.stdout, decoded.stdout + decoded.stderr


def test_the_host_shim_lets_the_controller_node_reach_its_own_container():
    assert node(CONTROLLER).run(f"timeout 5 bash -c 'exec 3<>/dev/tcp/{CONTROLLER_IP}/6817'").rc == 0


def test_without_the_shim_a_node_cannot_reach_its_own_container():
    worker = WORKERS[0]
    address = inspect(worker)["NetworkSettings"]["Networks"][NETWORK]["IPAddress"]
    assert node(worker).run(f"timeout 3 bash -c 'exec 3<>/dev/tcp/{address}/6818'").rc != 0


def test_sinfo_shows_both_workers_idle_in_the_default_partition():
    assert wait_for_idle_workers() == "idle"
    out = ctl("sinfo --noheader --format=%P,%t,%D")
    assert out == "batch*,idle,2", out


def test_cluster_user_has_the_same_ids_in_every_container():
    for name in NODES:
        assert node(name).check_output(f"docker exec {name} id -u {USER}") == str(UID)
        assert node(name).check_output(f"docker exec {name} id -g {USER}") == str(GID)


def test_srun_on_two_nodes_answers_from_both_workers():
    out = node(CONTROLLER).check_output(as_user("srun --nodes=2 hostname"))
    assert sorted(out.split()) == WORKERS


def test_mpi_pi_batch_job_over_two_nodes():
    check_mpi_pi(node(CONTROLLER), as_user, WORKERS)


def test_file_written_by_a_job_on_one_worker_is_read_by_a_job_on_the_other():
    check_file_shared_between_jobs(node(CONTROLLER), as_user, WORKERS)


def test_gpu_worker_offers_jobs_only_the_gpu_llm_serving_leaves_free():
    # cn2 has two GPUs for the LLM serving plan, which puts its one vLLM model on GPU 0: Slurm gets GPU 1 only.
    gpu_worker = WORKERS[-1]
    gres = dict(line.split() for line in ctl("sinfo --noheader --Node --format='%N %G'").splitlines())
    assert gres == {WORKERS[0]: "(null)", gpu_worker: "gpu:1"}, gres
    for name in NODES:
        conf = node(name).file("/etc/hpclab/slurm/gres.conf")
        assert conf.contains(f"^NodeName={gpu_worker} Name=gpu File=/dev/nvidia1$"), conf.content_string
        assert not conf.contains("/dev/nvidia0"), conf.content_string
    assert "GresTypes=gpu" in node(CONTROLLER).file(HOST_CONF).content_string
    for _attempt in range(3):
        out = node(CONTROLLER).check_output(as_user("srun --gres=gpu:1 sh -c 'echo $(hostname) $CUDA_VISIBLE_DEVICES'"))
        # The slurmd container holds /dev/nvidia1 only: CUDA numbers it 0 there, as Slurm says.
        assert out == f"{gpu_worker} 0", out
    refused = node(CONTROLLER).run(as_user(f"srun --gres=gpu:1 --nodelist={WORKERS[0]} hostname"))
    assert refused.rc != 0, refused.stdout
    # Both GPUs: refused by Slurm itself, at submission, since no node has two to offer.
    both = node(CONTROLLER).run(as_user("srun --gres=gpu:2 hostname"))
    print("srun --gres=gpu:2 ->", both.rc, both.stderr.strip())
    assert both.rc != 0, both.stdout
    assert "Requested node configuration is not available" in both.stderr, both.stderr


def test_a_run_that_changes_nothing_restarts_nothing():
    # The whole converge (storage, MUNGE, Slurm, backups) again, in place of Molecule's idempotence step:
    # changed=0, and no container of the Slurm layer restarted.
    before = container_ids()
    run = run_playbook()
    assert run.rc == 0, run
    assert run.total_changed == 0, run
    assert container_ids() == before


# A run limited by --tags to the Slurm layer's configure and service steps: the macvlan addresses, the checks and the
# controller's settings still come first (tagged always), and the containers are left as they are.
def test_a_run_limited_by_tags_to_configure_and_service_changes_nothing():
    before = container_ids()
    tags = "slurm_master_configure,slurm_worker_configure,slurm_master_service,slurm_worker_service"
    run = run_playbook(SLURM_PLAYBOOK, "--tags", tags)
    assert run.rc == 0, run
    assert run.total_changed == 0, run
    assert container_ids() == before
    # The service steps alone: no slurm.conf is written in that run.
    service = run_playbook(SLURM_PLAYBOOK, "--tags", "slurm_master_service,slurm_worker_service")
    assert service.rc == 0, service
    assert service.total_changed == 0, service
    assert container_ids() == before


def test_a_run_restarts_the_containers_whose_daemon_runs_but_does_not_answer():
    """Issue 53: a run that changes nothing asks each daemon whether it answers. slurmctld and one slurmd are stopped
    (SIGSTOP: running, not answering, their containers still up and, for a while, healthy): the service steps restart
    those two containers and no other, the controller answers and both workers return idle; the next run changes
    nothing."""
    hung = WORKERS[0]
    before = container_ids()
    node(CONTROLLER).check_output("pkill --signal STOP --exact slurmctld")
    node(hung).check_output("pkill --signal STOP --exact slurmd")
    tags = ("--tags", "slurm_master_service,slurm_worker_service")
    run = run_playbook(SLURM_PLAYBOOK, *tags)
    assert run.rc == 0, run
    assert {h: r["changed"] for h, r in run.recap.items() if r["changed"]} == {CONTROLLER: 1, hung: 1}, run
    assert "Restart the slurmctld container whose slurmctld runs but does not answer" in run.output, run
    assert "Restart the slurmd container whose slurmd runs but does not answer" in run.output, run
    after = container_ids()
    assert after[CONTROLLER][2] != before[CONTROLLER][2] and after[hung][2] != before[hung][2], (before, after)
    assert {w: after[w] for w in WORKERS if w != hung} == {w: before[w] for w in WORKERS if w != hung}
    assert "is UP" in ctl("scontrol ping")
    assert wait_for_idle_workers() == "idle"
    again = run_playbook(SLURM_PLAYBOOK, *tags)
    assert again.rc == 0 and again.total_changed == 0, again
    assert container_ids() == after


def test_check_mode_changes_nothing():
    run = run_playbook(check=True)
    assert run.rc == 0, run
    assert run.total_changed == 0, run


def assert_failed_before_any_change(run, before_conf, before_ids, *words):
    assert run.rc != 0, run
    for word in words + ("Fix:",):
        assert word in run.output, (word, run)
    assert run.total_changed == 0, run
    assert "preflight |" in run.output and "configure | " not in run.output, run
    assert conf_checksums() == before_conf
    assert container_ids() == before_ids
    # The cluster still answers as before: sinfo in the controller's container, both workers idle.
    assert wait_for_idle_workers() == "idle"


BAD_INPUTS = [
    pytest.param(
        {"docker_macvlan_ips": {WORKERS[0]: "172.31.240.201", WORKERS[1]: "172.31.240.201"}},
        ["docker_macvlan_ips", f"'{WORKERS[1]}' has 172.31.240.201, which docker_macvlan_ips '{WORKERS[0]}' has too"],
        id="duplicate-container-ips",
    ),
    pytest.param(
        {"docker_macvlan_ips": {WORKERS[0]: "172.31.240.50"}},
        ["docker_macvlan_ips", "outside docker_macvlan_ip_range 172.31.240.192/28"],
        id="ip-outside-ip-range",
    ),
    pytest.param(
        {"docker_macvlan_ip_range": "172.31.241.0/28"},
        ["docker_macvlan_ip_range 172.31.241.0/28 is not inside docker_macvlan_subnet"],
        id="ip-range-outside-subnet",
    ),
    pytest.param(
        {"docker_macvlan_parent": "eth9"},
        ["no interface 'eth9'", "docker_macvlan_parent"],
        id="missing-parent-interface",
    ),
    pytest.param(
        {"slurm_worker_gpus": {"count": 2, "type": "testgpu", "files": ["/dev/null"]}},
        ["slurm_worker_gpus of", "is not {count: N"],
        id="gpu-count-and-files-disagree",
    ),
    pytest.param(
        {"slurm_worker_gpus": {"count": 1, "files": ["/dev/nvidia0"]}},
        [f"{WORKERS[1]}: slurm_worker_gpus lists GPU 0 (/dev/nvidia0), which LLM serving also takes (stablelm-2)",
         "hpclab_slurm_share_serving_gpus"],
        id="gpu-given-to-serving-and-to-slurm",
    ),
    pytest.param(
        {"slurm_master_partitions": {"batch": [WORKERS[0]]}},
        ["slurm_master_partitions", f"worker '{WORKERS[1]}' is in no partition"],
        id="worker-in-no-partition",
    ),
    pytest.param(
        {"slurm_master_config": {"MaxTime": "1:00:00"}},
        ["slurm_master_config", "'MaxTime'"],
        id="partition-key-in-slurm-conf",
    ),
]


@pytest.fixture(scope="module")
def bad_input_runs():
    """Every bad input's run, side by side, and the files and containers before them."""
    before = conf_checksums(), container_ids()
    return before, run_playbooks_side_by_side(SLURM_PLAYBOOK, [case.values[0] for case in BAD_INPUTS])


@pytest.mark.parametrize("extra_vars,words", BAD_INPUTS)
def test_bad_input_fails_before_any_change(bad_input_runs, extra_vars, words):
    (before_conf, before_ids), runs = bad_input_runs
    assert_failed_before_any_change(runs[case_key(extra_vars)], before_conf, before_ids, *words)


def test_unknown_mode_is_refused_by_the_role_arguments_before_any_change():
    before_conf, before_ids = conf_checksums(), container_ids()
    run = run_playbook(SLURM_PLAYBOOK, extra_vars={"slurm_master_mode": "podman"})
    assert run.rc != 0 and run.total_changed == 0, run
    assert "slurm_master_mode" in run.output and "podman" in run.output and "container, native" in run.output, run
    assert conf_checksums() == before_conf and container_ids() == before_ids


def test_host_name_that_cannot_be_a_slurm_node_name_fails_before_any_change(tmp_path):
    extra_inventory = dotted_name_inventory(tmp_path, "cn1.bad", WORKERS[0])
    before_conf, before_ids = conf_checksums(), container_ids()
    run = run_playbook(SLURM_PLAYBOOK, "-i", extra_inventory)
    assert_failed_before_any_change(run, before_conf, before_ids, "'cn1.bad'", "cannot be a Slurm node name", "inventory_hostname")


@pytest.fixture
def munge_key_missing_on_last_worker():
    with munge_key_away(node(WORKERS[-1]), WORKERS[-1]) as name:
        yield name


def test_missing_munge_key_fails_before_any_change(munge_key_missing_on_last_worker):
    before_conf, before_ids = conf_checksums(), container_ids()
    run = run_playbook(SLURM_PLAYBOOK)
    assert_failed_before_any_change(
        run, before_conf, before_ids, f"/etc/munge/munge.key is missing on {munge_key_missing_on_last_worker}", "munge_group", "munge role"
    )


def test_rolling_restart_of_the_worker_containers_while_a_job_runs_loses_no_job():
    host = node(CONTROLLER)
    host.check_output(f"rm -f {HOME}/rolljob.end")
    job_id = host.check_output(as_user(
        f"sbatch --parsable --job-name=rolljob --nodelist={WORKERS[0]} --ntasks=1 --output={HOME}/rolljob-%j.out "
        f"--wrap 'sleep 30; date > {HOME}/rolljob.end'"
    ))
    for _attempt in range(60):
        if ctl(f"squeue --noheader --jobs={job_id} --format=%T") == "RUNNING":
            break
        time.sleep(1)
    before = container_ids()
    run = run_playbook("../../playbooks/slurm_rolling_restart.yml", extra_vars={"slurm_rolling_poll_interval": 1})
    assert run.rc == 0, run
    fields = dict(token.split("=", 1) for token in ctl(f"scontrol show job -o {job_id}").split() if "=" in token)
    assert (fields["JobState"], fields["ExitCode"], fields["Restarts"]) == ("COMPLETED", "0:0", "0"), fields
    assert host.file(f"{HOME}/rolljob.end").exists
    after = container_ids()
    assert all(after[w][2] != before[w][2] for w in WORKERS), (before, after)  # every slurmd restarted
    assert after[CONTROLLER] == before[CONTROLLER]
    assert wait_for_idle_workers() == "idle"


def test_a_slurmd_container_whose_settings_change_is_drained_and_its_job_finishes_before_it_is_recreated():
    """A changed setting of the slurmd containers (here their spool directory on the host) recreates them one node at a
    time, each drained first: the job running on the first worker finishes (COMPLETED, not requeued) before its
    container is recreated, the second worker's container is recreated after the first's, and both are resumed."""
    host = node(CONTROLLER)
    job_id = host.check_output(as_user(
        f"sbatch --parsable --job-name=drainjob --nodelist={WORKERS[0]} --ntasks=1 --output={HOME}/drainjob-%j.out "
        "--wrap 'sleep 120'"
    ))
    for _attempt in range(60):
        if ctl(f"squeue --noheader --jobs={job_id} --format=%T") == "RUNNING":
            break
        time.sleep(1)
    before = container_ids()
    moved = {"slurm_worker_container_spool_dir": "/var/lib/hpclab/slurm/slurmd-moved"}
    run = run_playbook(SLURM_PLAYBOOK, extra_vars=moved)
    assert run.rc == 0, run
    fields = dict(token.split("=", 1) for token in ctl(f"scontrol show job -o {job_id}").split() if "=" in token)
    assert (fields["JobState"], fields["ExitCode"], fields["Restarts"]) == ("COMPLETED", "0:0", "0"), fields
    after = container_ids()
    assert all(after[w][0] != before[w][0] for w in WORKERS), (before, after)  # both recreated
    assert after[CONTROLLER] == before[CONTROLLER]
    # Slurm's times are the containers' local time, UTC as Docker's.
    assert after[WORKERS[0]][2][:19] >= fields["EndTime"], (fields["EndTime"], after[WORKERS[0]])
    assert after[WORKERS[0]][2] < after[WORKERS[1]][2], after
    drains = [part for part in run.output.split("TASK [")
              if f"Drain the node and wait until its jobs have ended, on {WORKERS[0]}]" in part.split("*")[0]]
    assert any(f"changed: [{WORKERS[0]} -> {CONTROLLER}]" in part for part in drains), drains
    binds = inspect(WORKERS[0])["HostConfig"]["Binds"]
    assert "/var/lib/hpclab/slurm/slurmd-moved:/var/spool/slurmd:rw" in binds, binds
    assert wait_for_idle_workers() == "idle"
    # Back to the converged settings: the containers are recreated again, with no job to wait for.
    run = run_playbook(SLURM_PLAYBOOK)
    assert run.rc == 0, run
    assert wait_for_idle_workers() == "idle"


# Last in the scenario, so that nothing after it needs the converged settings back: two runs of the Slurm
# playbook, the second building on the first (two runs fewer than two tests that each start from the converged
# state and go back to it): a reloadable change, then a change of the node lines (with the reloadable one undone).
def test_reloadable_change_is_reconfigured_then_changed_node_lines_restart_slurmctld_then_every_slurmd():
    before = container_ids()
    run = run_playbook(SLURM_PLAYBOOK, extra_vars={"slurm_master_max_time": 60})
    assert run.rc == 0, run
    assert "Reconfigure slurm" in run.output, run
    assert container_ids() == before
    assert ctl("sinfo --noheader --format=%l") == "1:00:00"
    run = run_playbook(SLURM_PLAYBOOK, extra_vars={"slurm_master_memory_fraction": 0.9})
    assert run.rc == 0, run
    after = container_ids()
    assert all(after[n][2] != before[n][2] for n in NODES), after
    assert all(after[w][2] > after[CONTROLLER][2] for w in WORKERS), after
    assert wait_for_idle_workers() == "idle"
    assert ctl("sinfo --noheader --format=%l") == "infinite"
