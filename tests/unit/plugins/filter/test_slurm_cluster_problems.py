"""The slurm_master role's whole-cluster preflight: every problem names its host or variable and the fix."""

from __future__ import annotations

import copy

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.slurm_cluster_problems import FilterModule

PROBLEMS = FilterModule().filters()["slurm_cluster_problems"]

NODES = {
    "c1": {"hostname": "c1", "memtotal_mb": 4000, "munge_key": True, "gpus": {}},
    "n1": {"hostname": "n1", "memtotal_mb": 8000, "munge_key": True, "gpus": {}},
    "n2": {
        "hostname": "n2",
        "memtotal_mb": 16000,
        "munge_key": True,
        "gpus": {"count": 2, "type": "a100", "files": ["/dev/nvidia0", "/dev/nvidia1"]},
    },
}
ACCOUNTING = {
    "db_name": "slurm_acct_db",
    "db_user": "slurm",
    "db_password": "S3cret.pass-word",
    "db_password_file": "/etc/slurm/.dbpass",
}
USERS = [{"name": "alice", "uid": 2001, "gid": 2001, "groups": []}, {"name": "bob", "uid": 2002, "gid": 2002}]
BASE = {
    "controller": "c1",
    "workers": ["n1", "n2"],
    "partitions": {"batch": ["n1", "n2"], "gpu": ["n2"]},
    "default_partition": "batch",
    "users": USERS,
    "accounting": ACCOUNTING,
    "shared_home": "/shared/home",
    "shared_home_exists": True,
}


def check(nodes=None, **kwargs):
    """The baseline cluster, with kwargs replacing filter arguments."""
    return PROBLEMS(copy.deepcopy(NODES) if nodes is None else nodes, **{**copy.deepcopy(BASE), **kwargs})


def nodes_with(host, **fields):
    """The baseline nodes with some fields of one host changed (None removes the field)."""
    nodes = copy.deepcopy(NODES)
    for key, value in fields.items():
        if value is None:
            nodes[host].pop(key, None)
        else:
            nodes[host][key] = value
    return nodes


def renamed(old, new):
    """The baseline nodes with one host under another inventory name (its host name too)."""
    nodes = copy.deepcopy(NODES)
    nodes[new] = nodes.pop(old)
    nodes[new]["hostname"] = new
    return nodes


def test_registered():
    assert set(FilterModule().filters()) == {"slurm_cluster_problems"}


@pytest.mark.parametrize("mode", ["container", "native"])
def test_the_baseline_cluster_has_no_problem(mode):
    assert check(mode=mode) == []


@pytest.mark.parametrize(
    "nodes,kwargs",
    [
        pytest.param(None, {"users": [], "accounting": None, "default_partition": ""}, id="minimal"),
        pytest.param(None, {"users": None}, id="users-none"),
        pytest.param(None, {"accounting": {}}, id="accounting-empty"),
        pytest.param(None, {"accounting": None}, id="accounting-none"),
        pytest.param(None, {"default_partition": None}, id="default-partition-none"),
        pytest.param(None, {"default_partition": "gpu"}, id="default-partition-second"),
        pytest.param(None, {"munge_hosts": None}, id="munge-hosts-none"),
        pytest.param(nodes_with("n2", hostname="node2.example.org"), {}, id="hostname-mismatch-container"),
        pytest.param(nodes_with("n1", hostname=None), {"mode": "native"}, id="native-hostname-unknown"),
        pytest.param(nodes_with("n2", gpus={"count": 2, "type": "a100"}), {}, id="gpus-files-absent"),
        pytest.param(nodes_with("n2", gpus={"count": "2", "files": ["/dev/a", "/dev/b"]}), {}, id="gpus-count-text"),
        pytest.param(nodes_with("n2", gpus={"count": 0, "files": []}), {}, id="gpus-zero"),
        pytest.param(nodes_with("n2", gpus={}), {}, id="gpus-empty-dict"),
        pytest.param(nodes_with("n2", gpus=None), {}, id="gpus-absent"),
        pytest.param(nodes_with("n2", gpus=[]), {}, id="gpus-empty-list"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_password": ""}}, id="password-empty"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_password": None}}, id="password-none"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_password": "a" * 12}}, id="password-12"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_password": "a" * 128}}, id="password-128"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_password": "aZ09._+=@%^:,/-"}}, id="password-all-signs"),
        pytest.param(None, {"users": [], "shared_home_exists": False}, id="no-shared-home-without-users"),
        pytest.param(nodes_with("n2", munge_key=False), {"munge_hosts": ["n2"]}, id="munge-key-later"),
        pytest.param(nodes_with("c1", munge_key=False), {"munge_hosts": ["c1", "n1", "n2"]}, id="munge-key-later-ctl"),
        pytest.param(None, {"users": [{"name": "_svc-1", "uid": "3001", "gid": "3001"}]}, id="user-ids-as-text"),
        pytest.param(None, {"users": [{"name": "a", "uid": 1, "gid": 5}, {"name": "b", "uid": 2, "gid": 5}]},
                     id="users-share-a-gid"),
        pytest.param(None, {"partitions": {"batch": ["n2", "n1", "n2"]}}, id="host-twice-in-a-partition"),
        pytest.param(renamed("c1", "ctl-1"), {"controller": "ctl-1"}, id="controller-with-dash"),
    ],
)
def test_no_problem(nodes, kwargs):
    assert check(nodes, **kwargs) == []


@pytest.mark.parametrize(
    "nodes,kwargs,expected",
    [
        # hardware
        pytest.param(nodes_with("n2", memtotal_mb=None), {}, ["No hardware facts for n2", "slurm_master_worker_group"],
                     id="worker-without-facts"),
        pytest.param(nodes_with("n2", memtotal_mb=""), {}, ["No hardware facts for n2"], id="worker-empty-facts"),
        # names
        pytest.param(renamed("c1", "c1.lab"), {"controller": "c1.lab"}, ["'c1.lab' cannot be a Slurm node name", "inventory_hostname"],
                     id="dotted-controller"),
        pytest.param(nodes_with("n2", hostname="n2x"), {"mode": "native"}, ["'n2' cannot be a Slurm node name"],
                     id="native-hostname-mismatch"),
        pytest.param(nodes_with("n2", hostname="n2.example.org"), {"mode": "native"},
                     ["'n2' cannot be a Slurm node name", "hostname -s"], id="native-fqdn-hostname"),
        # partitions
        pytest.param(None, {"partitions": {"batch": ["n1"]}},
                     ["slurm_master_partitions is wrong: worker 'n2' is in no partition"], id="worker-in-no-partition"),
        pytest.param(None, {"partitions": {"batch": ["n1", "n2", "ghost9"]}},
                     ["'ghost9' is not a host of the worker group slurm_worker"], id="unknown-host-in-partition"),
        pytest.param(None, {"partitions": {"batch": ["c1", "n1", "n2"]}},
                     ["'c1' is not a host of the worker group slurm_worker"], id="controller-in-partition"),
        pytest.param(None, {"partitions": {"batch": ["n1", "n2"], "debug": []}}, ["partition 'debug' has no hosts"],
                     id="empty-partition"),
        pytest.param(None, {"partitions": {}, "default_partition": ""},
                     ["it has no partition", "worker 'n1' is in no partition; worker 'n2' is in no partition"],
                     id="no-partition"),
        pytest.param(None, {"default_partition": "interactive"},
                     ["slurm_master_default_partition 'interactive' is not one of them"], id="unknown-default"),
        # users
        pytest.param(None, {"users": [{"name": "Alice", "uid": 2001, "gid": 2001}]},
                     ["slurm_master_users", "got Alice"], id="user-upper-case"),
        pytest.param(None, {"users": [{"name": "1st", "uid": 2001, "gid": 2001}]}, ["got 1st"], id="user-digit-first"),
        pytest.param(None, {"users": [{"name": "al ice", "uid": 2001, "gid": 2001}]}, ["got al ice"], id="user-space"),
        pytest.param(None, {"users": [{"uid": 2001, "gid": 2001}]}, ["got ?"], id="user-no-name"),
        pytest.param(None, {"users": [{"name": 7, "uid": 2001, "gid": 2001}]}, ["got 7"], id="user-name-number"),
        pytest.param(None, {"users": ["alice"]}, ["got ?"], id="user-not-a-dict"),
        pytest.param(None, {"users": [{"name": "alice", "uid": "x1", "gid": 2001}]}, ["numeric uid and gid"],
                     id="user-uid-not-numeric"),
        pytest.param(None, {"users": [{"name": "alice", "uid": -1, "gid": 2001}]}, ["numeric uid and gid"],
                     id="user-uid-negative"),
        pytest.param(None, {"users": [{"name": "alice", "uid": 2001, "gid": "staff"}]}, ["numeric uid and gid"],
                     id="user-gid-not-numeric"),
        pytest.param(None, {"users": [{"name": "alice", "uid": 2001}]}, ["numeric uid and gid"], id="user-no-gid"),
        pytest.param(None, {"users": USERS + [{"name": "alice", "uid": 2003, "gid": 2003}]},
                     ["no name or uid twice", "got alice, bob, alice"], id="user-name-twice"),
        pytest.param(None, {"users": USERS + [{"name": "carol", "uid": 2001, "gid": 2003}]},
                     ["no name or uid twice", "got alice, bob, carol"], id="user-uid-twice"),
        pytest.param(None, {"users": [{"name": "alice", "uid": 2001, "gid": 2001}, {"name": "bob", "uid": "2001", "gid": 1}]},
                     ["no name or uid twice"], id="user-uid-twice-number-and-text"),
        # gpus
        pytest.param(nodes_with("n2", gpus={"count": 3, "type": "a100", "files": ["/dev/nvidia0", "/dev/nvidia1"]}), {},
                     ["slurm_worker_gpus of n2", "is not {count: N"], id="gpus-count-files-mismatch"),
        pytest.param(nodes_with("n2", gpus={"count": "two", "type": "a100"}), {}, ["slurm_worker_gpus of n2"],
                     id="gpus-count-not-numeric"),
        pytest.param(nodes_with("n2", gpus={"type": "a100"}), {}, ["slurm_worker_gpus of n2"], id="gpus-no-count"),
        pytest.param(nodes_with("n2", gpus={"count": 1, "files": "/dev/nvidia0"}), {}, ["slurm_worker_gpus of n2"],
                     id="gpus-files-not-a-list"),
        pytest.param(nodes_with("n2", gpus=2), {}, ["slurm_worker_gpus of n2"], id="gpus-a-number"),
        pytest.param(nodes_with("n1", gpus={"count": -1}), {}, ["slurm_worker_gpus of n1 is not"], id="gpus-negative"),
        # accounting
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_name": "slurm-db"}},
                     ["The accounting settings are wrong", "slurm_master_accounting_db_name 'slurm-db'"], id="db-name-dash"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_name": "d" * 65}}, ["slurm_master_accounting_db_name"],
                     id="db-name-too-long"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_user": "slurm user"}},
                     ["slurm_master_accounting_db_user 'slurm user'"], id="db-user-space"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_user": "u" * 33}}, ["slurm_master_accounting_db_user"],
                     id="db-user-too-long"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_password": "short"}},
                     ["slurm_master_accounting_db_password (not shown)"], id="password-too-short"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_password": "a" * 129}},
                     ["slurm_master_accounting_db_password (not shown)"], id="password-too-long"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_password": "long'enough-pass"}},
                     ["slurm_master_accounting_db_password (not shown)"], id="password-quote"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_password_file": "etc/slurm/.dbpass"}},
                     ["slurm_master_accounting_db_password_file must be an absolute path"], id="password-file-relative"),
        pytest.param(None, {"accounting": {"db_name": "slurm_acct_db", "db_user": "slurm"}},
                     ["slurm_master_accounting_db_password_file"], id="password-file-absent"),
        # shared home
        pytest.param(None, {"shared_home_exists": False},
                     ["/shared/home (variable slurm_master_shared_home, from hpclab_shared_path) is not a directory on c1"],
                     id="shared-home-missing"),
        # munge
        pytest.param(nodes_with("n2", munge_key=False), {},
                     ["/etc/munge/munge.key is missing on n2", "munge_group", "munge role"], id="munge-key-missing"),
        pytest.param(nodes_with("c1", munge_key=None), {}, ["/etc/munge/munge.key is missing on c1."],
                     id="munge-key-unknown-on-controller"),
        pytest.param(nodes_with("n2", munge_key=False), {"munge_hosts": ["n1"]}, ["/etc/munge/munge.key is missing on n2"],
                     id="munge-key-later-elsewhere"),
    ],
)
def test_one_problem(nodes, kwargs, expected):
    found = check(nodes, **kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert "Fix:" in found[0]


def test_an_empty_worker_group():
    # with no worker, any partition lists a host that is not a worker: reported as well
    found = check(workers=[])
    assert len(found) == 2, found
    assert found[0].startswith("The inventory group 'slurm_worker' (variable slurm_master_worker_group) has no hosts.")
    assert "'n1' is not a host of the worker group slurm_worker" in found[1]
    assert all("Fix:" in p for p in found)
    found = check(workers=[], partitions={})
    assert len(found) == 2 and "it has no partition" in found[1], found


@pytest.mark.parametrize("name", ["n1.bad", "n[1-2]", "n1,n2", "n 1", "-n1", "n1-", "n1_", "DEFAULT", "all", "All"])
def test_bad_node_names(name):
    nodes = copy.deepcopy(NODES)
    nodes[name] = nodes.pop("n1")
    nodes[name]["hostname"] = name
    found = check(nodes, workers=[name, "n2"], partitions={"batch": [name, "n2"]})
    assert len(found) == 1, found
    assert f"{name!r} cannot be a Slurm node name" in found[0]
    assert "inventory_hostname" in found[0]
    assert "Fix:" in found[0]


def test_a_dotted_name_is_reported_in_container_mode_too():
    nodes = copy.deepcopy(NODES)
    nodes["n1.bad"] = nodes.pop("n1")
    for mode in ("container", "native"):
        found = check(nodes, mode=mode, workers=["n1.bad", "n2"], partitions={"batch": ["n1.bad", "n2"]})
        assert len(found) == 1 and "'n1.bad' cannot be a Slurm node name" in found[0], found


def test_hostname_mismatch_only_counts_in_native_mode():
    nodes = nodes_with("n2", hostname="worker-2")
    assert check(nodes, mode="container") == []
    found = check(nodes, mode="native")
    assert len(found) == 1 and "'n2' cannot be a Slurm node name" in found[0], found


def test_all_bad_names_are_in_one_message():
    nodes = nodes_with("n1", hostname="other")
    nodes["c.1"] = nodes.pop("c1")
    found = check(nodes, controller="c.1", mode="native")
    assert len(found) == 1
    assert "'c.1', 'n1' cannot be a Slurm node name" in found[0]


def test_every_worker_without_facts_is_named():
    nodes = nodes_with("n1", memtotal_mb=None)
    del nodes["n2"]
    found = check(nodes, partitions={"batch": ["n1", "n2"]})
    assert any("No hardware facts for n1, n2 (group slurm_master_worker_group 'slurm_worker')" in p for p in found), found


def test_group_name_in_the_messages():
    found = check(workers=[], worker_group="compute", partitions={"batch": ["n1"]})
    assert "The inventory group 'compute' (variable slurm_master_worker_group) has no hosts" in found[0]
    found = check(worker_group="compute", partitions={"batch": ["n1"]})
    assert "slurm_master_partitions: {batch: [compute]}" in found[0]
    assert "every host of 'compute'" in found[0]


def test_partition_problems_are_one_message():
    found = check(partitions={"batch": ["n1", "ghost9"], "debug": []}, default_partition="nope")
    assert len(found) == 1, found
    message = found[0]
    for part in (
        "partition 'debug' has no hosts",
        "'ghost9' is not a host of the worker group",
        "worker 'n2' is in no partition",
        "slurm_master_default_partition 'nope' is not one of them",
    ):
        assert part in message


def test_the_accounting_password_is_never_shown():
    password = "bad'secret-password"
    found = check(accounting={**ACCOUNTING, "db_password": password})
    assert len(found) == 1
    assert password not in found[0]


def test_munge_key_missing_everywhere_names_every_node_in_order():
    nodes = copy.deepcopy(NODES)
    for node in nodes.values():
        node["munge_key"] = False
    found = check(nodes)
    assert len(found) == 1
    assert found[0].startswith("/etc/munge/munge.key is missing on c1, n1, n2.")
    assert "add c1, n1, n2 to the munge inventory group" in found[0]
    assert check(nodes, munge_hosts=["c1", "n1", "n2"]) == []
    assert check(nodes, munge_hosts=["c1", "n2"])[0].startswith("/etc/munge/munge.key is missing on n1.")


def test_several_problems_at_once_are_all_reported():
    nodes = nodes_with("n2", memtotal_mb=None, munge_key=False, gpus={"count": 2, "files": ["/dev/nvidia0"]})
    nodes["n1"]["hostname"] = "elsewhere"
    found = check(
        nodes,
        mode="native",
        partitions={"batch": ["n1"]},
        users=[{"name": "alice", "uid": 1, "gid": 1}, {"name": "bob", "uid": 1, "gid": 2}],
        accounting={**ACCOUNTING, "db_password": "short"},
        shared_home_exists=False,
    )
    expected = [
        "No hardware facts for n2",
        "'n1' cannot be a Slurm node name",
        "worker 'n2' is in no partition",
        "slurm_master_users",
        "slurm_worker_gpus of n2",
        "The accounting settings are wrong",
        "/shared/home (variable slurm_master_shared_home",
        "/etc/munge/munge.key is missing on n2",
    ]
    assert len(found) == len(expected), found
    for message, part in zip(found, expected):
        assert part in message
        assert "Fix:" in message


@pytest.mark.parametrize(
    "nodes,partitions,reason",
    [
        (None, {"batch": ["n1"]}, "the input must map each node"),
        (["c1", "n1"], {"batch": ["n1"]}, "the input must map each node"),
        ({"c1": "c1"}, {"batch": ["n1"]}, "the input must map each node"),
        ({"c1": None}, {"batch": ["n1"]}, "the input must map each node"),
        (NODES, ["batch"], "partitions must be resolved to host lists"),
        (NODES, None, "partitions must be resolved to host lists"),
        (NODES, "batch: [slurm_worker]", "partitions must be resolved to host lists"),
    ],
)
def test_bad_input_is_a_filter_error(nodes, partitions, reason):
    with pytest.raises(AnsibleFilterError, match=f"slurm_cluster_problems: {reason}"):
        PROBLEMS(nodes, controller="c1", workers=["n1"], partitions=partitions)
