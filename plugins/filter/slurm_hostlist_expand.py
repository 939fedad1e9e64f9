# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_hostlist_expand
short_description: Expand a Slurm hostlist expression into host names
version_added: 0.1.0
description:
  - Expands a Slurm hostlist such as V(n[01-10],gpu[1-2]) into the list of host names it stands for,
    in the order written, each name once.
  - "Reads Slurm's syntax: comma-separated names, bracketed range lists with several ranges
    (V(a[01-03,7])), zero padding taken from the length of each range's low bound as Slurm does
    (V(n[01-10]) gives n01 to n10, V(n[9-11]) gives n9 to n11), and several prefixes
    (V(a[01-03,7],b[1-2]))."
  - Also reads the wider syntax of python-hostlist, which Slurm 22.05 rejects in slurm.conf, so that
    lists written for other tools can be read; text after a bracket (V(rack[1-2]-gpu)) and several
    brackets in one name (V(rack[1-2]-n[01-02]), expanded left to right).
  - Whitespace around names is ignored.
  - Fails, naming the bad expression, on an empty expression or empty name (V(a,,b)), unbalanced or
    nested brackets, empty brackets, a range that is not digits, a reversed range (V(n[3-1])), a
    single range of more than 65536 hosts (Slurm's limit) or more than 100000 hosts in all.
  - Pure; the reverse is P(hpclab.cluster.slurm_hostlist_compress#filter).
options:
  _input:
    description: A hostlist expression, or a list of them (expanded in turn, duplicates dropped).
    type: raw
    required: true
seealso:
  - plugin: hpclab.cluster.slurm_hostlist_compress
    plugin_type: filter
"""

EXAMPLES = r"""
- name: One task per node of the partition
  ansible.builtin.debug:
    msg: "{{ item }}"
  loop: "{{ 'n[01-03,7],gpu[1-2]' | hpclab.cluster.slurm_hostlist_expand }}"

# "n[01-03,7]" | hpclab.cluster.slurm_hostlist_expand
# => ["n01", "n02", "n03", "n7"]
# "a[01-02],b[1-2]" | hpclab.cluster.slurm_hostlist_expand
# => ["a01", "a02", "b1", "b2"]
# "n[9-11]" | hpclab.cluster.slurm_hostlist_expand
# => ["n9", "n10", "n11"]
# "rack[1-2]-gpu" | hpclab.cluster.slurm_hostlist_expand
# => ["rack1-gpu", "rack2-gpu"]
# ["login", "n[1-2]", "n2"] | hpclab.cluster.slurm_hostlist_expand
# => ["login", "n1", "n2"]
# "n[3-1]" | hpclab.cluster.slurm_hostlist_expand
# => fails: reversed range '3-1' in hostlist 'n[3-1]'
"""

RETURN = r"""
_value:
  description: The host names, in the order the expression lists them, each once.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).


def slurm_hostlist_expand(hostlist):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._hostlist import HostlistError, expand_hostlist
    expressions = hostlist if isinstance(hostlist, (list, tuple)) else [hostlist]
    if not expressions:
        raise AnsibleFilterError("slurm_hostlist_expand: the list of hostlists is empty")
    names = {}
    try:
        for expression in expressions:
            for name in expand_hostlist(expression):
                names.setdefault(name, None)
    except HostlistError as exc:
        raise AnsibleFilterError(f"slurm_hostlist_expand: {exc}") from exc
    return list(names)


class FilterModule:
    """Slurm hostlist expansion."""

    def filters(self):
        return {"slurm_hostlist_expand": slurm_hostlist_expand}
