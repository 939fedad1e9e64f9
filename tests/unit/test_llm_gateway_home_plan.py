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
        pytest.param("directory\t/h/u/", "input must be host_state_info's paths or the lines of stat's output", id="string"),
        pytest.param(None, "input must be host_state_info's paths", id="none"),
        pytest.param({"/h/u/": "directory"}, "'directory' is not a path as host_state_info reads it", id="not-a-read"),
        pytest.param(["/h/u/"], "'/h/u/' is not TYPE<TAB>PATH", id="no-type"),
        pytest.param(["directory\t"], "is not TYPE<TAB>PATH", id="no-path"),
    ],
)
def test_bad_input_raises(lines, match):
    with pytest.raises(AnsibleFilterError, match=match):
        PLAN(lines, users=["u"], home_root="/h")


def test_host_state_info_read_of_the_captured_layout(tmp_path):
    """The captured homes rebuilt on this machine's filesystem and read as the role now reads them (host_state_info,
    lstat): the same plan as the captured stat output gives."""
    import os

    from ansible_collections.hpclab.cluster.plugins.modules.host_state_info import path_state

    root = tmp_path / "home"
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "hpclab").mkdir(parents=True)
    (elsewhere / "secret").write_text("root's")
    (tmp_path / "srv-hank").mkdir()

    def dirs(name, *subs):
        for sub in ("",) + subs:
            (root / name / sub).mkdir(parents=True, exist_ok=True)

    dirs("alice", ".config", ".config/hpclab")
    (root / "alice/.config/hpclab/llm.env").write_text("OPENAI_API_KEY=k\n")
    dirs("carol")
    (root / "carol/.config").symlink_to(elsewhere)
    dirs("erin", ".config", ".config/hpclab")
    (root / "erin/.config/hpclab/llm.env").write_text("by hand\n")
    dirs("frank", ".config", ".config/hpclab")
    (root / "frank/.config/hpclab/llm.env").symlink_to(elsewhere / "secret")
    dirs("gina")
    (root / "gina/.config").write_text("")
    (root / "hank").symlink_to(tmp_path / "srv-hank")
    dirs("heidi", ".config")
    (root / "heidi/.config/hpclab").symlink_to(elsewhere)
    dirs("ivan", ".config", ".config/hpclab")
    (root / "ivan/.config/hpclab/llm.env").write_text("")
    dirs("judy", ".config", ".config/hpclab", ".config/hpclab/llm.env")

    paths = [f"{root}/{name}{suffix}" for name in CAPTURED
             for suffix in ("/", "/.config", "/.config/hpclab", "/.config/hpclab/llm.env")]
    read = {path: path_state(path, checksum=path.endswith("llm.env")) for path in paths}
    assert read[f"{root}/hank/"]["isdir"] and os.path.islink(root / "hank")
    assert PLAN(read, users=CAPTURED, home_root=str(root)) == PLAN(
        [line.replace("/gfsv/home", str(root)) for line in _captured_lines()], users=CAPTURED, home_root=str(root))
    assert PLAN(read, users=CAPTURED, home_root=str(root)) == {
        "write": ["alice", "erin", "hank", "ivan"], "missing": ["bob"],
        "refused": ["carol", "frank", "gina", "heidi", "judy"],
    }


def _captured_lines():
    from pathlib import Path

    return (Path(__file__).resolve().parent / "fixtures" / "llm_gateway" / "stat-homes.txt").read_text().splitlines()
