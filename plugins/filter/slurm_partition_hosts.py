# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_partition_hosts
short_description: Resolve the host lists of Slurm partitions written with inventory group names
version_added: 0.1.0
description:
  - Takes a dict of partition name to hosts, where each entry of a partition is an inventory group
    name, a host name or a Slurm hostlist expression, and returns the same dict with every partition's
    list replaced by the host names, each once, in the order given (a group's hosts in its order).
  - An entry that names a group of O(groups) stands for the group's hosts, even when it is also a
    host name. Any other entry is read as a hostlist expression
    (P(hpclab.cluster.slurm_hostlist_expand#filter)); the result may name hosts that exist nowhere,
    which is for the caller to check.
  - Fails, naming the partition, on input that is not a dict, a partition whose hosts are neither a
    list nor a string, an entry that is not a string, or a bad hostlist expression.
  - Pure; feed the result to P(hpclab.cluster.slurm_partition_lines#filter).
options:
  _input:
    description: Partition name to a list of group names, host names or hostlists (or one string).
    type: dict
    required: true
  groups:
    description: Inventory groups, group name to host names (the C(groups) magic variable).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Partitions as host names
  ansible.builtin.set_fact:
    partitions: "{{ {'batch': ['slurm_worker'], 'gpu': ['gpu1']} | hpclab.cluster.slurm_partition_hosts(groups) }}"

# {"batch": ["workers"], "debug": "n[1-2]"}
# | hpclab.cluster.slurm_partition_hosts({"workers": ["n1", "n2", "gpu1"]})
# => {"batch": ["n1", "n2", "gpu1"], "debug": ["n1", "n2"]}
# {"batch": ["workers", "n1", "n9"]} | hpclab.cluster.slurm_partition_hosts({"workers": ["n1", "n2"]})
# => {"batch": ["n1", "n2", "n9"]}
"""

RETURN = r"""
_value:
  description: Partition name to host names, in the input's partition order.
  type: dict
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).


def _fail(message):
    raise AnsibleFilterError(f"slurm_partition_hosts: {message}")


def slurm_partition_hosts(partitions, groups):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._hostlist import HostlistError, expand_hostlist
    if not isinstance(partitions, Mapping):
        _fail(f"input must be a dict of partition name to hosts, got {type(partitions).__name__}")
    if not isinstance(groups, Mapping):
        _fail(f"groups must be a dict of group name to hosts, got {type(groups).__name__}")
    resolved = {}
    for name, entries in partitions.items():
        if isinstance(entries, str):
            entries = [entries]
        elif entries is None or isinstance(entries, Mapping) or not hasattr(entries, "__iter__"):
            _fail(f"partition {name!r}: hosts must be a list of group names, host names or hostlists, got {entries!r}")
        hosts = {}
        for entry in entries:
            if not isinstance(entry, str):
                _fail(f"partition {name!r}: entry {entry!r} is not a string")
            if entry in groups:
                members = list(groups[entry])
            else:
                try:
                    members = expand_hostlist(entry)
                except HostlistError as exc:
                    _fail(f"partition {name!r}: {exc}")
            for host in members:
                hosts.setdefault(host, None)
        resolved[name] = list(hosts)
    return resolved


class FilterModule:
    """Partition hosts from inventory groups."""

    def filters(self):
        return {"slurm_partition_hosts": slurm_partition_hosts}
