# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: docker_network_current
short_description: Whether a Docker network already has the settings wanted, from one docker_host_info read of its engine
version_added: 0.1.0
description:
  - "Reads the result of C(community.docker.docker_host_info) with O(networks=true) and O(verbose_output=true) and
    tells whether the network O(name) exists with the driver O(driver), every driver option of O(options) with the
    same value, and, for every IPAM configuration of O(ipam), one of the network's with the same values: what
    C(community.docker.docker_network) compares for these parameters (more options or configurations on the
    network do not matter to it either)."
  - A role can then skip C(community.docker.docker_network) where the network is already as wanted (one read of the
    engine per host instead of one more module call); the module still decides, creates and changes everywhere else.
  - Pure. A read without O(networks) or O(verbose_output) has no settings of the network, so no network is current by it.
  - P(hpclab.cluster.docker_network_containers#filter) gives the network's containers from the same read.
options:
  name:
    description: The network's name.
    type: str
    required: true
  driver:
    description: The network's driver, e.g. V(macvlan).
    type: str
    required: true
  options:
    description: Driver options the network must have with these values (Docker's C(Options), e.g. C(parent)).
    type: dict
    default: {}
  ipam:
    description:
      - IPAM configurations, each with Docker's keys (C(Subnet), C(Gateway), C(IPRange), C(AuxiliaryAddresses)); each
        must equal one configuration of the network in every key given (a null value is not compared).
    type: list
    elements: dict
    default: []
extends_documentation_fragment:
  - hpclab.cluster.docker_host_info
"""

EXAMPLES = r"""
- name: The images, containers and networks of this host's engine
  community.docker.docker_host_info:
    networks: true
    containers: true
    verbose_output: true
  register: engine_read

- name: The macvlan network, unless the engine has it with these settings
  community.docker.docker_network:
    name: lan
    driver: macvlan
    driver_options:
      parent: eth0
    ipam_config:
      - subnet: 192.168.1.0/24
        gateway: 192.168.1.1
  when: >-
    not engine_read | hpclab.cluster.docker_network_current('lan', 'macvlan', {'parent': 'eth0'},
                                                            [{'Subnet': '192.168.1.0/24', 'Gateway': '192.168.1.1'}])

# {"networks": [{"Name": "lan", "Driver": "macvlan", "Options": {"parent": "eth0", "macvlan_mode": "bridge"},
#                "IPAM": {"Config": [{"Subnet": "192.168.1.0/24", "Gateway": "192.168.1.1"}]}}]}
#   | hpclab.cluster.docker_network_current("lan", "macvlan", {"parent": "eth0"}, [{"Subnet": "192.168.1.0/24"}])
# => true
"""

RETURN = r"""
_value:
  description: Whether the network exists with the driver, the driver options and the IPAM configurations given.
  type: bool
"""

from ansible.errors import AnsibleFilterError


def _read(host_info, filter_name):
    if not isinstance(host_info, dict):
        raise AnsibleFilterError(f"{filter_name} expects the result of docker_host_info, got {type(host_info).__name__}")
    return host_info


def _network(host_info, name):
    """The network of that name in the read, or None."""
    return next((n for n in host_info.get("networks") or [] if isinstance(n, dict) and n.get("Name") == name), None)


def docker_network_current(host_info, name, driver, options=None, ipam=None):
    """Filter entry point: see DOCUMENTATION."""
    network = _network(_read(host_info, "docker_network_current"), name)
    if network is None or network.get("Driver") != driver:
        return False
    have = network.get("Options") or {}
    if any(have.get(key) != value for key, value in (options or {}).items()):
        return False
    configs = (network.get("IPAM") or {}).get("Config") or []
    for wanted in ipam or []:
        if not any(all(config.get(key) == value for key, value in wanted.items() if value is not None) for config in configs):
            return False
    return True


class FilterModule:
    """Docker network filter."""

    def filters(self):
        return {"docker_network_current": docker_network_current}
