#!/usr/bin/python
# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: node_hardware_facts
short_description: The CPU, memory and hostname facts that size a compute node, without the rest of the hardware subset
version_added: 0.3.0
description:
  - Sets the facts that Slurm's C(NodeName) lines are made from, the same keys and values as
    M(ansible.builtin.setup) with C(gather_subset=hardware) sets them (C(processor_count), C(processor_cores),
    C(processor_threads_per_core), C(processor_vcpus), C(processor_nproc), C(processor), C(memtotal_mb) and the other
    memory facts), computed by the same code, ansible-core's Linux hardware collector, called for CPUs and memory only.
    Also C(hostname) and C(nodename), as the C(platform) subset gives them.
  - Why not M(ansible.builtin.setup)? Its hardware subset also reads every mount (with C(statvfs) and C(findmnt)),
    block device, DMI table and LVM volume, which nothing here uses; on the Docker bench nodes that made it the
    slowest read of a no-change run (tests/lab/bench/README.md gives the measured difference).
  - Also C(nvidia_smi), the path of C(nvidia-smi) or an empty string, so that a play asks it for GPUs only where it exists.
  - Also C(slurm_cgroup), what Slurm's cgroup plugins would find on the node - the cgroup version that Slurm 22.05's
    C(CgroupPlugin=autodetect) picks (its C(src/common/cgroup.c) looks at C(/sys/fs/cgroup) and, on a tmpfs
    there, at C(/sys/fs/cgroup/systemd)), the controllers it could use and those mounted read-only, the controllers
    the kernel disabled (C(/proc/cgroups)) and whether root holds C(CAP_SYS_NICE), which the task/affinity plugin
    needs. Read from files only (no extra process); filter hpclab.cluster.slurm_cgroup_plan decides from it.
  - Linux only.
author:
  - hpclab.cluster contributors (@hpclab)
extends_documentation_fragment:
  - hpclab.cluster.attributes
  - hpclab.cluster.attributes.read_only
options: {}
"""

EXAMPLES = r"""
- name: CPUs and memory of the Slurm nodes (slurm.conf's NodeName lines)
  hpclab.cluster.node_hardware_facts:
  when: ansible_facts.memtotal_mb is not defined

- name: Ask nvidia-smi for the GPUs where the host has it
  ansible.builtin.command:
    argv: [nvidia-smi, --query-gpu=name, "--format=csv,noheader"]
  register: gpus
  changed_when: false
  when: ansible_facts.nvidia_smi | length > 0
"""

RETURN = r"""
ansible_facts:
  description: The facts set on the host.
  returned: always
  type: dict
  contains:
    processor_count:
      description: Sockets, as M(ansible.builtin.setup) counts them.
      type: int
      sample: 1
    processor_cores:
      description: Cores per socket.
      type: int
      sample: 4
    processor_threads_per_core:
      description: Threads per core.
      type: int
      sample: 1
    processor_vcpus:
      description: Logical CPUs.
      type: int
      sample: 4
    memtotal_mb:
      description: MemTotal of C(/proc/meminfo) in MiB.
      type: int
      sample: 7812
    hostname:
      description: The node name up to its first dot.
      type: str
      sample: pi1
    nvidia_smi:
      description: The path of C(nvidia-smi), or an empty string where the host has none.
      type: str
      sample: /usr/bin/nvidia-smi
    slurm_cgroup:
      description: What Slurm's cgroup plugins would find on the node.
      type: dict
      contains:
        version:
          description:
            - V(v1) or V(v2), the plugin C(CgroupPlugin=autodetect) loads; V(none) where it finds no cgroup
              hierarchy (slurmd then fails to start with a cgroup plugin).
          type: str
          sample: v1
        path:
          description: Where the hierarchy is mounted (cgroup v1, the directory of one directory per controller).
          type: str
          sample: /sys/fs/cgroup
        controllers:
          description:
            - Controllers available there, sorted. cgroup v1, those mounted as C(PATH/NAME) (a combined
              hierarchy such as C(cpu,cpuacct) gives both names); cgroup v2, the content of C(PATH/cgroup.controllers).
          type: list
          elements: str
          sample: [blkio, cpu, cpuacct, cpuset, devices, freezer, memory, pids]
        read_only:
          description:
            - Those of C(controllers) whose hierarchy is mounted read-only (a container
              started without the host's C(/sys/fs/cgroup) mounted read-write), where Slurm cannot create its cgroups.
          type: list
          elements: str
          sample: []
        disabled:
          description:
            - Controllers the kernel has but disabled (C(enabled) 0 in C(/proc/cgroups)), e.g. C(memory) on Raspberry Pi
              OS, whose kernel command line says C(cgroup_disable=memory).
          type: list
          elements: str
          sample: []
        cap_sys_nice:
          description:
            - Whether C(CAP_SYS_NICE) is in the bounding set of the module's root process (as of any daemon systemd
              starts there). task/affinity sets the CPU affinity of the job's processes with it; a Docker container
              without C(--cap-add SYS_NICE) lacks it.
          type: bool
          sample: true
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpclab.cluster.plugins.module_utils._hardware import node_facts


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    module.exit_json(changed=False, ansible_facts=node_facts(module))


if __name__ == "__main__":
    main()
