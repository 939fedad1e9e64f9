from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.slurm_conf_change import FilterModule

CONF_CHANGE = FilterModule().filters()["slurm_conf_change"]

BASE = """\
# managed
ClusterName=lab
SlurmctldHost=ctl1
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerParameters=bf_interval=30
NodeName=n[1-2] CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1000
PartitionName=batch Nodes=n[1-2] Default=YES MaxTime=UNLIMITED State=UP
"""


def edit(old, new):
    assert old in BASE
    return BASE.replace(old, new)


@pytest.mark.parametrize(
    "new,old,expected",
    [
        (BASE, None, "new"),
        (BASE, "", "new"),
        (BASE, "  \n", "new"),
        (BASE, BASE, "none"),
        (edit("# managed", "# managed again"), BASE, "none"),
        (edit("ClusterName=lab", "clustername=lab  # same"), BASE, "none"),
        ("\n".join(reversed(BASE.splitlines())), BASE, "none"),
        (edit("RealMemory=1000", "RealMemory=900"), BASE, "restart"),
        (edit("NodeName=n[1-2]", "NodeName=n[1-3]"), BASE, "restart"),
        (BASE + "NodeName=gpu1 CPUs=8\n", BASE, "restart"),
        (edit("ProctrackType=proctrack/linuxproc", "ProctrackType=proctrack/cgroup"), BASE, "restart"),
        (edit("TaskPlugin=task/none", "TaskPlugin=task/affinity"), BASE, "restart"),
        (edit("SlurmctldHost=ctl1", "SlurmctldHost=ctl2"), BASE, "restart"),
        (BASE + "StateSaveLocation=/var/lib/slurm\n", BASE, "restart"),
        (edit("MaxTime=UNLIMITED", "MaxTime=60"), BASE, "reconfigure"),
        (edit("Nodes=n[1-2] Default", "Nodes=n1 Default"), BASE, "reconfigure"),
        (BASE + "PartitionName=debug Nodes=n1 Default=NO\n", BASE, "reconfigure"),
        (edit("bf_interval=30", "bf_interval=60"), BASE, "reconfigure"),
        (BASE + "SlurmdTimeout=600\n", BASE, "reconfigure"),
        (edit("SchedulerParameters=bf_interval=30\n", ""), BASE, "reconfigure"),
    ],
)
def test_conf_change(new, old, expected):
    assert CONF_CHANGE(new, old) == expected


@pytest.mark.parametrize("new,old,reason", [(None, BASE, "new slurm.conf text is missing"), (BASE, 3, "old must be the text")])
def test_bad_input(new, old, reason):
    with pytest.raises(AnsibleFilterError, match=reason):
        CONF_CHANGE(new, old)


def test_registered():
    assert "slurm_conf_change" in FilterModule().filters()


@pytest.mark.parametrize(
    "new,old,expected",
    [
        ("ClusterName=c\n", "ClusterName=c\n", "restart"),
        ("PartitionName=p Nodes=n1 MaxTime=60\n", "PartitionName=p Nodes=n1 MaxTime=30\n", "restart"),
        ("NodeName=n[1-3] CPUs=2\n", "NodeName=n[1-2] CPUs=2\n", "restart"),
        ("ClusterName=c\n", "", "new"),
    ],
)
def test_a_changed_gres_conf_turns_none_and_reconfigure_into_a_restart(new, old, expected):
    assert CONF_CHANGE(new, old, gres_changed=True) == expected


def test_an_unchanged_gres_conf_changes_nothing():
    assert CONF_CHANGE("ClusterName=c\n", "ClusterName=c\n", gres_changed=False) == "none"


@pytest.mark.parametrize(
    "new,old,expected",
    [
        ("ClusterName=c\n", "ClusterName=c\n", "restart"),
        ("PartitionName=p Nodes=n1 MaxTime=60\n", "PartitionName=p Nodes=n1 MaxTime=30\n", "restart"),
        ("ClusterName=c\n", "", "new"),
    ],
)
def test_a_changed_cgroup_conf_turns_none_and_reconfigure_into_a_restart(new, old, expected):
    assert CONF_CHANGE(new, old, cgroup_changed=True) == expected


def test_turning_cgroup_enforcement_on_is_a_restart():
    old = BASE
    new = edit("ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none", "ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup")
    assert CONF_CHANGE(new + "SelectTypeParameters=CR_Core_Memory\nDefMemPerCPU=11471\n", old, cgroup_changed=True) == "restart"


def test_only_def_mem_per_cpu_changed_is_a_reconfigure():
    assert CONF_CHANGE(BASE + "DefMemPerCPU=10867\n", BASE + "DefMemPerCPU=11471\n", cgroup_changed=False) == "reconfigure"
