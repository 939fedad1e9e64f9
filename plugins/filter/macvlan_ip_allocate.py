# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: macvlan_ip_allocate
short_description: Give each container a fixed address from a macvlan network's ip_range
version_added: 0.1.0
description:
  - Maps an ordered list of container names to IP addresses inside O(ip_range) (the C(ip_range) of a
    Docker macvlan network), deterministically, so that the same inputs always give the same map.
  - "Policy, in order of precedence:
    1. a name in O(pinned) gets its pinned address, always;
    2. a name in O(existing) (the map a previous run returned) keeps that address, so adding or
    removing other names never renumbers it;
    3. every other name, in list order, gets the lowest free address of O(ip_range)."
  - "Free means: inside O(ip_range), not its network or broadcast address (those of O(subnet) instead
    when O(subnet) is given, so that a sub-range's first and last addresses can be used), not
    O(gateway), not in O(exclude), not pinned (every pin is reserved, also one whose name is not in
    the list), and not already given to another name."
  - Without O(existing) the result depends only on the inputs, so it is stable across runs as long as
    new names are appended to the list; pass O(existing) to insert names anywhere without renumbering.
    Entries of O(existing) whose names are no longer listed are dropped and their addresses freed.
  - Fails, naming the bad value, when the range is exhausted, a name is listed twice, two names share a
    pinned or existing address, or a pinned or existing address is outside O(ip_range), is the
    gateway, is an excluded address or is the network or broadcast address. A pin wins over a
    different existing address for the same name.
  - IPv4 and IPv6 both work, but not mixed.
options:
  _input:
    description: Container names, in the order new ones should receive addresses.
    type: list
    elements: str
    required: true
  ip_range:
    description: CIDR the addresses come from, for example V(192.168.1.192/27).
    type: str
    required: true
  subnet:
    description:
      - The network's subnet, which must contain O(ip_range). When given, only its network and
        broadcast addresses are withheld, not those of O(ip_range).
    type: str
  gateway:
    description: The network's gateway address, never given out.
    type: str
  exclude:
    description: Addresses (or CIDRs) never given out, for example the Docker hosts' own addresses.
    type: list
    elements: str
    default: []
  pinned:
    description: Name to address chosen by the user; honoured and reserved.
    type: dict
    default: {}
  existing:
    description:
      - Name to address from an earlier run (this filter's previous result), or the addresses Docker
        reports for running containers (C(docker network inspect); a prefix length such as V(/24) is
        ignored); kept.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Addresses for the slurmd containers
  ansible.builtin.set_fact:
    slurm_container_ips: >-
      {{ groups['slurm_workers'] | hpclab.cluster.macvlan_ip_allocate(
           ip_range='192.168.1.192/28', gateway='192.168.1.1',
           pinned={'slurmctld': '192.168.1.200'},
           existing=slurm_container_ips_saved | default({})) }}

# ["a", "b", "c"] | hpclab.cluster.macvlan_ip_allocate(ip_range="10.0.0.0/29", gateway="10.0.0.1")
# => {"a": "10.0.0.2", "b": "10.0.0.3", "c": "10.0.0.4"}
# ["new", "a", "b"] | hpclab.cluster.macvlan_ip_allocate(ip_range="10.0.0.0/29",
#                       existing={"a": "10.0.0.2", "b": "10.0.0.3"})
# => {"new": "10.0.0.1", "a": "10.0.0.2", "b": "10.0.0.3"}
# ["a", "b"] | hpclab.cluster.macvlan_ip_allocate(ip_range="10.0.0.0/29", pinned={"b": "10.0.0.1"})
# => {"a": "10.0.0.2", "b": "10.0.0.1"}
# ["a", "b"] | hpclab.cluster.macvlan_ip_allocate(ip_range="10.0.0.16/28", subnet="10.0.0.0/24")
# => {"a": "10.0.0.16", "b": "10.0.0.17"}
# ["a", "b", "c"] | hpclab.cluster.macvlan_ip_allocate(ip_range="10.0.0.0/30")
# => fails: ip_range '10.0.0.0/30' is exhausted: 3 names need an address, 2 are free
"""

RETURN = r"""
_value:
  description: Name to address (a string without prefix length), in the order of the input list.
  type: dict
"""

import ipaddress
from collections import Counter
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


def _fail(message):
    raise AnsibleFilterError(f"macvlan_ip_allocate: {message}")


def _network(option, value):
    if not isinstance(value, str):
        _fail(f"{option} must be a CIDR string, got {value!r}")
    try:
        return ipaddress.ip_network(value.strip(), strict=True)
    except ValueError as exc:
        hint = ""
        try:
            hint = f"; did you mean {ipaddress.ip_network(value.strip(), strict=False)}?"
        except ValueError:
            pass
        _fail(f"{option} {value!r} is not a valid CIDR ({exc}){hint}")
    return None


def _address(what, value):
    if not isinstance(value, str):
        _fail(f"{what} must be an address string, got {value!r}")
    try:
        return ipaddress.ip_address(value.strip())
    except ValueError:
        _fail(f"{what} {value!r} is not an IP address")
    return None


def _name_map(option, value, allow_prefix=False):
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        _fail(f"{option} must be a dict of name to address, got {value!r}")
    result = {}
    for name, address in value.items():
        if allow_prefix and isinstance(address, str) and "/" in address:
            # Docker reports a container's address on a network with its prefix length: 10.0.0.2/24.
            address = address.split("/", 1)[0]
        result[name] = _address(f"{option} address of {name!r}", address)
    return result


def macvlan_ip_allocate(names, ip_range=None, subnet=None, gateway=None, exclude=None, pinned=None, existing=None):
    """Filter entry point: see DOCUMENTATION."""
    if isinstance(names, (str, bytes, Mapping)) or not hasattr(names, "__iter__"):
        _fail(f"input must be a list of names, got {names!r}")
    names = list(names)
    for name in names:
        if not isinstance(name, str) or not name.strip():
            _fail(f"names must be non-empty strings, got {name!r}")
    duplicates = sorted(name for name, count in Counter(names).items() if count > 1)
    if duplicates:
        _fail(f"names listed more than once: {duplicates!r}")
    if ip_range is None:
        _fail("ip_range is required")
    pool = _network("ip_range", ip_range)
    family = pool.version

    def same_family(what, item):
        if item.version != family:
            _fail(f"{what} {str(item)!r} is IPv{item.version} but ip_range {ip_range!r} is IPv{family}")
        return item

    withheld = set()
    if subnet is not None:
        outer = same_family("subnet", _network("subnet", subnet))
        if not pool.subnet_of(outer):
            _fail(f"ip_range {ip_range!r} is not inside subnet {subnet!r}")
    else:
        outer = pool
    # Like Python's hosts() and Docker's IPAM: IPv4 withholds the network and broadcast addresses,
    # IPv6 the subnet-router anycast (network) address; /31, /32, /127 and /128 withhold nothing.
    if outer.num_addresses > 2:
        withheld.add(outer.network_address)
        if family == 4:
            withheld.add(outer.broadcast_address)
    reasons = {address: "the network or broadcast address" for address in withheld}
    if gateway is not None:
        reasons[same_family("gateway", _address("gateway", gateway))] = "the gateway"
    excluded_networks = []
    for item in exclude or []:
        if not isinstance(item, str):
            _fail(f"exclude entries must be address strings, got {item!r}")
        try:
            excluded_networks.append(same_family("exclude entry", ipaddress.ip_network(item.strip(), strict=False)))
        except ValueError:
            _fail(f"exclude entry {item!r} is not an IP address or CIDR")

    def unusable(address):
        if address not in pool:
            return f"outside ip_range {ip_range}"
        if address in reasons:
            return reasons[address]
        for network in excluded_networks:
            if address in network:
                return f"excluded ({network})"
        return None

    pins = _name_map("pinned", pinned)
    previous = _name_map("existing", existing, allow_prefix=True)
    taken = {}
    for option, mapping in (("pinned", pins), ("existing", previous)):
        for name, address in mapping.items():
            if option == "existing" and (name not in names or name in pins):
                continue
            same_family(f"{option} address of {name!r}", address)
            why = unusable(address)
            if why:
                _fail(f"{option} address {str(address)!r} of {name!r} is {why}")
            if address in taken and taken[address] != name:
                _fail(f"{option} address {str(address)!r} of {name!r} is also the address of {taken[address]!r}")
            taken[address] = name

    assigned = {address: name for address, name in taken.items() if name in names}
    result = {name: None for name in names}
    for address, name in assigned.items():
        result[name] = str(address)
    waiting = [name for name in names if result[name] is None]
    candidates = (address for address in pool if address not in taken and unusable(address) is None)
    for given, name in enumerate(waiting):
        address = next(candidates, None)
        if address is None:
            _fail(f"ip_range {ip_range!r} is exhausted: {len(waiting)} names need an address, {given} are free")
        result[name] = str(address)
    return result


class FilterModule:
    """Docker macvlan address allocation."""

    def filters(self):
        return {"macvlan_ip_allocate": macvlan_ip_allocate}
