"""The gluster_volume module's glue, with AnsibleModule.run_command answering captured GlusterFS 10.3 XML."""

from __future__ import annotations

import json

import pytest

from ansible.module_utils import _internal
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common import warnings
from ansible.module_utils.testing import patch_module_args

from ansible_collections.hpclab.cluster.plugins.modules import gluster_volume

GLUSTER = "/usr/sbin/gluster"
REP3 = ["node1:/bricks/rep3", "node2:/bricks/rep3", "node3:/bricks/rep3"]
NEW = ["node1:/bricks/new", "node2:/bricks/new", "node3:/bricks/new"]
READS = {("volume", "info"), ("volume", "get"), ("volume", "status"), ("pool", "list")}
ALL_VOLUMES = ("volume", "info", "*")
# What a successful mutating command prints: the module reads only <opRet> of these. No capture
# exists for a successful stop or rebalance; both use the same envelope as start / add-brick.
SUCCESS = {
    ("volume", "create"): "volume_create_rep3.xml",
    ("volume", "set"): "volume_set_ok.xml",
    ("volume", "start"): "volume_start_ok.xml",
    ("volume", "stop"): "volume_start_ok.xml",
    ("volume", "add-brick"): "volume_add_brick_ok.xml",
    ("volume", "rebalance"): "volume_add_brick_ok.xml",
    ("volume", "delete"): "volume_delete_ok.xml",
    ("peer", "probe"): "peer_probe_again.xml",
    ("volume", "status"): "volume_status_replicate.xml",
    ALL_VOLUMES: "volume_info_none.xml",
}


class FakeGluster:
    """Answers gluster argv lists with fixture files; a list of fixtures answers successive calls."""

    def __init__(self, fixture_text, answers):
        self.fixture_text = fixture_text
        self.answers = {**SUCCESS, **answers}
        self.calls = []

    def __call__(self, module, args, **kwargs):
        assert args[0] == GLUSTER and args[1] == "--mode=script" and args[-1] == "--xml"
        assert kwargs["environ_update"]["LANG"] == "C"
        words = tuple(args[2:-1])
        self.calls.append(list(words))
        # `volume info` without a name lists every volume: ALL_VOLUMES answers it
        answer = self.answers[ALL_VOLUMES if words == ("volume", "info") else words[:2]]
        if isinstance(answer, list):
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        if isinstance(answer, tuple):  # (rc, fixture printed on stderr): a command glusterd refused
            return answer[0], "", self.fixture_text("gluster", answer[1])
        return 0, self.fixture_text("gluster", answer), ""

    def mutating(self):
        return [c for c in self.calls if tuple(c[:2]) not in READS]


@pytest.fixture
def gluster(monkeypatch, fixture_text, fake_clock):
    """Install a FakeGluster; this node is node1 (the pool's localhost)."""
    # Once a controller-side test (a filter plugin) has imported ansible.plugins, module warnings go to
    # Display instead of the result; a module runs on a target, so put that back.
    monkeypatch.setattr(_internal, "is_controller", False)
    # Warnings are kept per process: each test starts with none, so that one test's cannot show in the next's result.
    monkeypatch.setattr(warnings, "_global_warnings", {})
    monkeypatch.setattr(AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: GLUSTER)
    monkeypatch.setattr(gluster_volume, "local_host_names", lambda: {"node1", "localhost"})
    clock = fake_clock
    monkeypatch.setattr(gluster_volume, "time", clock)

    def _install(answers):
        fake = FakeGluster(fixture_text, answers)
        fake.clock = clock

        def run_command(self, args, **kwargs):
            return fake(self, args, **kwargs)

        monkeypatch.setattr(AnsibleModule, "run_command", run_command)
        return fake

    return _install


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        gluster_volume.main()
    return json.loads(capsys.readouterr().out)


def answers(info, pool="pool_list.xml", get="volume_get_all.xml", status="volume_status_replicate.xml"):
    return {("volume", "info"): info, ("pool", "list"): pool, ("volume", "get"): get, ("volume", "status"): status}


def test_check_mode_create_runs_only_reads(gluster, capsys):
    fake = gluster(answers("volume_info_missing.xml"))
    result = run(capsys, name="gv0", bricks=REP3, replica=3, options={"nfs.disable": True}, _ansible_check_mode=True)
    assert result["changed"] is True
    assert fake.mutating() == []
    assert result["commands"] == [
        ["gluster", "--mode=script", "volume", "create", "gv0", "replica", "3", "transport", "tcp", *REP3, "--xml"],
        ["gluster", "--mode=script", "volume", "set", "gv0", "nfs.disable", "on", "--xml"],
        ["gluster", "--mode=script", "volume", "start", "gv0", "--xml"],
    ]
    assert result["volume"] == {}
    assert [p["hostname"] for p in result["peers"]] == ["node2", "node3"]


def test_check_mode_options_of_a_volume_not_created_yet_warns_instead_of_failing(gluster, capsys):
    """nfs_ganesha sets options on the volume the glusterfs play creates: in check mode that play created nothing."""
    fake = gluster(answers("volume_info_missing.xml"))
    result = run(capsys, name="gv1", state="started", options={"features.cache-invalidation": True}, _ansible_check_mode=True)
    assert result.get("failed") is not True, result
    assert result["changed"] is True
    assert "does not exist" in json.dumps(result["warnings"])
    assert fake.mutating() == []


def test_a_real_run_on_a_missing_volume_without_bricks_still_fails(gluster, capsys):
    fake = gluster(answers("volume_info_missing.xml"))
    result = run(capsys, name="gv1", state="started", options={"features.cache-invalidation": True})
    assert result["failed"] is True
    assert "'bricks' is needed to create it" in result["msg"]
    assert fake.mutating() == []


def test_check_mode_growth_runs_only_reads(gluster, capsys):
    fake = gluster(answers("volume_info_replicate.xml"))
    result = run(capsys, name="rep3", bricks=REP3 + NEW, replica=3, _ansible_check_mode=True)
    assert result["changed"] is True
    assert fake.mutating() == []
    assert [c[2:4] for c in result["commands"]] == [["volume", "add-brick"], ["volume", "rebalance"]]
    assert result["volume"]["bricks"] == REP3


def test_create_runs_in_order_and_reports_volume(gluster, capsys):
    fake = gluster(answers(["volume_info_missing.xml", "volume_info_replicate.xml"]))
    result = run(capsys, name="rep3", bricks=REP3, replica=3, options={"nfs.disable": "on"})
    assert result["changed"] is True
    assert [c[:2] for c in fake.mutating()] == [["volume", "create"], ["volume", "set"], ["volume", "start"]]
    assert fake.mutating()[0][-1] == "node3:/bricks/rep3"  # no force without a safety flag
    assert result["volume"]["status"] == "started"
    assert result["volume"]["id"] == "b63738f5-c6cd-4ace-a1f3-abdcadb91ba3"


def test_start_waits_until_every_brick_is_online(gluster, capsys):
    fake = gluster(answers(["volume_info_missing.xml", "volume_info_replicate.xml"], status=["volume_status_brick_down.xml", "volume_status_replicate.xml"]))
    result = run(capsys, name="rep3", bricks=REP3, replica=3)
    assert result["changed"] is True and "failed" not in result
    assert [c[:2] for c in fake.calls].count(["volume", "status"]) == 2


BUSY = (1, "volume_start_busy.txt")


def test_a_command_that_lost_the_lock_race_is_run_again(gluster, capsys):
    fake = gluster({**answers(["volume_info_missing.xml", "volume_info_replicate.xml"]), ("volume", "start"): [BUSY, BUSY, "volume_start_ok.xml"]})
    result = run(capsys, name="rep3", bricks=REP3, replica=3)
    assert result["changed"] is True and "failed" not in result, result
    assert [c[:2] for c in fake.calls].count(["volume", "start"]) == 3
    assert fake.clock.sleeps == [gluster_volume.BUSY_DELAY] * 2


def test_a_lock_never_free_fails_after_the_tries_naming_glusterds_answer(gluster, capsys):
    fake = gluster({**answers("volume_info_missing.xml"), ("volume", "start"): [BUSY]})
    result = run(capsys, name="rep3", bricks=REP3, replica=3)
    assert result["failed"] is True
    assert "Another transaction is in progress" in result["msg"], result["msg"]
    assert [c[:2] for c in fake.calls].count(["volume", "start"]) == gluster_volume.BUSY_TRIES


# `volume create` right after the peer probes, on a loaded machine: the opRet, opErrno and opErrstr that the
# glusterfs scenario printed in CI (2026-12-04), in the CLI's XML envelope. The CLI exits 0: only the XML says it failed.
SETTLING = "volume_create_host_not_connected.xml"


def test_a_create_that_met_peers_still_handshaking_is_run_again_past_the_lock_tries(gluster, capsys):
    tries = gluster_volume.BUSY_TRIES + 5
    fake = gluster({**answers(["volume_info_missing.xml", "volume_info_replicate.xml"]), ("volume", "create"): [SETTLING] * tries + ["volume_create_rep3.xml"]})
    result = run(capsys, name="rep3", bricks=REP3, replica=3)
    assert result["changed"] is True and "failed" not in result, result
    assert [c[:2] for c in fake.calls].count(["volume", "create"]) == tries + 1
    assert fake.clock.sleeps == [gluster_volume.BUSY_DELAY] * tries


def test_peers_that_never_settle_fail_after_peer_timeout_naming_glusterds_answer(gluster, capsys):
    fake = gluster({**answers("volume_info_missing.xml"), ("volume", "create"): [SETTLING]})
    result = run(capsys, name="rep3", bricks=REP3, replica=3, peer_timeout=60)
    assert result["failed"] is True
    assert "Staging failed on gluster2. Error: Host gluster3 not connected" in result["msg"], result["msg"]
    # tried every BUSY_DELAY s for the 60 s, then once more; nothing else was run
    assert fake.clock.sleeps == [gluster_volume.BUSY_DELAY] * int(60 / gluster_volume.BUSY_DELAY)
    assert [c[:2] for c in fake.mutating()] == [["volume", "create"]] * (int(60 / gluster_volume.BUSY_DELAY) + 1)


def test_force_appended_only_with_a_safety_flag(gluster, capsys):
    fake = gluster(answers(["volume_info_missing.xml", "volume_info_replicate.xml"]))
    run(capsys, name="rep3", bricks=REP3, replica=3, allow_bricks_on_root_filesystem=True)
    assert fake.mutating()[0][-1] == "force"


def test_create_on_another_volumes_brick_fails_before_any_change(gluster, capsys):
    # volume_info_all.xml: the lab pool's volumes arb, disp, dr and rep3, as `gluster volume info --xml` printed them
    fake = gluster({**answers("volume_info_missing.xml"), ALL_VOLUMES: "volume_info_all.xml"})
    result = run(capsys, name="gv1", bricks=REP3, replica=3, allow_bricks_on_root_filesystem=True)
    assert result["failed"] is True
    assert "volume gv1: brick node1:/bricks/rep3 is the same directory as brick node1:/bricks/rep3 of volume rep3" in result["msg"]
    assert fake.mutating() == [] and result["commands"] == []
    assert ["volume", "info"] in fake.calls


def test_add_brick_inside_another_volumes_brick_fails_before_any_change(gluster, capsys):
    fake = gluster({**answers("volume_info_replicate.xml"), ALL_VOLUMES: "volume_info_all.xml"})
    inside = ["node1:/bricks/dr2/rep3", "node2:/bricks/dr2/rep3", "node3:/bricks/dr2/rep3"]
    result = run(capsys, name="rep3", bricks=REP3 + inside, replica=3, _ansible_check_mode=True)
    assert result["failed"] is True
    assert "brick node1:/bricks/dr2/rep3 is inside brick node1:/bricks/dr2 of volume dr" in result["msg"]
    assert fake.mutating() == []


def test_create_beside_other_volumes_reads_them_once(gluster, capsys):
    fake = gluster({**answers(["volume_info_missing.xml", "volume_info_replicate.xml"]), ALL_VOLUMES: "volume_info_all.xml"})
    result = run(capsys, name="gv1", bricks=NEW, replica=3)
    assert result["changed"] is True and "failed" not in result, result
    assert fake.calls.count(["volume", "info"]) == 1


@pytest.mark.parametrize(
    "info, params",
    [
        ("volume_info_replicate.xml", {"name": "rep3", "bricks": REP3, "replica": 3}),
        ("volume_info_replicate.xml", {"name": "rep3", "state": "present"}),
        ("volume_info_stopped.xml", {"name": "disp", "state": "stopped", "disperse": 3, "redundancy": 1}),
        ("volume_info_created.xml", {"name": "rep3", "state": "stopped"}),
        ("volume_info_missing.xml", {"name": "rep3", "state": "absent"}),
    ],
)
def test_converged_changes_nothing(gluster, capsys, info, params):
    fake = gluster(answers(info))
    result = run(capsys, **params)
    assert result["changed"] is False
    assert result["commands"] == []
    assert fake.mutating() == []
    assert "warnings" not in result
    assert ["volume", "info"] not in fake.calls  # every volume is read only when bricks are to be created or added


def test_converged_options_read_effective_values(gluster, capsys):
    fake = gluster(answers("volume_info_replicate.xml"))
    options = {"features.cache-invalidation": True, "client-io-threads": "off", "cluster.min-free-disk": "10%", "write-behind": "on"}
    result = run(capsys, name="rep3", bricks=REP3, options=options)
    assert result["changed"] is False
    assert ["volume", "get", "rep3", "all"] in fake.calls
    assert fake.mutating() == []


def test_diff_shows_the_managed_subset(gluster, capsys):
    gluster(answers("volume_info_replicate.xml"))
    result = run(
        capsys,
        name="rep3",
        state="stopped",
        options={"cluster.min-free-disk": "20%", "nfs.disable": True},
        _ansible_check_mode=True,
        _ansible_diff=True,
    )
    before, after = result["diff"]["before"], result["diff"]["after"]
    assert before["status"] == "started" and after["status"] == "stopped"
    assert before["options"] == {"cluster.min-free-disk": "10%", "nfs.disable": "on"}
    assert after["options"] == {"cluster.min-free-disk": "20%", "nfs.disable": "on"}
    assert before["bricks"] == after["bricks"] == REP3
    assert (after["replica"], after["arbiter"], after["disperse"], after["transport"]) == (3, 0, 0, "tcp")
    assert [c[2:4] for c in result["commands"]] == [["volume", "set"], ["volume", "stop"]]


def test_diff_of_a_new_volume(gluster, capsys):
    gluster(answers("volume_info_missing.xml"))
    result = run(capsys, name="gv0", bricks=REP3, replica=3, _ansible_check_mode=True, _ansible_diff=True)
    assert result["diff"]["before"] == {}
    assert result["diff"]["after"]["status"] == "started"
    assert result["diff"]["after"]["bricks"] == REP3


def test_opret_failure_with_rc_zero_fails(gluster, capsys):
    fake = gluster({**answers("volume_info_missing.xml"), ("volume", "create"): "volume_create_root_partition.xml"})
    result = run(capsys, name="rootfs", bricks=["node1:/bricks/rootfs", "node2:/bricks/rootfs", "node3:/bricks/rootfs"], replica=3)
    assert result["failed"] is True
    msg = result["msg"]
    assert msg.startswith("volume rootfs: gluster --mode=script volume create rootfs replica 3")
    assert "rc=0, opRet=-1, opErrno=30800" in msg
    assert "root partition" in msg and "allow_bricks_on_root_filesystem=true" in msg
    assert result["failed_command"][3] == "create"
    assert [c[1] for c in fake.mutating()] == ["create"]  # nothing after the failed create


def test_stop_failure_stops_the_delete(gluster, capsys):
    fake = gluster({**answers("volume_info_replicate.xml"), ("volume", "stop"): "volume_stop_ok.xml"})
    result = run(capsys, name="rep3", state="absent", confirm_delete=True)
    assert result["failed"] is True
    assert "not in the started state" in result["msg"]
    assert [c[1] for c in fake.mutating()] == ["stop"]


def test_delete_with_confirm(gluster, capsys):
    fake = gluster(answers("volume_info_replicate.xml"))
    result = run(capsys, name="rep3", state="absent", confirm_delete=True)
    assert result["changed"] is True
    assert [c[:3] for c in fake.mutating()] == [["volume", "stop", "rep3"], ["volume", "delete", "rep3"]]
    assert result["volume"] == {}


def test_delete_without_confirm_refused(gluster, capsys):
    fake = gluster(answers("volume_info_replicate.xml"))
    result = run(capsys, name="rep3", state="absent")
    assert result["failed"] is True
    assert "confirm_delete=true" in result["msg"]
    assert fake.mutating() == []


def test_same_host_refused_before_any_command(gluster, capsys):
    fake = gluster(answers("volume_info_missing.xml"))
    result = run(capsys, name="samehost", bricks=["node1:/bricks/sh1", "node1:/bricks/sh2", "node2:/bricks/sh1"], replica=3)
    assert result["failed"] is True
    assert "allow_replica_set_on_one_host" in result["msg"]
    assert fake.mutating() == []


def test_invalid_name_fails_before_reading(gluster, capsys):
    fake = gluster(answers("volume_info_missing.xml"))
    result = run(capsys, name="all", bricks=REP3)
    assert result["failed"] is True and "reserved" in result["msg"]
    assert fake.calls == []


def test_probe_then_wait_until_connected(gluster, capsys):
    fake = gluster(
        answers(
            ["volume_info_missing.xml", "volume_info_replicate.xml"],
            pool=["peer_status_no_peers.xml", "peer_status_disconnected.xml", "pool_list.xml"],
        )
    )
    result = run(capsys, name="rep3", bricks=REP3, replica=3, peer_timeout=30, peer_poll_interval=2)
    assert result["changed"] is True
    words = [c[:3] for c in fake.calls]
    assert words == [
        ["volume", "info", "rep3"],
        ["pool", "list"],
        ["volume", "info"],  # every volume, as a create is planned
        ["peer", "probe", "node2"],
        ["peer", "probe", "node3"],
        ["pool", "list"],  # node3 still disconnected
        ["pool", "list"],  # all in cluster
        ["volume", "create", "rep3"],
        ["volume", "start", "rep3"],
        ["volume", "info", "rep3"],
        ["volume", "status", "rep3"],  # every brick online before returning
    ]
    assert fake.clock.sleeps == [2]
    assert result["commands"][0] == ["gluster", "--mode=script", "peer", "probe", "node2", "--xml"]
    assert all(p["connected"] for p in result["peers"])


def test_peer_timeout_fails_naming_the_peer_without_volume_commands(gluster, capsys):
    fake = gluster(answers("volume_info_missing.xml", pool="peer_status_disconnected.xml"))
    result = run(capsys, name="rep3", bricks=REP3, replica=3, peer_timeout=5, peer_poll_interval=1)
    assert result["failed"] is True
    assert "node3 (Peer in Cluster, disconnected)" in result["msg"]
    assert "glusterd" in result["msg"] and "no volume command was run" in result["msg"]
    assert "node2" not in result["msg"]
    assert fake.mutating() == []
    assert sum(fake.clock.sleeps) == 5
    node3 = [p for p in result["peers"] if p["hostname"] == "node3"][0]
    assert node3["connected"] is False


def test_converged_but_degraded_warns(gluster, capsys):
    fake = gluster(answers("volume_info_replicate.xml", pool="peer_status_disconnected.xml"))
    result = run(capsys, name="rep3", bricks=REP3, replica=3)
    assert result["changed"] is False
    assert fake.mutating() == []
    assert fake.clock.sleeps == []
    assert "node3 (Peer in Cluster, disconnected)" in json.dumps(result["warnings"])
    assert [(p["hostname"], p["connected"], p["state"]) for p in result["peers"]] == [
        ("node2", True, "Peer in Cluster"),
        ("node3", False, "Peer in Cluster"),
    ]


def test_check_mode_with_a_peer_down_warns_and_does_not_wait(gluster, capsys):
    fake = gluster(answers("volume_info_replicate.xml", pool="peer_status_disconnected.xml"))
    result = run(capsys, name="rep3", state="stopped", _ansible_check_mode=True)
    assert result["changed"] is True
    assert fake.mutating() == [] and fake.clock.sleeps == []
    assert "a real run would wait up to 120 s" in json.dumps(result["warnings"])


def test_shrink_refused_with_hand_instructions(gluster, capsys):
    fake = gluster(answers("volume_info_distributed_replicate.xml"))
    bricks = ["node1:/bricks/dr1", "node2:/bricks/dr1", "node3:/bricks/dr1"]
    result = run(capsys, name="dr", bricks=bricks, replica=3)
    assert result["failed"] is True
    assert "gluster volume remove-brick dr BRICK... start" in result["msg"]
    assert fake.mutating() == []


def test_glusterd_down_is_a_clear_failure(gluster, capsys, monkeypatch):
    gluster(answers("volume_info_missing.xml"))

    def down(module, args, **kwargs):
        return 1, "Connection failed. Please check if gluster daemon is operational.\n", ""

    monkeypatch.setattr(AnsibleModule, "run_command", down)
    result = run(capsys, name="gv0", bricks=REP3, replica=3)
    assert result["failed"] is True
    assert "volume gv0: gluster --mode=script volume info gv0 --xml failed: rc=1" in result["msg"]
    assert "gluster daemon is operational" in result["msg"]


@pytest.mark.parametrize("params", [{"peer_timeout": -1}, {"peer_poll_interval": 0}])
def test_bad_peer_timing_fails_before_reading(gluster, capsys, params):
    fake = gluster(answers("volume_info_missing.xml"))
    result = run(capsys, name="gv0", bricks=REP3, replica=3, **params)
    assert result["failed"] is True and "peer_timeout" in result["msg"]
    assert fake.calls == []
