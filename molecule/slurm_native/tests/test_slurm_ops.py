"""Day-2 operations on real Slurm 22.05 daemons: hpclab.cluster.slurm_node_state drains a worker while a
job runs on it, waits until the job has ended, resumes it, changes nothing on a second call and refuses
bad input before any change; the rolling maintenance playbook restarts every slurmd while a job runs,
and the job completes with exit code 0; the MUNGE key is rotated while a job runs, and nothing of Slurm notices.

The tests run in file order on the slurm_native cluster, after test_slurm_native.py: each leaves every
worker idle."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
import uuid

import pytest
from helpers import get_host, inventory_hosts, journal_on_failure, run_playbook

CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
W1, W2 = WORKERS[:2]
testinfra_hosts = [CONTROLLER]
ROLLING = "../../playbooks/slurm_rolling_restart.yml"
USER, HOME = "alice", "/gfsv/home/alice"
REASON = f"ops test {uuid.uuid4().hex[:6]}: ticket=1 a=b"


def measured(name: str, number: float) -> None:
    """A number the test measured, printed by that test (pytest -rA shows it in the log)."""
    print(f"MEASURED {name}: {number}")


def controller():
    return get_host(CONTROLLER)


def node_state(tmp_path, check: bool = False, **args) -> dict:
    """Run the module once on the controller through node_state.yml; its registered result."""
    out = tmp_path / f"result-{uuid.uuid4().hex}.json"
    run = run_playbook("node_state.yml", check=check, extra_vars={"ops_args": args, "ops_result": str(out)})
    assert run.rc == 0, run
    return json.loads(out.read_text())


def show(node: str) -> dict:
    """`scontrol show node -o NODE` as a dict of its fields up to Reason=."""
    line = controller().check_output(f"scontrol show node -o {node}")
    head, _sep, reason = line.partition(" Reason=")
    fields = dict(token.split("=", 1) for token in head.split() if "=" in token)
    fields["Reason"] = reason
    return fields


def state(node: str) -> str:
    return controller().check_output(f"sinfo --noheader --node={node} --format=%T")


def job_fields(job_id: str) -> dict:
    line = controller().check_output(f"scontrol show job -o {job_id}")
    return dict(token.split("=", 1) for token in line.split() if "=" in token)


def submit(node: str, seconds: int, tag: str) -> str:
    """A sleep job of the cluster user on NODE; it writes its end time to HOME/TAG.end; returns once it runs."""
    host = controller()
    host.check_output(f"rm -f {HOME}/{tag}.end")
    job_id = host.check_output(
        f"cd {HOME} && runuser -u {USER} -- sbatch --parsable --job-name={tag} --nodelist={node} --ntasks=1 "
        f"--output={HOME}/{tag}-%j.out --wrap 'sleep {seconds}; date +%s.%N > {HOME}/{tag}.end'"
    )
    for _attempt in range(60):
        if host.check_output(f"squeue --noheader --jobs={job_id} --format=%T") == "RUNNING":
            return job_id
        time.sleep(1)
    raise AssertionError(f"job {job_id} did not start: {host.check_output('squeue')}")


def wait_idle(*nodes: str, seconds: int = 60) -> dict:
    states = {}
    for _attempt in range(seconds):
        states = {n: state(n) for n in nodes}
        if set(states.values()) == {"idle"}:
            break
        time.sleep(1)
    return states


def slurmd_pids() -> dict:
    return {w: get_host(w).check_output("systemctl show -p MainPID --value slurmd") for w in WORKERS}


@pytest.fixture(autouse=True)
def back_in_service():
    """Whatever a test did, leave every worker idle and in service."""
    yield
    host = controller()
    host.run(f"scancel --user={USER}")
    for worker in WORKERS:
        if state(worker) not in ("idle", "mixed", "allocated"):
            host.run(f"scontrol update NodeName={worker} State=RESUME")
    wait_idle(*WORKERS)


def test_every_worker_idle_to_begin_with():
    host = controller()
    with journal_on_failure(host, "slurmctld"):
        assert wait_idle(*WORKERS) == {w: "idle" for w in WORKERS}


# ------------------------------------------------------------------------------ drain, wait, resume


def test_drain_while_a_job_runs_reports_draining_then_wait_returns_when_drained(tmp_path):
    job_id = submit(W1, 15, "drainjob")
    first = node_state(tmp_path, nodes=[W1], state="drain", reason=REASON)
    assert first["changed"] is True, first
    assert first["nodes"][W1]["before"]["state"] == "MIXED"
    assert first["nodes"][W1]["after"]["state"] == "DRAINING"
    assert first["commands"] == [["scontrol", "update", f"NodeName={W1}", "State=DRAIN", f"Reason={REASON}"]]
    assert show(W1)["Reason"].startswith(REASON + " [root@")

    waited = node_state(tmp_path, nodes=[W1], state="drain", reason=REASON, wait=True, timeout=120, poll_interval=1)
    assert waited["changed"] is False, waited
    assert waited["nodes"][W1]["after"]["state"] == "DRAINED"
    assert [j["job_id"] for j in waited["jobs"]] == [job_id]
    ended = float(controller().check_output(f"cat {HOME}/drainjob.end"))
    assert job_fields(job_id)["JobState"] == "COMPLETED" and job_fields(job_id)["ExitCode"] == "0:0"
    measured("poll latency (job end -> module return, poll_interval=1), s", round(waited["returned_at"] - ended, 2))
    measured("module wait (waited), s", waited["waited"])

    again = node_state(tmp_path, nodes=[W1], state="drain", reason=REASON)
    assert again["changed"] is False and again["commands"] == [], again
    assert state(W1) == "drained"


def test_resume_returns_idle_and_a_second_resume_is_no_change(tmp_path):
    controller().check_output(f"scontrol update NodeName={W1} State=DRAIN 'Reason={REASON}'")
    resumed = node_state(tmp_path, nodes=[W1], state="resume", wait=True, timeout=60, poll_interval=1)
    assert resumed["changed"] is True, resumed
    assert resumed["nodes"][W1]["before"]["state"] == "DRAINED"
    assert resumed["nodes"][W1]["after"]["state"] == "IDLE" and resumed["nodes"][W1]["after"]["flags"] == []
    again = node_state(tmp_path, nodes=[W1], state="resume")
    assert again["changed"] is False and again["commands"] == [], again
    assert state(W1) == "idle"
    measured("no-change call, 1 node (task incl. transport), s", round(again["task_seconds"], 2))


def test_no_change_on_every_worker_by_hostlist(tmp_path):
    prefix = W1.rstrip("0123456789")
    result = node_state(tmp_path, nodes=[f"{prefix}[1-{len(WORKERS)}]"], state="undrain")
    assert result["changed"] is False and sorted(result["nodes"]) == WORKERS, result
    measured(f"no-change call, {len(WORKERS)} nodes by hostlist (task incl. transport), s", round(result["task_seconds"], 2))


def test_check_mode_predicts_and_changes_nothing(tmp_path):
    result = node_state(tmp_path, check=True, nodes=[W1, W2], state="drain", reason=REASON)
    assert result["changed"] is True and len(result["commands"]) == 2, result
    assert result["nodes"][W2]["after"]["state"] == "DRAINED"
    assert (state(W1), state(W2)) == ("idle", "idle")


# ------------------------------------------------------------------------------ bad input

BAD = [
    pytest.param({"nodes": ["ghost7"], "state": "drain", "reason": "x"}, "unknown node ghost7", id="unknown-node"),
    pytest.param({"nodes": [W1], "state": "drain"}, "missing: reason", id="drain-without-reason"),
    pytest.param({"nodes": [W1.rstrip("0123456789") + "[1-"], "state": "drain", "reason": "x"}, "does not parse", id="hostlist-unclosed"),
    pytest.param({"nodes": [W1.rstrip("0123456789") + "[1-x]"], "state": "drain", "reason": "x"}, "does not parse", id="hostlist-bad-range"),
    pytest.param({"nodes": [W1, "ghost7"], "state": "resume"}, "unknown node ghost7", id="unknown-among-known"),
]


@pytest.mark.parametrize("args,words", BAD)
def test_bad_input_fails_before_any_change(tmp_path, args, words):
    before = {w: show(w)["State"] for w in WORKERS}
    result = node_state(tmp_path, **args)
    assert result.get("failed") is True and words in result["msg"], result
    # an argument-spec failure (reason missing) ends before the module's own result exists
    assert result.get("commands", []) == []
    assert {w: show(w)["State"] for w in WORKERS} == before


def test_wait_timeout_fails_naming_the_running_job(tmp_path):
    job_id = submit(W2, 60, "longjob")
    result = node_state(tmp_path, nodes=[W2], state="drain", reason=REASON, wait=True, timeout=3, poll_interval=1)
    assert result.get("failed") is True, result
    assert "after 3 s these nodes are still not DRAINED" in result["msg"]
    assert f"{job_id} (longjob, {USER}, RUNNING, on {W2})" in result["msg"]
    assert state(W2) == "draining"  # the drain stays; the job goes on
    assert controller().check_output(f"squeue --noheader --jobs={job_id} --format=%T") == "RUNNING"


# ------------------------------------------------------------------------------ rolling maintenance


def test_rolling_restart_while_a_job_runs_loses_no_job():
    before = slurmd_pids()
    job_id = submit(W1, 30, "rolljob")
    started = time.monotonic()
    run = run_playbook(ROLLING, extra_vars={"slurm_rolling_poll_interval": 1})
    measured(f"rolling restart of {len(WORKERS)} workers with a 30 s job, s", round(time.monotonic() - started, 1))
    assert run.rc == 0, run
    fields = job_fields(job_id)
    assert (fields["JobState"], fields["ExitCode"], fields["Restarts"]) == ("COMPLETED", "0:0", "0"), fields
    assert controller().file(f"{HOME}/rolljob.end").exists
    after = slurmd_pids()
    assert all(after[w] != before[w] for w in WORKERS), (before, after)
    assert wait_idle(*WORKERS, seconds=5) == {w: "idle" for w in WORKERS}


def test_rolling_restart_in_check_mode_changes_nothing():
    before = slurmd_pids()
    run = run_playbook(ROLLING, check=True)
    assert run.rc == 0, run
    assert slurmd_pids() == before
    assert (state(W1), state(W2)) == ("idle", "idle")


def test_rolling_restart_stops_at_the_first_failure_and_leaves_the_rest_in_service():
    before = slurmd_pids()
    job_id = submit(W1, 40, "stopjob")
    run = run_playbook(ROLLING, extra_vars={"slurm_rolling_drain_timeout": 3, "slurm_rolling_poll_interval": 1})
    assert run.rc != 0, run
    assert f"Rolling maintenance stopped at {W1}" in run.output and "The node is back in service" in run.output, run
    assert job_id in run.output, run
    assert slurmd_pids() == before  # nothing restarted, on either worker
    assert state(W1) == "mixed" and state(W2) == "idle"
    assert W2 not in run.recap or run.recap[W2]["changed"] == 0, run
    assert controller().check_output(f"squeue --noheader --jobs={job_id} --format=%T") == "RUNNING"


def test_rolling_restart_refuses_a_node_drained_for_another_reason():
    controller().check_output(f"scontrol update NodeName={W2} State=DRAIN 'Reason=bad disk'")
    before = slurmd_pids()
    run = run_playbook(ROLLING, extra_vars={"slurm_rolling_workers": W2})
    assert run.rc != 0 and "bad disk" in run.output and "Fix:" in run.output, run
    # Limited to the worker alone, the run lacks the controller's layout: refused before any change, saying how.
    limited = run_playbook(ROLLING, "--limit", W2)
    assert limited.rc != 0 and "does not include the Slurm controller" in limited.output, limited
    assert f"-e slurm_rolling_workers={W2}" in limited.output, limited
    assert slurmd_pids() == before
    assert show(W2)["Reason"].startswith("bad disk")


# ------------------------------------------------------------------------------ MUNGE key rotation


def slurm_daemon_ids() -> dict:
    """MainPID and start of slurmctld and of every slurmd: they change on any restart."""
    units = [(CONTROLLER, "slurmctld")] + [(w, "slurmd") for w in WORKERS]
    return {f"{h}/{u}": get_host(h).check_output(f"systemctl show -p MainPID -p ActiveEnterTimestampMonotonic {u}") for h, u in units}


def test_rotating_the_munge_key_while_a_job_runs_loses_no_job_and_restarts_no_slurm_daemon():
    """Day 2 (issue 60): a new key in the vault, playbooks/munge.yml with munge_rotate=true, while a job runs. Every
    node holds the new key and munged restarted with it; Slurm's daemons ask munged for every message, so none
    restarts: the running job completes (exit 0, not requeued), a job on every worker runs, the workers stay idle, and
    a run without the key (the nodes' shared key adopted) changes nothing."""
    hosts = [CONTROLLER] + WORKERS
    before = slurm_daemon_ids()
    job_id = submit(W1, 20, "mungejob")
    new_key = base64.b64encode(os.urandom(128)).decode()
    run = run_playbook("../../playbooks/munge.yml", extra_vars={"munge_key": new_key, "munge_rotate": True})
    assert run.rc == 0, run
    expected = hashlib.sha256(base64.b64decode(new_key)).hexdigest()
    assert {h: get_host(h).check_output("sha256sum /etc/munge/munge.key").split()[0] for h in hosts} == {h: expected for h in hosts}
    credential = controller().check_output("munge -n")
    assert all(get_host(h).run(f"echo '{credential}' | unmunge").rc == 0 for h in WORKERS)
    for _attempt in range(60):
        fields = job_fields(job_id)
        if fields["JobState"] not in ("RUNNING", "COMPLETING"):
            break
        time.sleep(1)
    assert (fields["JobState"], fields["ExitCode"], fields["Restarts"]) == ("COMPLETED", "0:0", "0"), fields
    assert controller().file(f"{HOME}/mungejob.end").exists
    out = controller().check_output(f"cd {HOME} && runuser -u {USER} -- srun --nodes={len(WORKERS)} hostname")
    assert sorted(out.split()) == sorted(WORKERS)
    assert wait_idle(*WORKERS) == {w: "idle" for w in WORKERS}
    assert slurm_daemon_ids() == before
    again = run_playbook("../../playbooks/munge.yml")
    assert again.rc == 0 and again.total_changed == 0, again


# The whole converge in check mode, after the day-2 operations: it passes and predicts no change.
def test_converge_in_check_mode_changes_nothing():
    run = run_playbook(check=True)
    assert run.rc == 0, run
    assert run.total_changed == 0, run
