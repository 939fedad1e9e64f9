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
"""

import platform

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.facts.hardware.linux import LinuxHardware


def hardware_facts(module, architecture: str, nodename: str) -> dict:
    """CPU and memory facts from ansible-core's Linux collector, with the platform subset's names."""
    collector = LinuxHardware(module)
    facts = {}
    facts.update(collector.get_cpu_facts(collected_facts={"ansible_architecture": architecture}))
    facts.update(collector.get_memory_facts())
    facts["nodename"] = nodename
    facts["hostname"] = nodename.split(".")[0]
    return facts


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    facts = hardware_facts(module, platform.machine(), platform.node())
    facts["nvidia_smi"] = module.get_bin_path("nvidia-smi") or ""
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == "__main__":
    main()
