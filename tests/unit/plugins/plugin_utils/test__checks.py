"""The shared helpers of the roles' check filters, on valid and invalid values."""

from __future__ import annotations

import pytest

from ansible_collections.hpclab.cluster.plugins.plugin_utils import _checks


@pytest.mark.parametrize("value", ["/gfsv/home", "/var/lib/hpclab/slurm/slurmd", "/a", "/x_y.z-1@2+3=4~5"])
def test_mount_path_valid(value):
    assert _checks.mount_path_problem(value) is None


@pytest.mark.parametrize(
    "value,reason",
    [
        ("gfsv/home", "is not an absolute path"),
        ("", "is not an absolute path"),
        (None, "is not an absolute path"),
        (7, "is not an absolute path"),
        ("/", "is '/'"),
        ("/a/", "is not canonical"),
        ("/a//b", "is not canonical"),
        ("/a/./b", "is not canonical"),
        ("/a/../b", "is not canonical"),
        ("/a:/b", "':'"),
        ("/a,b", "','"),
        ("/a b", "a blank"),
        ("/a\nb", "a blank"),
        ("/a'b", "a quote"),
        ("/a#b", "another character"),
    ],
)
def test_mount_path_invalid(value, reason):
    assert reason in _checks.mount_path_problem(value)


def test_mount_path_root_when_allowed():
    assert _checks.mount_path_problem("/", allow_root=True) is None


@pytest.mark.parametrize(
    "path,other,expected",
    [("/a/b", "/a", True), ("/a", "/a", True), ("/ab", "/a", False), ("/a", "/a/b", False), ("/x", "/", True)],
)
def test_is_within(path, other, expected):
    assert _checks.is_within(path, other) is expected


@pytest.mark.parametrize("value", [1, 22, 6817, "6818", 65535])
def test_port_valid(value):
    assert _checks.port_problem(value) is None


@pytest.mark.parametrize("value", [0, 65536, -1, "http", None, True, 6817.5, "6817-6818"])
def test_port_invalid(value):
    assert _checks.port_problem(value) == "is not a TCP port 1..65535"


@pytest.mark.parametrize("value,minimum", [(1, 1), ("60", 1), (0, 0)])
def test_seconds_valid(value, minimum):
    assert _checks.seconds_problem(value, minimum) is None


@pytest.mark.parametrize("value", [0, -1, "1m", None, True, 1.5])
def test_seconds_invalid(value):
    assert _checks.seconds_problem(value) == "is not a whole number of seconds of at least 1"


@pytest.mark.parametrize(
    "packages",
    [["munge"], ["slurm-wlm-mysql-plugin", "python3-mpi4py", "g++"], ["munge=0.5.15-2+deb12u1"], ["munge:amd64"],
     ["slurm*"], ["munge>=0.5"], []],
)
def test_packages_valid(packages):
    assert _checks.package_problems(packages) == []


@pytest.mark.parametrize(
    "packages,reason",
    [
        (["Munge"], "entry 'Munge' is not a Debian package name"),
        (["m"], "entry 'm' is not a Debian package name"),
        (["-munge"], "entry '-munge'"),
        (["munge tools"], "entry 'munge tools'"),
        (["munge\n"], "entry 'munge\\n'"),
        ([None], "entry None"),
        ("munge", "is not a list of package names"),
        ({"munge": 1}, "is not a list of package names"),
    ],
)
def test_packages_invalid(packages, reason):
    assert reason in "; ".join(_checks.package_problems(packages))


def test_packages_required():
    assert _checks.package_problems(["munge=0.5.15", "slurmd:amd64"], ("munge", "slurmd")) == []
    assert _checks.package_problems(["slurm-client"], ("slurmd",)) == ["lacks slurmd, the package of the daemon the role runs"]


@pytest.mark.parametrize(
    "gpus,ok",
    [({}, True), (None, True), ({"count": 2}, True), ({"count": "2", "files": ["/dev/a", "/dev/b"]}, True),
     ({"count": 2, "files": ["/dev/a"]}, False), ({"count": "x"}, False), ({"type": "a100"}, False), (3, False),
     ({"count": 1, "files": "/dev/a"}, False)],
)
def test_gpus_shape(gpus, ok):
    assert _checks.gpus_shape_ok(gpus) is ok


@pytest.mark.parametrize(
    "gpus,reasons",
    [
        ({"count": 1, "type": "a100", "files": ["/dev/nvidia0"]}, []),
        ({"count": 1, "type": "", "files": ["/dev/null"]}, []),
        ({"count": 1, "type": "a100 80g"}, ["type 'a100 80g' is not one word"]),
        ({"count": 1, "type": 100}, ["type 100 is not one word"]),
        ({"count": 1, "files": ["/srv/gpu"]}, ["file '/srv/gpu' is not under /dev"]),
        ({"count": 1, "files": ["/dev/nvidia0:rwm"]}, ["file '/dev/nvidia0:rwm' has"]),
        ({"count": 2, "files": ["/dev/nvidia0", "/dev/nvidia0"]}, ["a device file is listed twice"]),
    ],
)
def test_gpus_values(gpus, reasons):
    found = _checks.gpus_value_problems(gpus)
    assert len(found) == len(reasons), found
    for part, reason in zip(reasons, found):
        assert part in reason


@pytest.mark.parametrize(
    "users,ok",
    [([], True), ([{"name": "alice", "uid": 2001, "gid": 2001}], True), ([{"name": "Alice", "uid": 1, "gid": 1}], False),
     ([{"name": "a", "uid": 1, "gid": 1}, {"name": "a", "uid": 2, "gid": 2}], False), (["alice"], False)],
)
def test_users_well_formed(users, ok):
    assert _checks.users_well_formed(users) is ok


@pytest.mark.parametrize(
    "users,reasons",
    [
        ([{"name": "alice", "uid": 2001, "gid": 2001, "groups": ["video"]}], []),
        ([{"name": "alice", "uid": "0", "gid": 1}], ["alice's uid 0 is root's"]),
        ([{"name": "alice", "uid": 1, "gid": 65534}], ["alice's gid 65534"]),
        ([{"name": "alice", "uid": 64030, "gid": 1}], ["alice's uid 64030 is the slurm user's"]),
        ([{"name": "x" * 33, "uid": 1, "gid": 1}], ["longer than 32 characters"]),
        ([{"name": "alice", "uid": 1, "gid": 1, "groups": ["sudo", "Wheel"]}], ["alice's group 'Wheel'"]),
        ([{"name": "alice", "uid": 1, "gid": 1, "groups": "sudo"}], ["alice's groups 'sudo' is not a list"]),
    ],
)
def test_user_values(users, reasons):
    found = _checks.user_value_problems(users, [64030])
    assert len(found) == len(reasons), found
    for part, reason in zip(reasons, found):
        assert part in reason


def test_container_settings_valid():
    settings = {
        "x_container_conf_dir": "/etc/hpclab/slurm",
        "x_container_state_dir": "/var/lib/hpclab/slurm/slurmctld",
        "x_container_slurm_uid": 64030,
        "x_container_base_image": "hpclab-node:bookworm",
        "x_container_network": "hpclab",
        "x_container_apt_proxy": "auto",
        "x_container_addresses": {"c1": "10.0.0.2", "c1-slurmdbd": "10.0.0.3"},
    }
    assert _checks.container_problems(settings) == []


@pytest.mark.parametrize(
    "settings,variable,part",
    [
        ({"a_dir": "rel"}, "a_dir", "'rel' is not an absolute path"),
        ({"a_dir": "/x", "b_dir": "/x/y"}, "a_dir", "/x and b_dir /x/y are the same directory or one holds the other"),
        ({"a_slurm_uid": 0}, "a_slurm_uid", "0 is not a UID"),
        ({"a_slurm_uid": True}, "a_slurm_uid", "True is not a UID"),
        ({"a_base_image": "Debian"}, "a_base_image", "'Debian' is not an image reference"),
        ({"a_network": "x"}, "a_network", "'x' is not a Docker name"),
        ({"a_apt_proxy": "http://p:3142 "}, "a_apt_proxy", "has a blank or a line break"),
        ({"a_apt_proxy": "http://p:3142';id"}, "a_apt_proxy", "is neither auto"),
        ({"a_addresses": ["10.0.0.2"]}, "a_addresses", "is not a dict"),
        ({"a_addresses": {"c1": "10.0.0.256"}}, "a_addresses", "c1: '10.0.0.256' is not an IPv4 address"),
        ({"a_addresses": {"c1": "10.0.0.2", "c2": "10.0.0.2"}}, "a_addresses", "c2 has 10.0.0.2, which c1 has too"),
        ({"a_addresses": {"-c1": "10.0.0.2"}}, "a_addresses", "'-c1' is not a Docker name"),
    ],
)
def test_container_settings_invalid(settings, variable, part):
    found = _checks.container_problems(settings)
    assert len(found) == 1, found
    assert found[0][0] == variable and part in found[0][1], found


def test_container_settings_unknown_variable():
    with pytest.raises(ValueError, match="unknown container setting 'a_color'"):
        _checks.container_problems({"a_color": "blue"})


@pytest.mark.parametrize(
    "check,value",
    [
        (_checks.mount_path_problem, "/gfsv/home\n"),
        (lambda v: _checks.package_problems([v]), "munge\n"),
        (lambda v: _checks.gpus_value_problems({"count": 1, "type": v}), "a100\n"),
        (lambda v: _checks.user_value_problems([{"name": "a", "uid": 1, "gid": 1, "groups": [v]}]), "video\n"),
        (lambda v: _checks.container_problems({"x_base_image": v}), "debian:bookworm\n"),
        (lambda v: _checks.container_problems({"x_apt_proxy": v}), "http://proxy:3142\n"),
    ],
)
def test_a_trailing_line_break_is_refused(check, value):
    # Python's '$' matches before a final newline: every pattern is matched whole (fullmatch).
    assert check(value)
    assert not _checks.users_well_formed([{"name": "alice\n", "uid": 1, "gid": 1}])


@pytest.mark.parametrize("pattern", [_checks.PATH_CHARS, _checks.MOUNT_PATH_CHARS, _checks.USER_NAME, _checks.GPU_TYPE, _checks.DEBIAN_PACKAGE])
def test_a_trailing_line_break_never_matches(pattern):
    # `$` would accept "value\n" with re.match: the patterns end in \Z.
    assert pattern.match("abc") or pattern.match("/abc")
    assert not pattern.match("abc\n") and not pattern.match("/abc\n")
