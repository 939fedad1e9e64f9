"""The slurm_node_state module's glue, with AnsibleModule.run_command answering captured Slurm 22.05.8 output."""

from __future__ import annotations

import json

import pytest

from ansible.module_utils import _internal
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.hpclab.cluster.plugins.modules import slurm_node_state

REASON = "kernel update: ticket=42 a=b"
BIN = {"scontrol": "/usr/bin/scontrol", "squeue": "/usr/bin/squeue"}
OK = {"rc": 0, "stdout": "", "stderr": ""}


class FakeSlurm:
    """Answers argv lists with captured results. ``answers`` maps a key (("show", "node"),
    ("update",), ("show", "hostnames"), ("squeue",)) to a fixture name or a list of them, used in
    turn (the last one repeats)."""

    def __init__(self, fixture_text, answers):
        self.fixture_text = fixture_text
        self.answers = answers
        self.calls = []

    def __call__(self, args, **kwargs):
        assert args[0] in BIN.values()
        assert kwargs["environ_update"]["LANG"] == "C" and kwargs["environ_update"]["SLURM_TIME_FORMAT"] == "standard"
        argv = [args[0].rsplit("/", 1)[1], *args[1:]]
        self.calls.append(argv)
        key = ("squeue",) if argv[0] == "squeue" else tuple(argv[1:3]) if argv[1] == "show" else (argv[1],)
        answer = self.answers[key]
        if isinstance(answer, list):
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        result = OK if answer is None else json.loads(self.fixture_text("slurm", f"{answer}.json"))
        return result["rc"], result["stdout"], result["stderr"]

    def updates(self):
        return [c for c in self.calls if c[1] == "update"]


@pytest.fixture
def slurm(monkeypatch, fixture_text, fake_clock):
    monkeypatch.setattr(_internal, "is_controller", False)
    monkeypatch.setattr(AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: BIN[name])
    clock = fake_clock
    monkeypatch.setattr(slurm_node_state, "time", clock)

    def _install(answers):
        fake = FakeSlurm(fixture_text, answers)
        fake.clock = clock
        monkeypatch.setattr(AnsibleModule, "run_command", lambda self, args, **kwargs: fake(args, **kwargs))
        return fake

    return _install


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        slurm_node_state.main()
    return json.loads(capsys.readouterr().out)


def show(*fixtures):
    return {("show", "node"): [f"show_node_{f}" for f in fixtures]}


def test_drain_while_a_job_runs_returns_draining(slurm, capsys):
    fake = slurm({**show("alloc_mixed", "draining"), ("update",): "update_drain_w1"})
    result = run(capsys, nodes=["slurmd1"], state="drain", reason=REASON)
    assert result["changed"] is True
    assert fake.updates() == [["scontrol", "update", "NodeName=slurmd1", "State=DRAIN", f"Reason={REASON}"]]
    assert result["commands"] == fake.updates()
    node = result["nodes"]["slurmd1"]
    assert (node["before"]["state"], node["after"]["state"], node["after"]["reason"]) == ("ALLOCATED", "DRAINING", REASON)
    assert node["command"] == fake.updates()[0]
    assert result["jobs"] == [] and result["waited"] == 0


def test_drain_a_drained_node_with_the_same_reason_is_no_change(slurm, capsys):
    fake = slurm(show("drained"))
    result = run(capsys, nodes=["slurmd1"], state="drain", reason=REASON)
    assert result["changed"] is False and result["commands"] == [] and fake.updates() == []
    assert result["nodes"]["slurmd1"]["command"] is None
    assert len(fake.calls) == 1  # one read, nothing else


def test_resume_an_idle_node_is_no_change_not_an_error(slurm, capsys):
    fake = slurm(show("idle"))
    result = run(capsys, nodes=["slurmd1", "slurmd2"], state="resume")
    assert result["changed"] is False and fake.updates() == []
    assert result["nodes"]["slurmd2"]["after"]["state"] == "IDLE"


def test_check_mode_runs_only_the_read_and_predicts(slurm, capsys):
    fake = slurm(show("alloc_mixed"))
    result = run(capsys, nodes=["slurmd1,slurmd2"], state="drain", reason=REASON, _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] is True and fake.updates() == []
    assert [c[2] for c in result["commands"]] == ["NodeName=slurmd1", "NodeName=slurmd2"]
    assert result["nodes"]["slurmd1"]["after"]["state"] == "DRAINING"
    assert result["diff"]["before"]["slurmd2"] == {"state": "MIXED", "base": "MIXED", "flags": [], "reason": ""}
    assert result["diff"]["after"]["slurmd2"] == {"state": "DRAINING", "base": "MIXED", "flags": ["DRAIN"], "reason": REASON}


def test_diff_mode_after_a_real_run_shows_what_was_read(slurm, capsys):
    slurm({**show("drained", "just_resumed"), ("update",): "update_resume_w1"})
    result = run(capsys, nodes=["slurmd1"], state="resume", _ansible_diff=True)
    assert result["diff"]["before"]["slurmd1"]["state"] == "DRAINED"
    assert result["diff"]["after"]["slurmd1"] == {"state": "IDLE", "base": "IDLE", "flags": ["NOT_RESPONDING"], "reason": ""}


def test_wait_for_drain_returns_when_the_job_ended_and_reports_it(slurm, capsys):
    fake = slurm({**show("alloc_mixed", "draining", "draining", "drained"), ("update",): "update_drain_w1", ("squeue",): "squeue_draining"})
    result = run(capsys, nodes=["slurmd1"], state="drain", reason=REASON, wait=True, poll_interval=1.5)
    assert result["changed"] is True
    assert result["nodes"]["slurmd1"]["after"]["state"] == "DRAINED"
    assert result["jobs"] == [{"job_id": "1", "state": "RUNNING", "user": "alice", "name": "sleep600", "nodes": "slurmd1"}]
    assert fake.clock.sleeps == [1.5, 1.5] and result["waited"] == 3.0
    assert ["squeue", "--noheader", "--nodelist=slurmd1", "--format=%i|%T|%u|%j|%N"] in fake.calls


def test_wait_timeout_fails_with_the_jobs_still_running(slurm, capsys):
    slurm({**show("alloc_mixed", "draining"), ("update",): "update_drain_w1", ("squeue",): "squeue_draining"})
    result = run(capsys, nodes=["slurmd1"], state="drain", reason=REASON, wait=True, timeout=10, poll_interval=4)
    assert result["failed"] is True
    assert "after 10 s these nodes are still not DRAINED" in result["msg"]
    assert "slurmd1 (DRAINING, State=ALLOCATED+DRAIN" in result["msg"]
    assert "1 (sleep600, alice, RUNNING, on slurmd1)" in result["msg"]
    assert result["nodes"]["slurmd1"]["after"]["state"] == "DRAINING"
    assert result["commands"]  # the drain itself ran and stays


def test_wait_for_resume_until_slurmd_answers(slurm, capsys):
    fake = slurm({**show("drained", "just_resumed", "idle"), ("update",): "update_resume_w1"})
    result = run(capsys, nodes=["slurmd1"], state="resume", wait=True)
    assert result["nodes"]["slurmd1"]["after"]["state"] == "IDLE" and result["nodes"]["slurmd1"]["after"]["flags"] == []
    assert fake.clock.sleeps == [2]


def test_wait_in_check_mode_does_not_wait(slurm, capsys):
    fake = slurm(show("alloc_mixed"))
    result = run(capsys, nodes=["slurmd1"], state="drain", reason=REASON, wait=True, _ansible_check_mode=True)
    assert result["changed"] is True and fake.clock.sleeps == [] and len(fake.calls) == 1


def test_invalid_registration_fails_before_any_change(slurm, capsys):
    fake = slurm(show("invalid_reg"))
    result = run(capsys, nodes=["slurmd1", "slurmd2"], state="resume")
    assert result["failed"] is True and fake.updates() == []
    assert "node slurmd1 has an invalid registration" in result["msg"] and "node slurmd2" in result["msg"]
    assert "reported:24105 < 100.00% of configured:91596" in result["msg"]
    assert result["nodes"]["slurmd1"]["before"]["state"] == "INVAL"


def test_unknown_node_from_a_hostlist_fails_before_any_change(slurm, capsys):
    fake = slurm({**show("idle"), ("show", "hostnames"): "hostnames_range"})
    result = run(capsys, nodes=["slurmd1", "slurmd[2-3]"], state="drain", reason="x")
    assert result["failed"] is True and fake.updates() == []
    assert "unknown node slurmd3" in result["msg"]
    assert ["scontrol", "show", "hostnames", "slurmd1,slurmd[2-3]"] in fake.calls


@pytest.mark.parametrize("expression,words", [("slurmd[2-x]", "[2-x] is not a list of numbers and ranges"), ("slurmd[1-", "is not closed")])
def test_hostlist_that_does_not_parse_fails_without_asking_slurm(slurm, capsys, expression, words):
    # Slurm 22.05 exits 0 on both (hostnames_bad_range.json, hostnames_bad_open.json)
    fake = slurm({})
    result = run(capsys, nodes=[expression], state="drain", reason="x")
    assert result["failed"] is True and "does not parse" in result["msg"] and words in result["msg"]
    assert fake.calls == []


@pytest.mark.parametrize(
    "args,words",
    [
        ({"state": "drain"}, "state is drain but all of the following are missing: reason"),
        ({"state": "down", "reason": "  "}, "needs a reason"),
        ({"state": "undrain", "wait": True}, "wait works with state=drain"),
        ({"state": "drain", "reason": "x", "poll_interval": 0}, "poll_interval"),
        ({"state": "drain", "reason": "x", "nodes": [" "]}, "nodes is empty"),
    ],
)
def test_bad_input_fails_before_any_command(slurm, capsys, args, words):
    fake = slurm({})
    result = run(capsys, **{"nodes": ["slurmd1"], **args})
    assert result["failed"] is True and words in result["msg"]
    assert fake.calls == []


def test_controller_unreachable(slurm, capsys):
    slurm(show("ctld_down"))
    result = run(capsys, nodes=["slurmd1"], state="drain", reason="x")
    assert result["failed"] is True
    assert "cannot read the node states from slurmctld" in result["msg"]
    assert "Unable to contact slurm controller (connect failure)" in result["msg"] and "scontrol ping" in result["msg"]


def test_update_failure_names_the_command_and_what_already_changed(slurm, capsys):
    slurm({**show("alloc_mixed"), ("update",): [None, "update_ctld_down"]})
    result = run(capsys, nodes=["slurmd1", "slurmd2"], state="drain", reason="x")
    assert result["failed"] is True
    assert result["msg"].startswith("node slurmd2: scontrol update NodeName=slurmd2 State=DRAIN Reason=x failed: rc=1")
    assert "Unable to contact slurm controller" in result["msg"] and "Already changed: slurmd1" in result["msg"]
    assert result["failed_command"][2] == "NodeName=slurmd2"
    assert len(result["commands"]) == 2


def test_container_mode_runs_the_commands_with_docker_exec(monkeypatch, fixture_text, capsys):
    """The environment travels into the container with -e; the command keeps its own path there."""
    monkeypatch.setattr(_internal, "is_controller", False)
    monkeypatch.setattr(AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: "/usr/bin/" + name)
    calls = []

    def run_command(self, args, **kwargs):
        calls.append((args, kwargs.get("environ_update")))
        answer = json.loads(fixture_text("slurm", "show_node_idle.json"))
        return answer["rc"], answer["stdout"], answer["stderr"]

    monkeypatch.setattr(AnsibleModule, "run_command", run_command)
    result = run(capsys, nodes=["slurmd1"], state="resume", container="ctl1")
    assert result["changed"] is False
    env = ["-e", "LANG=C", "-e", "LC_ALL=C", "-e", "SLURM_TIME_FORMAT=standard"]
    assert calls == [(["/usr/bin/docker", "exec", *env, "ctl1", "scontrol", "show", "node", "-o"], {})]
