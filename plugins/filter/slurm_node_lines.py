# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_node_lines
short_description: Build slurm.conf NodeName lines from hosts' Ansible facts
version_added: 0.1.0
description:
  - Takes one dict per host with the host's name and its hardware facts, and returns slurm.conf
    C(NodeName=) lines. Hosts with identical hardware (CPUs, sockets, cores, threads, RealMemory and
    GPUs) share ONE line whose node list is compressed (V(NodeName=n[01-04] ...)).
  - "Keys read from each dict, each with the C(ansible_) prefix (as in C(hostvars[host]) where facts are injected
    as variables), in its C(ansible_facts) (as in C(hostvars[host]) always), or without the prefix (as in
    C(hostvars[host].ansible_facts), or set in the inventory):
    C(processor_count) becomes C(Sockets=);
    C(processor_cores) (cores per socket) becomes C(CoresPerSocket=);
    C(processor_threads_per_core) becomes C(ThreadsPerCore=);
    C(processor_vcpus) becomes C(CPUs=), optional, default the product of the three above, and it must
    equal that product;
    C(memtotal_mb) gives C(RealMemory=)."
  - The host's name is read from C(name), else C(inventory_hostname). It must be the name slurmd
    reports (its short host name, or its C(slurmd -N) name).
  - "GPUs are read from the optional key C(gpus) (or C(slurm_worker_gpus), the hpclab.cluster.slurm_worker
    role's host variable, as in C(hostvars[host])): a dict with C(count) and an optional C(type); it
    adds C(Gres=gpu:TYPE:COUNT) (C(Gres=gpu:COUNT) without a type). A count of 0 or no C(gpus) adds
    nothing. C(GresTypes=gpu) and gres.conf are the caller's part."
  - "C(RealMemory) is C(floor(memtotal_mb * memory_fraction)), rounded down to a multiple of
    O(memory_granularity_mb). Slurm drains a node whose memory is below its configured RealMemory
    (C(Low RealMemory)), and slurmd counts a little less than C(MemTotal), hence the margin
    (StackHPC openhpc uses 0.95 after nodes drained, stackhpc/ansible-role-openhpc#92)."
  - On ARM (Raspberry Pi) Ansible counts every core as a socket (a Pi 4 gives Sockets=4
    CoresPerSocket=1, where C(slurmd -C) says Sockets=1 CoresPerSocket=4); CPUs is right either way.
    To declare slurmd's topology, set C(processor_count) and C(processor_cores) for such hosts.
  - Lines are sorted by their first host in natural order, so the result only depends on the set of
    hosts and their facts.
  - Fails, naming the host, on a missing or non-integer fact, a duplicate host, an empty list or
    C(processor_vcpus) that disagrees with the topology.
options:
  _input:
    description: One dict per host, as described above.
    type: list
    elements: dict
    required: true
  gpus:
    description:
      - Each host's GPUs, host name to the dict described above; given, it replaces the per-host key C(gpus) (or
        C(slurm_worker_gpus)), and a host it does not name has no GPU. The slurm_master role passes its
        C(slurm_master_worker_gpus).
    type: dict
  memory_fraction:
    description: Share of C(memtotal_mb) to declare, more than 0 and at most 1.
    type: float
    default: 0.95
  memory_granularity_mb:
    description:
      - Round C(RealMemory) down to a multiple of this many MiB, so that identical machines whose
        kernels reserve slightly different amounts still share one line. 1 rounds nothing.
    type: int
    default: 1
"""

EXAMPLES = r"""
- name: Node lines for every worker, straight from hostvars (name read from inventory_hostname)
  ansible.builtin.set_fact:
    slurm_node_lines: >-
      {{ groups['slurm_workers'] | map('extract', hostvars) | list
         | hpclab.cluster.slurm_node_lines(memory_fraction=0.95) }}

# [{"name": "n01", "ansible_processor_count": 1, "ansible_processor_cores": 4,
#   "ansible_processor_threads_per_core": 2, "ansible_processor_vcpus": 8, "ansible_memtotal_mb": 32000},
#  {"name": "n02", "ansible_processor_count": 1, "ansible_processor_cores": 4,
#   "ansible_processor_threads_per_core": 2, "ansible_processor_vcpus": 8, "ansible_memtotal_mb": 32000},
#  {"name": "gpu1", "processor_count": 2, "processor_cores": 16, "processor_threads_per_core": 1,
#   "memtotal_mb": 257000, "gpus": {"type": "a100", "count": 4}}]
# | hpclab.cluster.slurm_node_lines
# => ["NodeName=gpu1 CPUs=32 Sockets=2 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=244150 Gres=gpu:a100:4",
#     "NodeName=n[01-02] CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=30400"]
"""

RETURN = r"""
_value:
  description: slurm.conf lines, one per distinct hardware, without a trailing newline.
  type: list
  elements: str
"""

from collections.abc import Mapping
from decimal import ROUND_FLOOR, Decimal, InvalidOperation

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

_GRES_TYPE_FORBIDDEN = set(" \t\n:,=")
_NAME_FORBIDDEN = set(" \t\n,[]")


def _fail(message):
    raise AnsibleFilterError(f"slurm_node_lines: {message}")


def _integer(where, key, value, minimum):
    """where: "host 'n1': " or "" for an option."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(f"{where}{key} must be an integer, got {value!r}")
    if value < minimum:
        _fail(f"{where}{key} must be at least {minimum}, got {value!r}")
    return value


def _fact(facts, host, key, minimum=1, required=True):
    # The fact as a top-level variable (INJECT_FACTS_AS_VARS), in ansible_facts (always), or set in the inventory.
    gathered = facts.get("ansible_facts") or {}
    for candidate, value in ((f"ansible_{key}", facts.get(f"ansible_{key}")), (f"ansible_facts.{key}", gathered.get(key)),
                             (key, facts.get(key))):
        if value is not None:
            return _integer(f"host {host!r}: ", candidate, value, minimum)
    if required:
        _fail(f"host {host!r} has no ansible_{key} (or {key}); gather hardware facts for it")
    return None


def _fraction(value):
    try:
        fraction = Decimal(str(value))
    except InvalidOperation:
        fraction = None
    if isinstance(value, bool) or fraction is None or not fraction.is_finite() or not 0 < fraction <= 1:
        _fail(f"memory_fraction must be a number above 0 and at most 1, got {value!r}")
    return fraction


def _gres(host, gpus):
    if gpus is None or (isinstance(gpus, Mapping) and not gpus):
        return None  # {} is slurm_worker_gpus' default: no GPU
    if not isinstance(gpus, Mapping):
        _fail(f"host {host!r}: gpus must be a dict with count and type, got {gpus!r}")
    count = _integer(f"host {host!r}: ", "gpus.count", gpus.get("count"), 0)
    if count == 0:
        return None
    gpu_type = gpus.get("type")
    if gpu_type in (None, ""):
        return f"gpu:{count}"
    if not isinstance(gpu_type, str) or _GRES_TYPE_FORBIDDEN & set(gpu_type):
        _fail(f"host {host!r}: gpus.type must be a word without spaces, ':', ',' or '=', got {gpu_type!r}")
    return f"gpu:{gpu_type}:{count}"


def _hardware(facts, fraction, granularity, gpus=None):
    """One host's facts -> (name, hardware tuple)."""
    if not isinstance(facts, Mapping):
        _fail(f"each host must be a dict of facts, got {facts!r}")
    host = facts.get("name", facts.get("inventory_hostname"))
    if not isinstance(host, str) or not host.strip():
        _fail(f"a host has no name (name or inventory_hostname): {sorted(facts)[:10]!r}")
    if _NAME_FORBIDDEN & set(host):
        _fail(f"host name {host!r} contains whitespace, a comma or a bracket")
    if host.upper() == "DEFAULT":
        _fail(f"host {host!r}: DEFAULT is a reserved NodeName in slurm.conf")
    sockets = _fact(facts, host, "processor_count")
    cores = _fact(facts, host, "processor_cores")
    threads = _fact(facts, host, "processor_threads_per_core")
    topology_cpus = sockets * cores * threads
    cpus = _fact(facts, host, "processor_vcpus", required=False)
    if cpus is not None and cpus != topology_cpus:
        _fail(
            f"host {host!r}: processor_vcpus {cpus} is not processor_count {sockets} x processor_cores {cores}"
            f" x processor_threads_per_core {threads} = {topology_cpus}; set these keys explicitly for this host"
        )
    memtotal = _fact(facts, host, "memtotal_mb")
    real_memory = int((Decimal(memtotal) * fraction).to_integral_value(rounding=ROUND_FLOOR))
    real_memory -= real_memory % granularity
    if real_memory < 1:
        _fail(f"host {host!r}: RealMemory from memtotal_mb {memtotal} would be {real_memory}")
    if gpus is not None:
        host_gpus = gpus.get(host)
    else:
        host_gpus = facts.get("gpus", facts.get("slurm_worker_gpus"))
    return host, (topology_cpus, sockets, cores, threads, real_memory, _gres(host, host_gpus))


def slurm_node_lines(hosts, memory_fraction=0.95, memory_granularity_mb=1, gpus=None):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._hostlist import HostlistError, compress_hostlist, natural_key
    if isinstance(hosts, (str, bytes, Mapping)) or not hasattr(hosts, "__iter__"):
        _fail(f"input must be a list of per-host dicts, got {type(hosts).__name__}")
    hosts = list(hosts)
    if not hosts:
        _fail("the list of hosts is empty")
    if gpus is not None and not isinstance(gpus, Mapping):
        _fail(f"gpus must be a dict of host to its GPUs, got {type(gpus).__name__}")
    fraction = _fraction(memory_fraction)
    granularity = _integer("", "memory_granularity_mb", memory_granularity_mb, 1)
    groups = {}
    seen = set()
    for facts in hosts:
        host, hardware = _hardware(facts, fraction, granularity, gpus)
        if host in seen:
            _fail(f"host {host!r} is listed twice")
        seen.add(host)
        groups.setdefault(hardware, []).append(host)
    lines = []
    for hardware, names in groups.items():
        cpus, sockets, cores, threads, real_memory, gres = hardware
        try:
            hostlist = compress_hostlist(names)
        except HostlistError as exc:
            _fail(str(exc))
        line = (
            f"NodeName={hostlist} CPUs={cpus} Sockets={sockets} CoresPerSocket={cores}"
            f" ThreadsPerCore={threads} RealMemory={real_memory}"
        )
        if gres:
            line += f" Gres={gres}"
        lines.append((natural_key(min(names, key=natural_key)), line))
    return [line for _key, line in sorted(lines)]


class FilterModule:
    """slurm.conf node lines."""

    def filters(self):
        return {"slurm_node_lines": slurm_node_lines}
