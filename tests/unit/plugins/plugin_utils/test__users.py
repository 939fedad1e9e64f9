"""The cluster users' shared rule (plugin_utils/_users.py), on real getent output of a Debian 12 node."""

from __future__ import annotations

import pytest

from ansible_collections.hpclab.cluster.plugins.plugin_utils import _users


@pytest.fixture
def base(fixture_text):
    """getent passwd and group of the bare node image (hpclab-node:bookworm), before any role ran."""
    return {"passwd": fixture_text("debian", "getent-passwd-base.txt"), "group": fixture_text("debian", "getent-group-base.txt")}


def user(name, uid=2001, gid=None):
    return {"name": name, "uid": uid, "gid": uid if gid is None else gid}


def test_parse_real_passwd(base):
    accounts = _users.parse_getent(base["passwd"], "passwd")
    assert accounts["root"] == {"uid": 0, "gid": 0, "comment": "root", "home": "/root", "shell": "/bin/bash"}
    assert accounts["_apt"] == {"uid": 42, "gid": 65534, "comment": "", "home": "/nonexistent", "shell": "/usr/sbin/nologin"}
    assert accounts["nobody"]["uid"] == 65534
    assert len(accounts) == len(base["passwd"].splitlines())


def test_parse_real_group(base):
    groups = _users.parse_getent(base["group"], "group")
    assert groups["users"] == {"gid": 100, "members": []}
    assert groups["sudo"]["gid"] == 27
    assert len(groups) == len(base["group"].splitlines())


def test_parse_members_and_blank_lines():
    assert _users.parse_getent("\nalice:x:2001:bob,carol\n\n", "group") == {"alice": {"gid": 2001, "members": ["bob", "carol"]}}


@pytest.mark.parametrize(
    "text,database",
    [
        ("root:x:0:0:root:/root", "passwd"),
        ("root:x:zero:0:root:/root:/bin/bash", "passwd"),
        (":x:0:0:root:/root:/bin/bash", "passwd"),
        ("users:x:100", "group"),
        ("users:x:one:", "group"),
        ("root:x:0:0:root:/root:/bin/bash", "shadow"),
    ],
)
def test_parse_refuses_other_text(text, database):
    with pytest.raises(ValueError, match="getent|database"):
        _users.parse_getent(text, database)


@pytest.mark.parametrize("name", ["alice", "bob-2", "hpc_user"])
def test_ordinary_users_pass_on_a_real_node(base, name):
    assert _users.user_account_problems([user(name)], 1000, base["passwd"], base["group"]) == []


@pytest.mark.parametrize(
    "name,reason",
    [
        # The case, on a node where the munge role has not run yet: the name is refused all the same.
        ("munge", "munge is MUNGE's daemon's (munge role) account, which the collection uses"),
        ("slurm", "Slurm's daemons'"),
        ("mysql", "MariaDB's"),
        ("prometheus", "Prometheus'"),
        ("nginx", "the LLM gateway's web server's"),
        ("llm", "llm_serving_user"),
        ("docker", "Docker's group"),
        ("root", "root is a system account of this node (UID 0, below 1000)"),
        ("nobody", "nobody is the unprivileged user's"),
        ("www-data", "www-data is a system account of this node (UID 33, below 1000)"),
        ("messagebus", "messagebus is a system account of this node (UID 100, below 1000)"),
        ("systemd-network", "UID 998, below 1000"),
        # Groups without an account of the same name.
        ("users", "users is a system group of this node (GID 100, below 1000)"),
        ("sudo", "sudo is a system group of this node (GID 27, below 1000)"),
        ("staff", "GID 50"),
        # Not on this node yet, made by a Debian package that may come later in the run.
        ("sshd", "sshd is a system account that Debian's packages create"),
        ("_rpc", "Debian's packages"),
    ],
)
def test_reserved_and_system_names_are_refused(base, name, reason):
    reasons = _users.user_account_problems([user(name)], 1000, base["passwd"], base["group"])
    assert len(reasons) == 1 and reason in reasons[0], reasons


def test_a_system_account_of_a_converged_node_is_named_with_its_uid(base):
    # munged's account as the munge package makes it (uid 104 in the issue): the node's read is named first.
    passwd = base["passwd"] + "munge:x:104:106::/nonexistent:/usr/sbin/nologin\n"
    assert _users.user_account_problems([user("munge", 2050)], 1000, passwd, base["group"]) == [
        "munge is a system account of this node (UID 104, below 1000)"
    ]


def test_names_are_refused_without_a_read():
    assert _users.user_account_problems([user("munge"), user("alice")]) == [
        "munge is MUNGE's daemon's (munge role) account, which the collection uses"
    ]


@pytest.mark.parametrize(
    "uid,gid,min_uid,expected",
    [
        (999, 2001, 1000, ["alice's uid 999 is below 1000, in the system accounts' range"]),
        (2001, 500, 1000, ["alice's gid 500 is below 1000, in the system accounts' range"]),
        (1000, 1000, 1000, []),
        (2001, 2001, 5000, ["alice's uid 2001 is below 5000, in the system accounts' range",
                            "alice's gid 2001 is below 5000, in the system accounts' range"]),
        (500, 500, 500, []),
    ],
)
def test_ids_below_the_minimum(uid, gid, min_uid, expected):
    assert _users.user_account_problems([user("alice", uid, gid)], min_uid) == expected


def test_a_lower_minimum_judges_system_accounts_by_it(base):
    # systemd-network has UID 998: with a minimum of 900 it is still a system account; www-data (33) too.
    assert _users.user_account_problems([user("systemd-network", 2001)], 900, base["passwd"], base["group"])
    assert _users.user_account_problems([user("www-data", 2001)], 30, base["passwd"], base["group"]) == [
        "www-data is nginx's workers' (llm_gateway) account, which the collection uses"
    ]


def test_the_account_of_an_earlier_run_is_no_problem(base):
    passwd = base["passwd"] + "alice:x:2001:2001:hpclab cluster user:/gfsv/home/alice:/bin/bash\n"
    group = base["group"] + "alice:x:2001:\n"
    assert _users.user_account_problems([user("alice")], 1000, passwd, group) == []


def test_a_uid_held_by_another_account_is_refused(base):
    passwd = base["passwd"] + "bob:x:2002:2002:hpclab cluster user:/gfsv/home/bob:/usr/sbin/nologin\n"
    assert _users.user_account_problems([user("carol", 2002)], 1000, passwd, base["group"]) == [
        "carol's uid 2002 is the account bob's on this node"
    ]


def test_more_reserved_names():
    assert _users.user_account_problems([user("webui")], reserved={"webui": "the web UI's"}) == [
        "webui is the web UI's account, which the collection uses"
    ]


def test_removed_users_are_the_marked_accounts_not_listed(base):
    passwd = base["passwd"] + (
        "alice:x:2001:2001:hpclab cluster user:/gfsv/home/alice:/bin/bash\n"
        "bob:x:2002:2002:hpclab cluster user,room 4,,:/gfsv/home/bob:/bin/bash\n"
        "carol:x:2003:2003:Carol:/home/carol:/bin/bash\n"
        "odd:x:900:900:hpclab cluster user:/gfsv/home/odd:/bin/bash\n"
    )
    assert _users.removed_users([user("alice")], passwd) == ["bob"]
    assert _users.removed_users([], passwd) == ["alice", "bob"]
    assert _users.removed_users([], passwd, 800) == ["alice", "bob", "odd"]
    assert _users.removed_users([user("alice")], base["passwd"]) == []


def test_cluster_user_problems_names_host_variable_and_fix(base):
    messages = _users.cluster_user_problems("slurmd1", "slurm_worker_users", [user("munge", 2050), user("alice")], 1000, base,
                                            "slurm_worker_users_min_uid")
    assert len(messages) == 1
    assert messages[0].startswith("slurmd1: slurm_worker_users (default hpclab_cluster_users): munge is MUNGE's daemon's")
    assert "Fix: take these users out of slurm_worker_users" in messages[0] and "slurm_worker_users_min_uid" in messages[0]
    assert "alice" not in messages[0]


@pytest.mark.parametrize("min_uid", [0, -1, "x", True, 60001, 1.5])
def test_a_bad_minimum_is_one_message(min_uid):
    messages = _users.cluster_user_problems("h", "slurm_master_users", [user("alice")], min_uid)
    assert len(messages) == 1 and messages[0].startswith("h: hpclab_users_min_uid ") and "Fix:" in messages[0]


def test_a_read_that_is_not_getent_is_one_message():
    messages = _users.cluster_user_problems("h", "slurm_master_users", [user("alice")], 1000, {"passwd": "garbage", "group": ""})
    assert messages == [messages[0]] and "not a line of getent passwd: 'garbage'" in messages[0]


def test_the_roles_mark_is_the_helpers(fixture_text):
    import yaml
    from pathlib import Path
    vars_file = Path(_users.__file__).resolve().parents[2] / "roles" / "slurm_common" / "vars" / "main.yml"
    assert yaml.safe_load(vars_file.read_text())["__slurm_common_user_comment"] == _users.MANAGED_COMMENT


def test_without_a_minimum_only_the_names_are_judged(base):
    users = [user("alice", 5), user("www-data", 3000)]
    assert _users.cluster_user_problems("h", "v", users, None, base) == [
        _users.cluster_user_problems("h", "v", [user("www-data", 3000)], 1000, base)[0]]


@pytest.fixture
def controller(fixture_text):
    """getent passwd and group of the slurm_native scenario's controller after its converge."""
    return {"passwd": fixture_text("debian", "getent-passwd-controller.txt"),
            "group": fixture_text("debian", "getent-group-controller.txt")}


@pytest.mark.parametrize(
    "name,reason",
    [
        # The user on a converged node: munged's account, UID 104.
        ("munge", "munge is a system account of this node (UID 104, below 1000)"),
        # Debian's slurm UID is above 1000: refused by the name.
        ("slurm", "slurm is Slurm's daemons' (slurm_master, slurm_worker) account, which the collection uses"),
        ("prometheus", "prometheus is a system account of this node (UID 105, below 1000)"),
        ("gluster", "gluster is a system account of this node (UID 101, below 1000)"),
        ("statd", "statd is a system account of this node (UID 103, below 1000)"),
    ],
)
def test_service_accounts_of_a_converged_node(controller, name, reason):
    assert _users.user_account_problems([user(name, 2050)], 1000, controller["passwd"], controller["group"]) == [reason]


def test_the_converged_nodes_own_user_passes_and_is_not_removed(controller):
    alice = user("alice", 2001)
    assert _users.user_account_problems([alice], 1000, controller["passwd"], controller["group"]) == []
    # Made before the collection marked its accounts: never taken for a removed user.
    assert _users.removed_users([], controller["passwd"]) == []


def test_a_uid_of_the_converged_node_is_refused_for_another_name(controller):
    assert _users.user_account_problems([user("bob", 2001)], 1000, controller["passwd"], controller["group"]) == [
        "bob's uid 2001 is the account alice's on this node"
    ]
