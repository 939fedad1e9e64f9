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


# --- Rules 10 to 32 (issue 18): every input that reaches slurm.conf, slurmdbd.conf, the images or the containers ---

try:  # What a filter gets for "{{ omit }}" from ansible-core 2.19 on.
    from ansible._internal._templating._utils import Omit as OMIT
except ImportError:  # older ansible-core: the placeholder string
    OMIT = "__omit_place_holder__0123abcd"

CONTAINER = {
    "slurm_master_container_conf_dir": "/etc/hpclab/slurm",
    "slurm_master_container_state_dir": "/var/lib/hpclab/slurm/slurmctld",
    "slurm_master_accounting_container_conf_dir": "/etc/hpclab/slurmdbd",
    "slurm_master_accounting_container_db_dir": "/var/lib/hpclab/slurm/mysql",
    "slurm_master_container_slurm_uid": 64030,
    "slurm_master_container_base_image": "hpclab-node:bookworm",
    "slurm_master_container_network": "hpclab",
    "slurm_master_container_apt_proxy": "auto",
    "slurm_master_container_addresses": {"c1": "172.31.240.193", "c1-slurmdbd": "172.31.240.194", "c1-mariadb": "172.31.240.195"},
}
PACKAGES = {
    "slurm_master_packages": ["slurmctld", "slurm-client"],
    "slurm_master_mpi_packages": ["openmpi-bin", "python3-mpi4py", "python3-numpy"],
    "slurm_master_accounting_packages": ["mariadb-server", "slurmdbd", "slurm-wlm-mysql-plugin"],
}
# What the role's preflight passes: every rule applies. Password file and shared home as the defaults.
FULL = {
    "accounting": {**ACCOUNTING, "db_password_file": "/var/lib/hpclab/slurm/slurmdbd-db.password"},
    "shared_home": "/gfsv/home",
    "cluster_name": "hpclab",
    "max_time": "UNLIMITED",
    "memory_fraction": 0.95,
    "config": {},
    "dbd_config": {},
    "timeouts": {"slurm_master_start_timeout": 60, "slurm_master_accounting_start_timeout": 90},
    "container": CONTAINER,
    "packages": PACKAGES,
}


def full(nodes=None, **kwargs):
    """The baseline cluster with every issue-18 argument given, kwargs replacing some."""
    return check(nodes, **{**copy.deepcopy(FULL), **kwargs})


def with_container(**settings):
    return {**CONTAINER, **settings}


@pytest.mark.parametrize("mode", ["container", "native"])
def test_the_role_defaults_have_no_problem(mode):
    assert full(mode=mode) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"cluster_name": "a"}, id="cluster-name-one-char"),
        pytest.param({"cluster_name": "c" * 40}, id="cluster-name-40"),
        pytest.param({"cluster_name": "lab_2-b"}, id="cluster-name-signs"),
        pytest.param({"cluster_name": "0lab"}, id="cluster-name-digit-first"),
        pytest.param({"max_time": 60}, id="max-time-minutes-int"),
        pytest.param({"max_time": "7-00:00:00"}, id="max-time-days"),
        pytest.param({"max_time": "infinite"}, id="max-time-infinite"),
        pytest.param({"max_time": "1:00"}, id="max-time-mm-ss"),
        pytest.param({"max_time": "24855-00:00:00"}, id="max-time-largest-days"),
        pytest.param({"memory_fraction": 1}, id="fraction-one"),
        pytest.param({"memory_fraction": "0.9"}, id="fraction-text"),
        pytest.param({"memory_fraction": 0.01}, id="fraction-small"),
        pytest.param({"partitions": {"batch": ["n1", "n2"], "gpu.a100_x-1": ["n2"]}}, id="partition-name-signs"),
        pytest.param({"config": {"SlurmdTimeout": 0, "ProctrackType": "proctrack/cgroup", "ReturnToService": "2"}},
                     id="config-ordinary-keys"),
        pytest.param({"config": {"DisableRootJobs": True, "UsePAM": "no", "TrackWCKey": 0}}, id="config-booleans"),
        pytest.param({"config": {"MaxJobCount": "UNLIMITED", "DefMemPerCPU": 18446744073709551615}}, id="config-numbers"),
        pytest.param({"config": {"SlurmctldPort": "6817-6820", "SrunPortRange": "60001-63000"}}, id="config-port-ranges"),
        pytest.param({"config": {"StateSaveLocation": "/var/lib/slurm/state", "SlurmctldLogFile": "/var/log/slurm/ctld.log",
                                 "PluginDir": "/usr/lib/slurm:/opt/slurm/lib"}}, id="config-paths"),
        pytest.param({"config": {"SlurmdSpoolDir": "/srv/slurmd"}, "mode": "native"}, id="spool-elsewhere-in-native-mode"),
        pytest.param({"config": {"MessageTimeout": 30, "TCPTimeout": 2}}, id="config-timeouts"),
        pytest.param({"config": {"ProctrackType": None, "TaskPlugin": "__omit_place_holder__0123abcd"}}, id="config-removed-keys"),
        pytest.param({"config": {"ProctrackType": OMIT}, "dbd_config": {"DbdPort": OMIT}}, id="config-omit-2-19"),
        pytest.param({"config": {"AccountingStoragePort": 6819}, "dbd_config": {"DbdPort": "6819", "StoragePort": 3306}},
                     id="accounting-ports-spelled-out"),
        pytest.param({"dbd_config": {"ArchiveJobs": "yes", "PurgeJobAfter": "12month", "ArchiveDir": "/var/lib/slurm/archive"}},
                     id="dbd-config-ordinary-keys"),
        pytest.param({"dbd_config": {"StoragePort": 3307}, "mode": "native"}, id="storage-port-native-uses-the-socket"),
        pytest.param({"accounting": None, "dbd_config": {"Bogus": 1}}, id="dbd-config-unused-without-accounting"),
        pytest.param({"accounting": None, "config": {"SlurmctldPort": 6819}, "mode": "native"},
                     id="dbd-port-free-without-accounting"),
        pytest.param({"config": {"SlurmdPort": 6817}}, id="container-mode-ports-on-separate-addresses"),
        pytest.param({"container": with_container(slurm_master_container_apt_proxy="")}, id="apt-proxy-none"),
        pytest.param({"container": with_container(slurm_master_container_apt_proxy="http://10.0.0.1:3142")}, id="apt-proxy-url"),
        pytest.param({"container": with_container(slurm_master_container_apt_proxy="https://u:p@proxy.lab/apt/")},
                     id="apt-proxy-credentials"),
        pytest.param({"container": with_container(slurm_master_container_base_image="registry.lab:5000/hpc/node:bookworm")},
                     id="base-image-registry"),
        pytest.param({"container": with_container(slurm_master_container_addresses={})}, id="addresses-not-allotted-yet"),
        pytest.param({"container": with_container(slurm_master_accounting_container_db_dir="/etc/hpclab/slurm/db"),
                      "accounting": None}, id="accounting-dirs-unused-without-accounting"),
        pytest.param({"container": with_container(slurm_master_container_state_dir="/etc/hpclab/slurm"), "mode": "native"},
                     id="container-dirs-unused-in-native-mode"),
        pytest.param({"container": None}, id="container-not-given"),
        pytest.param({"packages": {**PACKAGES, "slurm_master_mpi_packages": []}}, id="no-mpi-packages"),
        pytest.param({"packages": {**PACKAGES, "slurm_master_packages": ["slurmctld=22.05.8-4+deb12u3", "slurm-client:amd64"]}},
                     id="package-version-and-arch"),
        pytest.param({"packages": {**PACKAGES, "slurm_master_accounting_packages": []}}, id="accounting-packages-unused-in-container"),
        pytest.param({"timeouts": {"slurm_master_start_timeout": "1"}}, id="timeout-one-as-text"),
        pytest.param({"users": [{"name": "u" * 32, "uid": 4294967294, "gid": 1, "groups": ["video", "render"]}]},
                     id="user-edges"),
        pytest.param({"users": [{"name": "alice", "uid": 64030, "gid": 64030}],
                      "container": with_container(slurm_master_container_slurm_uid=990)}, id="debian-slurm-uid-free-in-images"),
        pytest.param({"workers": ["n1", "n2", "c1"], "partitions": {"batch": ["n1", "n2", "c1"]}, "mode": "native",
                      "config": {}}, id="native-controller-also-a-worker"),
    ],
)
def test_issue18_no_problem(kwargs):
    nodes = None
    if "c1" in kwargs.get("workers", []):
        nodes = copy.deepcopy(NODES)
    assert full(nodes, **kwargs) == []


def long_name(length):
    return "n" * length


@pytest.mark.parametrize(
    "nodes,kwargs,expected",
    [
        # rule 10: node name lengths
        pytest.param(renamed("n1", long_name(64)), {"workers": [long_name(64), "n2"], "partitions": {"batch": [long_name(64), "n2"]}},
                     [f"{long_name(64)} (64 characters, at most 63)", "inventory_hostname"], id="10-worker-name-too-long"),
        pytest.param(renamed("c1", "c" * 55), {"controller": "c" * 55, "container": None},
                     ["(55 characters, at most 54)", "-slurmdbd"], id="10-controller-name-too-long-for-its-slurmdbd"),
        # rule 11: partition names
        pytest.param(None, {"partitions": {"batch": ["n1", "n2"], "my batch": ["n1"]}},
                     ["c1: slurm_master_partitions has partition names Slurm cannot take: 'my batch'"], id="11-blank"),
        pytest.param(None, {"partitions": {"batch": ["n1", "n2"], "a,b": ["n1"]}}, ["'a,b'"], id="11-comma"),
        pytest.param(None, {"partitions": {"batch": ["n1", "n2"], "default": ["n1"]}}, ["'default'", "DEFAULT"], id="11-default"),
        pytest.param(None, {"partitions": {"batch": ["n1", "n2"], "-x": ["n1"]}}, ["'-x'"], id="11-dash-first"),
        pytest.param(None, {"partitions": {"batch": ["n1", "n2"], "gpu*": ["n2"]}}, ["'gpu*'"], id="11-star"),
        # rule 12: cluster name
        pytest.param(None, {"cluster_name": "HPCLab"}, ["c1: slurm_master_cluster_name", "'HPCLab'", "'hpclab'"], id="12-upper-case"),
        pytest.param(None, {"cluster_name": "c" * 41}, ["has 41 characters", "allows 40"], id="12-too-long"),
        pytest.param(None, {"cluster_name": "my lab"}, ["'my lab'", "SQL table names"], id="12-blank"),
        pytest.param(None, {"cluster_name": "lab\"x"}, ["SQL table names"], id="12-quote"),
        pytest.param(None, {"cluster_name": ""}, ["'' is not a name"], id="12-empty"),
        pytest.param(None, {"cluster_name": "_lab"}, ["'_lab'"], id="12-underscore-first"),
        # rule 13: max time
        pytest.param(None, {"max_time": "0"}, ["c1: slurm_master_max_time '0' is zero"], id="13-zero"),
        pytest.param(None, {"max_time": "0-00:00:00"}, ["is zero"], id="13-zero-days"),
        pytest.param(None, {"max_time": "1 day"}, ["slurm_master_max_time '1 day'", "not a Slurm time"], id="13-words"),
        pytest.param(None, {"max_time": -5}, ["slurm_master_max_time -5", "negative"], id="13-negative"),
        pytest.param(None, {"max_time": True}, ["slurm_master_max_time True"], id="13-bool"),
        pytest.param(None, {"max_time": "24856-00:00:00"}, ["more than Slurm can count"], id="13-overflow"),
        # rule 14: memory fraction
        pytest.param(None, {"memory_fraction": 0}, ["c1: slurm_master_memory_fraction 0 is not a number above 0"], id="14-zero"),
        pytest.param(None, {"memory_fraction": 1.01}, ["slurm_master_memory_fraction 1.01"], id="14-above-one"),
        pytest.param(None, {"memory_fraction": "most"}, ["slurm_master_memory_fraction 'most'"], id="14-word"),
        pytest.param(None, {"memory_fraction": True}, ["slurm_master_memory_fraction True"], id="14-bool"),
        # rule 15: GPU values
        pytest.param(nodes_with("n2", gpus={"count": 1, "type": "a 100"}), {},
                     ["slurm_worker_gpus cannot reach slurm.conf", "n2: type 'a 100'"], id="15-type-blank"),
        pytest.param(nodes_with("n2", gpus={"count": 1, "type": "a100:80g"}), {}, ["n2: type 'a100:80g'"], id="15-type-colon"),
        pytest.param(nodes_with("n2", gpus={"count": 1, "files": ["nvidia0"]}), {}, ["n2: file 'nvidia0' is not an absolute path"],
                     id="15-file-relative"),
        pytest.param(nodes_with("n2", gpus={"count": 1, "files": ["/tmp/gpu"]}), {}, ["n2: file '/tmp/gpu' is not under /dev"],
                     id="15-file-outside-dev"),
        pytest.param(nodes_with("n2", gpus={"count": 1, "files": ["/dev/nvidia0:rw"]}), {}, ["n2: file '/dev/nvidia0:rw'"],
                     id="15-file-colon"),
        pytest.param(nodes_with("n2", gpus={"count": 2, "files": ["/dev/nvidia0", "/dev/nvidia0"]}), {}, ["listed twice"],
                     id="15-file-twice"),
        # rule 16: user values
        pytest.param(None, {"users": [{"name": "alice", "uid": 0, "gid": 2001}]}, ["c1: slurm_master_users", "alice's uid 0"],
                     id="16-root-uid"),
        pytest.param(None, {"users": [{"name": "alice", "uid": 2001, "gid": 0}]}, ["alice's gid 0"], id="16-root-gid"),
        pytest.param(None, {"users": [{"name": "alice", "uid": 65534, "gid": 2001}]}, ["alice's uid 65534"], id="16-nobody"),
        pytest.param(None, {"users": [{"name": "alice", "uid": 4294967295, "gid": 2001}]}, ["out of range"], id="16-minus-one"),
        pytest.param(None, {"users": [{"name": "alice", "uid": 64030, "gid": 2001}]}, ["alice's uid 64030 is the slurm user's"],
                     id="16-slurm-uid"),
        pytest.param(None, {"users": [{"name": "alice", "uid": 2001, "gid": 990}], "container": with_container(slurm_master_container_slurm_uid=990)},
                     ["alice's gid 990 is the slurm user's"], id="16-image-slurm-gid"),
        pytest.param(None, {"users": [{"name": "u" * 33, "uid": 2001, "gid": 2001}]}, ["longer than 32 characters"], id="16-long-name"),
        pytest.param(None, {"users": [{"name": "alice", "uid": 2001, "gid": 2001, "groups": ["Video"]}]},
                     ["alice's group 'Video' is not a group name"], id="16-group-upper-case"),
        pytest.param(None, {"users": [{"name": "alice", "uid": 2001, "gid": 2001, "groups": "video"}]},
                     ["alice's groups 'video' is not a list"], id="16-groups-a-string"),
        # rule 17: shared home path
        pytest.param(None, {"shared_home": "gfsv/home"}, ["c1: slurm_master_shared_home 'gfsv/home' is not an absolute path"],
                     id="17-relative"),
        pytest.param(None, {"shared_home": "/gfsv/home/"}, ["is not canonical"], id="17-trailing-slash"),
        pytest.param(None, {"shared_home": "/gfsv/home:ro"}, ["':'"], id="17-colon"),
        pytest.param(None, {"shared_home": "/"}, ["is '/'"], id="17-root"),
        pytest.param(None, {"shared_home": "/gfsv/my home"}, ["a blank"], id="17-blank"),
        # rule 18: unknown keys
        pytest.param(None, {"config": {"SlurmdTimout": 300}},
                     ["c1: slurm_master_config has keys that are not slurm.conf keys of Slurm 22.05", "'SlurmdTimout'"],
                     id="18-misspelt"),
        pytest.param(None, {"config": {"slurmdtimeout": 300}}, ["'slurmdtimeout' (Slurm spells it SlurmdTimeout)"], id="18-case"),
        pytest.param(None, {"config": {"SchedulerAuth": "x"}}, ["'SchedulerAuth'"], id="18-defunct"),
        pytest.param(None, {"dbd_config": {"PurgeJobsAfter": "12month"}},
                     ["c1: slurm_master_dbd_config has keys that are not slurmdbd.conf keys", "'PurgeJobsAfter'"], id="18-dbd-misspelt"),
        pytest.param(None, {"config": ["SlurmdTimeout=300"]}, ["slurm_master_config ['SlurmdTimeout=300'] is not a dict"],
                     id="18-not-a-dict"),
        # rule 19: keys the role sets
        pytest.param(None, {"config": {"ClusterName": "other"}},
                     ["c1: slurm_master_config sets keys the role writes", "ClusterName (slurm_master_cluster_name sets it)"],
                     id="19-cluster-name"),
        pytest.param(None, {"config": {"SlurmctldHost": "c2"}}, ["SlurmctldHost"], id="19-controller"),
        pytest.param(None, {"config": {"NodeName": "n9 CPUs=4"}}, ["NodeName"], id="19-node-line"),
        pytest.param(None, {"config": {"PartitionName": "debug Nodes=ALL"}}, ["PartitionName (slurm_master_partitions sets it)"],
                     id="19-partition-line"),
        pytest.param(None, {"config": {"AccountingStorageType": "accounting_storage/none"}},
                     ["AccountingStorageType (slurm_master_accounting sets it)"], id="19-accounting-type"),
        pytest.param(None, {"config": {"AuthType": "auth/none"}}, ["AuthType (the munge role"], id="19-auth"),
        pytest.param(None, {"dbd_config": {"StoragePass": "secret-password"}},
                     ["slurm_master_dbd_config sets keys", "StoragePass (slurm_master_accounting_db_password sets it)"],
                     id="19-dbd-password"),
        pytest.param(None, {"dbd_config": {"StorageLoc": "other_db"}}, ["StorageLoc (slurm_master_accounting_db_name sets it)"],
                     id="19-dbd-database"),
        # rule 20: one line values
        pytest.param(None, {"config": {"SchedulerParameters": "bf_continue\nSlurmUser=root"}},
                     ["c1: slurm_master_config: SchedulerParameters=", "spans lines"], id="20-newline"),
        pytest.param(None, {"config": {"Prolog": "/etc/slurm/prolog#x"}}, ["holds '#'"], id="20-hash"),
        pytest.param(None, {"config": {"SchedulerParameters": ["bf_continue", "bf_max_job_test=100"]}}, ["is not a single value"],
                     id="20-list"),
        pytest.param(None, {"config": {"SchedulerParameters": ""}}, ["is empty"], id="20-empty"),
        pytest.param(None, {"dbd_config": {"PurgeJobAfter": "12month\r"}}, ["slurm_master_dbd_config: PurgeJobAfter"], id="20-dbd-cr"),
        # rule 21: typed values
        pytest.param(None, {"config": {"SlurmdTimeout": "10m"}}, ["SlurmdTimeout='10m' is not a whole number 0..65535"], id="21-u16-unit"),
        pytest.param(None, {"config": {"SlurmdTimeout": 70000}}, ["SlurmdTimeout=70000"], id="21-u16-too-big"),
        pytest.param(None, {"config": {"MaxJobCount": -1}}, ["MaxJobCount=-1"], id="21-negative"),
        pytest.param(None, {"config": {"ReturnToService": True}}, ["ReturnToService=True"], id="21-bool-for-number"),
        pytest.param(None, {"config": {"ReturnToService": 1.5}}, ["ReturnToService=1.5"], id="21-float"),
        pytest.param(None, {"config": {"DisableRootJobs": "maybe"}}, ["DisableRootJobs='maybe' is not a boolean"], id="21-boolean"),
        pytest.param(None, {"dbd_config": {"ArchiveJobs": "sometimes"}}, ["ArchiveJobs='sometimes' is not a boolean"], id="21-dbd-boolean"),
        # rule 22: ports
        pytest.param(None, {"config": {"SlurmdPort": 0}}, ["SlurmdPort=0 is not a TCP port 1..65535"], id="22-zero"),
        pytest.param(None, {"config": {"SlurmdPort": 70000}}, ["SlurmdPort=70000"], id="22-too-big"),
        pytest.param(None, {"config": {"SlurmdPort": "6818-6819"}}, ["SlurmdPort='6818-6819' is not a TCP port"], id="22-range-not-allowed"),
        pytest.param(None, {"config": {"SlurmctldPort": "6820-6817"}}, ["SlurmctldPort='6820-6817'", "or a range"], id="22-range-reversed"),
        pytest.param(None, {"config": {"SrunPortRange": "60001"}}, ["SrunPortRange='60001' is not a range"], id="22-srun-single"),
        pytest.param(None, {"config": {"JobCompPort": "mysql"}}, ["JobCompPort='mysql'"], id="22-word"),
        # rule 23: paths
        pytest.param(None, {"config": {"StateSaveLocation": "var/spool/slurmctld"}},
                     ["StateSaveLocation='var/spool/slurmctld' is not an absolute path"], id="23-relative"),
        pytest.param(None, {"config": {"StateSaveLocation": "/var/spool/slurmctld/"}}, ["is not canonical"], id="23-trailing-slash"),
        pytest.param(None, {"config": {"StateSaveLocation": "/var/spool/../tmp"}}, ["is not canonical"], id="23-dot-dot"),
        pytest.param(None, {"config": {"SlurmctldLogFile": "/var/log/slurm ctld.log"}}, ["SlurmctldLogFile"], id="23-blank"),
        pytest.param(None, {"config": {"PluginDir": "/usr/lib/slurm:lib"}}, ["PluginDir"], id="23-plugin-dir-part"),
        pytest.param(None, {"config": {"SlurmdSpoolDir": "/srv/slurmd"}}, ["SlurmdSpoolDir='/srv/slurmd' is not /var/spool/slurmd"],
                     id="23-spool-in-container-mode"),
        pytest.param(None, {"dbd_config": {"LogFile": "slurmdbd.log"}}, ["slurm_master_dbd_config: LogFile"], id="23-dbd-log"),
        # rule 24: timeouts
        pytest.param(None, {"config": {"MessageTimeout": 0}}, ["MessageTimeout=0 is 0"], id="24-message-timeout"),
        pytest.param(None, {"config": {"SlurmctldTimeout": "0"}}, ["SlurmctldTimeout='0' is 0"], id="24-ctld-timeout"),
        pytest.param(None, {"dbd_config": {"TCPTimeout": 0}}, ["slurm_master_dbd_config: TCPTimeout=0"], id="24-dbd-tcp-timeout"),
        pytest.param(None, {"timeouts": {"slurm_master_start_timeout": 0, "slurm_master_accounting_start_timeout": 90}},
                     ["c1: slurm_master_start_timeout 0: not a whole number of seconds of at least 1"], id="24-start-timeout"),
        pytest.param(None, {"timeouts": {"slurm_master_accounting_start_timeout": "1m"}},
                     ["slurm_master_accounting_start_timeout '1m'"], id="24-accounting-timeout"),
        # rule 25: port clashes
        pytest.param(None, {"mode": "native", "config": {"SlurmctldPort": 6819}},
                     ["c1: slurmctld (SlurmctldPort) and slurmdbd (DbdPort) would both listen on port 6819 of the controller host"],
                     id="25-ctld-dbd-native"),
        pytest.param(None, {"mode": "native", "config": {"SlurmctldPort": "3300-3310"}},
                     ["slurmctld (SlurmctldPort) and MariaDB (3306)", "port 3306"], id="25-ctld-range-mariadb-native"),
        pytest.param(None, {"config": {"SrunPortRange": "6810-6830"}},
                     ["c1: slurmctld (SlurmctldPort) and srun (SrunPortRange) would both listen on port 6817 of the controller's container",
                      "n1, n2: slurmd (SlurmdPort) and srun (SrunPortRange) would both listen on port 6818"], id="25-srun-range"),
        pytest.param(copy.deepcopy(NODES), {"mode": "native", "workers": ["n1", "n2", "c1"],
                                            "partitions": {"batch": ["n1", "n2", "c1"]}, "config": {"SlurmdPort": "6817"}},
                     ["c1: slurmctld (SlurmctldPort) and slurmd (SlurmdPort) would both listen on port 6817 of the controller host"],
                     id="25-controller-also-a-worker-native"),
        # rule 26: accounting ports
        pytest.param(None, {"dbd_config": {"DbdPort": 7031}, "config": {"AccountingStoragePort": 7031}},
                     ["c1: with slurm_master_accounting, slurm_master_config AccountingStoragePort is 7031",
                      "slurm_master_dbd_config DbdPort is 7031, but the role waits for slurmdbd on 6819"], id="26-dbd-port-moved"),
        pytest.param(None, {"config": {"AccountingStoragePort": 6820}}, ["AccountingStoragePort is 6820"], id="26-ctld-asks-elsewhere"),
        pytest.param(None, {"dbd_config": {"StoragePort": 3307}}, ["StoragePort is 3307, but the MariaDB container listens on 3306"],
                     id="26-storage-port-container"),
        # rules 27 to 30: container settings
        pytest.param(None, {"container": with_container(slurm_master_container_state_dir="var/lib/slurmctld")},
                     ["c1: slurm_master_container_state_dir 'var/lib/slurmctld' is not an absolute path"], id="27-relative"),
        pytest.param(None, {"container": with_container(slurm_master_container_conf_dir="/etc/hpclab/slurm:ro")},
                     ["slurm_master_container_conf_dir '/etc/hpclab/slurm:ro'", "':'"], id="27-colon"),
        pytest.param(None, {"container": with_container(slurm_master_container_state_dir="/etc/hpclab/slurm/state")},
                     ["slurm_master_container_conf_dir /etc/hpclab/slurm and slurm_master_container_state_dir /etc/hpclab/slurm/state",
                      "one holds the other"], id="27-nested"),
        pytest.param(None, {"container": with_container(slurm_master_accounting_container_db_dir="/var/lib/hpclab/slurm/slurmctld")},
                     ["are the same directory"], id="27-db-dir-is-state-dir"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_password_file": "/var/lib/hpclab/slurm/mysql/slurmdbd.password"}},
                     ["slurm_master_accounting_db_password_file /var/lib/hpclab/slurm/mysql/slurmdbd.password is inside "
                      "slurm_master_accounting_container_db_dir"], id="27-password-file-in-db-dir"),
        pytest.param(None, {"accounting": {**ACCOUNTING, "db_password_file": "/var/lib/hpclab//pw"}, "mode": "native"},
                     ["slurm_master_accounting_db_password_file '/var/lib/hpclab//pw' is not canonical"], id="27-password-file-path"),
        pytest.param(None, {"container": with_container(slurm_master_container_slurm_uid=0)},
                     ["c1: slurm_master_container_slurm_uid 0 is not a UID", "keep 64030"], id="28-root"),
        pytest.param(None, {"container": with_container(slurm_master_container_slurm_uid="slurm")},
                     ["slurm_master_container_slurm_uid 'slurm'"], id="28-name"),
        pytest.param(None, {"container": with_container(slurm_master_container_slurm_uid=2001)},
                     ["c1: slurm_master_users", "alice's uid 2001 is the slurm user's; alice's gid 2001 is the slurm user's"],
                     id="28-16-a-user-has-the-slurm-uid"),
        pytest.param(None, {"container": with_container(slurm_master_container_slurm_uid=65534)},
                     ["slurm_master_container_slurm_uid 65534"], id="28-nobody"),
        pytest.param(None, {"container": with_container(slurm_master_container_base_image="Debian:Bookworm")},
                     ["c1: slurm_master_container_base_image 'Debian:Bookworm' is not an image reference"], id="29-image-case"),
        pytest.param(None, {"container": with_container(slurm_master_container_base_image="debian:bookworm\nRUN id")},
                     ["slurm_master_container_base_image"], id="29-image-newline"),
        pytest.param(None, {"container": with_container(slurm_master_container_network="-net")},
                     ["c1: slurm_master_container_network '-net' is not a Docker name"], id="29-network"),
        pytest.param(None, {"container": with_container(slurm_master_container_apt_proxy="http://proxy:3142';id;'")},
                     ["slurm_master_container_apt_proxy", "is neither auto"], id="29-apt-proxy-quote"),
        pytest.param(None, {"container": with_container(slurm_master_container_apt_proxy="proxy.lab:3142")},
                     ["slurm_master_container_apt_proxy 'proxy.lab:3142'"], id="29-apt-proxy-no-scheme"),
        pytest.param(None, {"container": with_container(slurm_master_container_addresses={"c1": "172.31.240.300"})},
                     ["c1: slurm_master_container_addresses c1: '172.31.240.300' is not an IPv4 address"], id="30-bad-address"),
        pytest.param(None, {"container": with_container(slurm_master_container_addresses={"c1": "10.0.0.5", "c1-mariadb": "10.0.0.5"})},
                     ["c1-mariadb has 10.0.0.5, which c1 has too"], id="30-address-twice"),
        # rule 31: packages
        pytest.param(None, {"packages": {**PACKAGES, "slurm_master_packages": ["slurm-client"]}},
                     ["c1: slurm_master_packages lacks slurmctld"], id="31-no-slurmctld"),
        pytest.param(None, {"packages": {**PACKAGES, "slurm_master_mpi_packages": ["OpenMPI"]}},
                     ["slurm_master_mpi_packages entry 'OpenMPI' is not a Debian package name"], id="31-upper-case"),
        pytest.param(None, {"packages": {**PACKAGES, "slurm_master_mpi_packages": "openmpi-bin"}},
                     ["slurm_master_mpi_packages is not a list"], id="31-a-string"),
        pytest.param(None, {"mode": "native", "packages": {**PACKAGES, "slurm_master_accounting_packages": ["slurmdbd"]}},
                     ["slurm_master_accounting_packages lacks mariadb-server", "lacks slurm-wlm-mysql-plugin"],
                     id="31-native-accounting-packages"),
        # rule 32: container mode controller that is also a worker
        pytest.param(copy.deepcopy(NODES), {"workers": ["n1", "n2", "c1"], "partitions": {"batch": ["n1", "n2", "c1"]}},
                     ["c1 is the controller and also a host of the worker group 'slurm_worker'", "both be named c1"],
                     id="32-controller-also-a-worker"),
    ],
)
def test_issue18_one_problem(nodes, kwargs, expected):
    found = full(nodes, **kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert "Fix:" in found[0]


def test_issue18_messages_name_the_controller_or_the_nodes():
    found = full(cluster_name="Lab", max_time="0", memory_fraction=2, config={"Bogus": 1}, shared_home="home",
                 container=with_container(slurm_master_container_network="x"))
    assert len(found) == 6, found
    assert all(message.startswith("c1: ") and "Fix:" in message for message in found), found


def test_issue18_rules_without_their_argument_are_not_applied():
    # What the role passed before issue 18 keeps its meaning: none of the new arguments, no new problem.
    assert check(config=None, cluster_name=None, max_time=None, memory_fraction=None) == []
    assert check(accounting=ACCOUNTING, dbd_config=None, timeouts=None, packages=None) == []
    assert check(container={"slurm_master_container_network": "x"}, mode="native") == []


def test_issue18_every_problem_of_one_dict_is_in_one_message_per_rule():
    found = full(config={"SlurmdTimeout": "x", "MaxJobCount": "y", "Bogus": 1, "Other": 2})
    assert len(found) == 2, found
    assert "'Bogus', 'Other'" in found[0]
    assert "SlurmdTimeout='x'" in found[1] and "MaxJobCount='y'" in found[1]


def test_issue18_the_database_password_is_never_shown_by_the_new_rules():
    found = full(dbd_config={"StoragePass": "Very-Secret-123"})
    assert len(found) == 1 and "Very-Secret-123" not in found[0], found


def test_issue18_an_unknown_container_setting_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="unknown container settings"):
        full(container={"slurm_master_contianer_network": "hpclab"})


def test_issue18_key_tables_are_slurm_22_05():
    from ansible_collections.hpclab.cluster.plugins.filter import slurm_cluster_problems as module

    # A few keys per parser type, as src/common/read_config.c and src/slurmdbd/read_config.c declare them.
    assert module.SLURM_CONF_KEYS["SlurmctldPort"] == "str"  # a port or a range
    assert module.SLURM_CONF_KEYS["SlurmdPort"] == "u32"
    assert module.SLURM_CONF_KEYS["ReturnToService"] == "u16"
    assert module.SLURM_CONF_KEYS["DisableRootJobs"] == "bool"
    assert module.SLURM_CONF_KEYS["NodeName"] == "line"
    assert "SchedulerAuth" not in module.SLURM_CONF_KEYS
    assert module.SLURMDBD_CONF_KEYS["DbdPort"] == "u16"
    assert module.SLURMDBD_CONF_KEYS["ArchiveJobs"] == "bool"
    # Every key the role writes by default is a key of its file.
    defaults = ["ClusterName", "SlurmctldHost", "SlurmUser", "AuthType", "CredType", "SlurmctldPort", "SlurmdPort",
                "SlurmctldPidFile", "SlurmdPidFile", "SlurmdSpoolDir", "StateSaveLocation", "MpiDefault", "SwitchType",
                "ProctrackType", "TaskPlugin", "SchedulerType", "SelectType", "SelectTypeParameters", "ReturnToService",
                "InactiveLimit", "AccountingStorageType", "AccountingStorageHost", "AccountingStoragePort", "JobAcctGatherType",
                "JobCompType", "GresTypes"]
    assert [k for k in defaults if k not in module.SLURM_CONF_KEYS] == []
    dbd_defaults = ["AuthType", "DbdHost", "DbdPort", "SlurmUser", "PidFile", "StorageType", "StorageHost", "StoragePort",
                    "StorageLoc", "StorageUser", "StoragePass"]
    assert [k for k in dbd_defaults if k not in module.SLURMDBD_CONF_KEYS] == []


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        pytest.param({"accounting": {**ACCOUNTING, "db_password": "S3cret.pass-word\n"}}, "The accounting settings are wrong",
                     id="password-trailing-newline"),
        pytest.param({"accounting": {**ACCOUNTING, "db_name": "slurm_acct_db\n"}}, "The accounting settings are wrong",
                     id="db-name-trailing-newline"),
        pytest.param({"cluster_name": "hpclab\n"}, "slurm_master_cluster_name", id="cluster-name-trailing-newline"),
        pytest.param({"partitions": {"batch\n": ["n1", "n2"]}, "default_partition": ""}, "partition names", id="partition-trailing-newline"),
    ],
)
def test_a_trailing_line_break_is_refused(kwargs, expected):
    # Python's '$' matches before a final newline: the patterns are matched whole (fullmatch).
    found = check(**kwargs)
    assert len(found) == 1 and expected in found[0], found


def test_a_node_name_with_a_trailing_line_break_is_refused():
    nodes = renamed("n1", "n1\n")
    found = check(nodes, workers=["n1\n", "n2"], partitions={"batch": ["n1\n", "n2"]})
    assert len(found) == 1 and "cannot be a Slurm node name" in found[0], found


# Rule 33 (issue 19): with users, every Slurm node mounts the shared volume.
def test_rule_33_a_worker_that_does_not_mount_the_shared_volume_is_named_with_the_fix():
    problems = check(shared_home_hosts=["c1", "n1"])
    assert len(problems) == 1, problems
    assert problems[0].startswith("n2: the cluster users' homes under /shared/home will not exist there")
    assert "slurm_master_shared_home_hosts" in problems[0]
    assert "Fix: put n2 in the glusterfs_clients group" in problems[0]


def test_rule_33_names_the_controller_and_every_worker_missing_once_each():
    problems = check(shared_home_hosts=[], workers=["n1", "n2", "n1"])
    assert [p.split(":", 1)[0] for p in problems if "will not exist there" in p] == ["c1", "n1", "n2"]


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"shared_home_hosts": ["c1", "n1", "n2"]}, id="every-node-mounts"),
        pytest.param({"shared_home_hosts": ["n2", "x9", "c1", "n1"]}, id="more-hosts-in-any-order"),
        pytest.param({"shared_home_hosts": None}, id="not-known"),
        pytest.param({"shared_home_hosts": [], "users": []}, id="no-users-no-homes"),
    ],
)
def test_rule_33_holds(kwargs):
    assert [p for p in check(**kwargs) if "will not exist there" in p] == []


# Rule 34 (issue 19, part 5): slurm_master_cgroup. The workers' slurm_cgroup facts as node_hardware_facts read
# them in a node container started with ../shared/TESTBED.md's flags, and in a plain `docker run` container.
CGROUP_OK = {"version": "v1", "path": "/sys/fs/cgroup", "read_only": [], "disabled": [], "cap_sys_nice": False,
             "controllers": ["blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "memory", "pids"]}
CGROUP_READ_ONLY = dict(CGROUP_OK, read_only=CGROUP_OK["controllers"])


def cgroup_nodes(**by_host):
    nodes = copy.deepcopy(NODES)
    for host in ("n1", "n2"):
        nodes[host]["cgroup"] = copy.deepcopy(by_host.get(host, CGROUP_OK))
    return nodes


@pytest.mark.parametrize("value", ["auto", True, False, "true", "no", None])
def test_rule_34_holds_where_every_worker_can(value):
    assert check(cgroup_nodes(), mode="native", cgroup=value) == []


@pytest.mark.parametrize("value", ["auto", False, None])
def test_rule_34_auto_or_false_accept_workers_that_cannot(value):
    assert check(cgroup_nodes(n2=CGROUP_READ_ONLY), mode="native", cgroup=value) == []


def test_rule_34_true_names_each_worker_that_cannot_with_the_reason_and_the_fix():
    nodes = cgroup_nodes(n2=CGROUP_READ_ONLY)
    del nodes["n1"]["cgroup"]
    assert check(nodes, mode="native", cgroup=True) == [
        "n1: Slurm cannot confine jobs with cgroups there, which slurm_master_cgroup: true requires: its cgroups were "
        "not read (hpclab.cluster.node_hardware_facts did not run on it in this play). Fix: give slurmd a read-write "
        "cgroup hierarchy with those controllers on n1 (a node container needs --cgroupns=host "
        "-v /sys/fs/cgroup:/sys/fs/cgroup:rw), or set slurm_master_cgroup: auto to run the cluster without cgroup "
        "enforcement where a node cannot.",
        "n2: Slurm cannot confine jobs with cgroups there, which slurm_master_cgroup: true requires: "
        "/sys/fs/cgroup/{cpuset,devices,freezer,memory} mounted read-only, where slurmd cannot create its cgroups "
        "(a container started without the host's /sys/fs/cgroup mounted read-write). Fix: give slurmd a read-write "
        "cgroup hierarchy with those controllers on n2 (a node container needs --cgroupns=host "
        "-v /sys/fs/cgroup:/sys/fs/cgroup:rw), or set slurm_master_cgroup: auto to run the cluster without cgroup "
        "enforcement where a node cannot.",
    ]


def test_rule_34_the_controller_is_not_asked_it_runs_no_slurmd():
    nodes = cgroup_nodes()
    nodes["c1"]["cgroup"] = CGROUP_READ_ONLY
    assert check(nodes, mode="native", cgroup="yes") == []


def test_rule_34_true_in_container_mode_is_refused():
    assert check(cgroup_nodes(), mode="container", cgroup=True) == [
        "c1: slurm_master_cgroup is true, but in container mode slurmd runs in a Docker container that the roles start "
        "without the host's cgroup hierarchy. Fix: set slurm_master_cgroup: auto or false, or run the cluster with "
        "hpclab_slurm_mode: native."
    ]


@pytest.mark.parametrize("value", ["sometimes", "", 1])
def test_rule_34_an_unknown_switch_is_refused(value):
    assert check(cgroup_nodes(), mode="native", cgroup=value) == [
        f"c1: slurm_master_cgroup is {value!r}. Fix: set auto (cgroup enforcement where every slurmd node allows it), "
        "true (required: the run fails where a node does not) or false."
    ]


# Issue 54, rule 35: a cluster user never takes over a system account or one of the collection's services'.
@pytest.fixture
def base_accounts(fixture_text):
    return {"passwd": fixture_text("debian", "getent-passwd-base.txt"), "group": fixture_text("debian", "getent-group-base.txt")}


def test_issue54_the_users_pass_on_a_real_node(base_accounts):
    assert check(accounts=base_accounts, min_uid=1000) == []


@pytest.mark.parametrize(
    "users,words",
    [
        pytest.param([{"name": "munge", "uid": 2050, "gid": 2050}], ["munge is MUNGE's daemon's"], id="service-account"),
        pytest.param([{"name": "www-data", "uid": 2050, "gid": 2050}], ["www-data is a system account of this node (UID 33"],
                     id="system-account"),
        pytest.param([{"name": "alice", "uid": 999, "gid": 2001}], ["alice's uid 999 is below 1000"], id="low-uid"),
    ],
)
def test_issue54_one_problem_naming_controller_user_and_fix(base_accounts, users, words):
    problems = check(users=users, accounts=base_accounts, min_uid=1000)
    assert len(problems) == 1, problems
    assert problems[0].startswith("c1: slurm_master_users (default hpclab_cluster_users): ")
    assert all(w in problems[0] for w in words + ["Fix:", "slurm_master_users_min_uid"]), problems[0]


def test_issue54_names_are_refused_without_the_read():
    problems = check(users=[{"name": "slurm", "uid": 2050, "gid": 2050}])
    assert len(problems) == 1 and "slurm is Slurm's daemons'" in problems[0]


def test_issue54_a_bad_minimum_names_the_variable():
    assert check(min_uid="many") == ["c1: slurm_master_users_min_uid 'many' is not a UID from 1 to 60000. Fix: leave it at "
                                     "Debian's 1000, the first UID of an ordinary user, or set the node's UID_MIN."]
