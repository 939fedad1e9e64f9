# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: macvlan_network_check
short_description: Problems in a Docker macvlan network's settings and its containers' addresses
version_added: 0.1.0
description:
  - Checks the settings of a macvlan network shared by the hosts of a cluster before anything is
    created, and returns one sentence per problem, each naming the variable to fix (the
    hpclab.cluster.docker_macvlan role's names). An empty list means the settings are usable.
  - "Checked: O(subnet), O(gateway) and O(ip_range) are given and valid; O(ip_range) lies inside O(subnet)
    and O(gateway) inside O(subnet); every pinned container address (O(pinned)) and every host shim
    address (O(shim_ips)) is inside O(ip_range), is not the gateway, not a host's own address
    (O(host_addresses)) and is used once across the cluster; pins name listed containers; O(ip_range) has
    room for every container and shim."
options:
  _input:
    description: Names of the containers that need an address, cluster-wide.
    type: list
    elements: str
    required: true
  subnet:
    description: The LAN's subnet (variable C(docker_macvlan_subnet)).
    type: str
    required: true
  gateway:
    description: The LAN's gateway (variable C(docker_macvlan_gateway)).
    type: str
    required: true
  ip_range:
    description: The range reserved for containers (variable C(docker_macvlan_ip_range)).
    type: str
    required: true
  pinned:
    description: Container name to address chosen by the admin (variable C(docker_macvlan_ips)).
    type: dict
    default: {}
  host_addresses:
    description: Every address of every host; none may be given to a container or a shim.
    type: list
    elements: str
    default: []
  shim_ips:
    description: Host name to the address of its shim interface (variable C(docker_macvlan_host_shim_ip)).
    type: dict
    default: {}
"""

EXAMPLES = r"""
# ["ctl", "w1"] | hpclab.cluster.macvlan_network_check(subnet="192.168.1.0/24", gateway="192.168.1.1",
#                   ip_range="192.168.1.192/27", pinned={"w1": "192.168.1.10"})
# => ["docker_macvlan_ips: 'w1' has 192.168.1.10, outside docker_macvlan_ip_range 192.168.1.192/27"]
- name: Stop on bad network settings
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}"
  vars:
    problems: >-
      {{ ['ctl', 'w1'] | hpclab.cluster.macvlan_network_check(subnet='192.168.1.0/24',
           gateway='192.168.1.1', ip_range='192.168.1.192/27') }}
"""

RETURN = r"""
_value:
  description: One sentence per problem; empty when the settings are usable.
  type: list
  elements: str
"""

import ipaddress
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


def _parse(kind, value):
    if not isinstance(value, str) or not value.strip():
        return None, "is not set"
    try:
        if kind == "network":
            return ipaddress.ip_network(value.strip(), strict=True), None
        return ipaddress.ip_address(value.strip()), None
    except ValueError:
        what = "a CIDR such as 192.168.1.0/24 (host bits zero)" if kind == "network" else "an IP address"
        return None, f"{value!r} is not {what}"


def macvlan_network_check(containers, subnet=None, gateway=None, ip_range=None, pinned=None, host_addresses=None, shim_ips=None):
    """Filter entry point: see DOCUMENTATION."""
    if isinstance(containers, (str, bytes, Mapping)) or not hasattr(containers, "__iter__"):
        raise AnsibleFilterError(f"macvlan_network_check: input must be a list of container names, got {containers!r}")
    containers = list(containers)
    problems = []
    net, error = _parse("network", subnet)
    if error:
        problems.append(f"docker_macvlan_subnet {error}")
    gw, error = _parse("address", gateway)
    if error:
        problems.append(f"docker_macvlan_gateway {error}")
    pool, error = _parse("network", ip_range)
    if error:
        problems.append(f"docker_macvlan_ip_range {error}")
    if net and pool and (pool.version != net.version or not pool.subnet_of(net)):
        problems.append(f"docker_macvlan_ip_range {pool} is not inside docker_macvlan_subnet {net}")
    if net and gw and (gw.version != net.version or gw not in net):
        problems.append(f"docker_macvlan_gateway {gw} is not inside docker_macvlan_subnet {net}")
    if problems or pool is None:
        return problems

    hosts = set()
    for item in host_addresses or []:
        parsed, error = _parse("address", str(item).split("/", 1)[0])
        if parsed is not None:
            hosts.add(parsed)
    users = {}  # address -> "what uses it"

    def check(variable, owner, value):
        address, error = _parse("address", value)
        if error:
            problems.append(f"{variable}: {owner!r} {error}")
            return
        if address.version != pool.version or address not in pool:
            problems.append(f"{variable}: {owner!r} has {address}, outside docker_macvlan_ip_range {pool}")
        elif address == gw:
            problems.append(f"{variable}: {owner!r} has {address}, the gateway")
        elif address in hosts:
            problems.append(f"{variable}: {owner!r} has {address}, the address of a host")
        elif address in users:
            problems.append(f"{variable}: {owner!r} has {address}, which {users[address]} has too")
        users.setdefault(address, f"{variable} {owner!r}")

    pinned = pinned or {}
    if not isinstance(pinned, Mapping):
        return problems + [f"docker_macvlan_ips must be a dict of container name to address, got {pinned!r}"]
    for name in sorted(pinned):
        if name not in containers:
            problems.append(f"docker_macvlan_ips names {name!r}, which is not a container of the cluster ({', '.join(containers)})")
        check("docker_macvlan_ips", name, pinned[name])
    shim_ips = shim_ips or {}
    for host in sorted(shim_ips):
        check("docker_macvlan_host_shim_ip", host, shim_ips[host])

    reserved = {net.network_address, net.broadcast_address} if net and net.version == 4 else set()
    free = sum(1 for address in pool if address not in reserved and address != gw and address not in hosts)
    needed = len(containers) + len(shim_ips)
    if needed > free:
        problems.append(
            f"docker_macvlan_ip_range {pool} has {free} usable addresses but {len(containers)} containers"
            f" and {len(shim_ips)} host shims need one each"
        )
    return problems


class FilterModule:
    """Docker macvlan settings check."""

    def filters(self):
        return {"macvlan_network_check": macvlan_network_check}
