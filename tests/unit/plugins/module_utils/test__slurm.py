"""Pure Slurm node-state helpers on output captured from Slurm 22.05.8 (tests/unit/fixtures/slurm/capture.sh).

Every fixture is {argv, rc, stdout, stderr} of one real command on the slurm_native cluster
(controller slurmctl1, workers slurmd1 and slurmd2 with 2 CPUs each).
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.hpclab.cluster.plugins.module_utils import _slurm as s

REASON = "kernel update: ticket=42 a=b"
LOW_MEMORY = "Low RealMemory (reported:24105 < 100.00% of configured:91596)"


@pytest.fixture
def captured(fixture_text):
    def _captured(name):
        return json.loads(fixture_text("slurm", f"{name}.json"))

    return _captured


@pytest.fixture
def nodes(captured):
    def _nodes(name):
        result = captured(f"show_node_{name}")
        assert result["rc"] == 0, result
        return s.parse_show_node(result["stdout"])

    return _nodes


# ------------------------------------------------------------------------------------------ parse

# fixture, node, base, flags, state as sinfo names it, reason, reason user
STATES = [
    ("idle", "slurmd1", "IDLE", [], "IDLE", "", ""),
    ("alloc_mixed", "slurmd1", "ALLOCATED", [], "ALLOCATED", "", ""),
    ("alloc_mixed", "slurmd2", "MIXED", [], "MIXED", "", ""),
    ("draining", "slurmd1", "ALLOCATED", ["DRAIN"], "DRAINING", REASON, "root"),
    ("draining", "slurmd2", "MIXED", [], "MIXED", "", ""),
    ("drained", "slurmd1", "IDLE", ["DRAIN"], "DRAINED", REASON, "root"),
    ("after_down", "slurmd2", "IDLE", [], "IDLE", "", ""),
    ("down_drain", "slurmd1", "DOWN", ["DRAIN", "NOT_RESPONDING"], "DRAINED", "disk check", "root"),
    ("undrained_down", "slurmd1", "DOWN", ["NOT_RESPONDING"], "DOWN", "disk check", "root"),
    ("not_responding", "slurmd2", "IDLE", ["NOT_RESPONDING"], "IDLE", "", ""),
    ("down_not_responding", "slurmd2", "DOWN", ["NOT_RESPONDING"], "DOWN", "slurmd stopped", "root"),
    ("just_resumed", "slurmd1", "IDLE", ["NOT_RESPONDING"], "IDLE", "", ""),
    ("invalid_reg", "slurmd1", "IDLE", ["DRAIN", "INVALID_REG"], "INVAL", LOW_MEMORY, "slurm"),
    ("invalid_reg_fixed", "slurmd1", "IDLE", ["DRAIN"], "DRAINED", LOW_MEMORY, "root"),
]


@pytest.mark.parametrize("fixture,name,base,flags,state,reason,user", STATES)
def test_parse_show_node_states(nodes, fixture, name, base, flags, state, reason, user):
    node = nodes(fixture)[name]
    assert (node["base"], node["flags"], node["state"], node["reason"], node["reason_user"]) == (base, flags, state, reason, user)
    assert bool(node["reason_time"]) == bool(reason)


def test_parse_show_node_fields(nodes):
    found = nodes("draining")
    assert list(found) == ["slurmd1", "slurmd2"]
    node = found["slurmd1"]
    assert (node["cpus"], node["cpus_allocated"], node["real_memory"], node["slurmd_version"]) == (2, 2, 22899, "22.05.8")
    assert node["partitions"] == ["batch"]
    assert node["slurmd_start_time"] == "2026-11-29T21:36:11"
    assert node["reason_time"] == "2026-11-29T21:36:44"
    assert found["slurmd2"]["cpus_allocated"] == 1


def test_parse_node_line_keeps_the_os_string_and_double_spaces(captured):
    line = captured("show_node_idle")["stdout"].splitlines()[0]
    fields = s.parse_node_line(line)
    assert fields["OS"].startswith("Linux ") and "#1 SMP" in fields["OS"]
    assert fields["CoresPerSocket"] == "2" and fields["CPUAlloc"] == "0"
    assert fields["CfgTRES"] == "cpu=2,mem=22899M,billing=2"


def edited_line(captured, reason_part):
    """A captured line of slurmd1 with another Reason= tail (cases no capture shows)."""
    line = captured("show_node_drained")["stdout"].splitlines()[0]
    return line.partition(" Reason=")[0] + " Reason=" + reason_part


@pytest.mark.parametrize(
    "tail,reason,extra",
    [
        ("a [b] c=d [root@2026-11-29T21:36:44]", "a [b] c=d", {}),
        ("x=y with = sign [root@2026-11-29T21:36:44] Comment=owner=ops [x@y]", "x=y with = sign", {"Comment": "owner=ops [x@y]"}),
        ("maint [root@2026-11-29T21:36:44] Comment=c Extra=e=1", "maint", {"Comment": "c", "Extra": "e=1"}),
        ("no suffix at all", "no suffix at all", {}),
    ],
)
def test_reason_with_brackets_equals_and_a_comment_after_it(captured, tail, reason, extra):
    fields = s.parse_node_line(edited_line(captured, tail))
    assert fields["Reason"] == reason
    assert fields["State"] == "IDLE+DRAIN"
    for key, value in extra.items():
        assert fields[key] == value


def test_parse_show_node_ignores_non_node_lines(captured):
    result = captured("show_node_unknown")
    assert (result["rc"], result["stdout"].strip()) == (1, "Node nosuchnode not found")
    assert s.parse_show_node(result["stdout"]) == {}


@pytest.mark.parametrize("name", ["idle", "alloc_mixed", "draining", "drained", "after_down", "down_drain", "not_responding", "invalid_reg"])
def test_scontrol_and_sinfo_json_agree(captured, nodes, name):
    from_json = s.parse_sinfo_json(captured(f"sinfo_json_{name}")["stdout"])
    from_scontrol = nodes(name)
    assert set(from_json) == set(from_scontrol)
    for node, facts in from_json.items():
        assert (facts["base"], facts["flags"], facts["state"], facts["reason"]) == tuple(from_scontrol[node][k] for k in ("base", "flags", "state", "reason"))


def test_sinfo_json_with_the_controller_down_exits_0_but_reports_errors(captured):
    result = captured("sinfo_json_ctld_down")
    assert result["rc"] == 0
    with pytest.raises(s.SlurmCliError, match="Unspecified error"):
        s.parse_sinfo_json(result["stdout"])


def test_scontrol_with_the_controller_down(captured):
    result = captured("show_node_ctld_down")
    assert result["rc"] == 1 and "Unable to contact slurm controller" in result["stderr"]


def test_parse_squeue(captured):
    jobs = s.parse_squeue(captured("squeue_alloc_mixed")["stdout"])
    assert jobs == [
        {"job_id": "1", "state": "RUNNING", "user": "alice", "name": "sleep600", "nodes": "slurmd1"},
        {"job_id": "2", "state": "RUNNING", "user": "alice", "name": "sleep600", "nodes": "slurmd2"},
    ]
    assert s.parse_squeue(captured("squeue_drained")["stdout"]) == []
    assert captured("squeue_alloc_mixed")["argv"][-1] == s.SQUEUE_FORMAT


def test_parse_version(captured):
    assert s.parse_version(captured("sinfo_version")["stdout"]) == "22.05.8"


# ------------------------------------------------------------------------------------------ hostlists


def test_parse_hostnames(captured):
    result = captured("hostnames_range")
    assert result["argv"][-1] == "slurmd1,slurmd[2-3]"
    assert s.parse_hostnames(result["rc"], result["stdout"], result["stderr"]) == ["slurmd1", "slurmd2", "slurmd3"]


def test_bad_range_exits_0_but_is_an_error(captured):
    result = captured("hostnames_bad_range")
    assert result["rc"] == 0
    with pytest.raises(s.SlurmCliError, match="Invalid range"):
        s.parse_hostnames(result["rc"], result["stdout"], result["stderr"])


def test_unclosed_bracket_is_refused_before_slurm_misreads_it(captured):
    result = captured("hostnames_bad_open")
    assert (result["rc"], result["stdout"].strip()) == (0, "slurmd]")  # what Slurm makes of it
    with pytest.raises(s.SlurmError, match="is not closed"):
        s.check_hostlist_syntax(result["argv"][-1])


@pytest.mark.parametrize("expression", ["n[1-4]", "n[01-04,07]", "rack[1-2]-n[01-02]", "a,b", "gpu01"])
def test_good_hostlist_syntax(expression):
    s.check_hostlist_syntax(expression)


@pytest.mark.parametrize("expression,words", [("n[1-", "not closed"), ("n1]", "without"), ("n[[1]]", "nested"), ("n[a-b]", "numbers"), ("n[]", "numbers")])
def test_bad_hostlist_syntax(expression, words):
    with pytest.raises(s.SlurmError, match=words):
        s.check_hostlist_syntax(expression)


def test_plain_names_need_no_expansion():
    assert not s.needs_hostlist_expansion(["slurmd1", "slurmd2,slurmd1"])
    assert s.split_plain_names(["slurmd1", "slurmd2,slurmd1"]) == ["slurmd1", "slurmd2"]
    assert s.needs_hostlist_expansion(["slurmd[1-2]"])


# ------------------------------------------------------------------------------------------ plan

DRAIN = ["scontrol", "update", "NodeName=slurmd1", "State=DRAIN", f"Reason={REASON}"]
RESUME = ["scontrol", "update", "NodeName=slurmd1", "State=RESUME"]
UNDRAIN = ["scontrol", "update", "NodeName=slurmd1", "State=UNDRAIN"]
DOWN = ["scontrol", "update", "NodeName=slurmd1", "State=DOWN", f"Reason={REASON}"]

# fixture (node slurmd1), state, expected argv ([] = no change)
PLANS = [
    ("idle", "drain", DRAIN),
    ("idle", "resume", []),
    ("idle", "undrain", []),
    ("idle", "down", DOWN),
    ("alloc_mixed", "drain", DRAIN),
    ("alloc_mixed", "resume", []),
    ("draining", "drain", []),
    ("draining", "resume", RESUME),
    ("draining", "undrain", UNDRAIN),
    ("drained", "drain", []),
    ("drained", "resume", RESUME),
    ("drained", "undrain", UNDRAIN),
    ("drained", "down", DOWN),
    ("down_drain", "drain", []),
    ("down_drain", "down", []),
    ("down_drain", "resume", RESUME),
    ("down_drain", "undrain", UNDRAIN),
    ("undrained_down", "undrain", []),
    ("undrained_down", "resume", RESUME),
    ("just_resumed", "resume", []),
    ("invalid_reg_fixed", "resume", RESUME),
    ("invalid_reg_fixed", "drain", []),
]


@pytest.mark.parametrize("fixture,state,argv", PLANS)
def test_plan_node(nodes, fixture, state, argv):
    assert s.plan_node(nodes(fixture)["slurmd1"], state, REASON) == argv


def test_plan_for_nodes_not_responding_or_down(nodes):
    assert s.plan_node(nodes("not_responding")["slurmd2"], "resume") == []
    assert s.plan_node(nodes("down_not_responding")["slurmd2"], "resume") == ["scontrol", "update", "NodeName=slurmd2", "State=RESUME"]
    assert s.plan_node(nodes("down_not_responding")["slurmd2"], "down", "slurmd stopped") == []
    assert s.plan_node(nodes("down_not_responding")["slurmd2"], "drain", "x")[3] == "State=DRAIN"


def test_what_slurm_answers_where_the_planner_plans_nothing_or_something(captured):
    # resume on an idle node is an error in Slurm; the planner plans nothing there (table above)
    assert captured("update_resume_idle")["rc"] == 1 and "Invalid node state specified" in captured("update_resume_idle")["stderr"]
    # the same drain twice, and resume on a draining node, are accepted
    assert captured("update_drain_w1")["rc"] == captured("update_drain_w1_again")["rc"] == captured("update_resume_draining")["rc"] == 0
    assert captured("update_drain_w1")["argv"] == DRAIN
    assert captured("update_resume_w1")["argv"] == RESUME and captured("update_resume_w1")["rc"] == 0
    assert captured("update_undrain_down_drain")["argv"] == UNDRAIN and captured("update_undrain_down_drain")["rc"] == 0


def test_drain_with_another_reason(nodes):
    drained = nodes("drained")["slurmd1"]
    assert s.plan_node(drained, "drain", "other") == []
    assert s.plan_node(drained, "drain", "other", update_reason=True) == ["scontrol", "update", "NodeName=slurmd1", "State=DRAIN", "Reason=other"]
    assert s.plan_node(drained, "drain", f'"{REASON}"', update_reason=True) == []  # scontrol strips the quotes


@pytest.mark.parametrize("state", ["resume", "undrain"])
def test_invalid_registration_is_refused_with_what_slurm_reported(nodes, captured, state):
    with pytest.raises(s.SlurmError) as exc:
        s.plan_node(nodes("invalid_reg")["slurmd1"], state)
    msg = str(exc.value)
    for words in ("slurmd1", "INVALID_REG", "reported:24105", "configured:91596", "RealMemory=91596", "slurmd -C", f"state={state}"):
        assert words in msg, words
    assert captured(f"update_{state}_invalid_reg")["rc"] == 1  # what Slurm would answer


def test_plan_nodes_names_every_node_at_fault(nodes):
    found = nodes("invalid_reg")
    with pytest.raises(s.SlurmError) as exc:
        s.plan_nodes(found, ["slurmd1", "slurmd2"], "resume")
    assert "node slurmd1" in str(exc.value) and "node slurmd2" in str(exc.value)
    assert s.plan_nodes(found, ["slurmd1", "slurmd2"], "drain", "x") == {}


def test_plan_nodes_unknown_node(nodes):
    with pytest.raises(s.SlurmError, match=r"unknown node slurmd3: .*known: slurmd1, slurmd2"):
        s.plan_nodes(nodes("idle"), ["slurmd1", "slurmd3"], "drain", "x")


def test_plan_nodes_one_argv_per_node(nodes):
    plan = s.plan_nodes(nodes("alloc_mixed"), ["slurmd1", "slurmd2"], "drain", REASON)
    assert plan == {"slurmd1": DRAIN, "slurmd2": [*DRAIN[:2], "NodeName=slurmd2", *DRAIN[3:]]}


ALL = [
    "idle", "alloc_mixed", "draining", "drained", "after_down", "down_drain", "undrained_down",
    "not_responding", "down_not_responding", "just_resumed", "invalid_reg_fixed",
]


@pytest.mark.parametrize("fixture", ALL)
@pytest.mark.parametrize("state", s.STATES)
def test_converged_states_plan_nothing(nodes, fixture, state):
    """Planning against the state a change leads to plans nothing: the second run is no change."""
    for node in nodes(fixture).values():
        after = s.predict(node, state, REASON)
        assert s.plan_node(after, state, REASON) == [], (node["name"], after)


@pytest.mark.parametrize(
    "before,node,state,after,ignore",
    [
        # what Slurm did, captured: drain of an allocated node, the drained node after its job, resume
        ("alloc_mixed", "slurmd1", "drain", "draining", set()),
        ("draining", "slurmd1", "resume", "draining", {"DRAIN"}),  # capture re-drained it; compare without DRAIN
        ("drained", "slurmd1", "resume", "just_resumed", {"NOT_RESPONDING"}),
        ("down_drain", "slurmd1", "undrain", "undrained_down", set()),
    ],
)
def test_predict_matches_what_slurm_did(nodes, before, node, state, after, ignore):
    predicted = s.predict(nodes(before)[node], state, REASON)
    real = nodes(after)[node]
    if ignore:
        predicted = dict(predicted, flags=[f for f in predicted["flags"] if f not in ignore], reason="")
        real = dict(real, flags=[f for f in real["flags"] if f not in ignore], reason="")
        predicted["state"] = s.display_state(predicted["base"], predicted["flags"])
        real["state"] = s.display_state(real["base"], real["flags"])
    assert s.view(predicted) == s.view(real)


# ------------------------------------------------------------------------------------------ wait


def test_drained_and_in_service_predicates(nodes):
    assert not s.is_drained(nodes("draining")["slurmd1"])
    assert s.is_drained(nodes("drained")["slurmd1"])
    assert s.is_drained(nodes("down_drain")["slurmd1"])
    assert not s.is_in_service(nodes("just_resumed")["slurmd1"])  # slurmd not re-registered yet
    assert s.is_in_service(nodes("just_resumed")["slurmd2"])
    assert s.is_in_service(nodes("alloc_mixed")["slurmd1"])
    assert not s.is_in_service(nodes("invalid_reg_fixed")["slurmd1"])
    assert s.unfinished(nodes("draining"), ["slurmd1"], "drain") == ["slurmd1"]
    assert s.unfinished(nodes("drained"), ["slurmd1"], "drain") == []
    assert s.unfinished(nodes("not_responding"), ["slurmd1", "slurmd2"], "resume") == ["slurmd2"]


def test_display_state_completing():
    assert s.display_state("IDLE", ["COMPLETING", "DRAIN"]) == "DRAINING"
    assert s.display_state("IDLE", ["COMPLETING"]) == "COMPLETING"
    assert s.display_state("MIXED", ["FAIL"]) == "FAILING"
    assert not s.is_drained({"base": "IDLE", "flags": ["COMPLETING", "DRAIN"]})


# ------------------------------------------------------------------------------------------ validate


@pytest.mark.parametrize(
    "state,reason,wait,words",
    [
        ("drain", None, False, "needs a reason"),
        ("down", '""', False, "needs a reason"),
        ("drain", "a\nb", False, "one line"),
        ("down", "x", True, "wait works with state=drain"),
        ("undrain", None, True, "not state=undrain"),
        ("idle", None, False, "state must be one of"),
    ],
)
def test_validate_request(state, reason, wait, words):
    with pytest.raises(s.SlurmError, match=words):
        s.validate_request(state, reason, wait)


def test_validate_node_names():
    s.validate_node_names(["slurmd1", "gpu-01.x"])
    with pytest.raises(s.SlurmError, match="'slurmd]'"):
        s.validate_node_names(["slurmd]"])
