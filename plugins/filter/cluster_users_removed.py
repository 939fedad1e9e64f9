# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: cluster_users_removed
short_description: The accounts of cluster users no longer listed, from a node's getent passwd
version_added: 0.4.0
description:
  - The Slurm roles create each cluster user's account with the GECOS comment C(hpclab cluster user). A user taken
    out of C(hpclab_cluster_users) keeps that account until a run locks it (or removes it, with
    C(hpclab_users_remove)); this filter names those accounts from the node's C(getent passwd) output, read before
    any change.
  - Returns the names, sorted, of the accounts whose comment (its part before the first comma) is the collection's
    and whose UID is at least O(min_uid), that are not in the list. A system account is never one; an account the
    collection did not make (no comment) is never one.
  - The rule is C(removed_users) of the collection's C(plugin_utils/_users.py), unit-tested on a real node's output.
options:
  _input:
    description: C(getent passwd)'s output.
    type: str
    required: true
  users:
    description: The cluster users now listed, C([{name, uid, gid}]).
    type: list
    elements: dict
    required: true
  min_uid:
    description: C(hpclab_users_min_uid), the first UID of a cluster user.
    type: int
    default: 1000
"""

EXAMPLES = r"""
# "alice:x:2001:2001:hpclab cluster user:/gfsv/home/alice:/bin/bash\nbob:x:2002:2002:hpclab cluster user:/gfsv/home/bob:/bin/bash"
#   | hpclab.cluster.cluster_users_removed(users=[{"name": "alice", "uid": 2001, "gid": 2001}])
# => ["bob"]
- name: Lock the accounts of users no longer listed
  ansible.builtin.user:
    name: "{{ item }}"
    password_lock: true
    shell: /usr/sbin/nologin
    expires: 1
  loop: "{{ __getent_passwd.stdout | hpclab.cluster.cluster_users_removed(users=hpclab_cluster_users) }}"
"""

RETURN = r"""
_value:
  description: The names of the removed users' accounts, sorted.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError


def cluster_users_removed(passwd, users, min_uid=1000):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._users import removed_users
    if not isinstance(passwd, str):
        raise AnsibleFilterError(f"cluster_users_removed: the input must be getent passwd's output as a string, got {type(passwd).__name__}")
    try:
        return removed_users(users if isinstance(users, (list, tuple)) else [], passwd, int(min_uid))
    except ValueError as error:
        raise AnsibleFilterError(f"cluster_users_removed: {error}") from None


class FilterModule:
    """The Slurm roles' accounts of cluster users no longer listed."""

    def filters(self):
        return {"cluster_users_removed": cluster_users_removed}
