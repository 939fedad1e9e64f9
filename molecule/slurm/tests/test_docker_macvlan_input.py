"""Bad input to the docker_macvlan role, run against the converged containerized Slurm cluster.

Each run of playbooks/slurm.yml fails in the role's preflight, before any change, naming the host, the
variable and the fix; afterwards every node's Docker engine has the macvlan network with the same
settings, no Slurm container restarted or moved, the controller's node still reaches its container
through the shim, and sinfo still lists both workers.
"""

from __future__ import annotations

import ipaddress
import json

import pytest
from helpers import get_host, inventory_hosts, run_playbook

CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
NODES = [CONTROLLER] + WORKERS
testinfra_hosts = [CONTROLLER]
SLURM_PLAYBOOK = "../../playbooks/slurm.yml"
NETWORK, CONTROLLER_IP = "slurm", "172.31.240.200"


def network_and_containers() -> dict:
    """Per node: the macvlan network as its engine has it, and its Slurm container's id, start and address."""
    state = {}
    for name in NODES:
        host = get_host(name)
        network = json.loads(host.check_output(f"docker network inspect {NETWORK}"))[0]
        container = json.loads(host.check_output(f"docker inspect {name}"))[0]
        state[name] = {
            "network": (network["Id"], network["Driver"], network["Options"], network["IPAM"]["Config"]),
            "container": (container["Id"], container["State"]["StartedAt"]),
            "address": container["NetworkSettings"]["Networks"][NETWORK]["IPAddress"],
        }
    return state


def docker0_network(name: str) -> ipaddress.IPv4Network:
    """The network of the Docker bridge docker0 on node NAME."""
    address = get_host(name).check_output("ip -o -4 address show dev docker0").split()[3]
    return ipaddress.ip_interface(address).network


def answers_as_before():
    """What users of the network rely on, asserted after each bad run."""
    controller = get_host(CONTROLLER)
    assert controller.run(f"timeout 5 bash -c 'exec 3<>/dev/tcp/{CONTROLLER_IP}/6817'").rc == 0  # through the shim
    nodes = controller.check_output(f"docker exec {CONTROLLER} sinfo --noheader --Node --format=%N")
    assert sorted(set(nodes.split())) == sorted(WORKERS), nodes


def assert_fails_before_any_change(extra_vars: dict, messages: list[str]):
    before = network_and_containers()
    run = run_playbook(SLURM_PLAYBOOK, extra_vars=extra_vars)
    assert run.rc != 0, run
    for message in messages:
        assert message in run.output, (message, run)
    assert "Fix:" in run.output, run
    assert run.total_changed == 0, run
    assert "preflight |" in run.output and "network | " not in run.output, run
    assert network_and_containers() == before
    answers_as_before()


BAD_INPUTS = [
    pytest.param(
        {"docker_macvlan_host_shim_interface": "eth0"},
        [f"{CONTROLLER}: docker_macvlan_host_shim_interface 'eth0' is the parent interface: the shim's unit would delete it"],
        id="shim-interface-is-the-parent",
    ),
    pytest.param(
        {"docker_macvlan_gateway": "172.31.240.300"},
        [f"{name}: docker_macvlan_gateway '172.31.240.300' is not an IP address" for name in NODES],
        id="gateway-typo",
    ),
    pytest.param(
        {"docker_macvlan_network": "bridge"},
        [f"{name}: docker_macvlan_network 'bridge' is one of Docker's predefined networks" for name in NODES],
        id="predefined-network",
    ),
]


@pytest.mark.parametrize("extra_vars,messages", BAD_INPUTS)
def test_bad_input_fails_before_any_change_and_the_network_answers_as_before(extra_vars, messages):
    assert_fails_before_any_change(extra_vars, messages)


def test_a_subnet_of_the_engines_own_bridge_fails_before_any_change():
    """Docker would refuse it ("overlaps"), after the engine was installed on a new host."""
    overlap = docker0_network(CONTROLLER)
    hosts = list(overlap.hosts())
    extra_vars = {
        "docker_macvlan_subnet": str(overlap),
        "docker_macvlan_gateway": str(hosts[-1]),
        "docker_macvlan_ip_range": str(ipaddress.ip_network(f"{hosts[len(hosts) // 2]}/28", strict=False)),
    }
    assert_fails_before_any_change(
        extra_vars, [f"{CONTROLLER}: docker_macvlan_subnet {overlap} overlaps {overlap}, the network of the Docker bridge docker0"]
    )
