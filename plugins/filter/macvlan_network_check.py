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
  - The docker_macvlan role checks its whole input with P(hpclab.cluster.docker_macvlan_problems#filter),
    which runs these checks too and adds the host and the fix to each message.
  - "Checked: O(subnet) and O(ip_range) are given and IPv4 networks in CIDR notation, O(gateway) an IPv4
    address; O(ip_range) lies inside O(subnet) and O(gateway) inside O(subnet), not its network or
    broadcast address; every pinned container address (O(pinned)) and every host shim
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

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.docker_macvlan_problems import address_problems


def macvlan_network_check(containers, subnet=None, gateway=None, ip_range=None, pinned=None, host_addresses=None, shim_ips=None):
    """Filter entry point: see DOCUMENTATION."""
    if isinstance(containers, (str, bytes, Mapping)) or not hasattr(containers, "__iter__"):
        raise AnsibleFilterError(f"macvlan_network_check: input must be a list of container names, got {containers!r}")
    return [text for text, _fix in address_problems(list(containers), subnet, gateway, ip_range, pinned, host_addresses, shim_ips)]


class FilterModule:
    """Docker macvlan settings check."""

    def filters(self):
        return {"macvlan_network_check": macvlan_network_check}
