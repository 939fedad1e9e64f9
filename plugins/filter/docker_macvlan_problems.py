# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: docker_macvlan_problems
short_description: What is wrong with the docker_macvlan role's input on one host, before any change
version_added: 0.2.0
description:
  - The docker_macvlan role's checks, run on every host before the Docker engine is installed. A bad
    value would otherwise reach Docker after the engine is installed (a failed network creation half-way
    through a run), or the host's network (the shim unit deletes and re-creates the interface it is given).
    Types are left to the role's argument spec.
  - Returns a list of problems, each naming the host, the variable and the fix; an empty list means the
    role may go on.
  - "Rules: (1) O(network) is a Docker name and not one of Docker's predefined networks; (2) O(subnet) is
    an IPv4 network in CIDR notation (a prefix length, no host bits); (3) O(gateway) is an IPv4 address
    inside O(subnet), not its network or broadcast address; (4) O(ip_range) is an IPv4 network in CIDR
    notation inside O(subnet); (5) O(subnet) overlaps no network of the host's Docker bridges (C(docker0),
    C(br-*)), which Docker refuses; (6) the parent interface O(parent) is an interface of the host and
    (7) when it has IPv4 addresses, one is inside O(subnet); (8) the containers (O(_input)) have Docker
    names, each once; (9) O(pinned) is a dict naming only listed containers; (10) every pinned address and
    every host's shim address (O(shim_ips)) is an IPv4 address inside O(ip_range), not the gateway, not a
    host's address (O(host_addresses)), used once; (11) with O(shim), O(shim_ip) is set; (12)
    O(shim_interface) is an interface name a systemd unit can hold, and (13) with O(shim) it is not the
    parent interface, nor another interface of the host than a shim (an Ethernet-like interface with /32
    addresses only); (14)
    O(ip_range) has an address for every container and shim; (15) each image archive has a Docker image
    reference as C(name), each once, and a canonical absolute C(path)."
options:
  _input:
    description: C(docker_macvlan_containers), cluster-wide.
    type: list
    elements: str
    required: true
  host:
    description: The host's inventory name (C(inventory_hostname)), for the messages.
    type: str
    required: true
  network:
    description: C(docker_macvlan_network).
    type: str
    default: hpclab
  subnet:
    description: C(docker_macvlan_subnet).
    type: str
    default: ""
  gateway:
    description: C(docker_macvlan_gateway).
    type: str
    default: ""
  ip_range:
    description: C(docker_macvlan_ip_range).
    type: str
    default: ""
  parent:
    description: The parent interface, C(docker_macvlan_parent) or the interface of the default route.
    type: str
    default: ""
  interfaces:
    description:
      - The host's interfaces, name to their facts (C(ansible_facts[NAME]) with C(-) as C(_)); C(ipv4) and
        C(ipv4_secondaries) are read.
    type: dict
    default: {}
  pinned:
    description: C(docker_macvlan_ips).
    type: dict
    default: {}
  host_addresses:
    description: Every address of every host of the play but the shims'; none may go to a container.
    type: list
    elements: str
    default: []
  shim:
    description: C(docker_macvlan_host_shim) of this host.
    type: bool
    default: false
  shim_ip:
    description: C(docker_macvlan_host_shim_ip) of this host.
    type: str
    default: ""
  shim_ips:
    description: Host name to C(docker_macvlan_host_shim_ip), for every host of the play that sets one.
    type: dict
    default: {}
  shim_interface:
    description: C(docker_macvlan_host_shim_interface).
    type: str
    default: hpclab-shim
  image_archives:
    description: C(docker_macvlan_image_archives).
    type: list
    elements: dict
    default: []
"""

EXAMPLES = r"""
# ["ctl", "w1"] | hpclab.cluster.docker_macvlan_problems(host="n1", network="slurm", subnet="192.168.1.0/24",
#                   gateway="192.168.1.1", ip_range="192.168.1.192/27", parent="eth0", interfaces={"eth0": {}},
#                   pinned={"w1": "192.168.1.10"})
# => ["n1: docker_macvlan_ips: 'w1' has 192.168.1.10, outside docker_macvlan_ip_range 192.168.1.192/27. Fix: pin an
#      address inside docker_macvlan_ip_range that is not the gateway, a host's or another pin's, or leave the
#      container out of docker_macvlan_ips to get the lowest free address."]
- name: Check the macvlan network's settings
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
    quiet: true
  vars:
    __problems: >-
      {{ docker_macvlan_containers | hpclab.cluster.docker_macvlan_problems(host=inventory_hostname,
           subnet=docker_macvlan_subnet, gateway=docker_macvlan_gateway, ip_range=docker_macvlan_ip_range,
           parent=ansible_facts.default_ipv4.interface, interfaces={'eth0': {}}) }}
"""

RETURN = r"""
_value:
  description: One message per problem; empty when there is none.
  type: list
  elements: str
"""

import ipaddress
from collections import Counter
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

# Docker's own networks: a network of one of these names cannot be created (or is the default bridge).
PREDEFINED_NETWORKS = ("bridge", "host", "none", "default", "ingress")
EXAMPLE = "(e.g. docker_macvlan_subnet 192.168.1.0/24, docker_macvlan_gateway 192.168.1.1, docker_macvlan_ip_range 192.168.1.192/27)"
FIX_SUBNET = f"set docker_macvlan_subnet to the IPv4 network of the hosts' LAN in CIDR notation {EXAMPLE}"
FIX_GATEWAY = f"set docker_macvlan_gateway to the LAN's router, an address inside docker_macvlan_subnet {EXAMPLE}"
FIX_RANGE = (
    "set docker_macvlan_ip_range to a range inside docker_macvlan_subnet that the LAN's DHCP server never hands out "
    f"{EXAMPLE}"
)
FIX_PIN = (
    "pin an address inside docker_macvlan_ip_range that is not the gateway, a host's or another pin's, or leave the "
    "container out of docker_macvlan_ips to get the lowest free address"
)
FIX_SHIM_IP = (
    "give each host with the shim its own docker_macvlan_host_shim_ip inside docker_macvlan_ip_range, not the gateway, "
    "a host's address or a pinned container's"
)


def _ipv4_network(variable, value):
    """(why VALUE is not an IPv4 network in CIDR notation, None) or (None, the network)."""
    if not isinstance(value, str) or not value:
        return f"{variable} is not set", None
    if value != value.strip():
        return f"{variable} {value!r} has blanks around it", None
    address, slash, prefix = value.partition("/")
    if not slash:
        return f"{variable} {value!r} is not a CIDR such as 192.168.1.0/24 (an address, not a network)", None
    try:
        loose = ipaddress.ip_network(value, strict=False)
    except ValueError as exc:
        return f"{variable} {value!r} is not a CIDR such as 192.168.1.0/24 ({exc})", None
    if loose.version != 4:
        return f"{variable} {value!r} is an IPv6 network; the role makes IPv4 macvlan networks (the hosts' IPv4 addresses are kept out of it)", None
    if not prefix.isdigit():
        return f"{variable} {value!r} is not a CIDR such as 192.168.1.0/24: it gives a netmask, write {loose}", None
    if ipaddress.ip_address(address) != loose.network_address:
        return f"{variable} {value!r} is not a CIDR such as 192.168.1.0/24 (host bits zero): the network is {loose}", None
    return None, loose


def _ipv4_address(value):
    """(why VALUE is not an IPv4 address, None) or (None, the address)."""
    if not isinstance(value, str) or not value:
        return "is not set", None
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return f"{value!r} is not an IP address", None
    if address.version != 4:
        return f"{value!r} is an IPv6 address; the role makes IPv4 macvlan networks", None
    return None, address


def _interface_addresses(facts):
    """The IPv4 addresses (with their networks) an interface's facts list."""
    if not isinstance(facts, Mapping):
        return []
    found = []
    for item in [facts.get("ipv4")] + list(facts.get("ipv4_secondaries") or []):
        if isinstance(item, Mapping) and item.get("address"):
            try:
                found.append(ipaddress.ip_interface(f"{item['address']}/{item.get('netmask') or '32'}"))
            except ValueError:
                continue
    return found


def address_problems(containers, subnet, gateway, ip_range, pinned=None, host_addresses=None, shim_ips=None):
    """(problem, fix) pairs for the network's addresses: rules 2, 3, 4, 9, 10 and 14.

    Also the whole of the older filter macvlan_network_check, which returns the problems alone.
    """
    found = []
    why, net = _ipv4_network("docker_macvlan_subnet", subnet)
    if why:
        found.append((why, FIX_SUBNET))
    why, gw = _ipv4_address(gateway)
    if why:
        found.append((f"docker_macvlan_gateway {why}", FIX_GATEWAY))
    why, pool = _ipv4_network("docker_macvlan_ip_range", ip_range)
    if why:
        found.append((why, FIX_RANGE))
    if net and pool and not pool.subnet_of(net):
        found.append((f"docker_macvlan_ip_range {pool} is not inside docker_macvlan_subnet {net}", FIX_RANGE))
    if net and gw:
        if gw not in net:
            found.append((f"docker_macvlan_gateway {gw} is not inside docker_macvlan_subnet {net}", FIX_GATEWAY))
        elif net.num_addresses > 2 and gw in (net.network_address, net.broadcast_address):
            what = "network" if gw == net.network_address else "broadcast"
            found.append((f"docker_macvlan_gateway {gw} is the {what} address of docker_macvlan_subnet {net}", FIX_GATEWAY))
    if found or pool is None:
        return found

    hosts = set()
    for item in host_addresses or []:
        try:
            hosts.add(ipaddress.ip_address(str(item).split("/", 1)[0]))
        except ValueError:
            continue
    users = {}  # address -> what has it

    def check(variable, owner, value, fix):
        why, address = _ipv4_address(value)
        if why:
            found.append((f"{variable}: {owner!r} {why}", fix))
        elif address not in pool:
            found.append((f"{variable}: {owner!r} has {address}, outside docker_macvlan_ip_range {pool}", fix))
        elif address == gw:
            found.append((f"{variable}: {owner!r} has {address}, the gateway", fix))
        elif address in hosts:
            found.append((f"{variable}: {owner!r} has {address}, the address of a host", fix))
        elif address in users:
            found.append((f"{variable}: {owner!r} has {address}, which {users[address]} has too", fix))
        if address is not None:
            users.setdefault(address, f"{variable} {owner!r}")

    pinned = {} if pinned is None else pinned
    if not isinstance(pinned, Mapping):
        return found + [(f"docker_macvlan_ips must be a dict of container name to address, got {pinned!r}",
                         "map container names to addresses, e.g. {ctl: 192.168.1.200}")]
    for name in sorted(pinned, key=str):
        if name not in containers:
            found.append((
                f"docker_macvlan_ips names {name!r}, which is not a container of the cluster ({', '.join(map(str, containers))})",
                "pin only containers of docker_macvlan_containers (the playbook passes the Slurm nodes), or remove the pin",
            ))
        check("docker_macvlan_ips", name, pinned[name], FIX_PIN)
    shim_ips = shim_ips or {}
    for owner in sorted(shim_ips, key=str):
        check("docker_macvlan_host_shim_ip", owner, shim_ips[owner], FIX_SHIM_IP)

    # Like macvlan_ip_allocate and Docker's IPAM: the subnet's network and broadcast addresses, the gateway
    # and the hosts' addresses are never given out. Counted, not listed: a /8 range has 16 million addresses.
    withheld = {net.network_address, net.broadcast_address} if net.num_addresses > 2 else set()
    free = pool.num_addresses - len({a for a in withheld | {gw} | hosts if a in pool})
    if len(containers) + len(shim_ips) > free:
        found.append((
            f"docker_macvlan_ip_range {pool} has {free} usable addresses but {len(containers)} containers"
            f" and {len(shim_ips)} host shims need one each",
            "make docker_macvlan_ip_range larger (a shorter prefix), keeping it out of the DHCP range",
        ))
    return found


def docker_macvlan_problems(containers, host, network="hpclab", subnet="", gateway="", ip_range="", parent="", interfaces=None,
                            pinned=None, host_addresses=None, shim=False, shim_ip="", shim_ips=None, shim_interface="hpclab-shim",
                            image_archives=None):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._names import docker_name_problem, image_reference_problem, interface_name_problem
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import path_problem
    if isinstance(containers, (str, bytes, Mapping)) or not hasattr(containers, "__iter__"):
        raise AnsibleFilterError(f"docker_macvlan_problems: input must be the list docker_macvlan_containers, got {containers!r}")
    containers = list(containers)
    interfaces = dict(interfaces or {})
    problems = []

    def problem(text, fix):
        problems.append(f"{host}: {text}. Fix: {fix}.")

    why = docker_name_problem(network)
    if why:
        problem(f"docker_macvlan_network {network!r} {why}", "name the network e.g. hpclab")
    elif network in PREDEFINED_NETWORKS:
        problem(
            f"docker_macvlan_network {network!r} is one of Docker's predefined networks ({', '.join(PREDEFINED_NETWORKS)})",
            "give the macvlan network a name of its own, e.g. hpclab",
        )

    for text, fix in address_problems(containers, subnet, gateway, ip_range, pinned, host_addresses, shim_ips):
        problem(text, fix)
    _why, net = _ipv4_network("docker_macvlan_subnet", subnet)
    _why, pool = _ipv4_network("docker_macvlan_ip_range", ip_range)

    if net is not None:
        for name in sorted(interfaces):
            if name != "docker0" and not name.startswith("br-"):
                continue
            for bridge in _interface_addresses(interfaces[name]):
                if bridge.network.overlaps(net):
                    problem(
                        f"docker_macvlan_subnet {net} overlaps {bridge.network}, the network of the Docker bridge {name} on this "
                        "host: Docker refuses a network whose addresses another one has",
                        "set docker_macvlan_subnet to the hosts' LAN, which Docker's bridges never use (set Docker's "
                        "bip/default-address-pools elsewhere when they clash)",
                    )

    if parent not in interfaces:
        listed = ", ".join(sorted(n for n in interfaces if not n.startswith(("lo", "docker", "veth", "br-")))) or "none"
        problem(
            f"no interface {parent!r} to carry the macvlan network (variable docker_macvlan_parent; empty means the "
            f"interface of the default route); the host has {listed}",
            "set docker_macvlan_parent to the host's LAN interface",
        )
    elif net is not None:
        addresses = _interface_addresses(interfaces[parent])
        if addresses and not any(a.ip in net for a in addresses):
            problem(
                f"docker_macvlan_subnet {net} is not the LAN of the parent interface {parent} (docker_macvlan_parent), "
                f"which has {', '.join(str(a) for a in addresses)}: the containers could not reach the hosts",
                "set docker_macvlan_subnet to the network of the parent interface, or docker_macvlan_parent to the "
                "interface on that LAN",
            )

    for name in sorted(n for n, count in Counter(map(str, containers)).items() if count > 1):
        problem(f"docker_macvlan_containers lists {name!r} more than once", "list each container once")
    for name in containers:
        why = docker_name_problem(name)
        if why:
            problem(f"docker_macvlan_containers entry {name!r} {why}", "name the containers after the inventory hosts")

    if shim and not shim_ip:
        problem(
            "docker_macvlan_host_shim is true but docker_macvlan_host_shim_ip is not set",
            f"give the host an address of its own for the shim, inside docker_macvlan_ip_range ({ip_range}) and used by no container",
        )
    why = interface_name_problem(shim_interface)
    if why:
        problem(f"docker_macvlan_host_shim_interface {shim_interface!r} {why}", "keep the default hpclab-shim")
    elif shim and shim_interface == parent:
        problem(
            f"docker_macvlan_host_shim_interface {shim_interface!r} is the parent interface: the shim's unit would delete "
            "it and take the host off the network",
            "keep the default hpclab-shim",
        )
    elif shim and shim_interface in interfaces:
        # The shim's unit gives its interface one /32 address; an Ethernet-like interface with only such
        # addresses (or none) is taken for an earlier shim, anything else for one of the host's own.
        facts = interfaces[shim_interface] if isinstance(interfaces[shim_interface], Mapping) else {}
        foreign = [a for a in _interface_addresses(facts) if a.network.prefixlen != 32]
        if foreign or facts.get("type", "ether") != "ether":
            what = ", ".join(str(a) for a in foreign) or f"type {facts.get('type')}"
            problem(
                f"docker_macvlan_host_shim_interface {shim_interface!r} is an interface of the host ({what}), not a shim "
                "(one /32 address): the shim's unit would delete it",
                "name an interface the host does not have, e.g. the default hpclab-shim",
            )

    if not isinstance(image_archives, (list, tuple)):
        if image_archives is not None:
            problem(f"docker_macvlan_image_archives {image_archives!r} is not a list", "list {name, path} dicts")
        image_archives = []
    names = {}
    for index, archive in enumerate(image_archives):
        where = f"docker_macvlan_image_archives[{index}]"
        if not isinstance(archive, Mapping):
            problem(f"{where} is not a dict", "give name (the image) and path (the docker save archive on the host)")
            continue
        why = image_reference_problem(archive.get("name"))
        if why:
            problem(f"{where}: name {archive.get('name')!r} {why}", "name the image the archive holds, e.g. debian:bookworm")
        elif archive["name"] in names:
            problem(f"{where}: name {archive['name']} is also the name of {names[archive['name']]}", "load each image once")
        else:
            names[archive["name"]] = where
        why = path_problem(archive.get("path"))
        if why:
            problem(f"{where}: path {archive.get('path')!r} {why}", "give the archive's absolute path on the host, e.g. /srv/images/debian.tar")
    return problems


class FilterModule:
    """The docker_macvlan role's checks of its input."""

    def filters(self):
        return {"docker_macvlan_problems": docker_macvlan_problems}
