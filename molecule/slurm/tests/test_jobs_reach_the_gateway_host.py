"""Every job reaches the LLM gateway's host (issue 56): the gateway answers on the first llm host's own address (cn2
here, which also runs a slurmd container), and a container on a macvlan network cannot reach its own host's address
without the docker_macvlan shim ("No route to host" was a gpu-partition job on the lab's gpu1). A stand-in for the
gateway (a small HTTP server on cn2's address, port 4000) answers a job on cn2 and a job on cn1; without the shim on
cn2 the Slurm checks refuse the layout before any change."""

from __future__ import annotations

import shlex
import uuid

import pytest
from helpers import get_host, inventory_hosts, run_playbook
from slurm_checks import HOME, USER

CONTROLLER = inventory_hosts("slurm_master")[0]
WORKERS = inventory_hosts("slurm_worker")
GATEWAY_HOST = inventory_hosts("llm")[0]
PORT = 4000
UNIT = "hpclab-test-gateway-stand-in"
FETCH = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().strip())"


def address(name: str) -> str:
    return get_host(name).interface("eth0").addresses[0]


@pytest.fixture
def stand_in():
    """An HTTP server on the gateway host's own address, serving one file; yields its URL."""
    host, name = get_host(GATEWAY_HOST), f"reach-{uuid.uuid4().hex[:8]}"
    host.check_output(f"mkdir -p /run/{UNIT} && echo {name} > /run/{UNIT}/{name}")
    host.check_output(f"systemd-run --unit={UNIT} --collect python3 -m http.server {PORT} --bind {address(GATEWAY_HOST)} "
                      f"--directory /run/{UNIT}")
    host.check_output(f"for i in $(seq 50); do ss -Hltn sport = :{PORT} | grep -q . && exit 0; sleep 0.2; done; exit 1")
    yield f"http://{address(GATEWAY_HOST)}:{PORT}/{name}", name
    host.run(f"systemctl stop {UNIT}; rm -rf /run/{UNIT}")


@pytest.mark.parametrize("worker", WORKERS)
def test_a_job_on_each_worker_reaches_the_gateway_host(stand_in, worker):
    url, name = stand_in
    job = f"srun -w {worker} python3 -c {shlex.quote(FETCH)} {url}"
    result = get_host(CONTROLLER).run(f"docker exec -u {USER} -w {HOME} {CONTROLLER} bash -c {shlex.quote(job)}")
    assert result.rc == 0 and result.stdout.strip() == name, (worker, result.stdout, result.stderr)


def test_the_gateway_host_without_the_shim_is_refused_before_any_change():
    run = run_playbook(extra_vars={"docker_macvlan_host_shim": False})
    assert run.rc != 0 and run.total_changed == 0, run
    assert (f"{GATEWAY_HOST}: jobs in its slurmd container call the LLM gateway (OPENAI_BASE_URL of each user's llm.env) "
            f"on {GATEWAY_HOST}'s own address, which a container on a macvlan network cannot reach") in run.output, run
    assert "Fix: give the host the macvlan shim" in run.output, run
