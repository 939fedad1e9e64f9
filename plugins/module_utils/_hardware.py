# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The facts that size a Slurm node: CPUs and memory (ansible-core's Linux hardware collector), the hostname,
nvidia-smi's path and what Slurm's cgroup plugins would find. Read by modules node_hardware_facts and
host_state_info (its hardware option); and the network subset's facts (host_state_info's network option).

This module util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations

import os
import platform


def hardware_facts(module, architecture: str, nodename: str) -> dict:
    """CPU and memory facts from ansible-core's Linux collector, with the platform subset's names."""
    # Imported here, not above: host_state_info carries this file for its hardware option, and the facts
    # package costs about 0.1 s to import on a node, paid only where a read asks for the hardware.
    from ansible.module_utils.facts.hardware.linux import LinuxHardware

    collector = LinuxHardware(module)
    facts = {}
    facts.update(collector.get_cpu_facts(collected_facts={"ansible_architecture": architecture}))
    facts.update(collector.get_memory_facts())
    facts["nodename"] = nodename
    facts["hostname"] = nodename.split(".")[0]
    return facts


def network_facts(module) -> dict:
    """The facts of the setup module's network subset on Linux (interfaces, default_ipv4, all_ipv4_addresses, one
    entry per interface), by the same ansible-core collector, without the platform subset's."""
    # Imported here, as in hardware_facts: only where a read asks for the network.
    from ansible.module_utils.facts.network.linux import LinuxNetwork

    facts = LinuxNetwork(module).populate()
    # As setup returns them: a name's dashes become underscores (an interface's entry), the interfaces sorted.
    facts = {name.replace("-", "_"): value for name, value in facts.items()}
    if "interfaces" in facts:
        facts["interfaces"] = sorted(facts["interfaces"])
    return facts


CGROUP_ROOT = "/sys/fs/cgroup"
CAP_SYS_NICE = 23


def _is_cgroup2(path: str) -> bool:
    """The root of a cgroup v2 hierarchy: only cgroup2 has cgroup.controllers."""
    return os.path.isfile(os.path.join(path, "cgroup.controllers"))


def _is_cgroup1(path: str) -> bool:
    """The root of a cgroup v1 hierarchy: cgroup.procs without cgroup.controllers (tmpfs has neither)."""
    return os.path.isfile(os.path.join(path, "cgroup.procs")) and not _is_cgroup2(path)


def _read_only(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return True


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _disabled(proc_cgroups: str) -> list:
    """Controllers whose `enabled` column of /proc/cgroups is 0 (cgroup_disable= on the kernel command line)."""
    names = []
    for line in _read(proc_cgroups).splitlines():
        fields = line.split()
        if len(fields) == 4 and not line.startswith("#") and fields[3] == "0":
            names.append(fields[0])
    return sorted(names)


def _cap_sys_nice(proc_status: str) -> bool:
    for line in _read(proc_status).splitlines():
        if line.startswith("CapBnd:"):
            try:
                return bool(int(line.split()[1], 16) >> CAP_SYS_NICE & 1)
            except (IndexError, ValueError):
                return False
    return False


def cgroup_facts(root: str = CGROUP_ROOT, proc_cgroups: str = "/proc/cgroups", proc_status: str = "/proc/self/status") -> dict:
    """What Slurm's cgroup plugins would find: the version CgroupPlugin=autodetect picks, as Slurm 22.05's
    src/common/cgroup.c decides it (cgroup2 on ROOT: v2; a tmpfs on ROOT: v2 if ROOT/systemd is cgroup2,
    v1 if it is a cgroup v1 hierarchy), told here by the files each filesystem has instead of statfs."""
    facts = {"version": "none", "path": root, "controllers": [], "read_only": [],
             "disabled": _disabled(proc_cgroups), "cap_sys_nice": _cap_sys_nice(proc_status)}
    systemd = os.path.join(root, "systemd")
    if _is_cgroup2(root) or (not _is_cgroup1(root) and _is_cgroup2(systemd)):
        path = root if _is_cgroup2(root) else os.path.join(root, "unified")
        controllers = sorted(set(_read(os.path.join(path, "cgroup.controllers")).split()))
        facts.update(version="v2", path=path, controllers=controllers,
                     read_only=controllers if _read_only(path) else [])
    elif not _is_cgroup1(root) and _is_cgroup1(systemd):
        controllers, read_only = set(), set()
        for entry in sorted(os.listdir(root)):
            path = os.path.join(root, entry)
            # cpu -> cpu,cpuacct links name the same hierarchy; systemd's own is no controller.
            if entry == "systemd" or os.path.islink(path) or not _is_cgroup1(path):
                continue
            names = set(entry.split(","))
            controllers |= names
            if _read_only(path):
                read_only |= names
        facts.update(version="v1", controllers=sorted(controllers), read_only=sorted(read_only))
    return facts


def node_facts(module) -> dict:
    """Every fact node_hardware_facts documents, for ansible_facts."""
    facts = hardware_facts(module, platform.machine(), platform.node())
    facts["nvidia_smi"] = module.get_bin_path("nvidia-smi") or ""
    facts["slurm_cgroup"] = cgroup_facts()
    return facts
