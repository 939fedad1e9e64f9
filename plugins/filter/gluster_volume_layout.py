# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: gluster_volume_layout
short_description: Brick list of a GlusterFS volume from the inventory, and everything wrong with it
version_added: 0.1.0
description:
  - Turns one entry of C(glusterfs_volumes) into the ordered brick list GlusterFS expects and
    checks it before anything is changed on any host.
  - With O(_input.bricks) the list is taken as given (C(host:/path)). Otherwise every path of
    O(_input.brick_dirs) is placed on every host of O(hosts), path-major and host-minor, so that with
    C(replica) equal to the number of hosts each replica set spans all hosts.
  - Never raises for a bad layout; returns the problems, each naming the volume, the variable and the fix.
options:
  _input:
    description: One volume, a dict with C(name), C(bricks) or C(brick_dirs), C(replica), C(arbiter), C(disperse).
    type: dict
    required: true
  hosts:
    description: Hosts of the GlusterFS group, in inventory order.
    type: list
    elements: str
    required: true
  play_hosts:
    description: Hosts of the current play; a brick host outside it cannot be prepared.
    type: list
    elements: str
    required: true
  allow_replica_set_on_one_host:
    description: Accept two bricks of one replica set on the same host.
    type: bool
    default: false
"""

EXAMPLES = r"""
# {"name": "gv0", "replica": 3, "brick_dirs": ["/bricks/gv0/b1", "/bricks/gv0/b2"]}
#   | hpclab.cluster.gluster_volume_layout(["n1", "n2", "n3"], ["n1", "n2", "n3"])
# => {"bricks": ["n1:/bricks/gv0/b1", "n2:/bricks/gv0/b1", "n3:/bricks/gv0/b1",
#                "n1:/bricks/gv0/b2", "n2:/bricks/gv0/b2", "n3:/bricks/gv0/b2"],
#     "set_size": 3, "problems": []}
- name: Check the volumes
  ansible.builtin.assert:
    that: (item | hpclab.cluster.gluster_volume_layout(groups['glusterfs'], ansible_play_hosts)).problems == []
  loop: "{{ glusterfs_volumes }}"
"""

RETURN = r"""
_value:
  description: C(bricks) (list of host:path), C(set_size) (bricks per replica or disperse set) and C(problems) (list of str).
  type: dict
"""


def gluster_volume_layout(volume, hosts, play_hosts, allow_replica_set_on_one_host=False):
    """See DOCUMENTATION."""
    # Imported here, not at the top: Ansible imports every file of plugins/filter in each worker process that looks up
    # any filter of this collection, and _gluster is among the largest modules they would import (about 14 ms a worker).
    from ansible_collections.hpclab.cluster.plugins.module_utils._gluster import GlusterError, canonical_path, validate_volume_name

    problems = []
    name = str(volume.get("name", ""))
    where = f"glusterfs_volumes[{name or '?'}]"
    try:
        validate_volume_name(name)
    except GlusterError as exc:
        problems.append(
            f"{where}.name {name!r} is not a valid GlusterFS volume name ({exc}). Fix: use letters, digits, '_' and '-', "
            "not starting with '-', not a reserved word such as 'all'."
        )
    replica = int(volume.get("replica") or 0)
    arbiter = int(volume.get("arbiter") or 0)
    disperse = int(volume.get("disperse") or 0)
    set_size = disperse or (replica if replica > 1 else 1)
    if arbiter and replica not in (2, 3):
        problems.append(f"{where}.arbiter needs replica 3 (or 2). Fix: set replica: 3, arbiter: 1.")
    if arbiter:
        set_size = 3

    bricks = []
    if volume.get("bricks"):
        for brick in volume["bricks"]:
            host, sep, path = str(brick).partition(":")
            if not sep or not host or not path:
                problems.append(f"{where}.bricks entry {brick!r} is not host:/path. Fix: write it as 'node1:/bricks/{name}/brick1'.")
                continue
            bricks.append((host, path))
    else:
        for path in volume.get("brick_dirs") or []:
            bricks.extend((host, str(path)) for host in hosts)
    if not bricks:
        problems.append(f"{where} has no bricks. Fix: set brick_dirs (a path on every host of the group) or bricks (host:path).")

    for host, path in bricks:
        if not path.startswith("/"):
            problems.append(f"{where}: brick path {path!r} on {host} is not absolute. Fix: use a path such as /bricks/{name}/brick1.")
        if host not in play_hosts:
            problems.append(
                f"{where}: brick host {host!r} is not in this play. Fix: add {host} to the GlusterFS group and the play, "
                "or remove its bricks."
            )
    seen = set()
    for host, path in bricks:
        key = (host, canonical_path(path))
        if key in seen:
            problems.append(f"{where}: brick {host}:{path} is listed twice. Fix: give each brick once.")
        seen.add(key)

    if bricks and len(bricks) % set_size:
        kind = "disperse" if disperse else "replica"
        problems.append(
            f"{where}: {len(bricks)} bricks is not a multiple of the {kind} count {set_size}. "
            f"Fix: give bricks in whole sets of {set_size} (or change {kind})."
        )
    elif set_size > 1 and not allow_replica_set_on_one_host:
        for start in range(0, len(bricks), set_size):
            members = bricks[start:start + set_size]
            set_hosts = [host for host, _path in members]
            doubled = sorted({h for h in set_hosts if set_hosts.count(h) > 1})
            if doubled:
                problems.append(
                    f"{where}: replica set {start // set_size + 1} ({', '.join(f'{h}:{p}' for h, p in members)}) has two bricks "
                    f"on {', '.join(doubled)}, so losing that host loses the set. Fix: order bricks so that each set spans "
                    "different hosts, or set glusterfs_allow_replica_set_on_one_host: true."
                )
    return {
        "bricks": [f"{h}:{canonical_path(p)}" for h, p in bricks],
        "set_size": set_size,
        "problems": problems,
    }


class FilterModule:
    """GlusterFS layout filters."""

    def filters(self):
        return {"gluster_volume_layout": gluster_volume_layout}
