# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: munge_cluster_key
short_description: The cluster's MUNGE key, where to read it and which hosts need it
version_added: 0.2.0
description:
- From the same input as P(hpclab.cluster.munge_cluster_problems#filter), the key the cluster uses and
  what to do with it. Use it after the problems list came back empty.
- 'C(sha256): the supplied key''s fingerprint; else the one key the hosts share; else, with O(rotate),
  the first host''s; else empty (generate a new key). C(source): the first host holding that key, or empty.
  C(write): the hosts whose key file is missing, differs, or is not munge:munge 0400.'
extends_documentation_fragment:
  - hpclab.cluster.munge_cluster
"""

EXAMPLES = r"""
# {"n1": {"exists": true, "checksum": "aa..", "pw_name": "munge", "gr_name": "munge", "mode": "0400"},
#  "n2": {"exists": false}} | hpclab.cluster.munge_cluster_key(group_hosts=["n1", "n2"])
# => {"sha256": "aa..", "source": "n1", "write": ["n2"]}
"""

RETURN = r"""
_value:
  description: The cluster key's fingerprint, the host holding it and the hosts to write it to.
  type: dict
  contains:
    sha256:
      description: SHA-256 of the cluster key, hex; empty when a new key is to be generated.
      type: str
    source:
      description: The first host that holds the cluster key; empty when none does.
      type: str
    write:
      description: Hosts whose key file must be written or have its owner or mode fixed.
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).


def munge_cluster_key(keys, key="", rotate=False, group_hosts=(), group="munge", generated_key_bytes=128):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.module_utils._munge import plan_cluster
    try:
        plan = plan_cluster(keys, key, rotate, group_hosts, group, generated_key_bytes)
    except TypeError as exc:
        raise AnsibleFilterError(f"munge_cluster_key: {exc}") from None
    return {"sha256": plan["sha256"], "source": plan["source"], "write": plan["write"]}


class FilterModule:
    """The MUNGE layer's cluster key."""

    def filters(self):
        return {"munge_cluster_key": munge_cluster_key}
