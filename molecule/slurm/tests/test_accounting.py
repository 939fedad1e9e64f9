"""Slurm accounting in the reference design: slurmdbd and its MariaDB database in containers on the
controller's node, on the macvlan network, their data and configuration on host directories. sacct
lists the jobs the cluster user ran with their states, and still does after the controller, slurmdbd
and MariaDB containers are recreated. The database password is in no log, no `docker inspect` and no
process list."""

from __future__ import annotations

import json
import shlex
import time

from helpers import get_host, inventory_hosts, run_playbook

CONTROLLER = inventory_hosts("slurm_master")[0]
DBD, DB = f"{CONTROLLER}-slurmdbd", f"{CONTROLLER}-mariadb"
ACCOUNTING_CONTAINERS = [CONTROLLER, DBD, DB]
testinfra_hosts = [CONTROLLER]
SLURM_PLAYBOOK = "../../playbooks/slurm.yml"
USER, CLUSTER = "alice", "molecule"
HOST_CONF = "/etc/hpclab/slurm/slurm.conf"
DBD_CONF = "/etc/hpclab/slurmdbd/slurmdbd.conf"
PASSWORD_FILE = "/var/lib/hpclab/slurm/slurmdbd-db.password"
DB_DIR = "/var/lib/hpclab/slurm/mysql"
SLURM_UID = 64030
# Jobs run by this file: name to job id.
RAN: dict[str, str] = {}


def host():
    return get_host(CONTROLLER)


def ctl(command: str) -> str:
    return host().check_output(f"docker exec {CONTROLLER} bash -c {shlex.quote(command)}")


def password() -> str:
    return host().check_output(f"cat {PASSWORD_FILE}").strip()


def user_jobs() -> dict[str, tuple[str, str]]:
    """The cluster user's jobs in the accounting database: job id to (name, state)."""
    out = ctl(f"sacct --noheader --parsable2 --allocations --user={USER} --starttime=2000-01-01 --format=JobID,JobName,State")
    return {job_id: (name, state) for job_id, name, state in (line.split("|") for line in out.splitlines() if line)}


def test_slurm_conf_sends_job_records_to_slurmdbd():
    conf = host().file(HOST_CONF).content_string.splitlines()
    assert "AccountingStorageType=accounting_storage/slurmdbd" in conf
    assert f"AccountingStorageHost={DBD}" in conf


def test_the_cluster_is_registered_once():
    assert ctl("sacctmgr --noheader --parsable2 list cluster format=cluster").split() == [CLUSTER]


def run_job(name: str, command: str) -> str:
    """A batch job of the cluster user, waited for; its id."""
    out = host().run(
        f"docker exec -u {USER} -w /gfsv/home/{USER} {CONTROLLER} "
        f"sbatch --parsable --wait --job-name={name} --output=/dev/null --wrap {shlex.quote(command)}"
    )
    return out.stdout.strip().split(";")[0]


def wait_for_records(expected: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """slurmctld sends job records to slurmdbd asynchronously: wait for them."""
    jobs = {}
    for _attempt in range(30):
        jobs = user_jobs()
        if all(jobs.get(k) == v for k, v in expected.items()):
            break
        time.sleep(2)
    return jobs


def test_sacct_lists_the_jobs_the_scenario_ran_with_their_states():
    # Pytest runs this file before test_slurm.py (alphabetical), so it runs its own jobs; run after
    # test_slurm.py, it also sees that file's jobs (srun hostname, mpi-pi, rolljob...).
    RAN["acct-ok"] = run_job("acct-ok", "true")
    RAN["acct-fail"] = run_job("acct-fail", "exit 3")
    expected = {RAN["acct-ok"]: ("acct-ok", "COMPLETED"), RAN["acct-fail"]: ("acct-fail", "FAILED")}
    jobs = wait_for_records(expected)
    assert {k: jobs.get(k) for k in expected} == expected, jobs
    assert all(state for _name, state in jobs.values()), jobs


def test_slurmdbd_conf_is_readable_by_slurm_only_and_mounted_read_only():
    conf = host().file(DBD_CONF)
    assert (conf.mode, conf.uid, conf.gid) == (0o600, SLURM_UID, SLURM_UID)
    mounts = {m["Destination"]: m for m in json.loads(host().check_output(f"docker inspect {DBD}"))[0]["Mounts"]}
    assert mounts["/etc/slurm"]["Source"] == "/etc/hpclab/slurmdbd" and not mounts["/etc/slurm"]["RW"]


def test_database_password_is_generated_once_and_kept_root_only():
    kept = host().file(PASSWORD_FILE)
    assert (kept.mode, kept.uid) == (0o600, 0)
    assert len(password()) == 32 and password().isalnum()
    assert f"StoragePass={password()}" in host().check_output(f"cat {DBD_CONF}")


def test_mariadb_keeps_its_data_on_a_host_directory():
    mounts = {m["Destination"]: m for m in json.loads(host().check_output(f"docker inspect {DB}"))[0]["Mounts"]}
    assert mounts["/var/lib/mysql"]["Source"] == DB_DIR
    assert host().file(f"{DB_DIR}/slurm_acct_db").is_directory


def test_password_is_in_no_container_settings_and_no_process_list():
    secret = password()
    for name in ACCOUNTING_CONTAINERS:
        assert secret not in host().check_output(f"docker inspect {name}"), name
    assert secret not in host().check_output("ps -eo args")
    assert secret not in host().check_output(f"docker logs {DBD} 2>&1")


def test_recreated_controller_slurmdbd_and_mariadb_containers_keep_the_job_history():
    before = user_jobs()
    ids = {n: json.loads(host().check_output(f"docker inspect {n}"))[0]["Id"] for n in ACCOUNTING_CONTAINERS}
    host().check_output(f"docker rm -f {' '.join(ACCOUNTING_CONTAINERS)}")
    run = run_playbook(SLURM_PLAYBOOK)
    assert run.rc == 0, run
    assert password() not in run.output
    for name in ACCOUNTING_CONTAINERS:
        assert json.loads(host().check_output(f"docker inspect {name}"))[0]["Id"] != ids[name]
    after = wait_for_records(before)
    assert {k: after.get(k) for k in before} == before, after
    assert RAN and set(RAN.values()) <= set(after), (RAN, after)
    # A job run now is recorded too.
    job_id = run_job("after-recreate", "true")
    assert wait_for_records({job_id: ("after-recreate", "COMPLETED")}).get(job_id) == ("after-recreate", "COMPLETED")
