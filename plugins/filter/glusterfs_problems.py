# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: glusterfs_problems
short_description: What is wrong with the glusterfs role's input on one host, before any change
version_added: 0.2.0
description:
  - The glusterfs role's checks, run on every host before anything is installed. Types and choices are
    left to the role's argument spec. Returns a list of problems, each naming the host, the variable
    and the fix; an empty list means the role may go on.
  - "Rules: (1) the host is in the group O(group); (2) O(_input) lists at least one volume, (3) each a
    dict, (4) no name twice; (5) everything P(hpclab.cluster.gluster_volume_layout#filter) finds in a
    volume's layout (name, bricks, brick hosts in the play, set sizes, one host per replica set);
    (6) the volume type is one GlusterFS can create (replica at least 2, replica and disperse not both,
    disperse at least 3, redundancy only with disperse, 1 <= redundancy < disperse/2);
    (7) replica 2 without an arbiter only with the volume's C(allow_split_brain_risk: true); (8) volume
    options map option names to single values; (9) O(mount_volume) is one of the volumes; (10)
    O(mount_path) is a canonical absolute path other than C(/); (11) no brick is the root directory, on
    or inside O(mount_path), nor O(mount_path) inside a brick; (12) O(mount_options) is a comma-separated
    list without blanks that leaves C(backup-volfile-servers) to the role; (13) each shared directory
    is a canonical relative path, (14) with an octal mode that is not world-writable and (15) an owner
    and group that are user or group names or ids; (16) each brick device is an absolute path under
    C(/dev), mounted on a canonical absolute path other than C(/), no device or mount point twice;
    (17) each brick device is a block device on this host and (18) one without a filesystem is
    formatted only with O(format_brick_devices); (19) O(peer_timeout) is at least 1; (23) no brick directory
    of a volume is the same as, inside or above a brick directory of another volume on the same host."
  - "A host of O(client_group) that is not in O(group) is a client: it holds no brick and only mounts the volume.
    On a client rules 3 to 9, 11 and 23 check O(pool_volumes), the volumes as the brick hosts define them (so that bad
    volumes fail the whole play before any change, and the client mounts a volume they serve); rules 16 to 18 are
    the brick hosts'. And (20) a client has a host of O(group) to mount from and a volume those hosts define (rule 2
    on a brick host); (21) its O(client_packages) are Debian package names that hold C(glusterfs-client) and not
    C(glusterfs-server) (a client never runs glusterd); (22) it has no O(brick_devices)."
options:
  _input:
    description: C(glusterfs_volumes).
    type: list
    elements: dict
    required: true
  host:
    description: The host's inventory name (C(inventory_hostname)), for the messages.
    type: str
    required: true
  group_hosts:
    description: The hosts of the inventory group O(group), in inventory order.
    type: list
    elements: str
    default: []
  play_hosts:
    description: The hosts of the play (C(ansible_play_hosts)); a brick host outside it cannot be prepared.
    type: list
    elements: str
    default: []
  group:
    description: C(glusterfs_group), for the messages.
    type: str
    default: glusterfs
  client_hosts:
    description: The hosts of the inventory group O(client_group); those outside O(group_hosts) are clients.
    type: list
    elements: str
    default: []
  client_group:
    description: C(glusterfs_client_group), for the messages.
    type: str
    default: glusterfs_clients
  client_packages:
    description: C(glusterfs_client_packages), checked on a client.
    type: list
    elements: str
    default: [glusterfs-client]
  pool_volumes:
    description:
      - C(glusterfs_volumes) as the brick hosts define them (the first host of O(group)); a client's mount is checked
        against them, as its own C(glusterfs_volumes) may be the role's default. Default is O(_input).
    type: list
    elements: dict
  allow_replica_set_on_one_host:
    description: C(glusterfs_allow_replica_set_on_one_host).
    type: bool
    default: false
  mount_volume:
    description: C(glusterfs_mount_volume).
    type: str
    default: ""
  mount_path:
    description: C(glusterfs_mount_path).
    type: str
    default: /gfsv
  mount_options:
    description: C(glusterfs_mount_options).
    type: str
    default: defaults,_netdev
  shared_dirs:
    description: C(glusterfs_shared_dirs).
    type: list
    elements: dict
    default: []
  brick_devices:
    description: C(glusterfs_brick_devices).
    type: list
    elements: dict
    default: []
  block_devices:
    description: The brick devices that are block devices on this host (M(ansible.builtin.stat) C(isblk)).
    type: list
    elements: str
    default: []
  device_filesystems:
    description: Brick device of this host to the filesystem C(blkid) found on it (empty for none).
    type: dict
    default: {}
  format_brick_devices:
    description: C(glusterfs_format_brick_devices).
    type: bool
    default: false
  peer_timeout:
    description: C(glusterfs_peer_timeout).
    type: int
    default: 120
"""

EXAMPLES = r"""
# [{"name": "gv0", "replica": 2, "brick_dirs": ["/bricks/gv0/brick1"]}]
#   | hpclab.cluster.glusterfs_problems(host="n1", group_hosts=["n1", "n2"], play_hosts=["n1", "n2"], mount_volume="gv0")
# => ["n1: glusterfs_volumes[gv0]: replica 2 without an arbiter is prone to split-brain ... Fix: ..."]
- name: Check the volumes, the mount, the shared directories and the brick devices
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
    quiet: true
  vars:
    __problems: >-
      {{ glusterfs_volumes | hpclab.cluster.glusterfs_problems(host=inventory_hostname,
           group_hosts=groups['glusterfs'], play_hosts=ansible_play_hosts, mount_volume=glusterfs_mount_volume) }}

# A client (in glusterfs_clients, not in glusterfs) that asks for glusterd:
# [{"name": "gv0", "replica": 3, "brick_dirs": ["/bricks/gv0/brick1"]}]
#   | hpclab.cluster.glusterfs_problems(host="gpu1", group_hosts=["n1", "n2", "n3"], client_hosts=["gpu1"],
#                                       mount_volume="gv0", client_packages=["glusterfs-server"])
# => ["gpu1: glusterfs_client_packages ['glusterfs-server'] lacks glusterfs-client ...; holds glusterfs-server ... Fix: ..."]
"""

RETURN = r"""
_value:
  description: One message per problem; empty when there is none.
  type: list
  elements: str
"""

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.gluster_volume_layout import gluster_volume_layout
# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

_OPTION_NAME = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
# Debian's adduser rule (NAME_REGEX), or a numeric id.
_OWNER = re.compile(r"^([a-z_][a-z0-9_-]*\$?|[0-9]+)$")
_MODE = re.compile(r"^[0-7]{3,4}$")
# Debian: glusterfs-client ships mount.glusterfs (the FUSE client); glusterfs-server ships glusterd.
_CLIENT_PACKAGE = "glusterfs-client"
_SERVER_PACKAGE = "glusterfs-server"


def _path_problem(value, relative=False):
    """Why VALUE is not a canonical path (absolute unless RELATIVE, never the root), or None."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import PATH_CHARS, not_canonical
    if not isinstance(value, str) or not value:
        return "is empty"
    if relative == value.startswith("/"):
        return "is absolute" if relative else "is not an absolute path"
    if not PATH_CHARS.match(value):
        return "has a blank, a quote or another character that does not belong in a path here"
    if value == "/":
        return "is '/'"
    parts = value.split("/")[0 if relative else 1:]
    if not_canonical(parts):
        return "is not canonical (a trailing or doubled '/', or a '.' or '..' part)"
    return None


def _inside(path, parent):
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _shared_brick_problems(placed):
    """Rule 23: no brick directory of one volume is the same as, inside or above one of another volume on its host.

    PLACED holds (volume index, where, host, canonical path) for every brick. A directory shared by two volumes mixes
    their files, and GlusterFS's 'force' (the role adds it with either safety switch) skips glusterd's "already part of
    a volume" check, which would otherwise refuse the second volume."""
    from ansible_collections.hpclab.cluster.plugins.module_utils._gluster import brick_path_relation

    clashes = {}
    for first, (index_a, where_a, host_a, path_a) in enumerate(placed):
        for index_b, where_b, host_b, path_b in placed[first + 1:]:
            if index_a == index_b or host_a != host_b or not (path_a.startswith("/") and path_b.startswith("/")):
                continue
            relation = brick_path_relation(path_b, path_a)
            if relation is None:
                continue
            clashes.setdefault((where_b, path_b, relation, where_a, path_a), []).append(host_a)
    return [
        f"{where_b}: brick directory {path_b} is {relation} brick directory {path_a} of {where_a} on {', '.join(hosts)} "
        "(variable glusterfs_volumes): the two volumes would share files, and GlusterFS's 'force' (added with "
        "glusterfs_allow_bricks_on_root_filesystem or glusterfs_allow_replica_set_on_one_host) skips the check that "
        f"refuses a directory already part of a volume. Fix: give each volume brick directories of its own, side by "
        "side, e.g. /bricks/VOLUME/brick1 for each VOLUME."
        for (where_b, path_b, relation, where_a, path_a), hosts in clashes.items()
    ]


def _type_problems(where, volume):
    """Rules 6 and 7: the volume type, as GlusterFS (and the gluster_volume module) accept it."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import to_int
    replica, arbiter = to_int(volume.get("replica")), to_int(volume.get("arbiter"), 0)
    disperse, redundancy = to_int(volume.get("disperse")), to_int(volume.get("redundancy"))
    problems = []
    if replica is not None and replica < 2:
        problems.append(f"{where}.replica {replica}: a replica count is at least 2. Fix: set replica: 3, or leave replica out for a plain distribute volume.")
    if disperse is not None and replica is not None:
        problems.append(f"{where} sets both replica and disperse: GlusterFS has no replicated-dispersed volumes. Fix: keep one of them.")
    if redundancy is not None and disperse is None:
        problems.append(f"{where}.redundancy needs disperse. Fix: set disperse (e.g. disperse: 3, redundancy: 1) or remove redundancy.")
    if disperse is not None and disperse < 3:
        problems.append(f"{where}.disperse {disperse}: a disperse set has at least 3 bricks. Fix: set disperse: 3 or more.")
    elif disperse is not None and redundancy is not None and not 1 <= redundancy < disperse / 2:
        problems.append(f"{where}.redundancy {redundancy} must be at least 1 and less than half of disperse {disperse}. Fix: e.g. disperse: 3, redundancy: 1.")
    if replica == 2 and not arbiter and not volume.get("allow_split_brain_risk"):
        problems.append(
            f"{where}: replica 2 without an arbiter is prone to split-brain: when the two copies disagree, neither can "
            "win (GlusterFS's own CLI warns so, and its maintainers advise replica 3 or an arbiter, gluster/glusterfs#796). "
            "Fix: add a third host to the group and set replica: 3, arbiter: 1 (GlusterFS's 'replica 3 arbiter 1': the "
            "third brick of each set, on the third host, holds only metadata, so a small node will do) or replica: 3 for "
            "a full third copy; an existing replica 2 volume is converted by hand with 'gluster volume add-brick VOLUME "
            "replica 3 arbiter 1 HOST3:/BRICK' (one brick per set), as this role never changes a volume's type; or, to "
            f"accept the risk, set allow_split_brain_risk: true on {where}."
        )
    return problems


def _option_problems(where, options):
    if options is None:
        return []
    if not isinstance(options, Mapping):
        return [f"{where}.options {options!r} is not a dict. Fix: map option names to values, e.g. {{performance.cache-size: 64MB}}."]
    problems = []
    for key, value in options.items():
        if not isinstance(key, str) or not _OPTION_NAME.match(key):
            problems.append(f"{where}.options key {key!r} is not a GlusterFS option name. Fix: write it like network.ping-timeout.")
        elif value is None or isinstance(value, (Mapping, list, tuple, set)):
            problems.append(f"{where}.options {key} has the value {value!r}, not a single value. Fix: give one value, e.g. 'on' or 42.")
    return problems


def _client_packages_problem(packages):
    """Rule 21: why a client's package list cannot give it the FUSE client without glusterd, or None."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import package_problems
    reasons = package_problems(packages)
    if isinstance(packages, (list, tuple)):
        names = [name.split("=")[0].split(">")[0].split(":")[0] for name in packages if isinstance(name, str)]
        # apt takes fnmatch wildcards: 'glusterfs-*' would install glusterd too.
        if not any(fnmatchcase(_CLIENT_PACKAGE, name) for name in names):
            reasons.append(f"lacks {_CLIENT_PACKAGE}, which holds mount.glusterfs")
        reasons += [f"holds {name}, which installs glusterd" for name in names if fnmatchcase(_SERVER_PACKAGE, name)]
    if not reasons:
        return None
    return (
        f"glusterfs_client_packages {packages!r} {'; '.join(reasons)}. Fix: keep the default [{_CLIENT_PACKAGE}]: a client "
        f"only mounts the volume and never runs glusterd; a host that should run it belongs in glusterfs_group."
    )


def _client_problems(volumes, group, client_group, group_hosts, client_packages, brick_devices):
    """Rules 20, 21 and 22 for a client."""
    problems = []
    if not group_hosts:
        problems.append(
            f"is a client (inventory group '{client_group}', variable glusterfs_client_group) but the group '{group}' "
            "(variable glusterfs_group) has no host, so no brick host serves a volume to mount. Fix: list the hosts that "
            f"carry the bricks in '{group}', or set glusterfs_group to their group."
        )
    elif not volumes:
        problems.append(
            f"is a client but the brick hosts (group '{group}') define no volume: glusterfs_volumes is empty. Fix: define "
            "the volume the cluster shares, e.g. [{name: gv0, replica: 3, brick_dirs: [/bricks/gv0/brick1]}]."
        )
    reason = _client_packages_problem([_CLIENT_PACKAGE] if client_packages is None else client_packages)
    if reason:
        problems.append(reason)
    if brick_devices:
        problems.append(
            f"sets glusterfs_brick_devices but is a client (in '{client_group}', not in '{group}'): a client holds no "
            f"brick and the role would leave those devices alone. Fix: add the host to '{group}' to carry bricks, or "
            "remove glusterfs_brick_devices for it."
        )
    return problems


def glusterfs_problems(volumes, host, group_hosts=None, play_hosts=None, group="glusterfs", allow_replica_set_on_one_host=False,
                       mount_volume="", mount_path="/gfsv", mount_options="defaults,_netdev", shared_dirs=None,
                       brick_devices=None, block_devices=None, device_filesystems=None, format_brick_devices=False, peer_timeout=120,
                       client_hosts=None, client_group="glusterfs_clients", client_packages=None, pool_volumes=None):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import to_int
    if isinstance(volumes, (str, bytes, Mapping)) or not hasattr(volumes, "__iter__"):
        raise AnsibleFilterError(f"glusterfs_problems: input must be the list glusterfs_volumes, got {volumes!r}")
    volumes = list(volumes)
    group_hosts = list(group_hosts or [])
    client = host not in group_hosts and host in (client_hosts or [])
    problems = []

    def problem(text):
        problems.append(f"{host}: {text}")

    if host not in group_hosts and not client:
        problem(
            f"runs the glusterfs role but is not in the inventory group '{group}' (variable glusterfs_group), whose "
            f"hosts carry the bricks, nor in '{client_group}' (variable glusterfs_client_group), whose hosts only mount "
            "the volume. Fix: add it to one of them."
        )
    if client:
        # The client mounts what the brick hosts define; its own glusterfs_volumes may be the role's default.
        if pool_volumes is not None:
            volumes = [] if isinstance(pool_volumes, (str, bytes, Mapping)) else list(pool_volumes or [])
        for text in _client_problems(volumes, group, client_group, group_hosts, client_packages, brick_devices):
            problem(text)
        if not group_hosts:
            volumes = []  # rule 20 said it: no brick host, no layout
        brick_devices = []  # rule 22 said it: none is the client's
    elif not volumes:
        problem("glusterfs_volumes is empty. Fix: list the volume the cluster shares, e.g. [{name: gv0, replica: 3, brick_dirs: [/bricks/gv0/brick1]}].")

    names, brick_paths, placed = [], {}, []
    for index, volume in enumerate(volumes):
        if not isinstance(volume, Mapping):
            problem(f"glusterfs_volumes[{index}] is not a dict. Fix: give name, replica and brick_dirs (see the role's README).")
            continue
        name = volume.get("name")
        where = f"glusterfs_volumes[{name or index}]"
        if name in names:
            problem(f"{where}: the name {name} is given twice in glusterfs_volumes. Fix: give each volume once.")
        names.append(name)
        layout = gluster_volume_layout(volume, group_hosts, list(play_hosts or []), bool(allow_replica_set_on_one_host))
        for text in layout["problems"] + _type_problems(where, volume) + _option_problems(where, volume.get("options")):
            problem(text)
        brick_paths.update(((where, brick.rpartition(":")[2]), None) for brick in layout["bricks"])
        placed.extend((index, where, *brick.rpartition(":")[::2]) for brick in layout["bricks"])
    for text in _shared_brick_problems(placed):
        problem(text)

    if names and mount_volume not in names:
        problem(
            f"glusterfs_mount_volume {mount_volume!r} is not one of glusterfs_volumes ({', '.join(map(str, names)) or 'none'})"
            + (
                f" as the brick hosts (group '{group}') define them. Fix: name one of those volumes; set glusterfs_volumes "
                f"and glusterfs_mount_volume where the clients (group '{client_group}') see them too, e.g. group_vars/all."
                if client else ". Fix: name a volume the role manages."
            )
        )
    reason = _path_problem(mount_path)
    if reason:
        problem(f"glusterfs_mount_path {mount_path!r} {reason}. Fix: write an absolute directory such as /gfsv.")
    for where, path in brick_paths:
        if path == "/":
            problem(f"{where}: a brick is the root directory. Fix: use a directory such as /bricks/gv0/brick1.")
        elif not reason and path.startswith("/") and (_inside(path, mount_path) or _inside(mount_path, path)):
            problem(
                f"{where}: brick {path} and glusterfs_mount_path {mount_path} overlap: the volume would be mounted on or "
                "inside its own brick, or a brick would live inside the volume. Fix: keep bricks under /bricks and mount elsewhere."
            )
    options = str(mount_options) if mount_options is not None else ""
    items = options.split(",")
    if not options or any(not item or re.search(r"\s", item) for item in items):
        problem(f"glusterfs_mount_options {mount_options!r} is not a comma-separated list of options without blanks. Fix: e.g. defaults,_netdev.")
    elif any(item.split("=")[0] in ("backup-volfile-servers", "backupvolfile-server") for item in items):
        problem(
            f"glusterfs_mount_options {mount_options!r} sets the backup volfile servers, which the role adds from the "
            f"group '{group}'. Fix: remove that option."
        )

    for index, entry in enumerate(shared_dirs or []):
        if not isinstance(entry, Mapping):
            problem(f"glusterfs_shared_dirs[{index}] is not a dict. Fix: give path, owner, group and mode.")
            continue
        path = entry.get("path")
        where = f"glusterfs_shared_dirs[{index}] ({path})"
        reason = _path_problem(path, relative=True)
        if reason:
            problem(f"{where}: path {path!r} {reason}. Fix: write it relative to the mount, e.g. 'home' for {mount_path}/home.")
        mode = entry.get("mode", "0755")
        if not isinstance(mode, str) or not _MODE.match(mode):
            problem(f"{where}: mode {mode!r} is not an octal string. Fix: quote it, e.g. mode: '0755'.")
        elif int(mode, 8) & 0o002:
            problem(
                f"{where}: mode {mode} lets every user write there, on every node. Fix: use '0755' (or '0770' with a group)."
            )
        for key in ("owner", "group"):
            value = entry.get(key, "root")
            if not isinstance(value, (str, int)) or isinstance(value, bool) or not _OWNER.match(str(value)):
                problem(f"{where}: {key} {value!r} is not a user or group name or id. Fix: e.g. {key}: root.")

    devices, mounts = set(), set()
    for index, entry in enumerate(brick_devices or []):
        if not isinstance(entry, Mapping):
            problem(f"glusterfs_brick_devices[{index}] is not a dict. Fix: give device and mount.")
            continue
        device, mount = entry.get("device"), entry.get("mount")
        where = f"glusterfs_brick_devices[{index}] ({device})"
        if _path_problem(device) or not str(device).startswith("/dev/"):
            problem(f"{where}: device {device!r} is not a block device path. Fix: write e.g. /dev/sdb or /dev/disk/by-id/...")
        elif device in devices:
            problem(f"{where}: device {device} is listed twice. Fix: give each device once.")
        devices.add(device)
        reason = _path_problem(mount)
        if reason:
            problem(f"{where}: mount {mount!r} {reason}. Fix: write a directory such as /bricks/gv0.")
        elif mount in mounts:
            problem(f"{where}: mount point {mount} is used twice. Fix: give each device its own mount point.")
        mounts.add(mount)
        found = (device_filesystems or {}).get(device)
        if device not in (block_devices or []):
            problem(f"{where}: {device} is not a block device on this host. Fix: name the disk meant for bricks, e.g. /dev/sdb.")
        elif found is not None and not str(found).strip() and not format_brick_devices:
            problem(
                f"{where}: {device} has no filesystem. The role formats it only when glusterfs_format_brick_devices is true. Fix: check "
                f"that {device} is the empty disk meant for bricks, then set glusterfs_format_brick_devices: true."
            )

    timeout = to_int(peer_timeout)
    if timeout is None or timeout < 1:
        problem(f"glusterfs_peer_timeout {peer_timeout!r} is not a number of seconds of at least 1. Fix: keep the default 120.")
    return problems


class FilterModule:
    """The glusterfs role's checks of its input."""

    def filters(self):
        return {"glusterfs_problems": glusterfs_problems}
