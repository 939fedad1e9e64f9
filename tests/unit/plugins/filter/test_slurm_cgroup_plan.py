"""slurm_cgroup_plan: cgroup enforcement only where every slurmd node allows it, with the reasons where not."""

from __future__ import annotations

import copy

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.slurm_cgroup_plan import (
    FilterModule,
    cgroup_switch,
    node_cgroup_reasons,
)

PLAN = FilterModule().filters()["slurm_cgroup_plan"]

# node_hardware_facts' slurm_cgroup, read on this project's machines (cgroup v1 hybrid host, kernel 6.18):
# a node container started with ../shared/TESTBED.md's flags (--cgroupns=host -v /sys/fs/cgroup:/sys/fs/cgroup:rw,
# no --cap-add SYS_NICE), where Slurm 22.05.8 confined jobs in the lab ...
LAB_NODE = {
    "version": "v1", "path": "/sys/fs/cgroup", "read_only": [], "disabled": [], "cap_sys_nice": False,
    "controllers": ["blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "hugetlb", "memory", "net_cls",
                    "net_prio", "perf_event", "pids"],
}
# ... the same with --cap-add SYS_NICE (CapBnd 00000000a8a435fb), where task/affinity also worked ...
LAB_NODE_NICE = dict(LAB_NODE, cap_sys_nice=True)
# ... and a plain `docker run` container: Docker's own cgroup mounts, read-only.
PLAIN_CONTAINER = {
    "version": "v1", "path": "/sys/fs/cgroup", "disabled": [], "cap_sys_nice": False,
    "controllers": ["blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "memory", "pids"],
    "read_only": ["blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "memory", "pids"],
}
# A Debian 12 host (systemd's unified hierarchy: cgroup2 on /sys/fs/cgroup, root cgroup.controllers).
DEBIAN12_HOST = {
    "version": "v2", "path": "/sys/fs/cgroup", "read_only": [], "disabled": [], "cap_sys_nice": True,
    "controllers": ["cpu", "cpuset", "hugetlb", "io", "memory", "misc", "pids", "rdma"],
}
# Raspberry Pi OS 11 (cgroup v1; its kernel command line says cgroup_disable=memory).
PI_OS = {
    "version": "v1", "path": "/sys/fs/cgroup", "read_only": [], "disabled": ["memory"], "cap_sys_nice": True,
    "controllers": ["blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "net_cls", "net_prio", "perf_event", "pids"],
}
# A hybrid host whose systemd uses cgroup2 for its own hierarchy: Slurm picks v2 at /sys/fs/cgroup/unified, where
# the v1 hierarchies hold the controllers.
HYBRID_V2 = {"version": "v2", "path": "/sys/fs/cgroup/unified", "read_only": [], "disabled": [], "cap_sys_nice": True,
             "controllers": []}
NO_CGROUPS = {"version": "none", "path": "/sys/fs/cgroup", "controllers": [], "read_only": [], "disabled": [],
              "cap_sys_nice": True}


def node(cgroup, memtotal_mb=24151, vcpus=2):
    return {"slurm_cgroup": copy.deepcopy(cgroup), "memtotal_mb": memtotal_mb, "processor_vcpus": vcpus}


def lab(*names, cgroup=None):
    return {name: node(cgroup or LAB_NODE) for name in names}


KEEP = "The cluster keeps ProctrackType=proctrack/linuxproc and TaskPlugin=task/none."


def test_the_lab_nodes_enforce_without_task_affinity():
    plan = PLAN(lab("slurmd1", "slurmd2", "slurmd3"))
    # RealMemory floor(24151 * 0.95) = 22943 MiB over 2 CPUs.
    assert plan["enforce"] is True
    assert plan["config"] == {"ProctrackType": "proctrack/cgroup", "TaskPlugin": "task/cgroup",
                              "SelectTypeParameters": "CR_Core_Memory", "DefMemPerCPU": 11471}
    assert plan["notices"] == [
        "Slurm confines jobs with cgroups, without task/affinity: slurmd1, slurmd2, slurmd3 lack CAP_SYS_NICE (a container "
        "without --cap-add SYS_NICE), which task/affinity needs to bind tasks to cores; TaskPlugin=task/cgroup still "
        "confines each job to its CPUs."
    ]


def test_nodes_with_cap_sys_nice_add_task_affinity_and_say_nothing():
    plan = PLAN({"n1": node(LAB_NODE_NICE), "n2": node(DEBIAN12_HOST, memtotal_mb=257000, vcpus=32)})
    assert plan == {"enforce": True, "notices": [], "config": {
        "ProctrackType": "proctrack/cgroup", "TaskPlugin": "task/cgroup,task/affinity",
        "SelectTypeParameters": "CR_Core_Memory", "DefMemPerCPU": min(22943 // 2, 244150 // 32)}}


def test_one_node_without_cap_sys_nice_drops_task_affinity_for_all():
    plan = PLAN({"n1": node(LAB_NODE_NICE), "n2": node(LAB_NODE)})
    assert plan["config"]["TaskPlugin"] == "task/cgroup"
    assert plan["notices"][0].startswith("Slurm confines jobs with cgroups, without task/affinity: n2 lacks CAP_SYS_NICE")


@pytest.mark.parametrize("fraction,expected", [(0.95, 11471), ("0.9", 10867), (1, 12075), ("bad", 11471), (True, 11471)])
def test_def_mem_per_cpu_follows_the_memory_fraction_of_the_node_lines(fraction, expected):
    assert PLAN(lab("n1"), memory_fraction=fraction)["config"]["DefMemPerCPU"] == expected


def test_def_mem_per_cpu_is_left_out_without_memory_facts():
    nodes = {"n1": {"slurm_cgroup": LAB_NODE}}
    assert "DefMemPerCPU" not in PLAN(nodes)["config"]


def test_a_read_only_node_keeps_everyone_on_linuxproc_and_says_why():
    nodes = lab("slurmd1", "slurmd3")
    nodes["slurmd2"] = node(PLAIN_CONTAINER)
    plan = PLAN(nodes)
    assert (plan["enforce"], plan["config"]) == (False, {})
    assert plan["notices"] == [
        "Slurm confines no job with cgroups (slurm_master_cgroup: auto): all nodes share one slurm.conf, and this slurmd "
        "node cannot: slurmd2: /sys/fs/cgroup/{cpuset,devices,freezer,memory} mounted read-only, where slurmd cannot "
        "create its cgroups (a container started without the host's /sys/fs/cgroup mounted read-write). " + KEEP
    ]


def test_every_node_that_cannot_is_named_with_its_reasons():
    nodes = {"pi1": node(PI_OS, 3794, 4), "pi2": node(PI_OS, 3794, 4), "old": node(NO_CGROUPS), "gpu1": node(HYBRID_V2),
             "ok": node(LAB_NODE), "unread": None, "setup-only": {"memtotal_mb": 1000, "processor_vcpus": 1}}
    plan = PLAN(nodes, enable="true")
    assert not plan["enforce"]
    notice = plan["notices"][0]
    assert notice.startswith("Slurm confines no job with cgroups (slurm_master_cgroup: true): all nodes share one "
                             "slurm.conf, and these slurmd nodes cannot: gpu1: cgroup v2 at /sys/fs/cgroup/unified")
    pi = ("cgroup v1 without the controller hierarchies memory (for ConstrainRAMSpace) under /sys/fs/cgroup (the kernel "
          "disabled memory: add cgroup_enable=memory to its command line, e.g. /boot/cmdline.txt on Raspberry Pi OS, and reboot)")
    assert f"pi1: {pi}. pi2: {pi}." in notice
    assert "old: no cgroup hierarchy that Slurm's CgroupPlugin=autodetect recognises at /sys/fs/cgroup." in notice
    assert ("gpu1: cgroup v2 at /sys/fs/cgroup/unified without the controllers cpuset (for ConstrainCores); "
            "memory (for ConstrainRAMSpace) in cgroup.controllers.") in notice
    assert "unread: its cgroups were not read (hpclab.cluster.node_hardware_facts did not run on it in this play)." in notice
    assert "setup-only: its cgroups were not read" in notice
    assert "ok:" not in notice and notice.endswith(KEEP)


@pytest.mark.parametrize("enable", [False, "false", "no", "False", "maybe", 2, None])
def test_off_or_unknown_switch_changes_nothing_and_says_nothing(enable):
    assert PLAN(lab("n1"), enable=enable) == {"enforce": False, "config": {}, "notices": []}


@pytest.mark.parametrize("enable", [True, "true", "yes", "auto", "AUTO", " auto "])
def test_on_or_auto_enforces_where_every_node_can(enable):
    assert PLAN(lab("n1"), enable=enable)["enforce"] is True


def test_container_mode_never_enforces_and_says_why():
    plan = PLAN(lab("n1"), mode="container")
    assert (plan["enforce"], plan["config"]) == (False, {})
    assert plan["notices"] == [
        "Slurm confines no job with cgroups (slurm_master_cgroup: auto): in container mode slurmd runs in a Docker "
        "container that the roles start without the host's cgroup hierarchy, so the cluster keeps "
        "ProctrackType=proctrack/linuxproc and TaskPlugin=task/none."
    ]


def test_no_workers_no_enforcement():
    assert PLAN({}) == {"enforce": False, "config": {}, "notices": []}


@pytest.mark.parametrize("bad", [None, [], "slurmd1"])
def test_input_that_is_no_dict_fails(bad):
    with pytest.raises(AnsibleFilterError, match="must map each slurmd node to its facts"):
        PLAN(bad)


@pytest.mark.parametrize(
    "facts,expected",
    [
        (LAB_NODE, []),
        (DEBIAN12_HOST, []),
        # A v2 node: devices are confined by eBPF, no controller needed.
        (dict(DEBIAN12_HOST, controllers=["cpuset", "memory"]), []),
        (dict(DEBIAN12_HOST, read_only=DEBIAN12_HOST["controllers"]),
         ["/sys/fs/cgroup mounted read-only, where slurmd cannot create its cgroups (a container started without the "
          "host's /sys/fs/cgroup mounted read-write)"]),
        (dict(LAB_NODE, controllers=["cpuset", "memory", "devices"]),
         ["cgroup v1 without the controller hierarchies freezer (for proctrack/cgroup) under /sys/fs/cgroup"]),
        # Read-only controllers Slurm does not use do not matter.
        (dict(LAB_NODE, read_only=["blkio", "perf_event"]), []),
        ({}, ["its cgroups were not read (hpclab.cluster.node_hardware_facts did not run on it in this play)"]),
        ("v1", ["its cgroups were not read (hpclab.cluster.node_hardware_facts did not run on it in this play)"]),
        ({"version": "v3"}, ["no cgroup hierarchy that Slurm's CgroupPlugin=autodetect recognises at /sys/fs/cgroup"]),
    ],
)
def test_node_reasons(facts, expected):
    assert node_cgroup_reasons(facts) == expected


@pytest.mark.parametrize("value,expected", [("auto", "auto"), (True, True), ("yes", True), ("1", True), (False, False),
                                            ("off", False), ("", None), (1, None), (None, None), ("sometimes", None)])
def test_switch(value, expected):
    assert cgroup_switch(value) == expected
