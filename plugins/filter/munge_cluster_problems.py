# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: munge_cluster_problems
short_description: What is wrong with the MUNGE layer's input, host by host, before any change
version_added: 0.2.0
description:
  - Takes every host's MUNGE key as M(ansible.builtin.stat) saw it (with C(checksum_algorithm=sha256))
    and the munge role's settings, and returns a list of problems, each naming the hosts, the
    variable and the fix. An empty list means the role may go on.
  - "Problems: a host of the play outside O(group); a supplied O(key) that munged would not accept
    (not base64, under 32 or over 1024 bytes); O(generated_key_bytes) outside 32..1024 when no key is
    supplied; hosts holding a key that differs from the cluster key (the supplied one, or the one the
    hosts share) without O(rotate); hosts holding different keys with neither O(key) nor O(rotate)."
  - A host that holds no key is never a problem, since nothing uses its key yet.
  - The companion filter P(hpclab.cluster.munge_cluster_key#filter) returns the cluster key's fingerprint,
    the host to read it from and the hosts to write it to, from the same input.
extends_documentation_fragment:
  - hpclab.cluster.munge_cluster
"""

EXAMPLES = r"""
- name: Check the key group, the key settings and every host's key
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
  vars:
    __problems: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, ['key_stat', 'stat'])))
         | hpclab.cluster.munge_cluster_problems(key=munge_key, rotate=munge_rotate, group_hosts=groups['munge']) }}

# {"n1": {"exists": true, "checksum": "aa..", ...}, "n2": {"exists": true, "checksum": "bb..", ...}}
#   | hpclab.cluster.munge_cluster_problems(group_hosts=["n1", "n2"])
# => ["The hosts hold different MUNGE keys and munge_key is not set: n1 (sha256 aa..); n2 (sha256 bb..). ... Fix: ..."]
"""

RETURN = r"""
_value:
  description: One message per problem; empty when there is none.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.module_utils._munge import plan_cluster


def munge_cluster_problems(keys, key="", rotate=False, group_hosts=(), group="munge", generated_key_bytes=128):
    """Filter entry point: see DOCUMENTATION."""
    try:
        return plan_cluster(keys, key, rotate, group_hosts, group, generated_key_bytes)["problems"]
    except TypeError as exc:
        raise AnsibleFilterError(f"munge_cluster_problems: {exc}") from None


class FilterModule:
    """The MUNGE layer's whole-cluster checks."""

    def filters(self):
        return {"munge_cluster_problems": munge_cluster_problems}
