# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: docker_network_containers
short_description: The containers on a Docker network and their addresses, from one docker_host_info read of its engine
version_added: 0.1.0
description:
  - "Reads the result of C(community.docker.docker_host_info) with O(networks=true), O(containers=true) and
    O(verbose_output=true) and returns the containers connected to the network O(name), each with its IPv4 address
    and prefix length: what the network's inspect (C(community.docker.docker_network)'s result, C(Containers)) lists.
    A stopped container keeps its settings but has no endpoint on the network; like the inspect, it is not listed."
  - With P(hpclab.cluster.docker_network_current#filter), a role that skipped C(community.docker.docker_network) for a
    network already as wanted still knows which addresses are taken.
  - Pure. An empty dict where the read has no such network.
options:
  name:
    description: The network's name.
    type: str
    required: true
extends_documentation_fragment:
  - hpclab.cluster.docker_host_info
"""

EXAMPLES = r"""
- name: The containers of this host on the network lan, each with its address
  ansible.builtin.set_fact:
    lan_containers: "{{ engine_read | hpclab.cluster.docker_network_containers('lan') }}"

# {"networks": [{"Name": "lan", "Id": "2039"}],
#  "containers": [{"Names": ["/node1"], "NetworkSettings": {"Networks": {"lan": {
#      "NetworkID": "2039", "EndpointID": "1436", "IPAddress": "192.168.1.192", "IPPrefixLen": 24}}}}]}
#   | hpclab.cluster.docker_network_containers("lan")
# => {"node1": "192.168.1.192/24"}
"""

RETURN = r"""
_value:
  description: Container name (without the leading C(/)) to its IPv4 address with prefix length, e.g. C(192.168.1.192/24).
  type: dict
"""

from ansible_collections.hpclab.cluster.plugins.filter.docker_network_current import _network, _read


def docker_network_containers(host_info, name):
    """The containers connected to the network, {name: address/prefix}, as the network's inspect lists them."""
    network = _network(_read(host_info, "docker_network_containers"), name)
    if network is None:
        return {}
    found = {}
    for container in host_info.get("containers") or []:
        endpoint = ((container.get("NetworkSettings") or {}).get("Networks") or {}).get(name) or {}
        # A stopped container keeps its settings but has no endpoint: the network's inspect does not list it.
        if endpoint.get("NetworkID") not in (None, network.get("Id")) or not endpoint.get("EndpointID"):
            continue
        address = f"{endpoint['IPAddress']}/{endpoint['IPPrefixLen']}" if endpoint.get("IPAddress") else ""
        for container_name in container.get("Names") or []:
            found[container_name.lstrip("/")] = address
    return found


class FilterModule:
    """Docker network filter."""

    def filters(self):
        return {"docker_network_containers": docker_network_containers}
