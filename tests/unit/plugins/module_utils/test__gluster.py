"""Pure GlusterFS helpers on XML captured from GlusterFS 10.3 (tests/unit/fixtures/gluster/capture.sh)."""

from __future__ import annotations

import pytest

from ansible_collections.hpclab.cluster.plugins.module_utils import _gluster as g

G = ["gluster", "--mode=script"]
REP3 = ["node1:/bricks/rep3", "node2:/bricks/rep3", "node3:/bricks/rep3"]
DR = ["node1:/bricks/dr1", "node2:/bricks/dr1", "node3:/bricks/dr1", "node1:/bricks/dr2", "node2:/bricks/dr2", "node3:/bricks/dr2"]
ARB = ["node1:/bricks/arb", "node2:/bricks/arb", "node3:/bricks/arb"]
DISP = ["node1:/bricks/disp", "node2:/bricks/disp", "node3:/bricks/disp"]
NEW_SET = ["node1:/bricks/rep3b", "node2:/bricks/rep3b", "node3:/bricks/rep3b"]


def vol(*words):
    return [*G, "volume", *words, "--xml"]


@pytest.fixture
def volume(fixture_text):
    def _volume(fixture, name):
        return g.parse_volume_info(fixture_text("gluster", fixture))[name]

    return _volume


@pytest.fixture
def effective(fixture_text):
    return g.parse_volume_get(fixture_text("gluster", "volume_get_all.xml"))


@pytest.fixture
def ids(fixture_text):
    return g.host_ids(g.parse_pool_list(fixture_text("gluster", "pool_list.xml")), ["node1", "localhost"])


# ------------------------------------------------------------------------------------------ parse


def test_parse_volume_info_replicate(fixture_text):
    volumes = g.parse_volume_info(fixture_text("gluster", "volume_info_replicate.xml"))
    assert list(volumes) == ["rep3"]
    v = volumes["rep3"]
    assert v["id"] == "b63738f5-c6cd-4ace-a1f3-abdcadb91ba3"
    assert (v["status"], v["type"], v["transport"]) == ("started", "Replicate", "tcp")
    assert (v["brick_count"], v["distribute"], v["replica"], v["arbiter"], v["disperse"], v["redundancy"]) == (3, 1, 3, 0, 0, 0)
    assert v["bricks"] == REP3
    assert v["brick_host_uuids"][0] == "39587835-edf7-4bfa-8240-4c8d8aabf0db"
    assert v["arbiter_bricks"] == []
    assert v["options"] == {
        "cluster.granular-entry-heal": "on",
        "storage.fips-mode-rchecksum": "on",
        "transport.address-family": "inet",
        "nfs.disable": "on",
        "performance.client-io-threads": "off",
    }


def test_parse_volume_info_created(volume):
    v = volume("volume_info_created.xml", "rep3")
    assert v["status"] == "created"
    assert v["bricks"] == REP3


def test_parse_volume_info_distributed_replicate(volume):
    v = volume("volume_info_distributed_replicate.xml", "dr")
    assert (v["type"], v["brick_count"], v["distribute"], v["replica"]) == ("Distributed-Replicate", 6, 2, 3)
    assert v["bricks"] == DR


def test_parse_volume_info_arbiter(volume):
    v = volume("volume_info_arbiter.xml", "arb")
    assert (v["type"], v["replica"], v["arbiter"]) == ("Replicate", 3, 1)
    assert v["arbiter_bricks"] == ["node3:/bricks/arb"]


def test_parse_volume_info_disperse_and_stopped(volume):
    started = volume("volume_info_disperse.xml", "disp")
    stopped = volume("volume_info_stopped.xml", "disp")
    assert (started["type"], started["replica"], started["disperse"], started["redundancy"]) == ("Disperse", 1, 3, 1)
    assert started["status"] == "started"
    assert stopped["status"] == "stopped"
    assert stopped["bricks"] == DISP
    assert "performance.client-io-threads" not in stopped["options"]


def test_parse_volume_info_all(fixture_text):
    volumes = g.parse_volume_info(fixture_text("gluster", "volume_info_all.xml"))
    assert sorted(volumes) == ["arb", "disp", "dr", "rep3"]
    assert volumes["rep3"]["options"]["features.cache-invalidation"] == "on"
    assert volumes["dr"]["brick_count"] == 6


def test_parse_volume_info_none(fixture_text):
    assert g.parse_volume_info(fixture_text("gluster", "volume_info_none.xml")) == {}


def test_parse_volume_info_missing_raises_novol(fixture_text):
    with pytest.raises(g.GlusterCliError) as info:
        g.parse_volume_info(fixture_text("gluster", "volume_info_missing.xml"))
    assert (info.value.op_ret, info.value.op_errno) == (-1, g.EG_NOVOL)
    assert info.value.op_errstr == "Volume does not exist"


def test_parse_peer_status_connected(fixture_text):
    peers = g.parse_peer_status(fixture_text("gluster", "peer_status_connected.xml"))
    assert [(p["hostname"], p["connected"], p["state"], p["state_str"], p["local"]) for p in peers] == [
        ("node2", True, 3, "Peer in Cluster", False),
        ("node3", True, 3, "Peer in Cluster", False),
    ]
    assert peers[1]["uuid"] == "4f652648-e6d8-41ed-b5a2-a62f4af25764"
    assert peers[0]["hostnames"] == ["node2"]
    assert all(g.peer_ready(p) for p in peers)


def test_parse_peer_status_disconnected(fixture_text):
    peers = g.parse_peer_status(fixture_text("gluster", "peer_status_disconnected.xml"))
    node3 = peers[1]
    assert (node3["hostname"], node3["connected"], node3["state"]) == ("node3", False, 3)
    assert not g.peer_ready(node3)
    assert g.unready_peers(peers, ["node2", "node3"]) == ["node3"]


def test_parse_peer_status_no_peers(fixture_text):
    peers = g.parse_peer_status(fixture_text("gluster", "peer_status_no_peers.xml"))
    assert peers == []
    assert g.missing_peers(peers, ["node2", "node3"]) == ["node2", "node3"]


def test_parse_pool_list_marks_this_node(fixture_text):
    pool = g.parse_pool_list(fixture_text("gluster", "pool_list.xml"))
    assert [(p["hostname"], p["local"]) for p in pool] == [("node2", False), ("node3", False), ("localhost", True)]
    me = pool[2]
    assert (me["uuid"], me["connected"], me["state"]) == ("39587835-edf7-4bfa-8240-4c8d8aabf0db", True, None)
    assert g.peer_ready(me)
    # this node is never matched as a remote peer, not even by "localhost"
    assert g.find_peer(pool, "localhost") is None
    assert [p["hostname"] for p in g.peer_facts(pool)] == ["node2", "node3"]


def test_host_ids_map_every_name_and_this_node(fixture_text):
    pool = g.parse_pool_list(fixture_text("gluster", "pool_list.xml"))
    pool[0]["hostnames"].append("10.0.0.12")
    ids = g.host_ids(pool, ["node1", "NODE1.lab"])
    assert ids["10.0.0.12"] == ids["node2"] == "375f0c93-0d81-4d03-8b3f-341b43f9f658"
    assert ids["node1.lab"] == ids["node1"] == "39587835-edf7-4bfa-8240-4c8d8aabf0db"


def test_parse_volume_get_one_and_default(fixture_text):
    assert g.parse_volume_get(fixture_text("gluster", "volume_get_one.xml")) == {"features.cache-invalidation": "on"}
    assert g.parse_volume_get(fixture_text("gluster", "volume_get_default.xml")) == {"performance.cache-size": "32MB"}


def test_parse_volume_get_all(effective):
    assert len(effective) == 336  # 342 entries, some keys listed by two translators
    assert effective["features.cache-invalidation"] == "on"
    assert effective["nfs.disable"] == "on"
    assert effective["cluster.min-free-disk"] == "10%"
    assert effective["performance.quick-read-cache-invalidation"] == "false"
    assert effective["cluster.subvols-per-directory"] == "(null)"
    # io-cache says 32MB, quick-read 128MB: not one value
    assert effective["performance.cache-size"] is None
    assert not any(v and v.endswith("(DEFAULT)") for v in effective.values())
    assert effective["performance.cache-priority"] == ""  # printed as " (DEFAULT)"


@pytest.mark.parametrize(
    "fixture, child, text",
    [
        ("volume_add_brick_ok.xml", "output", "Add Brick successful"),
        ("volume_set_ok.xml", "output", "Set volume successful"),
        ("volume_create_rep3.xml", "volCreate/volume/name", "rep3"),
        ("volume_create_same_host.xml", "volCreate/volume/name", "samehost"),
        ("volume_start_ok.xml", "volStart/volume/name", "disp"),
        ("volume_delete_ok.xml", "volDelete/volume/name", "samehost"),
        ("peer_probe_again.xml", "output", "Host node2 port 24007 already in peer list"),
        ("volume_status_replicate.xml", "volStatus/volumes/volume/volName", "rep3"),
        ("volume_status_brick_down.xml", "volStatus/volumes/volume/nodeCount", "4"),
    ],
)
def test_parse_xml_success(fixture_text, fixture, child, text):
    root = g.parse_xml(fixture_text("gluster", fixture))
    assert root.findtext(child) == text


@pytest.mark.parametrize(
    "fixture, errno, fragment",
    [
        ("volume_create_root_partition.xml", 30800, "is being created in the root partition"),
        ("volume_create_same_host_noforce.xml", 30800, "Multiple bricks of a replicate volume are present on the same server"),
        ("volume_create_bad_count.xml", 30800, "Failed to create volume files"),
        ("volume_add_brick_wrong_count.xml", 0, "Incorrect number of bricks supplied 1 with count 3"),
        ("volume_stop_ok.xml", 30800, "Volume samehost is not in the started state"),
        ("volume_info_missing.xml", 30806, "Volume does not exist"),
    ],
)
def test_parse_xml_failure_raises(fixture_text, fixture, errno, fragment):
    with pytest.raises(g.GlusterCliError) as info:
        g.parse_xml(fixture_text("gluster", fixture))
    assert info.value.op_ret == -1
    assert info.value.op_errno == errno
    assert fragment in info.value.op_errstr


@pytest.mark.parametrize("text", ["", "Connection failed. Please check if gluster daemon is operational.\n", "<other/>"])
def test_parse_xml_not_cli_xml_raises(text):
    with pytest.raises(g.GlusterCliError) as info:
        g.parse_xml(text)
    assert info.value.op_ret is None


# ------------------------------------------------------------------------------------------ validate


@pytest.mark.parametrize("name", ["gv0", "rep3", "a_b-c", "A" * 256, "9lives"])
def test_valid_volume_names(name):
    assert g.validate_volume_name(name) == name


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("", "non-empty"),
        ("-gv0", "must not start with '-'"),
        ("all", "reserved"),
        ("force", "reserved"),
        ("volume", "reserved"),
        ("gv/0", "only letters"),
        ("gv.0", "only letters"),
        ("gv 0", "only letters"),
        ("A" * 257, "at most 256"),
    ],
)
def test_invalid_volume_names(name, fragment):
    with pytest.raises(g.GlusterError, match=fragment):
        g.validate_volume_name(name)


@pytest.mark.parametrize(
    "brick, canonical",
    [
        ("node1:/bricks/rep3", "node1:/bricks/rep3"),
        ("node1:/bricks/rep3/", "node1:/bricks/rep3"),
        ("node1://bricks///rep3//", "node1:/bricks/rep3"),
        ("fe80::1:/data/b", "fe80::1:/data/b"),
    ],
)
def test_canonical_brick(brick, canonical):
    assert g.canonical_brick(brick) == canonical


@pytest.mark.parametrize(
    "brick, fragment",
    [
        ("node1", "host:/absolute/path"),
        (":/data", "no host"),
        ("node1:data", "absolute"),
        ("node1:/", "root directory"),
        ("localhost:/data", "loopback"),
        ("127.0.0.1:/data", "loopback"),
    ],
)
def test_bad_bricks(brick, fragment):
    with pytest.raises(g.GlusterError, match=fragment):
        g.parse_brick(brick)


@pytest.mark.parametrize(
    "desired, current, equal",
    [
        (True, "on", True),
        (False, "off", True),
        ("yes", "on", True),
        ("enable", "true", True),
        ("1", "on", True),
        (0, "off", True),
        ("Disable", "no", True),
        (True, "off", False),
        ("256MB", "256MB", True),
        ("256MB", "32MB", False),
        (8, "8", True),
        ("inet", "inet6", False),
        ("on", None, False),
    ],
)
def test_values_equal(desired, current, equal):
    assert g.values_equal(desired, current) is equal


def test_resolve_option_keys(effective):
    assert g.resolve_option_key("write-behind", effective) == "performance.write-behind"
    assert g.resolve_option_key("cache-size", effective) == "performance.cache-size"
    assert g.resolve_option_key("nfs.disable", effective) == "nfs.disable"
    assert g.resolve_option_key("user.site", effective) == "user.site"
    with pytest.raises(g.GlusterError, match="ambiguous.*features.cache-invalidation"):
        g.resolve_option_key("cache-invalidation", effective)
    with pytest.raises(g.GlusterError, match="not a volume option"):
        g.resolve_option_key("no-such-option", effective)
    assert g.resolve_options({"write-behind": False, "nfs.disable": True}, effective) == {
        "performance.write-behind": "off",
        "nfs.disable": "on",
    }
    assert g.resolve_options({"write-behind": False}, None) == {"write-behind": "off"}


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"replica": 1}, "at least 2"),
        ({"replica": 3, "disperse": 3}, "cannot be combined"),
        ({"arbiter": 1}, "needs replica 3"),
        ({"replica": 4, "arbiter": 1}, "needs replica 3"),
        ({"arbiter": 2, "replica": 3}, "only arbiter 1"),
        ({"redundancy": 1}, "needs disperse"),
        ({"disperse": 2}, "at least 3"),
        ({"disperse": 4, "redundancy": 2}, "less than half"),
        ({"bricks": ["node1:/b", "node1:/b/"]}, "listed twice"),
        ({"name": "all"}, "reserved"),
        ({"transport": "udp"}, "transport"),
    ],
)
def test_normalise_desired_refuses(params, fragment):
    with pytest.raises(g.GlusterError, match=fragment):
        g.normalise_desired({"name": "gv0", **params})


def test_replica_2_arbiter_1_is_replica_3():
    assert g.normalise_desired({"name": "gv0", "replica": 2, "arbiter": 1})["replica"] == 3


# ------------------------------------------------------------------------------------------ plan: converged


@pytest.mark.parametrize(
    "fixture, name, params",
    [
        ("volume_info_replicate.xml", "rep3", {"state": "started", "bricks": REP3, "replica": 3}),
        ("volume_info_replicate.xml", "rep3", {"state": "present", "bricks": REP3, "replica": 3}),
        ("volume_info_replicate.xml", "rep3", {"state": "started"}),
        ("volume_info_replicate.xml", "rep3", {"bricks": ["node1:/bricks/rep3/", "node2://bricks/rep3", "node3:/bricks/rep3"]}),
        ("volume_info_created.xml", "rep3", {"state": "present", "bricks": REP3, "replica": 3}),
        ("volume_info_created.xml", "rep3", {"state": "stopped", "bricks": REP3, "replica": 3}),
        ("volume_info_stopped.xml", "disp", {"state": "stopped", "bricks": DISP, "disperse": 3, "redundancy": 1}),
        ("volume_info_stopped.xml", "disp", {"state": "present", "bricks": DISP, "disperse": 3}),
        ("volume_info_disperse.xml", "disp", {"state": "started", "bricks": DISP, "disperse": 3, "redundancy": 1}),
        ("volume_info_distributed_replicate.xml", "dr", {"state": "started", "bricks": DR, "replica": 3}),
        ("volume_info_arbiter.xml", "arb", {"bricks": ARB, "replica": 3, "arbiter": 1}),
        ("volume_info_arbiter.xml", "arb", {"bricks": ARB, "replica": 2, "arbiter": 1}),
    ],
)
def test_converged_plans_nothing(volume, ids, fixture, name, params):
    current = volume(fixture, name)
    assert g.plan_volume(current, {"name": name, **params}, None, ids) == []


def test_absent_without_volume_plans_nothing():
    assert g.plan_volume(None, {"name": "gone", "state": "absent"}) == []


def test_converged_options_against_effective_values(volume, effective):
    current = volume("volume_info_replicate.xml", "rep3")
    options = {
        "features.cache-invalidation": True,  # set: "on"
        "nfs.disable": "yes",  # set: "on"
        "client-io-threads": "off",  # short key, set: "off"
        "cluster.min-free-disk": "10%",  # the default, " (DEFAULT)" stripped
        "write-behind": "enable",  # performance.write-behind is "on"
    }
    desired = {"name": "rep3", "bricks": REP3, "replica": 3, "options": options}
    assert g.plan_volume(current, desired, effective) == []


def test_brick_named_by_another_name_of_its_peer(volume, fixture_text):
    pool = g.parse_pool_list(fixture_text("gluster", "pool_list.xml"))
    pool[0]["hostnames"].append("10.0.0.12")
    ids = g.host_ids(pool, ["node1"])
    bricks = ["node1:/bricks/rep3", "10.0.0.12:/bricks/rep3", "node3:/bricks/rep3"]
    assert g.plan_volume(volume("volume_info_replicate.xml", "rep3"), {"name": "rep3", "bricks": bricks}, None, ids) == []


# ------------------------------------------------------------------------------------------ plan: changes


@pytest.mark.parametrize(
    "params, expected",
    [
        (
            {"state": "started", "replica": 3},
            [vol("create", "gv0", "replica", "3", "transport", "tcp", *REP3), vol("start", "gv0")],
        ),
        ({"state": "present", "replica": 3}, [vol("create", "gv0", "replica", "3", "transport", "tcp", *REP3)]),
        ({"state": "stopped", "replica": 3}, [vol("create", "gv0", "replica", "3", "transport", "tcp", *REP3)]),
        (
            {"replica": 2, "arbiter": 1},
            [vol("create", "gv0", "replica", "3", "arbiter", "1", "transport", "tcp", *REP3), vol("start", "gv0")],
        ),
        (
            {"disperse": 3, "redundancy": 1, "transport": "rdma"},
            [vol("create", "gv0", "disperse", "3", "redundancy", "1", "transport", "rdma", *REP3), vol("start", "gv0")],
        ),
        ({"state": "present"}, [vol("create", "gv0", "transport", "tcp", *REP3)]),
        (
            {"replica": 3, "options": {"nfs.disable": True, "write-behind": "off"}},
            [
                vol("create", "gv0", "replica", "3", "transport", "tcp", *REP3),
                vol("set", "gv0", "nfs.disable", "on"),
                vol("set", "gv0", "write-behind", "off"),
                vol("start", "gv0"),
            ],
        ),
    ],
)
def test_create_plans(ids, params, expected):
    assert g.plan_volume(None, {"name": "gv0", "bricks": REP3, **params}, None, ids) == expected


@pytest.mark.parametrize(
    "flags, forced",
    [
        ({}, False),
        ({"allow_bricks_on_root_filesystem": True}, True),
        ({"allow_replica_set_on_one_host": True}, True),
        ({"allow_bricks_on_root_filesystem": False, "allow_replica_set_on_one_host": False}, False),
    ],
)
def test_force_only_with_a_safety_flag(ids, volume, flags, forced):
    create = g.plan_volume(None, {"name": "gv0", "bricks": REP3, "replica": 3, **flags}, None, ids)[0]
    grow = g.plan_volume(volume("volume_info_replicate.xml", "rep3"), {"name": "rep3", "bricks": REP3 + NEW_SET, **flags}, None, ids)[0]
    assert create[:4] == [*G, "volume", "create"] and grow[:4] == [*G, "volume", "add-brick"]
    assert (create[-2] == "force") is forced
    assert (grow[-2] == "force") is forced
    assert "force" not in create[:-2] and "force" not in grow[:-2]


def test_start_created_volume(volume):
    assert g.plan_volume(volume("volume_info_created.xml", "rep3"), {"name": "rep3", "state": "started"}) == [vol("start", "rep3")]


def test_start_stopped_volume(volume):
    assert g.plan_volume(volume("volume_info_stopped.xml", "disp"), {"name": "disp"}) == [vol("start", "disp")]


def test_stop_started_volume(volume):
    assert g.plan_volume(volume("volume_info_replicate.xml", "rep3"), {"name": "rep3", "state": "stopped"}) == [vol("stop", "rep3")]


def test_set_differing_options_before_start(volume, effective):
    current = volume("volume_info_created.xml", "rep3")
    desired = {"name": "rep3", "options": {"performance.cache-size": "256MB", "nfs.disable": "on", "min-free-disk": "20%"}}
    assert g.plan_volume(current, desired, effective) == [
        vol("set", "rep3", "performance.cache-size", "256MB"),
        vol("set", "rep3", "cluster.min-free-disk", "20%"),
        vol("start", "rep3"),
    ]


def test_ambiguous_option_refused(volume, effective):
    with pytest.raises(g.GlusterError, match="ambiguous"):
        g.plan_volume(volume("volume_info_replicate.xml", "rep3"), {"name": "rep3", "options": {"cache-invalidation": "on"}}, effective)


def test_add_brick_then_rebalance(volume, ids):
    plan = g.plan_volume(volume("volume_info_replicate.xml", "rep3"), {"name": "rep3", "bricks": REP3 + NEW_SET, "replica": 3}, None, ids)
    assert plan == [vol("add-brick", "rep3", "replica", "3", *NEW_SET), vol("rebalance", "rep3", "start")]


def test_add_brick_without_rebalance(volume, ids):
    plan = g.plan_volume(volume("volume_info_replicate.xml", "rep3"), {"name": "rep3", "bricks": REP3 + NEW_SET, "rebalance": False}, None, ids)
    assert plan == [vol("add-brick", "rep3", "replica", "3", *NEW_SET)]


def test_add_brick_to_stopped_volume_skips_rebalance(volume, ids):
    new = ["node1:/bricks/disp2", "node2:/bricks/disp2", "node3:/bricks/disp2"]
    plan = g.plan_volume(volume("volume_info_stopped.xml", "disp"), {"name": "disp", "state": "present", "bricks": DISP + new}, None, ids)
    assert plan == [vol("add-brick", "disp", *new)]


def test_add_brick_to_stopped_volume_started_then_rebalanced(volume, ids):
    new = ["node1:/bricks/disp2", "node2:/bricks/disp2", "node3:/bricks/disp2"]
    plan = g.plan_volume(volume("volume_info_stopped.xml", "disp"), {"name": "disp", "bricks": DISP + new}, None, ids)
    assert plan == [vol("add-brick", "disp", *new), vol("start", "disp"), vol("rebalance", "disp", "start")]


def test_add_brick_to_arbiter_volume_names_the_arbiter(volume, ids):
    new = ["node1:/bricks/arb2", "node2:/bricks/arb2", "node3:/bricks/arb2"]
    plan = g.plan_volume(volume("volume_info_arbiter.xml", "arb"), {"name": "arb", "bricks": ARB + new}, None, ids)
    assert plan[0] == vol("add-brick", "arb", "replica", "3", "arbiter", "1", *new)


@pytest.mark.parametrize(
    "fixture, name, expected",
    [
        ("volume_info_replicate.xml", "rep3", [vol("stop", "rep3"), vol("delete", "rep3")]),
        ("volume_info_stopped.xml", "disp", [vol("delete", "disp")]),
        ("volume_info_created.xml", "rep3", [vol("delete", "rep3")]),
    ],
)
def test_delete_with_confirm(volume, fixture, name, expected):
    assert g.plan_volume(volume(fixture, name), {"name": name, "state": "absent", "confirm_delete": True}) == expected


# ------------------------------------------------------------------------------------------ plan: refusals


def test_delete_without_confirm_refused(volume):
    with pytest.raises(g.GlusterError, match="confirm_delete=true"):
        g.plan_volume(volume("volume_info_replicate.xml", "rep3"), {"name": "rep3", "state": "absent"})


@pytest.mark.parametrize(
    "bricks, fragment",
    [
        (DR[:3], "never removes or replaces bricks.*remove-brick dr BRICK... start.*status.*commit"),
        (DR[:5] + ["node3:/bricks/dr9"], "not in 'bricks': node3:/bricks/dr2"),
        (DR[3:] + DR[:3], "must come first"),
        (DR + ["node1:/bricks/dr3", "node2:/bricks/dr3"], "2 bricks is not a multiple of the set size 3"),
        (DR + ["node1:/bricks/dr3", "node1:/bricks/dr4", "node2:/bricks/dr3"], "two bricks on one host.*allow_replica_set_on_one_host"),
    ],
)
def test_brick_changes_refused(volume, ids, bricks, fragment):
    with pytest.raises(g.GlusterError, match=fragment):
        g.plan_volume(volume("volume_info_distributed_replicate.xml", "dr"), {"name": "dr", "bricks": bricks}, None, ids)


def test_same_host_in_new_set_allowed_with_flag(volume, ids):
    new = ["node1:/bricks/dr3", "node1:/bricks/dr4", "node2:/bricks/dr3"]
    plan = g.plan_volume(
        volume("volume_info_distributed_replicate.xml", "dr"), {"name": "dr", "bricks": DR + new, "allow_replica_set_on_one_host": True}, None, ids
    )
    assert plan[0] == vol("add-brick", "dr", "replica", "3", *new, "force")


@pytest.mark.parametrize(
    "fixture, name, params, fragment",
    [
        ("volume_info_distributed_replicate.xml", "dr", {"replica": 2}, "never lowers the replica count.*remove-brick dr replica 2"),
        ("volume_info_replicate.xml", "rep3", {"replica": 4}, "does not raise the replica count"),
        ("volume_info_replicate.xml", "rep3", {"disperse": 3}, "changing the volume type"),
        ("volume_info_disperse.xml", "disp", {"replica": 3}, "cannot become a replicated one"),
        ("volume_info_disperse.xml", "disp", {"disperse": 3, "redundancy": 2}, "less than half"),
        ("volume_info_arbiter.xml", "arb", {"replica": 3, "arbiter": 0}, "arbiter"),
        ("volume_info_replicate.xml", "rep3", {"replica": 3, "arbiter": 1}, "arbiter"),
        ("volume_info_replicate.xml", "rep3", {"transport": "rdma"}, "transport"),
    ],
)
def test_type_changes_refused(volume, fixture, name, params, fragment):
    with pytest.raises(g.GlusterError, match=fragment):
        g.plan_volume(volume(fixture, name), {"name": name, **params})


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"bricks": REP3[:2], "replica": 3}, "2 bricks is not a multiple of the set size 3"),
        ({"bricks": ["node1:/b1", "node1:/b2", "node2:/b1"], "replica": 3}, "set 1 .* two bricks on one host"),
        ({"bricks": REP3 + ["node1:/b1", "node2:/b1", "node2:/b2"], "replica": 3}, "set 2 .* two bricks on one host"),
        ({"bricks": ["node1:/b1", "node1:/b2", "node2:/b1"], "disperse": 3}, "two bricks on one host"),
        ({"replica": 3}, "'bricks' is needed"),
    ],
)
def test_create_refusals(ids, params, fragment):
    with pytest.raises(g.GlusterError, match=fragment):
        g.plan_volume(None, {"name": "gv0", **params}, None, ids)


def test_same_host_recognised_through_another_name(fixture_text):
    pool = g.parse_pool_list(fixture_text("gluster", "pool_list.xml"))
    pool[0]["hostnames"].append("10.0.0.12")
    ids = g.host_ids(pool, ["node1"])
    with pytest.raises(g.GlusterError, match="two bricks on one host"):
        g.plan_volume(None, {"name": "gv0", "bricks": ["node2:/b1", "10.0.0.12:/b2", "node3:/b1"], "replica": 3}, None, ids)


def test_create_on_one_host_allowed_with_flag(ids):
    bricks = ["node1:/b1", "node1:/b2", "node1:/b3"]
    plan = g.plan_volume(None, {"name": "gv0", "bricks": bricks, "replica": 3, "allow_replica_set_on_one_host": True}, None, ids)
    assert plan[0] == vol("create", "gv0", "replica", "3", "transport", "tcp", *bricks, "force")


# ------------------------------------------------------------------------------------------ peers and diff views


def test_remote_hosts_skip_this_node():
    assert g.remote_hosts(REP3 + NEW_SET, ["node1", "localhost"]) == ["node2", "node3"]
    assert g.remote_hosts(["NODE1:/b", "node2:/b"], ["node1"]) == ["node2"]


def test_probe_argv():
    assert g.probe_argv("node2") == [*G, "peer", "probe", "node2", "--xml"]


def test_diff_views(volume, effective):
    before = g.diff_view(volume("volume_info_replicate.xml", "rep3"), ["cluster.min-free-disk", "nfs.disable"], effective)
    assert before == {
        "status": "started",
        "bricks": REP3,
        "replica": 3,
        "arbiter": 0,
        "disperse": 0,
        "redundancy": 0,
        "transport": "tcp",
        "options": {"cluster.min-free-disk": "10%", "nfs.disable": "on"},
    }
    after = g.predicted_view(
        before, {"name": "rep3", "state": "stopped", "bricks": REP3 + NEW_SET}, {"cluster.min-free-disk": "20%", "nfs.disable": "yes"}
    )
    assert after["status"] == "stopped"
    assert after["bricks"] == REP3 + NEW_SET
    assert after["options"] == {"cluster.min-free-disk": "20%", "nfs.disable": "on"}
    assert g.predicted_view(before, {"name": "rep3", "state": "absent"}, {}) == {}
    created = g.predicted_view({}, {"name": "gv0", "state": "present", "bricks": REP3, "replica": 3}, {})
    assert (created["status"], created["replica"], created["bricks"]) == ("created", 3, REP3)


def test_volume_facts(volume):
    facts = g.volume_facts(volume("volume_info_distributed_replicate.xml", "dr"))
    assert set(facts) == {"name", "id", "type", "status", "replica", "arbiter", "disperse", "redundancy", "distribute", "transport", "bricks", "options"}
    assert g.volume_facts(None) == {}


def test_add_brick_names_lets_a_peer_answer_to_its_brick_host_name(fixture_text):
    """Seen in the lab: a peer probed as gluster2 listed by the pool only under its FQDN."""
    add_brick_names, find_peer, parse_pool_list = g.add_brick_names, g.find_peer, g.parse_pool_list

    volume = g.parse_volume_info(fixture_text("gluster", "volume_info_replicate.xml"))["rep3"]
    pool = parse_pool_list(fixture_text("gluster", "pool_list.xml"))
    renamed = [dict(p, hostname=p["hostname"] + ".lab", hostnames=[n + ".lab" for n in p["hostnames"]]) if not p["local"] else p for p in pool]
    remote = volume["bricks"][1].rpartition(":")[0]
    assert find_peer(renamed, remote) is None
    assert find_peer(add_brick_names(renamed, volume), remote)["hostname"] == remote + ".lab"
    assert add_brick_names(pool, None) is pool


def test_parse_volume_status_lists_bricks_only(fixture_text):
    status = g.parse_volume_status(fixture_text("gluster", "volume_status_replicate.xml"))
    assert [b["brick"] for b in status] == ["node1:/bricks/rep3", "node2:/bricks/rep3", "node3:/bricks/rep3"]
    assert all(b["online"] for b in status)


def test_offline_bricks_none_when_all_up(fixture_text):
    volume = g.parse_volume_info(fixture_text("gluster", "volume_info_replicate.xml"))["rep3"]
    status = g.parse_volume_status(fixture_text("gluster", "volume_status_replicate.xml"))
    assert g.offline_bricks(volume, status) == []


def test_offline_bricks_names_the_brick_of_a_disconnected_peer(fixture_text):
    volume = g.parse_volume_info(fixture_text("gluster", "volume_info_replicate.xml"))["rep3"]
    status = g.parse_volume_status(fixture_text("gluster", "volume_status_brick_down.xml"))
    assert g.offline_bricks(volume, status) == ["node3:/bricks/rep3"]


def test_cli_busy_on_glusterds_lock_answers(fixture_text):
    assert g.cli_busy("", fixture_text("gluster", "volume_start_busy.txt"))
    assert g.cli_busy("<opErrstr>Locking failed on node2. Please check log file for details.</opErrstr>")
    assert not g.cli_busy(fixture_text("gluster", "volume_create_root_partition.xml"), "")
    assert not g.cli_busy(None, "")


def test_peers_settling_is_the_staging_failure_after_a_probe_only():
    """The opErrstr of `volume create` in the slurm_native scenario's CI run of 2026-12-03, 30 s after the probes."""
    staging = "<opErrstr>Staging failed on slurmd1. Error: Host slurmd2 not connected</opErrstr>"
    assert g.peers_settling(staging) and g.cli_busy(staging)
    assert not g.peers_settling("<opErrstr>Locking failed on node2. Please check log file for details.</opErrstr>")
    assert not g.peers_settling(None, "")


def test_cli_busy_while_a_new_peer_is_not_yet_connected_to_the_others():
    # opErrstr of `volume create` right after the peer probes, on a loaded machine (glusterfs scenario, 2026-12-02).
    assert g.cli_busy("<opErrstr>Staging failed on gluster2. Error: Host gluster3 not connected</opErrstr>", "")
    assert not g.cli_busy("<opErrstr>Staging failed on gluster2. Error: Brick: gluster2:/b1 not available.</opErrstr>", "")


# ------------------------------------------------------------------------------------------ bricks of other volumes


@pytest.fixture
def all_volumes(fixture_text):
    """Every volume of the lab pool (arb, disp, dr, rep3) as `gluster volume info --xml` without a name printed them."""
    return g.parse_volume_info(fixture_text("gluster", "volume_info_all.xml"))


@pytest.mark.parametrize(
    "bricks, fragment",
    [
        (REP3, "brick node1:/bricks/rep3 is the same directory as brick node1:/bricks/rep3 of volume rep3"),
        (["node1:/bricks/x", "node2:/bricks/dr1/sub", "node3:/bricks/x"], "brick node2:/bricks/dr1/sub is inside brick node2:/bricks/dr1 of volume dr"),
        (["node1:/bricks", "node2:/bricks/x", "node3:/bricks/x"], "brick node1:/bricks is above brick node1:/bricks/arb of volume arb"),
        (["node1:/bricks/x", "node2:/bricks/x", "node3:/bricks/disp//"], "brick node3:/bricks/disp is the same directory as brick node3:/bricks/disp"),
    ],
)
def test_create_on_another_volumes_bricks_refused_even_with_force(ids, all_volumes, bricks, fragment):
    params = {"name": "gv1", "bricks": bricks, "replica": 3, "allow_bricks_on_root_filesystem": True}
    with pytest.raises(g.GlusterError, match=fragment):
        g.plan_volume(None, params, None, ids, all_volumes)


def test_add_brick_inside_another_volumes_brick_refused(ids, volume, all_volumes):
    inside_dr = ["node1:/bricks/dr1/x", "node2:/bricks/dr1/x", "node3:/bricks/dr1/x"]
    with pytest.raises(g.GlusterError, match="volume rep3: brick node1:/bricks/dr1/x is inside brick node1:/bricks/dr1 of volume dr"):
        g.plan_volume(volume("volume_info_replicate.xml", "rep3"), {"name": "rep3", "bricks": REP3 + inside_dr}, None, ids, all_volumes)


def test_own_bricks_and_side_by_side_directories_pass(ids, volume, all_volumes):
    # rep3's own bricks are in the list of all volumes; /bricks/rep3b only shares a name prefix with /bricks/rep3
    grow = g.plan_volume(volume("volume_info_replicate.xml", "rep3"), {"name": "rep3", "bricks": REP3 + NEW_SET}, None, ids, all_volumes)
    assert grow[0] == vol("add-brick", "rep3", "replica", "3", *NEW_SET)
    assert g.plan_volume(None, {"name": "gv1", "bricks": NEW_SET, "replica": 3}, None, ids, all_volumes)[0][3] == "create"


def test_another_volumes_brick_recognised_through_another_name_of_its_peer(fixture_text, all_volumes):
    pool = g.parse_pool_list(fixture_text("gluster", "pool_list.xml"))
    pool[0]["hostnames"].append("10.0.0.12")  # node2's address, as a second name of the peer
    ids = g.host_ids(pool, ["node1"])
    with pytest.raises(g.GlusterError, match="brick 10.0.0.12:/bricks/rep3 is the same directory as brick node2:/bricks/rep3 of volume rep3"):
        g.plan_volume(None, {"name": "gv1", "bricks": ["node1:/bricks/x", "10.0.0.12:/bricks/rep3", "node3:/bricks/x"], "replica": 3},
                      None, ids, all_volumes)


def test_one_brick_distribute_volume_checked_too(ids, all_volumes):
    assert g.plan_volume(None, {"name": "gv1", "bricks": ["node1:/bricks/gv1"]}, None, ids, all_volumes)[0][3] == "create"
    with pytest.raises(g.GlusterError, match="of volume rep3"):
        g.plan_volume(None, {"name": "gv1", "bricks": ["node1:/bricks/rep3"]}, None, ids, all_volumes)
