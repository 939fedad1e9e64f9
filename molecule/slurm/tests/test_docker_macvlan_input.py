"""Bad input to the docker_macvlan role, run against the converged containerized Slurm cluster.

Each run of playbooks/slurm.yml fails in the role's preflight, before any change, naming the host, the
variable and the fix; afterwards every node's Docker engine has the macvlan network with the same
settings, no Slurm container restarted or moved, the controller's node still reaches its container
through the shim, and sinfo still lists both workers.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time

import pytest
from helpers import get_host, inventory_hosts, run_playbook

CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
NODES = [CONTROLLER] + WORKERS
testinfra_hosts = [CONTROLLER]
SLURM_PLAYBOOK = "../../playbooks/slurm.yml"
ROLE_ALONE = "docker_macvlan_only.yml"
NETWORK, CONTROLLER_IP = "slurm", "172.31.240.200"
PREFLIGHT = "../../playbooks/preflight.yml"
# The scenario's LAN (molecule.yml's docker_networks) and the macvlan range in it (group_vars).
LAN, IP_RANGE = "hpclab-molecule-slurm", "172.31.240.192/28"


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


def assert_fails_before_any_change(extra_vars: dict, messages: list[str], playbook: str = SLURM_PLAYBOOK, *args: str):
    before = network_and_containers()
    run = run_playbook(playbook, *args, extra_vars=extra_vars)
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


# The role alone, a run limited by --tags to one step: the checks run first (they carried only the role's own tags),
# and each step finds what the others read (before, under --tags docker_macvlan_network the checks were skipped).
def test_bad_input_in_a_run_limited_by_tags_fails_before_any_change():
    assert_fails_before_any_change({"docker_macvlan_gateway": "172.31.240.300"},
                                   [f"{name}: docker_macvlan_gateway '172.31.240.300' is not an IP address" for name in NODES],
                                   ROLE_ALONE, "--tags", "docker_macvlan_network")


def test_each_step_of_the_role_alone_by_its_tag_changes_nothing():
    before = network_and_containers()
    for tag in ("docker_macvlan_install", "docker_macvlan_network", "docker_macvlan_shim", "docker_macvlan_addresses"):
        run = run_playbook(ROLE_ALONE, "--tags", tag)
        assert run.rc == 0 and run.total_changed == 0, (tag, run)
        assert "preflight | Check the network" in run.output, (tag, run)
    assert network_and_containers() == before
    answers_as_before()


# A worker's Slurm container taken off the macvlan network (as when the network is removed and made again: the
# container runs on with no network, its settings and their label unchanged). Before, the next run saw the label and
# left it so (changed=0 on the container, sinfo: "Unable to establish control machine address" inside it); now the
# read shows it off its network and the run puts it back at its address, without restarting it. Meanwhile slurmctld
# set the node DOWN (Not responding), and asks such a node to register only every 20th ping (over a minute here):
# the run waited 60 s for it in vain (a clean-clone make test, 2026-12-06). Now it has slurmd register at once (SIGHUP).
def test_a_slurm_container_off_its_network_is_put_back_by_the_next_run_and_its_node_returns():
    worker = WORKERS[-1]
    before = network_and_containers()[worker]
    controller = get_host(CONTROLLER)
    get_host(worker).check_output(f"docker network disconnect {NETWORK} {worker}")
    node = f"docker exec {CONTROLLER} sinfo --noheader --Node --nodes {worker} --format '%T %E'"
    try:
        # SlurmdTimeout is 20 s in this scenario.
        deadline = time.monotonic() + 90
        while not controller.check_output(node).startswith("down* Not responding"):
            assert time.monotonic() < deadline, controller.check_output(node)
            time.sleep(1)
    finally:
        run = run_playbook(SLURM_PLAYBOOK)  # puts the container back, also for the tests after this one
    assert run.rc == 0, run
    assert f"changed: [{worker}]" in run.output.split("container | The container of slurmd]", 1)[1].split("TASK [", 1)[0], run
    sighup = f"Have slurmd register again, its container back on the network, on {worker}]"
    assert f"changed: [{worker}]" in run.output.split(sighup, 1)[1].split("TASK [", 1)[0], run
    # Back at its address, the same container still running (its jobs would run on), and its node in service.
    assert network_and_containers()[worker] == before
    assert controller.check_output(node).startswith("idle ")
    answers_as_before()
    again = run_playbook(SLURM_PLAYBOOK)
    assert again.rc == 0 and again.total_changed == 0, again


# The controller's container taken off the network in the same way: slurmctld runs on, reaches no slurmd, and sets
# the workers DOWN (Not responding). The next run puts it back as above; before, the workers then stayed down until
# slurmctld's own registration request, every 20th ping (over two minutes here, half an hour with the default
# SlurmdTimeout). Now slurmctld gets a SIGHUP and every slurmd registers at once.
def test_the_controller_container_off_its_network_is_put_back_by_the_next_run_and_the_workers_return():
    before = network_and_containers()[CONTROLLER]
    host = get_host(CONTROLLER)
    since = host.check_output("date -u +%Y-%m-%dT%H:%M:%SZ")
    log = f"docker logs --timestamps --since {since} {CONTROLLER} 2>&1"
    host.check_output(f"docker network disconnect {NETWORK} {CONTROLLER}")
    # slurmctld logs to docker logs; SlurmdTimeout is 20 s in this scenario: the workers were set DOWN 22 to 28 s
    # after the disconnect here (25 s on 2026-12-07). Once, under CI's three suites at once, slurmctld logged nothing
    # at all in 180 s (no ping failed: its ping agent had not ended, so it sent no new ping). The workers' return
    # after the run is asserted either way; the test prints which of the two it proved, with slurmctld's log.
    try:
        deadline, set_down = time.monotonic() + 150, ""
        while "not responding, setting DOWN" not in set_down and time.monotonic() < deadline:
            time.sleep(2)
            set_down = host.check_output(log)
        if "not responding, setting DOWN" in set_down:
            print(f"the workers were set DOWN within {150 - (deadline - time.monotonic()):.0f} s")
        else:
            print("slurmctld did not set the workers DOWN within 150 s; its log since the previous test:\n"
                  + host.check_output(f"docker logs --timestamps --tail 40 {CONTROLLER} 2>&1"))
    finally:
        run = run_playbook(SLURM_PLAYBOOK)  # puts the container back, also for the tests after this one
    assert run.rc == 0, run
    assert f"changed: [{CONTROLLER}]" in run.output.split("container | The container of slurmctld]", 1)[1].split("TASK [", 1)[0], run
    assert f"changed: [{CONTROLLER}]" in run.output.split(
        "Have every slurmd register again, slurmctld's container back on the network]", 1)[1].split("TASK [", 1)[0], run
    # Back at its address, the same container still running, and both workers in service within seconds.
    assert network_and_containers()[CONTROLLER] == before
    nodes = f"docker exec {CONTROLLER} sinfo --noheader --Node --format '%N %T'"
    deadline = time.monotonic() + 15
    while sorted(set(host.check_output(nodes).splitlines())) != sorted(f"{w} idle" for w in WORKERS):
        assert time.monotonic() < deadline, (host.check_output(nodes), set_down)
        time.sleep(1)
    answers_as_before()
    again = run_playbook(SLURM_PLAYBOOK)
    assert again.rc == 0 and again.total_changed == 0, again


# A worker whose Docker engine is installed but stopped (an admin stopped it), and a run of the role alone limited by
# --tags to the network step. The engine read runs under any tags; before, it failed there ("Error connecting"):
# the engine was started only by the install step. Now the installed engine is started under any tags too. The
# worker's Slurm container (restart policy unless-stopped) starts with its engine, and its node returns.
def test_a_stopped_engine_is_started_by_a_run_limited_by_tags_to_another_step():
    worker = WORKERS[0]
    node = get_host(worker)
    node.check_output("systemctl stop docker.socket docker.service")
    try:
        run = run_playbook(ROLE_ALONE, "--tags", "docker_macvlan_network")
    finally:
        node.run("systemctl start docker.service")  # whatever the run did, for the tests after this one
    assert run.rc == 0, run
    assert f"changed: [{worker}]" in run.output.split("install | Start Docker at boot and now]", 1)[1].split("TASK [", 1)[0], run
    assert run.total_changed == 1, run
    controller = get_host(CONTROLLER)
    state = f"docker exec {CONTROLLER} sinfo --noheader --Node --nodes {worker} --format %T"
    deadline = time.monotonic() + 90
    while set(controller.check_output(state).split()) != {"idle"}:
        assert time.monotonic() < deadline, controller.check_output(state)
        time.sleep(1)
    answers_as_before()


@pytest.fixture
def stranger():
    """A machine of the LAN that is no host of the inventory (a plain container on the scenario's network) holding an
    address of the macvlan range that no Slurm container or shim holds: (its address, its MAC)."""
    held = set()
    for name in NODES:
        host = get_host(name)
        held |= {c["IPv4Address"].split("/")[0] for c in json.loads(host.check_output(f"docker network inspect {NETWORK}"))[0]["Containers"].values()}
        held |= {a["local"] for i in json.loads(host.check_output("ip -j -4 addr show")) for a in i["addr_info"]}
    address = [str(a) for a in ipaddress.ip_network(IP_RANGE) if str(a) not in held][-1]
    name = "hpclab-stranger"
    subprocess.run(["docker", "run", "-d", "--rm", "--name", name, "--network", LAN, "--ip", address, "--entrypoint", "sleep",
                    os.environ.get("HPCLAB_IMAGE", "hpclab-node:bookworm"), "900"], check=True, capture_output=True)
    try:
        info = json.loads(subprocess.run(["docker", "inspect", name], check=True, capture_output=True, text=True).stdout)[0]
        yield address, info["NetworkSettings"]["Networks"][LAN]["MacAddress"]
    finally:
        subprocess.run(["docker", "rm", "-f", name], check=False, capture_output=True)


def test_an_address_of_the_range_a_stranger_holds_fails_the_preflight_before_any_change(stranger):
    """Issue 60: the read-only preflight asks the LAN for every address of the macvlan range (from the controller's node,
    through its shim). The converge passed it with the cluster's own containers and shims answering (none is a
    stranger); a machine outside the inventory on a free address of the range is named, with its MAC, in the table and
    in the failure, in check mode, and nothing changes."""
    address, mac = stranger
    before = network_and_containers()
    run = run_playbook(PREFLIGHT, check=True)
    assert run.rc != 0 and run.total_changed == 0, run
    assert f"TAKEN {address} ({mac})" in run.output, run
    assert (f"{CONTROLLER}: in docker_macvlan_ip_range {IP_RANGE}, {address} ({mac}) answered from a machine of the LAN that "
            "is none of this inventory's container hosts, shims or containers") in run.output, run
    assert "Fix: take the range out of the LAN's DHCP pool" in run.output, run
    assert network_and_containers() == before
