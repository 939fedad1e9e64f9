# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_hostlist_compress
short_description: Compress host names into one Slurm hostlist expression
version_added: 0.1.0
description:
  - Turns a list of host names into the shortest-form Slurm hostlist that slurm.conf accepts, for
    C(NodeName=) and C(Nodes=), for example V(n01), V(n02), V(n03), V(gpu1) into V(gpu1,n[01-03]).
  - Duplicates are dropped and the result is sorted (names in natural order, ranges by number), so
    the same set of hosts always gives the same text whatever the order of the list.
  - Only the trailing number of a name is compressed, and zero padding is kept exactly
    (V(n08), V(n09), V(n10) give V(n[08-10]); V(n1) and V(n01) stay two hosts, V(n[1,01])). Names
    whose number is not at the end stay as they are (V(rack1-gpu,rack2-gpu)), because Slurm 22.05
    rejects text after a closing bracket; this is also what C(scontrol show hostlist) prints.
  - Each item may itself be a hostlist expression (V(n[1-3])); it is expanded first, so the filter
    also normalises lists.
  - Fails, naming the bad value, on an empty list, an item that is not a string, an empty name, a name
    with whitespace, or an item that is a bad hostlist expression.
  - Pure; the reverse is P(hpclab.cluster.slurm_hostlist_expand#filter).
options:
  _input:
    description: Host names (or hostlist expressions).
    type: list
    elements: str
    required: true
seealso:
  - plugin: hpclab.cluster.slurm_hostlist_expand
    plugin_type: filter
"""

EXAMPLES = r"""
- name: A partition over every worker
  ansible.builtin.set_fact:
    slurm_all_nodes: "{{ groups['slurm_workers'] | hpclab.cluster.slurm_hostlist_compress }}"

# ["n03", "n01", "n02", "gpu1", "n02"] | hpclab.cluster.slurm_hostlist_compress
# => "gpu1,n[01-03]"
# ["a01", "a02", "a03", "a7", "b1", "b2"] | hpclab.cluster.slurm_hostlist_compress
# => "a[01-03,7],b[1-2]"
# ["n9", "n10", "n11"] | hpclab.cluster.slurm_hostlist_compress
# => "n[9-11]"
# ["n[1-3]", "n4"] | hpclab.cluster.slurm_hostlist_compress
# => "n[1-4]"
# ["rack1-gpu", "rack2-gpu", "login"] | hpclab.cluster.slurm_hostlist_compress
# => "login,rack1-gpu,rack2-gpu"
# [] | hpclab.cluster.slurm_hostlist_compress
# => fails: host name list is empty
"""

RETURN = r"""
_value:
  description: One Slurm hostlist expression naming exactly the given hosts.
  type: str
"""

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).


def slurm_hostlist_compress(names):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._hostlist import HostlistError, compress_hostlist
    try:
        return compress_hostlist(names)
    except HostlistError as exc:
        raise AnsibleFilterError(f"slurm_hostlist_compress: {exc}") from exc


class FilterModule:
    """Slurm hostlist compression."""

    def filters(self):
        return {"slurm_hostlist_compress": slurm_hostlist_compress}
