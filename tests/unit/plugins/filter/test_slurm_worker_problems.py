"""The slurm_worker role's own preflight: the mode, the one controller, its published result, the MUNGE key."""

from __future__ import annotations

import pytest

from ansible_collections.hpclab.cluster.plugins.filter.slurm_worker_problems import FilterModule

PROBLEMS = FilterModule().filters()["slurm_worker_problems"]

RESULT = {"workers": ["n1", "n2"], "config": {}, "nodes": [], "partitions": [], "gres": [], "exec": []}


def check(host="n1", **kwargs):
    kwargs = {"mode": "container", "controllers": ["c1"], "controller_result": RESULT, **kwargs}
    return PROBLEMS(host, **kwargs)


def test_registered():
    assert set(FilterModule().filters()) == {"slurm_worker_problems"}


@pytest.mark.parametrize(
    "host,kwargs",
    [
        pytest.param("n1", {}, id="container"),
        pytest.param("n2", {"mode": "native"}, id="native"),
        pytest.param("n1", {"controllers": ("c1",)}, id="controllers-tuple"),
        pytest.param("n1", {"check_controller": False, "controller_result": None}, id="preflight-before-controller"),
        pytest.param("n9", {"check_controller": False}, id="preflight-host-not-listed"),
        pytest.param("n9", {"check_controller": False, "controller_result": {"workers": []}}, id="preflight-ignores-result"),
        pytest.param("n1", {"munge_key": False, "munge_hosts": ["n1"]}, id="munge-key-later"),
        pytest.param("n1", {"munge_key": True, "munge_hosts": None}, id="munge-hosts-none"),
    ],
)
def test_no_problem(host, kwargs):
    assert check(host, **kwargs) == []


@pytest.mark.parametrize(
    "host,kwargs,expected",
    [
        pytest.param("n1", {"mode": "bogus"}, ["slurm_worker_mode 'bogus' on n1 is neither 'container' nor 'native'"],
                     id="bad-mode"),
        pytest.param("n1", {"mode": ""}, ["slurm_worker_mode '' on n1"], id="empty-mode"),
        pytest.param("n1", {"mode": "Native"}, ["slurm_worker_mode 'Native' on n1"], id="mode-case-matters"),
        pytest.param("n1", {"mode": None}, ["slurm_worker_mode 'None' on n1"], id="mode-none"),
        pytest.param("n1", {"controllers": []},
                     ["The group 'slurm_master' (variable slurm_worker_master_group) must hold exactly one controller, none found"],
                     id="no-controller"),
        pytest.param("n1", {"controllers": None}, ["must hold exactly one controller, none found"], id="controllers-none"),
        pytest.param("n1", {"controllers": ["c1", "c2"]}, ["must hold exactly one controller, c1, c2,"], id="two-controllers"),
        pytest.param("n1", {"controllers": [], "master_group": "ctl"},
                     ["The group 'ctl' (variable slurm_worker_master_group)"], id="group-name-in-message"),
        pytest.param("n1", {"controller_result": None},
                     ["must hold exactly one controller, c1, and the slurm_master role must run on it earlier"],
                     id="controller-did-not-run"),
        pytest.param("n1", {"controller_result": "c1"}, ["the slurm_master role must run on it earlier"],
                     id="controller-result-not-a-dict"),
        pytest.param("n9", {}, ["n9 runs the slurm_worker role but is not in the controller's worker group",
                                "slurm_master_worker_group on c1"], id="host-not-a-worker-of-the-controller"),
        pytest.param("n1", {"controller_result": {}}, ["n1 runs the slurm_worker role but is not in the controller's worker group"],
                     id="result-without-workers"),
        pytest.param("n1", {"check_controller": False, "controllers": []}, ["must hold exactly one controller, none found"],
                     id="preflight-still-checks-no-controller"),
        pytest.param("n1", {"check_controller": False, "controllers": ["c1", "c2"], "controller_result": None},
                     ["must hold exactly one controller, c1, c2,"], id="preflight-still-checks-two-controllers"),
        pytest.param("n1", {"munge_key": False},
                     ["/etc/munge/munge.key is missing on n1", "add n1 to the munge inventory group (variable munge_group)"],
                     id="munge-key-missing"),
        pytest.param("n1", {"munge_key": False, "munge_hosts": ["n2"]}, ["/etc/munge/munge.key is missing on n1"],
                     id="munge-key-later-on-another-host"),
        pytest.param("n1", {"munge_key": None}, ["/etc/munge/munge.key is missing on n1"], id="munge-key-unknown"),
    ],
)
def test_one_problem(host, kwargs, expected):
    found = check(host, **kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert "Fix:" in found[0]


def test_several_problems_at_once_are_all_reported():
    found = check("n9", mode="bogus", controllers=["c1", "c2"], munge_key=False)
    assert len(found) == 3, found
    assert "slurm_worker_mode 'bogus' on n9" in found[0]
    assert "must hold exactly one controller, c1, c2," in found[1]
    assert "/etc/munge/munge.key is missing on n9" in found[2]
    assert all("Fix:" in p for p in found)


def test_the_worker_check_needs_exactly_one_controller_first():
    # with two controllers the group problem is reported, not "not in the controller's worker group"
    found = check("n9", controllers=["c1", "c2"])
    assert len(found) == 1
    assert "runs the slurm_worker role" not in found[0]


# --- Rules 5 to 10 (issue 18): this worker's own settings ---

CONTAINER = {
    "slurm_worker_container_conf_dir": "/etc/hpclab/slurm",
    "slurm_worker_container_spool_dir": "/var/lib/hpclab/slurm/slurmd",
    "slurm_worker_container_slurm_uid": 64030,
    "slurm_worker_container_base_image": "debian:bookworm-slim",
    "slurm_worker_container_network": "hpclab",
    "slurm_worker_container_apt_proxy": "auto",
    "slurm_worker_container_addresses": {"c1": "172.31.240.193", "n1": "172.31.240.194"},
}
FULL = {
    "gpus": {},
    "users": [{"name": "alice", "uid": 2001, "gid": 2001}],
    "shared_home": "/gfsv/home",
    "container": CONTAINER,
    "packages": {"slurm_worker_packages": ["slurmd", "slurm-client"], "slurm_worker_mpi_packages": ["openmpi-bin"]},
    "timeouts": {"slurm_worker_register_timeout": 60},
}


def full(host="n1", **kwargs):
    return check(host, **{**FULL, **kwargs})


@pytest.mark.parametrize("mode", ["container", "native"])
def test_the_role_defaults_have_no_problem(mode):
    assert full(mode=mode) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"gpus": None}, id="gpus-not-given"),
        pytest.param({"gpus": {"count": 2, "type": "a100", "files": ["/dev/nvidia0", "/dev/nvidia1"]}}, id="gpus-full"),
        pytest.param({"gpus": {"count": 1}}, id="gpus-count-only"),
        pytest.param({"gpus": {"count": 1, "type": "testgpu", "files": ["/dev/null"]}}, id="gpus-molecule"),
        pytest.param({"users": []}, id="no-users"),
        pytest.param({"users": None}, id="users-not-given"),
        pytest.param({"shared_home": None}, id="shared-home-not-given"),
        pytest.param({"shared_home_mount": ""}, id="12-no-mount"),
        pytest.param({"shared_home_mount": "/gfsv"}, id="12-the-volume"),
        pytest.param({"shared_home_mount": "/gfsv/home"}, id="12-the-home-itself"),
        pytest.param({"container": None}, id="container-not-given"),
        pytest.param({"container": {**CONTAINER, "slurm_worker_container_spool_dir": "/srv/slurmd:x"}, "mode": "native"},
                     id="container-settings-unused-in-native-mode"),
        pytest.param({"container": {**CONTAINER, "slurm_worker_container_addresses": {}}}, id="addresses-not-allotted-yet"),
        pytest.param({"packages": {"slurm_worker_packages": ["slurmd"], "slurm_worker_mpi_packages": []}}, id="no-mpi"),
        pytest.param({"timeouts": {"slurm_worker_register_timeout": 1}}, id="timeout-one"),
    ],
)
def test_issue18_no_problem(kwargs):
    assert full(**kwargs) == []


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        # rule 5: GPUs
        pytest.param({"gpus": {"count": 2, "files": ["/dev/nvidia0"]}},
                     ["n1: slurm_worker_gpus is not {count: N, type: WORD, files: [N device files]}"], id="5-shape"),
        pytest.param({"gpus": {"count": "two"}}, ["n1: slurm_worker_gpus is not {count"], id="5-count-word"),
        pytest.param({"gpus": 2}, ["n1: slurm_worker_gpus is not {count"], id="5-a-number"),
        pytest.param({"gpus": {"count": 1, "type": "a 100"}}, ["n1: slurm_worker_gpus type 'a 100' is not one word"], id="5-type"),
        pytest.param({"gpus": {"count": 1, "files": ["/tmp/gpu0"]}}, ["file '/tmp/gpu0' is not under /dev"], id="5-file-outside-dev"),
        pytest.param({"gpus": {"count": 1, "files": ["/dev/nvidia0:rwm"]}}, ["file '/dev/nvidia0:rwm'"], id="5-file-colon"),
        # rule 6: users
        pytest.param({"users": [{"name": "Alice", "uid": 2001, "gid": 2001}]},
                     ["n1: slurm_worker_users (default hpclab_cluster_users) is not a list of {name, uid, gid, groups}"], id="6-shape"),
        pytest.param({"users": [{"name": "alice", "uid": 0, "gid": 2001}]}, ["alice's uid 0"], id="6-root"),
        pytest.param({"users": [{"name": "alice", "uid": 64030, "gid": 2001}]}, ["alice's uid 64030 is the slurm user's"],
                     id="6-slurm-uid"),
        pytest.param({"users": [{"name": "alice", "uid": 2001, "gid": 2001, "groups": ["a b"]}]}, ["alice's group 'a b'"],
                     id="6-group"),
        # rule 7: shared home
        pytest.param({"shared_home": "gfsv/home"}, ["n1: slurm_worker_shared_home 'gfsv/home' is not an absolute path"],
                     id="7-relative"),
        pytest.param({"shared_home": "/gfsv/home,x"}, ["slurm_worker_shared_home '/gfsv/home,x'"], id="7-comma"),
        # rule 12: the mount point native slurmd waits for
        pytest.param({"shared_home_mount": "/gfs"}, ["n1: slurm_worker_shared_home_mount '/gfs' does not hold "
                                                     "slurm_worker_shared_home '/gfsv/home'. Fix: set it to the mount point"],
                     id="12-a-prefix-that-is-no-parent"),
        pytest.param({"shared_home_mount": "/"}, ["slurm_worker_shared_home_mount '/' is '/'"], id="12-root"),
        pytest.param({"shared_home_mount": "/gfsv/"}, ["slurm_worker_shared_home_mount '/gfsv/' is not canonical"], id="12-trailing"),
        pytest.param({"shared_home_mount": "/srv/vol"}, ["does not hold slurm_worker_shared_home"], id="12-elsewhere"),
        # rule 8: container settings
        pytest.param({"container": {**CONTAINER, "slurm_worker_container_spool_dir": "/"}},
                     ["n1: slurm_worker_container_spool_dir '/' is '/'"], id="8-spool-root"),
        pytest.param({"container": {**CONTAINER, "slurm_worker_container_spool_dir": "/etc/hpclab/slurm/spool"}},
                     ["slurm_worker_container_conf_dir /etc/hpclab/slurm and slurm_worker_container_spool_dir", "one holds the other"],
                     id="8-nested"),
        pytest.param({"container": {**CONTAINER, "slurm_worker_container_slurm_uid": -1}}, ["slurm_worker_container_slurm_uid -1"],
                     id="8-uid"),
        pytest.param({"container": {**CONTAINER, "slurm_worker_container_base_image": "debian:bookworm slim"}},
                     ["slurm_worker_container_base_image"], id="8-image"),
        pytest.param({"container": {**CONTAINER, "slurm_worker_container_network": "my net"}},
                     ["slurm_worker_container_network 'my net'"], id="8-network"),
        pytest.param({"container": {**CONTAINER, "slurm_worker_container_apt_proxy": "ftp://proxy"}},
                     ["slurm_worker_container_apt_proxy 'ftp://proxy'"], id="8-apt-proxy"),
        pytest.param({"container": {**CONTAINER, "slurm_worker_container_addresses": {"n1": "fe80::1%eth0"}}},
                     ["slurm_worker_container_addresses n1: 'fe80::1%eth0' is not an IPv4 address"], id="8-address"),
        # rule 9: packages
        pytest.param({"packages": {"slurm_worker_packages": ["slurm-client"]}}, ["n1: slurm_worker_packages lacks slurmd"],
                     id="9-no-slurmd"),
        pytest.param({"packages": {"slurm_worker_packages": ["slurmd", "slurm client"]}},
                     ["slurm_worker_packages entry 'slurm client' is not a Debian package name"], id="9-blank"),
        # rule 10: timeouts
        pytest.param({"timeouts": {"slurm_worker_register_timeout": 0}}, ["n1: slurm_worker_register_timeout 0"], id="10-zero"),
        pytest.param({"timeouts": {"slurm_worker_register_timeout": "1m"}}, ["slurm_worker_register_timeout '1m'"], id="10-unit"),
    ],
)
def test_issue18_one_problem(kwargs, expected):
    found = full(**kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert "Fix:" in found[0]


def test_issue18_an_unknown_container_setting_is_a_filter_error():
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError, match="unknown container settings"):
        full(container={"slurm_master_container_network": "hpclab"})


def test_issue18_problems_come_after_the_old_rules():
    found = full(mode="bogus", gpus=3, timeouts={"slurm_worker_register_timeout": 0})
    assert [p.split(" ")[0] for p in found] == ["slurm_worker_mode", "n1:", "n1:"], found


# Issue 54, rule 11: the worker judges its own node's accounts.
@pytest.fixture
def base_accounts(fixture_text):
    return {"passwd": fixture_text("debian", "getent-passwd-base.txt"), "group": fixture_text("debian", "getent-group-base.txt")}


def test_issue54_the_users_pass_on_a_real_node(base_accounts):
    assert check(users=[{"name": "alice", "uid": 2001, "gid": 2001}], accounts=base_accounts, min_uid="1000") == []


@pytest.mark.parametrize(
    "name,words",
    [("munge", "munge is MUNGE's daemon's"), ("messagebus", "messagebus is a system account of this node (UID 100"),
     ("users", "users is a system group of this node (GID 100")],
)
def test_issue54_one_problem_naming_the_worker_user_and_fix(base_accounts, name, words):
    problems = check("n2", users=[{"name": name, "uid": 2050, "gid": 2050}], accounts=base_accounts)
    assert len(problems) == 1 and problems[0].startswith("n2: slurm_worker_users (default hpclab_cluster_users): ")
    assert words in problems[0] and "Fix:" in problems[0] and "slurm_worker_users_min_uid" in problems[0]


def test_issue54_no_users_no_account_rule(base_accounts):
    assert check(users=None, accounts=base_accounts, min_uid=0) == []


# Issue 56, rule 13: jobs on the gateway's host reach its address only through the macvlan shim.
GATEWAY = ["the LLM gateway (OPENAI_BASE_URL of each user's llm.env)"]


@pytest.mark.parametrize("mode,services,route", [
    ("container", GATEWAY, True),
    ("container", [], False),
    ("native", GATEWAY, False),
])
def test_13_no_problem(mode, services, route):
    assert full(mode=mode, host_services=services, container_host_route=route) == []


def test_13_a_container_host_without_the_shim_cannot_reach_its_own_gateway():
    assert full(host="n1", host_services=GATEWAY, container_host_route=False) == [
        "n1: jobs in its slurmd container call the LLM gateway (OPENAI_BASE_URL of each user's llm.env) on n1's own "
        "address, which a container on a macvlan network cannot reach (No route to host). Fix: give the host the "
        "macvlan shim, in host_vars/n1.yml: docker_macvlan_host_shim: true and docker_macvlan_host_shim_ip: an unused "
        "address of docker_macvlan_ip_range."
    ]
