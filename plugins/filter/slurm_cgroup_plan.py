# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_cgroup_plan
short_description: Decide from every slurmd node's cgroups whether Slurm confines jobs with cgroups, and say why not
version_added: 0.4.0
description:
  - Takes what M(hpclab.cluster.node_hardware_facts) read of every slurmd node (its C(slurm_cgroup) fact) and
    returns the slurm.conf keys that make Slurm confine jobs with cgroups, or none, with the reasons.
  - "All nodes share one slurm.conf, so enforcement is on only if every node can: in native mode (slurmd on
    the node itself), with a cgroup hierarchy that Slurm 22.05's C(CgroupPlugin=autodetect) recognises, mounted
    read-write, with the controllers its plugins use. cgroup v1: C(freezer) (proctrack/cgroup), C(cpuset)
    (C(ConstrainCores)), C(memory) (C(ConstrainRAMSpace)) and C(devices) (C(ConstrainDevices)). cgroup v2:
    C(cpuset) and C(memory) in C(cgroup.controllers) (v2 devices are confined by eBPF, no controller)."
  - "Enforcing: C(ProctrackType=proctrack/cgroup); C(TaskPlugin=task/cgroup,task/affinity) where every node's
    root holds C(CAP_SYS_NICE), else C(task/cgroup) alone (without it task/affinity fails every job step with
    C(task_g_set_affinity: Operation not permitted); the cpuset still confines tasks to their CPUs);
    C(SelectTypeParameters=CR_Core_Memory), because with C(CR_Core) Slurm allocates no memory and task/cgroup
    sets a job's limit to the whole node's RAM (cgroup.conf(5) C(MaxRAMPercent)), whatever its C(--mem); and
    C(DefMemPerCPU), the smallest node's C(RealMemory) per CPU, so that a job without C(--mem) takes its CPUs'
    share of the memory, not a whole node's (Slurm's default, which would run one job per node)."
  - Container mode (slurmd in Docker containers that the roles start without the host's cgroups) never enforces.
  - Pure. Never raises on what was read; a node whose facts are missing or odd cannot enforce, and says so.
options:
  _input:
    description:
      - slurmd node name to its facts (C(hostvars[node].ansible_facts)); read are C(slurm_cgroup),
        C(memtotal_mb) and C(processor_vcpus). Null or empty for a node that was not read.
    type: dict
    required: true
  enable:
    description:
      - C(slurm_master_cgroup). V(auto), enforce where every node can; V(true) the same (the role's checks, filter
        hpclab.cluster.slurm_cluster_problems, have failed the run before, where a node cannot); V(false) never.
      - Strings C(true), C(yes), C(false), C(no) are read as booleans.
    type: raw
    default: auto
  mode:
    description: C(slurm_master_mode), V(native) or V(container).
    type: str
    default: native
  memory_fraction:
    description: C(slurm_master_memory_fraction), the share of C(memtotal_mb) that each node declares as C(RealMemory).
    type: raw
    default: 0.95
"""

EXAMPLES = r"""
- name: slurm.conf keys for cgroup enforcement, combined under the inventory's own
  ansible.builtin.set_fact:
    slurm_conf: >-
      {{ role_keys | combine(__plan.config) | combine(slurm_master_config) }}
  vars:
    __plan: >-
      {{ dict(workers | zip(workers | map('extract', hostvars) | map(attribute='ansible_facts', default={})))
         | hpclab.cluster.slurm_cgroup_plan(enable=slurm_master_cgroup, mode=slurm_master_mode) }}

# {"n1": {"memtotal_mb": 7812, "processor_vcpus": 4,
#         "slurm_cgroup": {"version": "v1", "path": "/sys/fs/cgroup", "read_only": [], "disabled": [],
#                          "controllers": ["cpuset", "devices", "freezer", "memory"], "cap_sys_nice": true}}}
# | hpclab.cluster.slurm_cgroup_plan
# => {"enforce": true, "notices": [],
#     "config": {"ProctrackType": "proctrack/cgroup", "TaskPlugin": "task/cgroup,task/affinity",
#                "SelectTypeParameters": "CR_Core_Memory", "DefMemPerCPU": 1855}}

# The same node in a Docker container started without the host's /sys/fs/cgroup mounted read-write:
# {"n1": {"slurm_cgroup": {"version": "v1", "path": "/sys/fs/cgroup", "read_only": ["cpuset", "devices", "freezer", "memory"], ...}}}
# | hpclab.cluster.slurm_cgroup_plan
# => {"enforce": false, "config": {},
#     "notices": ["Slurm confines no job with cgroups (slurm_master_cgroup: auto), every slurmd node would have to
#                  allow it: n1: /sys/fs/cgroup/{cpuset,devices,freezer,memory} are mounted read-only ..."]}
"""

RETURN = r"""
_value:
  description: The decision.
  type: dict
  contains:
    enforce:
      description: Whether slurm.conf names the cgroup plugins and every Slurm node gets a cgroup.conf.
      type: bool
    config:
      description:
        - slurm.conf keys to combine over the role's own (and under the inventory's C(slurm_master_config)); empty when
          not enforcing (the role's C(proctrack/linuxproc), C(task/none) and C(CR_Core) stay).
      type: dict
    notices:
      description: Why enforcement is off (naming each node and its reason), or why it runs without task/affinity.
      type: list
      elements: str
"""

from collections.abc import Mapping
from decimal import ROUND_FLOOR, Decimal, InvalidOperation

from ansible.errors import AnsibleFilterError

# What Slurm 22.05's plugins use of each cgroup version (cgroup.conf(5); src/plugins/cgroup/v1 and v2).
V1_CONTROLLERS = {
    "freezer": "proctrack/cgroup",
    "cpuset": "ConstrainCores",
    "memory": "ConstrainRAMSpace",
    "devices": "ConstrainDevices",
}
V2_CONTROLLERS = {"cpuset": "ConstrainCores", "memory": "ConstrainRAMSpace"}
TRUE = {"true", "yes", "on", "1"}
FALSE = {"false", "no", "off", "0"}


def cgroup_switch(value):
    """slurm_master_cgroup as 'auto', True or False; None where it is none of them."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            return "auto"
        if text in TRUE:
            return True
        if text in FALSE:
            return False
    return None


def _names(names):
    return ", ".join(sorted(names))


def node_cgroup_reasons(facts) -> list:
    """Why Slurm cannot confine jobs with cgroups on a node whose node_hardware_facts' slurm_cgroup is FACTS;
    empty where it can."""
    if not isinstance(facts, Mapping) or not facts:
        return ["its cgroups were not read (hpclab.cluster.node_hardware_facts did not run on it in this play)"]
    version, path = facts.get("version"), facts.get("path") or "/sys/fs/cgroup"
    controllers = set(facts.get("controllers") or [])
    read_only = set(facts.get("read_only") or []) & controllers
    disabled = set(facts.get("disabled") or [])
    if version == "v1":
        needed = V1_CONTROLLERS
    elif version == "v2":
        needed = V2_CONTROLLERS
    else:
        return [f"no cgroup hierarchy that Slurm's CgroupPlugin=autodetect recognises at {path}"]
    reasons = []
    missing = sorted(set(needed) - controllers)
    if missing:
        what = "; ".join(f"{name} (for {needed[name]})" for name in missing)
        if version == "v1":
            reason = f"cgroup v1 without the controller hierarchies {what} under {path}"
        else:
            reason = f"cgroup v2 at {path} without the controllers {what} in cgroup.controllers"
        off = sorted(disabled & set(missing))
        if off:
            reason += (f" (the kernel disabled {_names(off)}: add cgroup_enable={','.join(off)} to its command line, "
                       "e.g. /boot/cmdline.txt on Raspberry Pi OS, and reboot)")
        reasons.append(reason)
    ro = sorted(read_only & set(needed))
    if ro:
        where = path if version == "v2" else f"{path}/{{{','.join(ro)}}}"
        reasons.append(f"{where} mounted read-only, where "
                       "slurmd cannot create its cgroups (a container started without the host's /sys/fs/cgroup "
                       "mounted read-write)")
    return reasons


def _def_mem_per_cpu(nodes, fraction):
    """The smallest RealMemory (floor(memtotal_mb * fraction), as filter slurm_node_lines) per CPU, or None."""
    values = []
    for facts in nodes.values():
        if not isinstance(facts, Mapping):
            continue
        memtotal, cpus = facts.get("memtotal_mb"), facts.get("processor_vcpus")
        if isinstance(memtotal, bool) or isinstance(cpus, bool) or not isinstance(memtotal, int) or not isinstance(cpus, int):
            continue
        if cpus > 0 and memtotal > 0:
            real_memory = int((Decimal(memtotal) * fraction).to_integral_value(rounding=ROUND_FLOOR))
            values.append(max(real_memory // cpus, 1))
    return min(values) if values else None


def _fraction(value):
    try:
        fraction = Decimal(str(value))
    except InvalidOperation:
        return Decimal("0.95")
    if isinstance(value, bool) or not fraction.is_finite() or not 0 < fraction <= 1:
        return Decimal("0.95")
    return fraction


def slurm_cgroup_plan(nodes, enable="auto", mode="native", memory_fraction=0.95):
    """Filter entry point: see DOCUMENTATION."""
    if not isinstance(nodes, Mapping):
        raise AnsibleFilterError(f"slurm_cgroup_plan: the input must map each slurmd node to its facts, got {nodes!r}")
    off = {"enforce": False, "config": {}, "notices": []}
    switch = cgroup_switch(enable)
    if switch is None or switch is False:
        # An unknown value fails the role's checks (slurm_cluster_problems); until then, nothing changes.
        return off
    label = f"slurm_master_cgroup: {'auto' if switch == 'auto' else 'true'}"
    if mode != "native":
        off["notices"].append(
            f"Slurm confines no job with cgroups ({label}): in {mode} mode slurmd runs in a Docker container that "
            "the roles start without the host's cgroup hierarchy, so the cluster keeps ProctrackType=proctrack/linuxproc "
            "and TaskPlugin=task/none."
        )
        return off
    if not nodes:
        return off
    reasons = {}
    for node in sorted(nodes):
        facts = nodes[node] if isinstance(nodes[node], Mapping) else {}
        why = node_cgroup_reasons(facts.get("slurm_cgroup"))
        if why:
            reasons[node] = why
    if reasons:
        off["notices"].append(
            f"Slurm confines no job with cgroups ({label}): all nodes share one slurm.conf, and "
            f"{'this slurmd node' if len(reasons) == 1 else 'these slurmd nodes'} cannot: "
            + " ".join(f"{node}: {'; '.join(why)}." for node, why in reasons.items())
            + " The cluster keeps ProctrackType=proctrack/linuxproc and TaskPlugin=task/none."
        )
        return off
    no_nice = sorted(node for node in nodes if not (nodes[node].get("slurm_cgroup") or {}).get("cap_sys_nice"))
    config = {
        "ProctrackType": "proctrack/cgroup",
        "TaskPlugin": "task/cgroup" if no_nice else "task/cgroup,task/affinity",
        "SelectTypeParameters": "CR_Core_Memory",
    }
    def_mem = _def_mem_per_cpu(nodes, _fraction(memory_fraction))
    if def_mem is not None:
        config["DefMemPerCPU"] = def_mem
    notices = []
    if no_nice:
        notices.append(
            f"Slurm confines jobs with cgroups, without task/affinity: {_names(no_nice)} "
            f"{'lacks' if len(no_nice) == 1 else 'lack'} CAP_SYS_NICE (a container without --cap-add SYS_NICE), which "
            "task/affinity needs to bind tasks to cores; TaskPlugin=task/cgroup still confines each job to its CPUs."
        )
    return {"enforce": True, "config": config, "notices": notices}


class FilterModule:
    """Slurm's cgroup enforcement, decided from the nodes."""

    def filters(self):
        return {"slurm_cgroup_plan": slurm_cgroup_plan}
