"""node_hardware_facts: on this machine, the same CPU and memory facts as ansible.builtin.setup's hardware subset
(whose collector it calls), the platform subset's hostname, and nvidia-smi found or not."""

from __future__ import annotations

import json
import platform

import pytest

from ansible.module_utils.facts import ansible_collector, default_collectors
from ansible.module_utils.testing import patch_module_args

from ansible_collections.hpclab.cluster.plugins.module_utils import _hardware as h
from ansible_collections.hpclab.cluster.plugins.modules import node_hardware_facts as m

SLURM_KEYS = ("processor_count", "processor_cores", "processor_threads_per_core", "processor_vcpus", "memtotal_mb")


def run(capsys):
    with patch_module_args({}), pytest.raises(SystemExit):
        m.main()
    return json.loads(capsys.readouterr().out)


def setup_facts(subset):
    """What ansible.builtin.setup gathers with gather_subset=SUBSET on this machine (its own collector code)."""
    with patch_module_args({}):
        module = m.AnsibleModule(argument_spec={})
    collector = ansible_collector.get_ansible_collector(
        all_collector_classes=default_collectors.collectors, gather_subset=subset, gather_timeout=10)
    return collector.collect(module=module)


def test_the_facts_slurm_nodes_are_made_from_equal_setups(capsys):
    facts = run(capsys)["ansible_facts"]
    hardware = setup_facts(["!all", "!min", "hardware"])
    assert {k: facts[k] for k in SLURM_KEYS} == {k: hardware[k] for k in SLURM_KEYS}
    assert facts["processor_vcpus"] == facts["processor_count"] * facts["processor_cores"] * facts["processor_threads_per_core"]
    assert "mounts" not in facts and "devices" not in facts


def test_the_hostname_is_the_platform_subsets(capsys):
    facts = run(capsys)["ansible_facts"]
    assert facts["hostname"] == setup_facts(["!all", "!min", "platform"])["hostname"]
    assert facts["nodename"] == platform.node()


def test_a_fully_qualified_node_name_gives_the_short_hostname(capsys, monkeypatch):
    monkeypatch.setattr(h.platform, "node", lambda: "pi1.lab.example.org")
    assert run(capsys)["ansible_facts"]["hostname"] == "pi1"


@pytest.mark.parametrize("path, expected", [("/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi"), (None, "")])
def test_nvidia_smi_is_its_path_or_empty(capsys, monkeypatch, path, expected):
    monkeypatch.setattr(m.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: path if name == "nvidia-smi" else None)
    assert run(capsys)["ansible_facts"]["nvidia_smi"] == expected


# slurm_cgroup: trees of files laid out as the kernel's cgroup filesystems show them (a cgroup v1 hierarchy has
# cgroup.procs, a cgroup2 one also cgroup.controllers, the tmpfs holding the v1 hierarchies neither), as read on
# this project's machines (a cgroup v1 hybrid host) and on a Debian 12 host.
V1_HIERARCHIES = ["blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "memory", "pids", "net_cls,net_prio"]
# /proc/cgroups of the lab node, and of Raspberry Pi OS 11 (cgroup_disable=memory on its kernel command line).
PROC_CGROUPS = """#subsys_name\thierarchy\tnum_cgroups\tenabled
cpuset\t3\t69\t1
cpu\t1\t91\t1
cpuacct\t2\t67\t1
blkio\t7\t67\t1
memory\t4\t332\t1
devices\t5\t120\t1
freezer\t6\t69\t1
net_cls\t46\t62\t1
perf_event\t49\t62\t1
net_prio\t46\t62\t1
hugetlb\t48\t62\t1
pids\t8\t118\t1
"""
PROC_CGROUPS_PI = PROC_CGROUPS.replace("memory\t4\t332\t1", "memory\t0\t1\t0")
# CapBnd of a node container started with ../shared/TESTBED.md's flags, and with --cap-add SYS_NICE too.
STATUS = "Name:\tpython3\nCapInh:\t0000000000000000\nCapBnd:\t00000000a82435fb\nCapAmb:\t0000000000000000\n"
STATUS_NICE = STATUS.replace("a82435fb", "a8a435fb")


def hierarchy(path, version):
    path.mkdir(parents=True)
    (path / "cgroup.procs").write_text("")
    if version == 2:
        (path / "cgroup.controllers").write_text("")


def v1_tree(root, names=None, systemd_version=1):
    root.mkdir()
    for name in V1_HIERARCHIES if names is None else names:
        hierarchy(root / name, 1)
    hierarchy(root / "systemd", systemd_version)
    if systemd_version == 1:
        hierarchy(root / "unified", 2)
    return root


def proc(tmp_path, cgroups=PROC_CGROUPS, status=STATUS):
    (tmp_path / "cgroups").write_text(cgroups)
    (tmp_path / "status").write_text(status)
    return {"proc_cgroups": str(tmp_path / "cgroups"), "proc_status": str(tmp_path / "status")}


def test_cgroup_v1_hybrid_of_the_lab_nodes(tmp_path, monkeypatch):
    root = v1_tree(tmp_path / "cgroup")
    (root / "cpu,cpuacct").symlink_to(root / "cpu")
    monkeypatch.setattr(h, "_read_only", lambda path: False)
    assert h.cgroup_facts(str(root), **proc(tmp_path)) == {
        "version": "v1", "path": str(root), "read_only": [], "disabled": [], "cap_sys_nice": False,
        "controllers": ["blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "memory", "net_cls", "net_prio", "pids"],
    }


def test_cgroup_v1_mounted_read_only_in_a_plain_container(tmp_path, monkeypatch):
    root = v1_tree(tmp_path / "cgroup", names=["cpuset", "memory"])
    monkeypatch.setattr(h, "_read_only", lambda path: path.endswith("/memory"))
    facts = h.cgroup_facts(str(root), **proc(tmp_path, status=STATUS_NICE))
    assert (facts["controllers"], facts["read_only"], facts["cap_sys_nice"]) == (["cpuset", "memory"], ["memory"], True)


def test_cgroup_v1_with_memory_disabled_by_the_kernel(tmp_path, monkeypatch):
    root = v1_tree(tmp_path / "cgroup", names=["cpuset", "devices", "freezer"])
    monkeypatch.setattr(h, "_read_only", lambda path: False)
    facts = h.cgroup_facts(str(root), **proc(tmp_path, cgroups=PROC_CGROUPS_PI))
    assert (facts["version"], facts["controllers"], facts["disabled"]) == ("v1", ["cpuset", "devices", "freezer"], ["memory"])


@pytest.mark.parametrize("read_only", [False, True])
def test_cgroup_v2_unified(tmp_path, monkeypatch, read_only):
    root = tmp_path / "cgroup"
    hierarchy(root, 2)
    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    monkeypatch.setattr(h, "_read_only", lambda path: read_only)
    controllers = ["cpu", "cpuset", "hugetlb", "io", "memory", "misc", "pids", "rdma"]
    assert h.cgroup_facts(str(root), **proc(tmp_path)) == {
        "version": "v2", "path": str(root), "controllers": controllers, "read_only": controllers if read_only else [],
        "disabled": [], "cap_sys_nice": False,
    }


def test_hybrid_with_systemd_on_cgroup2_is_v2_at_unified(tmp_path, monkeypatch):
    root = v1_tree(tmp_path / "cgroup", systemd_version=2)
    hierarchy(root / "unified", 2)
    monkeypatch.setattr(h, "_read_only", lambda path: False)
    facts = h.cgroup_facts(str(root), **proc(tmp_path))
    assert (facts["version"], facts["path"], facts["controllers"]) == ("v2", str(root / "unified"), [])


@pytest.mark.parametrize("make", [lambda root: None, lambda root: root.mkdir()], ids=["absent", "empty-directory"])
def test_no_cgroup_hierarchy(tmp_path, make):
    root = tmp_path / "cgroup"
    make(root)
    facts = h.cgroup_facts(str(root), proc_cgroups=str(tmp_path / "none"), proc_status=str(tmp_path / "none"))
    assert facts == {"version": "none", "path": str(root), "controllers": [], "read_only": [], "disabled": [], "cap_sys_nice": False}


def test_read_only_is_the_mount_flag(tmp_path):
    assert h._read_only(str(tmp_path)) is False
    assert h._read_only(str(tmp_path / "absent")) is True


def test_the_module_returns_this_hosts_slurm_cgroup(capsys):
    facts = run(capsys)["ansible_facts"]["slurm_cgroup"]
    assert facts == h.cgroup_facts()
    assert facts["version"] in ("v1", "v2", "none")
