#!/usr/bin/python
# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: lan_neighbors_info
short_description: Which addresses of an IPv4 range a machine of the LAN answers for (ARP), before containers take them
version_added: 0.3.0
description:
  - Asks the LAN once for every address of O(network) who has it (an ARP request each, broadcast from the interface
    through which the host reaches the range, as C(ip route get) says) and returns the addresses whose owner answered
    within O(timeout) seconds, with the link-layer address of each answer. A machine that holds an address answers ARP
    whether or not it answers ping; the host's neighbour cache is neither read nor changed (a cached entry may be
    stale).
  - C(playbooks/ready.yml) runs it on one container host before any change. An address of the macvlan range
    (C(docker_macvlan_ip_range)) that a machine other than the cluster's containers, shims and hosts answers for
    would be handed to a Slurm container, and both would lose packets (filter hpclab.cluster.hosts_ready).
  - A host does not reach its own macvlan containers through their parent interface (without the shim), so those do
    not answer there; the check does not need them (they are the cluster's own).
  - Needs root (a raw packet socket, C(CAP_NET_RAW)).
author:
  - hpclab.cluster contributors (@hpclab)
extends_documentation_fragment:
  - hpclab.cluster.attributes
  - hpclab.cluster.attributes.read_only
options:
  network:
    description:
      - The IPv4 network to probe, in CIDR notation, at most 1024 addresses (a /22). Every address is asked, its first
        and last too (Docker hands them out where the range lies inside a larger subnet).
    type: str
    required: true
  timeout:
    description: Seconds to listen for answers after the last request.
    type: int
    default: 1
requirements:
  - C(ip) (iproute2) on the host.
"""

EXAMPLES = r"""
- name: Which addresses of the macvlan range the LAN already uses
  hpclab.cluster.lan_neighbors_info:
    network: "{{ docker_macvlan_ip_range }}"
  register: lan
"""

RETURN = r"""
probed:
  description: How many addresses were pinged.
  returned: always
  type: int
  sample: 32
interface:
  description: The interface the requests went out of, and its address.
  returned: always
  type: dict
  sample: {dev: eth0, address: 192.168.1.10}
answered:
  description: The addresses of O(network) whose owner answered, sorted.
  returned: always
  type: list
  elements: dict
  contains:
    address:
      description: The IPv4 address.
      type: str
    lladdr:
      description: The link-layer (MAC) addresses that answered for it, comma-separated (two or more - a conflict).
      type: str
  sample: [{address: 192.168.1.205, lladdr: "b8:27:eb:12:34:56"}]
"""

import json
import select
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.hpclab.cluster.plugins.module_utils._lan import ETH_P_ARP, answered, arp_reply, arp_request, range_addresses


def route(module, address):
    """(interface, source address) through which the host reaches ADDRESS."""
    ip = module.get_bin_path("ip", required=True)
    rc, out, err = module.run_command([ip, "-j", "route", "get", address])
    if rc != 0:
        module.fail_json(msg=f"ip route get {address} failed: {err.strip()}", rc=rc)
    found = json.loads(out)[0]
    return found["dev"], found.get("prefsrc", "0.0.0.0")


def probe(dev, src_ip, addresses, timeout):
    """Who-has for each address out of DEV, then the (address, MAC) of every reply heard until TIMEOUT s after."""
    with open(f"/sys/class/net/{dev}/address", encoding="ascii") as handle:
        src_mac = handle.read().strip()
    replies = []
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP)) as sock:
        sock.bind((dev, 0))
        for address in addresses:
            sock.send(arp_request(src_mac, src_ip, address))
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([sock], [], [], left)[0]:
                break
            reply = arp_reply(sock.recv(65535))
            if reply:
                replies.append(reply)
    return replies


def main():
    module = AnsibleModule(
        argument_spec={"network": {"type": "str", "required": True}, "timeout": {"type": "int", "default": 1}},
        supports_check_mode=True,
    )
    network, timeout = module.params["network"], module.params["timeout"]
    try:
        addresses = range_addresses(network)
    except ValueError as error:
        module.fail_json(msg=f"network: {error}")
    if timeout < 1:
        module.fail_json(msg=f"timeout: {timeout} is not a number of seconds of 1 or more")
    dev, src_ip = route(module, addresses[0])
    try:
        replies = probe(dev, src_ip, addresses, timeout)
    except OSError as error:
        module.fail_json(msg=f"could not ask the LAN through {dev}: {error}")
    module.exit_json(changed=False, probed=len(addresses), interface={"dev": dev, "address": src_ip},
                     answered=answered(replies, network))


if __name__ == "__main__":
    main()
