"""Preflight of the docker_macvlan role: every problem names its variable."""

from __future__ import annotations

import pytest
from ansible_collections.hpclab.cluster.plugins.filter.macvlan_network_check import macvlan_network_check

GOOD = {"subnet": "192.168.1.0/24", "gateway": "192.168.1.1", "ip_range": "192.168.1.192/28"}


def check(containers=("ctl", "w1", "w2"), **kwargs):
    return macvlan_network_check(list(containers), **{**GOOD, **kwargs})


def test_good_settings_have_no_problem():
    assert check(pinned={"ctl": "192.168.1.200"}, host_addresses=["192.168.1.10", "192.168.1.11"],
                 shim_ips={"n1": "192.168.1.206"}) == []


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        ({"subnet": ""}, "docker_macvlan_subnet is not set"),
        ({"subnet": "192.168.1.5/24"}, "docker_macvlan_subnet '192.168.1.5/24' is not a CIDR"),
        ({"gateway": "gw"}, "docker_macvlan_gateway 'gw' is not an IP address"),
        ({"ip_range": "10.0.0.0/28"}, "docker_macvlan_ip_range 10.0.0.0/28 is not inside docker_macvlan_subnet 192.168.1.0/24"),
        ({"gateway": "192.168.2.1"}, "docker_macvlan_gateway 192.168.2.1 is not inside docker_macvlan_subnet"),
        ({"pinned": {"w1": "192.168.1.10"}}, "docker_macvlan_ips: 'w1' has 192.168.1.10, outside docker_macvlan_ip_range 192.168.1.192/28"),
        ({"pinned": {"w1": "192.168.1.193", "w2": "192.168.1.193"}}, "docker_macvlan_ips: 'w2' has 192.168.1.193, which docker_macvlan_ips 'w1' has too"),
        ({"pinned": {"w1": "192.168.1.194"}, "host_addresses": ["192.168.1.194"]}, "'w1' has 192.168.1.194, the address of a host"),
        ({"gateway": "192.168.1.193", "pinned": {"w1": "192.168.1.193"}}, "'w1' has 192.168.1.193, the gateway"),
        ({"pinned": {"ghost": "192.168.1.194"}}, "docker_macvlan_ips names 'ghost', which is not a container"),
        (
            {"shim_ips": {"n1": "192.168.1.195", "n2": "192.168.1.195"}},
            "docker_macvlan_host_shim_ip: 'n2' has 192.168.1.195, which docker_macvlan_host_shim_ip 'n1' has too",
        ),
        (
            {"pinned": {"w1": "192.168.1.195"}, "shim_ips": {"n1": "192.168.1.195"}},
            "docker_macvlan_host_shim_ip: 'n1' has 192.168.1.195, which docker_macvlan_ips 'w1' has too",
        ),
        ({"ip_range": "192.168.1.192/31"}, "docker_macvlan_ip_range 192.168.1.192/31 has 2 usable addresses but 3 containers"),
    ],
)
def test_each_problem_names_its_variable(kwargs, expected):
    problems = check(**kwargs)
    assert any(expected in p for p in problems), problems


def test_bad_input_type_is_an_error():
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError):
        macvlan_network_check("ctl", **GOOD)
