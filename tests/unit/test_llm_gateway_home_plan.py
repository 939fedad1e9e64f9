"""Where the llm_gateway role may write a user's key file: a home that exists, and no link or wrong type on the way
(root follows neither), from the real output of the role's one stat call."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.llm_gateway_home_plan import FilterModule

PLAN = FilterModule().filters()["llm_gateway_home_plan"]
CAPTURED = ["alice", "bob", "carol", "erin", "frank", "gina", "hank", "heidi", "ivan", "judy"]


@pytest.fixture
def stat_lines(fixture_text):
    return fixture_text("llm_gateway", "stat-homes.txt").splitlines()


def test_registered():
    assert set(FilterModule().filters()) == {"llm_gateway_home_plan"}


def test_captured_homes(stat_lines):
    assert PLAN(stat_lines, users=CAPTURED, home_root="/gfsv/home") == {
        # erin's and ivan's llm.env are regular files (replaced in place); hank's home is an administrator's link.
        "write": ["alice", "erin", "hank", "ivan"],
        "missing": ["bob"],
        # carol: .config -> /etc; frank: llm.env -> /etc/shadow; gina: .config a file; heidi: .config/hpclab -> /tmp;
        # judy: llm.env a directory.
        "refused": ["carol", "frank", "gina", "heidi", "judy"],
    }


@pytest.mark.parametrize(
    "users,home_root,expected",
    [
        pytest.param(["judy", "alice"], "/gfsv/home", {"write": ["alice"], "missing": [], "refused": ["judy"]}, id="order-of-users"),
        pytest.param(["alice"], "/gfsv/home/", {"write": ["alice"], "missing": [], "refused": []}, id="root-with-slash"),
        pytest.param(["alice"], "/home", {"write": [], "missing": ["alice"], "refused": []}, id="other-root"),
        pytest.param(["zoe"], "/gfsv/home", {"write": [], "missing": ["zoe"], "refused": []}, id="not-captured"),
        pytest.param([], "/gfsv/home", {"write": [], "missing": [], "refused": []}, id="no-user"),
    ],
)
def test_users_and_root(stat_lines, users, home_root, expected):
    assert PLAN(stat_lines, users=users, home_root=home_root) == expected


@pytest.mark.parametrize(
    "lines,expected",
    [
        pytest.param([], {"write": [], "missing": ["u"], "refused": []}, id="nothing-exists"),
        pytest.param(["directory\t/h/u/"], {"write": ["u"], "missing": [], "refused": []}, id="bare-home"),
        pytest.param(["symbolic link\t/h/u/"], {"write": [], "missing": ["u"], "refused": []}, id="home-not-followed"),
        pytest.param(["regular file\t/h/u/"], {"write": [], "missing": ["u"], "refused": []}, id="home-a-file"),
        pytest.param(["directory\t/h/u/", "directory\t/h/u/.config"], {"write": ["u"], "missing": [], "refused": []}, id="config-only"),
        pytest.param(["directory\t/h/u/", "fifo\t/h/u/.config"], {"write": [], "missing": [], "refused": ["u"]}, id="config-fifo"),
        pytest.param(["directory\t/h/u/", "directory\t/h/u/.config", "directory\t/h/u/.config/hpclab",
                      "socket\t/h/u/.config/hpclab/llm.env"], {"write": [], "missing": [], "refused": ["u"]}, id="env-socket"),
    ],
)
def test_types(lines, expected):
    assert PLAN(lines, users=["u"], home_root="/h") == expected


@pytest.mark.parametrize(
    "lines,match",
    [
        pytest.param("directory\t/h/u/", "input must be the lines of stat's output", id="string"),
        pytest.param(None, "input must be the lines", id="none"),
        pytest.param(["/h/u/"], "'/h/u/' is not TYPE<TAB>PATH", id="no-type"),
        pytest.param(["directory\t"], "is not TYPE<TAB>PATH", id="no-path"),
    ],
)
def test_bad_input_raises(lines, match):
    with pytest.raises(AnsibleFilterError, match=match):
        PLAN(lines, users=["u"], home_root="/h")
