# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: nfs_ganesha_problems
short_description: What is wrong with the nfs_ganesha role's input on one host, before any change
version_added: 0.2.0
description:
  - NFS-Ganesha has no configuration check mode, and it keeps running when it drops an export it
    cannot load (a client that is not a network, a bad path); every client then gets NFS4ERR_NOENT.
    So the role checks everything that ends up in C(ganesha.conf) first, with this filter. Types and
    choices are left to the role's argument spec.
  - Returns a list of problems, each naming the host, the variable and the fix; an empty list means the
    role may go on.
  - "Rules: (1) the host is in the group O(group); (2) O(_input) lists at least one export;
    (3) C(export_id) is an integer 1..65535 and (4) unique; (5) C(pseudo) is a canonical absolute path
    other than C(/) and (6) unique; (7) C(volpath) is a canonical absolute path; (8) C(volume) is a
    valid GlusterFS volume name; (9) every entry of O(client_networks) and of an export's C(clients)
    is an IPv4 or IPv6 network in CIDR notation with no host bits set; (10) no export is open to
    nobody, or (11) to a network wider than an IPv4 /8 or an IPv6 /32 (so not to every address, with a /0
    or with several wide networks together); (12) O(protocols) is not empty and (13) an
    export's C(protocols) are among O(protocols); (14) O(grace_period) is 60..270; (15) O(recovery_root)
    is a canonical absolute path other than C(/); (16) O(volume_wait_timeout) and O(start_timeout)
    are at least 1; (17) O(volume_options) maps option names to single values; (18) with O(gluster_hosts), the
    host is one of them; (19) O(attr_expiration_time) is -1..2147483647 seconds."
options:
  _input:
    description: C(nfs_ganesha_exports).
    type: list
    elements: dict
    required: true
  host:
    description: The host's inventory name (C(inventory_hostname)), for the messages.
    type: str
    required: true
  group_hosts:
    description: The hosts of the inventory group O(group).
    type: list
    elements: str
    default: []
  group:
    description: C(nfs_ganesha_group), for the messages.
    type: str
    default: nfs_ganesha
  client_networks:
    description: C(nfs_ganesha_client_networks).
    type: list
    elements: str
    default: []
  protocols:
    description: C(nfs_ganesha_protocols).
    type: list
    elements: int
    default: [3, 4]
  grace_period:
    description: C(nfs_ganesha_grace_period).
    type: int
    default: 90
  recovery_root:
    description: C(nfs_ganesha_recovery_root).
    type: str
    default: /var/lib/nfs/ganesha
  volume_wait_timeout:
    description: C(nfs_ganesha_volume_wait_timeout).
    type: int
    default: 120
  start_timeout:
    description: C(nfs_ganesha_start_timeout).
    type: int
    default: 60
  volume_options:
    description: C(nfs_ganesha_volume_options).
    type: dict
    default: {}
  gluster_hosts:
    description:
      - The hosts of the GlusterFS server group O(gluster_group). FSAL_GLUSTER reads each volume through glusterd
        on this host (C(Hostname = "localhost") in C(ganesha.conf)), so an NFS server must be one of them.
      - Omit (or null) to skip that rule.
    type: list
    elements: str
  gluster_group:
    description: The inventory group of the GlusterFS servers, for the messages.
    type: str
    default: glusterfs
  attr_expiration_time:
    description: C(nfs_ganesha_attr_expiration_time).
    type: int
    default: 0
"""

EXAMPLES = r"""
# [{"export_id": 1, "volume": "gv0", "pseudo": "/gv0"}]
#   | hpclab.cluster.nfs_ganesha_problems(host="nfs1", group_hosts=["nfs1"], client_networks=["10.0.0.300/24"])
# => ["nfs1: nfs_ganesha_client_networks entry '10.0.0.300/24' is not a network: Octet 300 (> 255) not
#     permitted in '10.0.0.300'. Fix: write the clients' network in CIDR notation, e.g. '192.168.1.0/24'."]
- name: Check every input that ends up in ganesha.conf
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
    quiet: true
  vars:
    __problems: >-
      {{ nfs_ganesha_exports | hpclab.cluster.nfs_ganesha_problems(host=inventory_hostname,
           group_hosts=groups['nfs_ganesha'], client_networks=nfs_ganesha_client_networks) }}
"""

RETURN = r"""
_value:
  description: One message per problem; empty when there is none.
  type: list
  elements: str
"""

import ipaddress
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

# Paths are written into ganesha.conf (RecoveryRoot unquoted): PATH_CHARS, no blanks, quotes, ';', braces or '#'.
PROTOCOLS = (3, 4)
# Ganesha's NFSV4 Grace_Period range is 0..270 (src/support/nfs_read_conf.c); below the lease time
# (Lease_Lifetime, 60 s by default) clients may not reclaim their state in time, and Ganesha warns.
# The widest client network an export takes, by IP version: a cluster's networks are far smaller, and two /1
# networks (or four /2) would open an export to every address without a /0 (rule 11).
SHORTEST_PREFIX = {4: 8, 6: 32}
GRACE_MIN = 60
GRACE_MAX = 270
# Attr_Expiration_Time: -1 caches attributes until Ganesha is told of a change, 0 not at all (an int32 in Ganesha).
ATTR_EXPIRATION_MIN = -1
ATTR_EXPIRATION_MAX = 2**31 - 1


def _path_problem(value, allow_root=False):
    """Why VALUE is not a canonical absolute path, or None."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import PATH_CHARS, not_canonical
    if not isinstance(value, str) or not value.startswith("/"):
        return "is not an absolute path"
    if not PATH_CHARS.match(value):
        return "has a character ganesha.conf cannot hold (blank, quote, ';', '{', '}' or '#')"
    if value == "/":
        return None if allow_root else "is '/'"
    parts = value[1:].split("/")
    if not_canonical(parts):
        return "is not canonical (a trailing or doubled '/', or a '.' or '..' part)"
    return None


def _network_problem(value):
    """(why VALUE is not a network in CIDR notation, None) or (None, the network)."""
    text = value if isinstance(value, str) else repr(value)
    address, slash, prefix = text.partition("/")
    if "%" in text:
        return "has a scope ('%'), which Ganesha cannot read. Fix: write the network alone, e.g. 'fd00::/64'.", None
    if not slash:
        try:
            single = ipaddress.ip_address(text)
        except ValueError:
            return "is not a network in CIDR notation. Fix: write the clients' network, e.g. '192.168.1.0/24'.", None
        return (
            f"is an address, not a network. Fix: write '{single}/{single.max_prefixlen}' for that host alone, "
            "or its network, e.g. '192.168.1.0/24'."
        ), None
    kind = ipaddress.IPv6Network if ":" in address else ipaddress.IPv4Network
    try:
        loose = kind(text, strict=False)
    except ValueError as exc:
        return f"is not a network: {exc}. Fix: write the clients' network in CIDR notation, e.g. '192.168.1.0/24'.", None
    if not prefix.isdigit():
        return f"gives a netmask, not a prefix length. Fix: write '{loose}'.", None
    if loose.network_address != kind(f"{address}/{loose.max_prefixlen}").network_address:
        return f"has host bits set. Fix: write the network '{loose}', or '{address}/{loose.max_prefixlen}' for that host alone.", None
    return None, loose


def nfs_ganesha_problems(exports, host, group_hosts=None, group="nfs_ganesha", client_networks=None, protocols=(3, 4),
                         grace_period=90, recovery_root="/var/lib/nfs/ganesha", volume_wait_timeout=120,
                         start_timeout=60, volume_options=None, gluster_hosts=None, gluster_group="glusterfs",
                         attr_expiration_time=0):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import to_int
    # Imported here, not at the top: Ansible imports every file of plugins/filter in each worker process that looks up
    # any filter of this collection, and _gluster is among the largest modules they would import (about 14 ms a worker).
    from ansible_collections.hpclab.cluster.plugins.module_utils._gluster import GlusterError, validate_volume_name

    if isinstance(exports, (str, bytes, Mapping)) or not hasattr(exports, "__iter__"):
        raise AnsibleFilterError(f"nfs_ganesha_problems: input must be the list nfs_ganesha_exports, got {exports!r}")
    exports = list(exports)
    problems = []

    def problem(text):
        problems.append(f"{host}: {text}")

    if host not in (group_hosts or []):
        problem(
            f"runs the nfs_ganesha role but is not in the inventory group '{group}' (variable nfs_ganesha_group), where "
            "the k3s_nfs_csi role looks for the NFS servers. Fix: add it to that group."
        )
    if gluster_hosts is not None and host not in gluster_hosts:
        problem(
            f"runs NFS-Ganesha but is not a GlusterFS server (not in the inventory group '{gluster_group}'): the "
            "exports' FSAL GLUSTER reads each volume through glusterd on this host (Hostname localhost in "
            f"ganesha.conf), so the service would start without its exports. Fix: add the host to '{gluster_group}' "
            f"too, or move it out of '{group}' (variable nfs_ganesha_group) and list a GlusterFS server there."
        )
    if not exports:
        problem("nfs_ganesha_exports is empty: NFS-Ganesha would serve nothing. Fix: list at least one export.")

    default_networks = list(client_networks or [])
    for value in default_networks:
        reason, _net = _network_problem(value)
        if reason:
            problem(f"nfs_ganesha_client_networks entry {value!r} {reason}")
    served = set()
    for raw in protocols or []:
        number = to_int(raw)
        if number in PROTOCOLS:
            served.add(number)
    if not protocols:
        problem("nfs_ganesha_protocols is empty: NFS-Ganesha would serve no NFS version. Fix: set it to [4] or [3, 4].")

    ids, pseudos = {}, {}
    for index, export in enumerate(exports):
        where = f"nfs_ganesha_exports[{index}]"
        if not isinstance(export, Mapping):
            problem(f"{where} is not a dict. Fix: give export_id, volume and pseudo (see the role's README).")
            continue
        pseudo = export.get("pseudo")
        where = f"{where} (pseudo {pseudo})"
        export_id = to_int(export.get("export_id"))
        if export_id is None or not 1 <= export_id <= 65535:
            problem(f"{where}: export_id {export.get('export_id')!r} is not an integer 1..65535. Fix: number the exports 1, 2, ...")
        elif export_id in ids:
            problem(f"{where}: export_id {export_id} is also the id of nfs_ganesha_exports[{ids[export_id]}]. Fix: give each export its own id.")
        else:
            ids[export_id] = index
        reason = _path_problem(pseudo)
        if reason:
            problem(f"{where}: pseudo {pseudo!r} {reason}. Fix: write the path clients mount, e.g. '/gv0' (the csi-driver-nfs share).")
        elif pseudo in pseudos:
            problem(f"{where}: pseudo {pseudo} is also the pseudo of nfs_ganesha_exports[{pseudos[pseudo]}]. Fix: give each export its own pseudo path.")
        else:
            pseudos[pseudo] = index
        volpath = export.get("volpath", "/")
        reason = _path_problem(volpath, allow_root=True)
        if reason:
            problem(f"{where}: volpath {volpath!r} {reason}. Fix: write a directory of the volume, '/' for its root.")
        try:
            validate_volume_name(export.get("volume"))
        except GlusterError as exc:
            problem(f"{where}: volume {export.get('volume')!r} is not a GlusterFS volume name ({exc}). Fix: name the exported volume, e.g. gv0.")

        if export.get("clients") is not None:
            variable, networks = f"{where} clients", list(export["clients"] or [])
            for value in networks:
                reason, _net = _network_problem(value)
                if reason:
                    problem(f"{where}: clients entry {value!r} {reason}")
        else:
            variable, networks = "nfs_ganesha_client_networks", default_networks
        if not networks:
            problem(
                f"{where} would be open to nobody ({variable} is empty). Fix: set nfs_ganesha_client_networks (or the "
                "export's clients) to the cluster's networks, e.g. ['192.168.1.0/24']."
            )
        for value in networks:
            _reason, net = _network_problem(value)
            shortest = SHORTEST_PREFIX.get(net.version) if net is not None else None
            if net is not None and net.prefixlen < shortest:
                reach = "every address" if net.prefixlen == 0 else f"{net.num_addresses:,} addresses"
                problem(
                    f"{where} would be open to {value}, {reach} (from {variable}); an IPv{net.version} client network "
                    f"is at least a /{shortest}, as two or more wider ones can cover the whole address space. Fix: list "
                    "only the cluster's networks, e.g. ['192.168.1.0/24']."
                )

        own = export.get("protocols")
        if own is not None:
            numbers = [to_int(p) for p in own or []]
            if not numbers or any(n not in served for n in numbers):
                problem(
                    f"{where}: protocols {list(own or [])} must be NFS versions that nfs_ganesha_protocols "
                    f"({list(protocols or [])}) serves. Fix: list some of those, or leave protocols out to serve them all."
                )

    grace = to_int(grace_period)
    if grace is None or not GRACE_MIN <= grace <= GRACE_MAX:
        problem(
            f"nfs_ganesha_grace_period {grace_period!r} is outside {GRACE_MIN}..{GRACE_MAX} seconds (at least the NFSv4 "
            f"lease time, at most Ganesha's limit). Fix: keep the default 90 (nfs_ganesha_graceless skips it in test labs)."
        )
    reason = _path_problem(recovery_root)
    if reason:
        problem(f"nfs_ganesha_recovery_root {recovery_root!r} {reason}. Fix: keep the default /var/lib/nfs/ganesha.")
    for variable, value in (("nfs_ganesha_volume_wait_timeout", volume_wait_timeout), ("nfs_ganesha_start_timeout", start_timeout)):
        seconds = to_int(value)
        if seconds is None or seconds < 1:
            problem(f"{variable} {value!r} is not a number of seconds of at least 1. Fix: keep its default.")
    seconds = to_int(attr_expiration_time)
    if seconds is None or not ATTR_EXPIRATION_MIN <= seconds <= ATTR_EXPIRATION_MAX:
        problem(
            f"nfs_ganesha_attr_expiration_time {attr_expiration_time!r} is not a number of seconds from {ATTR_EXPIRATION_MIN} "
            f"to {ATTR_EXPIRATION_MAX}. Fix: keep the default 0 (Ganesha asks GlusterFS for a file's attributes each time)."
        )
    if volume_options is not None and not isinstance(volume_options, Mapping):
        problem(f"nfs_ganesha_volume_options {volume_options!r} is not a dict. Fix: map option names to values, e.g. {{features.cache-invalidation: 'on'}}.")
    else:
        for key, value in (volume_options or {}).items():
            if not isinstance(key, str) or not re.match(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$", key):
                problem(f"nfs_ganesha_volume_options key {key!r} is not a GlusterFS option name. Fix: write it like features.cache-invalidation.")
            elif value is None or isinstance(value, (Mapping, list, tuple, set)):
                problem(f"nfs_ganesha_volume_options {key} has the value {value!r}, not a single value. Fix: give one value, e.g. 'on'.")
    return problems


class FilterModule:
    """The nfs_ganesha role's checks of its input."""

    def filters(self):
        return {"nfs_ganesha_problems": nfs_ganesha_problems}
