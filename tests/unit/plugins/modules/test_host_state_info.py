"""host_state_info: its parsers on output captured from Debian 12 nodes (tests/unit/fixtures/debian), and the
module's paths on a real temporary directory."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
from pathlib import Path

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.hpclab.cluster.plugins.modules import host_state_info as m

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "debian"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_dpkg_query_lists_the_installed_packages_with_their_version():
    assert m.parse_dpkg_query(fixture("dpkg-query-installed.txt")) == {
        "libmunge2": "0.5.15-2+deb12u1",
        "munge": "0.5.15-2+deb12u1",
        "slurmctld": "22.05.8-4+deb12u3",
    }


def test_dpkg_query_leaves_out_a_package_known_but_not_installed():
    installed = m.parse_dpkg_query(fixture("dpkg-query-wildcard.txt"))
    assert "slurm-wlm-plugins" not in installed
    assert installed["slurmd"] == "22.05.8-4+deb12u3"


@pytest.mark.parametrize(
    "line, installed",
    [
        ("munge\tii \t0.5.15-2\n", True),
        ("munge\thi \t0.5.15-2\n", True),  # held
        ("munge\trc \t0.5.15-2\n", False),  # removed, its configuration files left
        ("munge\tiU \t0.5.15-2\n", False),  # unpacked, not configured
        ("munge\tun \t\n", False),
    ],
)
def test_dpkg_status_that_counts_as_installed(line, installed):
    assert ("munge" in m.parse_dpkg_query(line)) is installed


def test_missing_packages_as_apt_takes_them():
    installed = m.parse_dpkg_query(fixture("dpkg-query-installed.txt"))
    entries = ["munge", "slurmd", "munge=0.5.15-2+deb12u1", "slurmctld=21.08.5-2", "slurm*", "libmunge2:amd64", "munge/bookworm"]
    assert m.missing_packages(entries, installed) == ["slurmd", "slurmctld=21.08.5-2", "slurm*", "munge/bookworm"]


def test_systemctl_show_one_block_per_unit_in_order():
    units = m.parse_systemctl_show(fixture("systemctl-show.txt"))
    assert [u["Id"] for u in units] == ["munge.service", "slurmctld.service", "nosuch.service"]
    assert m.unit_state(units[0]) == {"loaded": True, "active": True, "enabled": True, "state": "active", "unit_file_state": "enabled"}
    assert m.unit_state(units[2]) == {"loaded": False, "active": False, "enabled": False, "state": "inactive", "unit_file_state": ""}


@pytest.mark.parametrize("unit_file_state, enabled", [("enabled", True), ("static", True), ("disabled", False), ("masked", False)])
def test_enabled_unit_file_states(unit_file_state, enabled):
    assert m.unit_state({"ActiveState": "active", "UnitFileState": unit_file_state})["enabled"] is enabled


def test_unit_names():
    assert m.unit_name("munge") == "munge.service"
    assert m.unit_name("gluster.mount") == "gluster.mount"


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        m.main()
    return json.loads(capsys.readouterr().out)


def test_paths_as_stat_reads_them(tmp_path, capsys):
    key = tmp_path / "munge.key"
    key.write_bytes(b"k" * 128)
    key.chmod(0o400)
    (tmp_path / "link").symlink_to(key)
    result = run(capsys, paths=[str(key), str(tmp_path), str(tmp_path / "link"), str(tmp_path / "none")])
    assert result["changed"] is False
    paths = result["paths"]
    assert paths[str(key)]["checksum"] == hashlib.sha256(b"k" * 128).hexdigest()
    assert (paths[str(key)]["mode"], paths[str(key)]["isreg"], paths[str(key)]["isdir"]) == ("0400", True, False)
    assert paths[str(tmp_path)]["isdir"] is True and "checksum" not in paths[str(tmp_path)]
    assert paths[str(tmp_path / "link")]["islnk"] is True
    assert paths[str(tmp_path / "none")] == {"exists": False}
    assert m.path_state(str(key) + "/under-a-file") == {"exists": False}
    assert paths[str(key)]["pw_name"] == __import__("pwd").getpwuid(os.getuid()).pw_name


def test_without_dpkg_and_systemd_everything_is_to_do(capsys, monkeypatch):
    monkeypatch.setattr(m.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)
    result = run(capsys, packages=["munge"], services=["munge"])
    assert result["packages_missing"] == ["munge"]
    assert result["packages"] == {"munge": None}
    assert result["services"]["munge"]["active"] is False


def test_users_and_groups_as_the_account_databases_give_them(capsys):
    """This machine's own accounts: root, and a name that no account has."""
    import grp
    import pwd

    root = pwd.getpwnam("root")
    supplementary = sorted(g.gr_name for g in grp.getgrall() if "root" in g.gr_mem)
    result = run(capsys, users=["root", "no-such-user-here"], groups=["root", "no-such-group-here"])
    assert result["users"] == {
        "root": {"exists": True, "uid": 0, "gid": 0, "home": root.pw_dir, "shell": root.pw_shell,
                 "comment": root.pw_gecos, "groups": supplementary},
        "no-such-user-here": {"exists": False},
    }
    assert result["groups"] == {"root": {"exists": True, "gid": 0}, "no-such-group-here": {"exists": False}}


def test_supplementary_groups_from_the_member_lists(monkeypatch):
    """A user's groups are those that list it, as /etc/group does (its primary group lists nobody)."""
    import grp

    entries = [grp.struct_group(("alice", "x", 2001, [])), grp.struct_group(("render", "x", 105, ["alice", "bob"])),
               grp.struct_group(("video", "x", 44, ["bob"]))]
    monkeypatch.setattr(m.grp, "getgrall", lambda: entries)
    assert m.group_members() == {"alice": ["render"], "bob": ["render", "video"]}


def test_fstab_as_the_mount_module_reads_it():
    """The line ansible.posix.mount wrote on a lab node; the base image's comment line is no entry."""
    assert m.parse_fstab(fixture("fstab-glusterfs-client.txt")) == [
        {"src": "node1:/gv0", "name": "/gfsv", "fstype": "glusterfs",
         "opts": "defaults,_netdev,backup-volfile-servers=node2:node3", "dump": "0", "passno": "0"},
    ]


def test_fstab_short_lines_trailing_comments_and_lines_the_mount_module_skips():
    text = "\n".join([
        "node1:/gv0 /gfsv glusterfs defaults  # trailing comment",
        "UUID=1234 /srv ext4 defaults 0",
        "   # an indented comment",
        "/dev/sdb1 /too/short",
        "a b c d e f g",
        "",
    ])
    assert m.parse_fstab(text) == [
        {"src": "node1:/gv0", "name": "/gfsv", "fstype": "glusterfs", "opts": "defaults", "dump": None, "passno": None},
        {"src": "UUID=1234", "name": "/srv", "fstype": "ext4", "opts": "defaults", "dump": "0", "passno": None},
    ]


def test_mounts_a_mount_point_and_a_plain_directory(tmp_path, capsys):
    """/ is a mount point on every machine, a fresh directory is not; each gets its fstab lines (maybe none)."""
    entries = m.parse_fstab("node1:/gv0 /gfsv glusterfs defaults 0 0\nnode2:/gv0 /gfsv glusterfs ro 0 0\n")
    assert m.mount_state(str(tmp_path), entries) == {"mounted": False, "fstab": []}
    assert m.mount_state("/gfsv", entries)["fstab"] == [
        {"src": "node1:/gv0", "fstype": "glusterfs", "opts": "defaults", "dump": "0", "passno": "0"},
        {"src": "node2:/gv0", "fstype": "glusterfs", "opts": "ro", "dump": "0", "passno": "0"},
    ]
    result = run(capsys, mounts=["/", str(tmp_path)])
    assert result["mounts"]["/"]["mounted"] is True
    assert result["mounts"][str(tmp_path)] == {"mounted": False, "fstab": []}


def test_attribute_paths_are_read_without_their_checksum(tmp_path, capsys):
    log = tmp_path / "access.log"
    log.write_bytes(b"GET / 200\n" * 1000)
    log.chmod(0o640)
    result = run(capsys, paths=[str(tmp_path)], attribute_paths=[str(log), str(tmp_path / "none")])
    assert result["paths"][str(log)] == {
        "exists": True, "isreg": True, "isdir": False, "islnk": False, "mode": "0640",
        "pw_name": __import__("pwd").getpwuid(os.getuid()).pw_name, "gr_name": __import__("grp").getgrgid(os.getgid()).gr_name,
    }
    assert result["paths"][str(tmp_path / "none")] == {"exists": False}
    assert result["paths"][str(tmp_path)]["isdir"] is True


def test_directory_contents_every_entry_in_one_call(tmp_path, capsys):
    """What slurp returns for each kept key, and find (file_type any, hidden) lists: a file of a revoked user, a hidden
    file, a subdirectory and a link (not followed: its target's content is not read) are all named."""
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "alice").write_bytes(b"a" * 48 + b"\n")
    (keys / "webui").write_bytes(b"")
    (keys / ".hidden").write_bytes(b"x")
    (keys / "sub").mkdir()
    (keys / "sub" / "deeper").write_bytes(b"not listed")
    (tmp_path / "secret").write_bytes(b"elsewhere")
    (keys / "link").symlink_to(tmp_path / "secret")
    result = run(capsys, directory_contents=[str(keys), str(tmp_path / "none"), str(keys / "alice")])
    assert result["directory_contents"][str(keys)] == {
        ".hidden": "eA==", "alice": base64.b64encode(b"a" * 48 + b"\n").decode(), "link": None,
        "sub": None, "webui": "",
    }
    # A directory not there yet (check mode on a fresh host), or a path that is a file: no entries.
    assert result["directory_contents"][str(tmp_path / "none")] == {}
    assert result["directory_contents"][str(keys / "alice")] == {}
    assert result["changed"] is False


def test_contents_of_files_as_slurp_returns_them(tmp_path, capsys):
    """The kept database password as slurp returns it; nothing (null) for a path with no file yet, a directory and a link
    (not followed: its target's content is not read), where slurp would fail."""
    kept = tmp_path / "slurmdbd-db.password"
    kept.write_bytes(b"p" * 32 + b"\n")
    (tmp_path / "secret").write_bytes(b"elsewhere")
    (tmp_path / "link").symlink_to(tmp_path / "secret")
    (tmp_path / "dir").mkdir()
    paths = [str(kept), str(tmp_path / "none"), str(tmp_path / "dir"), str(tmp_path / "link"), str(tmp_path / "none" / "deeper")]
    result = run(capsys, contents=paths)
    assert result["contents"] == {
        str(kept): base64.b64encode(b"p" * 32 + b"\n").decode(), str(tmp_path / "none"): None, str(tmp_path / "dir"): None,
        str(tmp_path / "link"): None, str(tmp_path / "none" / "deeper"): None,
    }
    assert result["changed"] is False


def test_contents_of_a_fifo_or_a_socket_are_none_without_waiting(tmp_path, capsys):
    """A FIFO with no writer (opening it for reading would wait for one) and a socket (which cannot be opened) hold no
    file: null, as for a directory."""
    os.mkfifo(tmp_path / "fifo")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        result = run(capsys, contents=[str(tmp_path / "fifo"), str(tmp_path / "sock")])
    assert result["contents"] == {str(tmp_path / "fifo"): None, str(tmp_path / "sock"): None}


def test_globs_list_the_regular_files_as_find_does(tmp_path, capsys):
    """find(patterns='llm-*.service', file_type=file): a link, a directory, a hidden file and another name are left out."""
    (tmp_path / "llm-b.service").write_text("[Unit]\n")
    (tmp_path / "llm-a.service").write_text("[Unit]\n")
    (tmp_path / "llm-dir.service").mkdir()
    (tmp_path / "llm-link.service").symlink_to(tmp_path / "llm-a.service")
    (tmp_path / ".llm-hidden.service").write_text("")
    (tmp_path / "munge.service").write_text("")
    pattern = str(tmp_path / "llm-*.service")
    result = run(capsys, globs=[pattern, str(tmp_path / "none" / "*")])
    assert result["globs"] == {pattern: [str(tmp_path / "llm-a.service"), str(tmp_path / "llm-b.service")],
                               str(tmp_path / "none" / "*"): []}


# hardware: the facts node_hardware_facts sets, from the same read of this machine, in the same call as the rest.
def test_hardware_sets_the_facts_node_hardware_facts_sets(capsys):
    from ansible_collections.hpclab.cluster.plugins.modules import node_hardware_facts

    result = run(capsys, paths=["/etc/hostname"], hardware=True)
    with patch_module_args({}), pytest.raises(SystemExit):
        node_hardware_facts.main()
    alone = json.loads(capsys.readouterr().out)["ansible_facts"]
    facts = result["ansible_facts"]
    assert set(facts) == set(alone)
    # Free memory and the like move between two reads; what sizes a Slurm node does not.
    for key in ("processor_count", "processor_cores", "processor_threads_per_core", "processor_vcpus", "memtotal_mb",
                "hostname", "nodename", "nvidia_smi", "slurm_cgroup"):
        assert facts[key] == alone[key], key
    assert result["paths"]["/etc/hostname"]["exists"] is True
    assert result["changed"] is False


# network: the facts of setup's network subset, from the same collector, under the names ansible_facts gives them.
@pytest.mark.skipif(not (os.path.exists("/usr/sbin/ip") or os.path.exists("/sbin/ip")), reason="no ip command here")
def test_network_sets_the_facts_of_setups_network_subset(capsys):
    from ansible.modules import setup

    def gather():
        with patch_module_args({"gather_subset": ["!all", "!min", "network"]}), pytest.raises(SystemExit):
            setup.main()
        return {k.removeprefix("ansible_"): v for k, v in json.loads(capsys.readouterr().out)["ansible_facts"].items()}

    # The machine's network may change between two reads (CI runs Molecule scenarios beside the unit tests, and
    # Docker adds and removes bridges): compare only reads that setup saw the same just before and just after ours.
    for _attempt in range(10):
        before = gather()
        result = run(capsys, network=True, hardware=True)
        gathered = gather()
        if before == gathered:
            break
    else:
        pytest.skip("the network of this machine kept changing while it was read")
    facts = result["ansible_facts"]
    network = {k: v for k, v in facts.items() if k not in gathered or k in ("interfaces", "default_ipv4", "all_ipv4_addresses")}
    # setup's network subset also sets a few platform facts; every network fact of ours is setup's, value for value,
    # interface entries included (named with '_' for '-'), next to the hardware facts of the same call.
    # (The interfaces sorted, as the controller shows setup's; run in-process here, setup lists them as it finds them.)
    assert facts["interfaces"] == sorted(gathered["interfaces"])
    for key in ("default_ipv4", "default_ipv6", "all_ipv4_addresses", "all_ipv6_addresses"):
        assert facts[key] == gathered[key], key
    for name in facts["interfaces"]:
        assert facts[name.replace("-", "_")] == gathered[name.replace("-", "_")], name
    assert "lo" in facts["interfaces"] and facts["interfaces"] == sorted(facts["interfaces"])
    assert "processor_vcpus" in facts and network
    assert result["changed"] is False


def test_without_hardware_no_fact_is_set(capsys):
    assert "ansible_facts" not in run(capsys, paths=["/etc/hostname"])
