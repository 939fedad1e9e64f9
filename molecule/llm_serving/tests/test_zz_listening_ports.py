"""Last in the scenario (hence the name): every TCP port llm1 listens on, and what answers there without credentials,
from the test machine (outside the node) for the ports on its cluster address and from the node itself for those on
loopback (issue 21's security check). Printed as a table for the closing note. The gateway and the model servers
answer 401, the web UIs only their login page, Slurm's daemons (MUNGE-authenticated) no HTTP at all, and the
monitoring layer, which this one-node lab puts on llm1 too (Prometheus, Alertmanager, node_exporter), 401; its Postfix
listens on loopback only."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

from helpers import get_host, http_status, inventory_hosts

testinfra_hosts = inventory_hosts("llm")
NODE = testinfra_hosts[0]
GATEWAY, WEB_UIS, MODEL_SERVERS = 4000, {7860, 7861}, {8101, 8102}
SLURM_DAEMONS = {6817, 6818}
# The monitoring layer: Prometheus, Alertmanager, node_exporter, behind the monitoring role's basic auth (on a full
# cluster Prometheus and Alertmanager run on the controller, node_exporter on every node).
MONITORING = {9090, 9093, 9100}
# The monitoring role's Postfix, which Alertmanager hands its mails to: SMTP on loopback only.
MAIL = 25
# Docker's embedded DNS resolver in each container of the lab (its network namespace, not the collection's).
DOCKER_DNS = "127.0.0.11"
GRADIO_CONFIG = re.compile(r"window\.gradio_config = (.*?);</script>", re.S)


def node():
    return get_host(NODE)


def listening() -> dict[int, str]:
    """Port -> the address it listens on, from ss (TCP, listening)."""
    ports = {}
    for line in node().check_output("ss -ltnH").splitlines():
        local = line.split()[3]
        address, port = local.rsplit(":", 1)
        ports.setdefault(int(port), address.strip("[]"))
    return ports


def answer_from_outside(address: str, port: int, path: str) -> tuple[str, str]:
    try:
        with urllib.request.urlopen(f"http://{address}:{port}{path}", timeout=10) as response:
            return str(response.status), response.read(200_000).decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return str(error.code), ""
    except Exception as error:  # noqa: BLE001 - a port that speaks no HTTP: what matters is that it gave nothing
        return f"no-http ({type(error).__name__})", ""


def test_every_listening_port_answers_nothing_but_401_and_the_login_page():
    cluster_address = node().interface("eth0").addresses[0]
    rows, unexpected = [], []
    for port, address in sorted(listening().items()):
        # The web UIs' page at /, the monitoring daemons' metrics, an OpenAI API's list of models everywhere else.
        path = "/" if port in WEB_UIS else "/metrics" if port in MONITORING else "/v1/models"
        if address == DOCKER_DNS:
            rows.append(f"{port:>6}  {address:<15} {'-':<15} {'-':<26} Docker's DNS resolver (the lab's)")
            continue
        if address.startswith("127.") or address == "::1":
            where = "node, loopback"
            status = http_status(NODE, f"http://{address}:{port}{path}")
            page = ""
        else:
            where = "test machine"
            status, page = answer_from_outside(cluster_address if address in ("0.0.0.0", "*", "::") else address, port, path)
        if port in WEB_UIS:
            found = GRADIO_CONFIG.search(page)
            login_only = status == "200" and found and json.loads(found.group(1)).get("auth_required") is True
            verdict = "login page" if login_only else "OPEN"
        elif status == "401" or status.startswith("no-http"):
            verdict = "401" if status == "401" else "no HTTP"
        else:
            verdict = "OPEN"
        rows.append(f"{port:>6}  {address:<15} {where:<15} {status:<26} {verdict}")
        if verdict == "OPEN" or (port in (GATEWAY, *MODEL_SERVERS, *MONITORING) and status != "401"):
            unexpected.append(port)
    print("\n  port  address         asked from      answer (GET, no credentials)  verdict\n" + "\n".join(rows))
    ports = listening()
    assert GATEWAY in ports and WEB_UIS <= set(ports) and MODEL_SERVERS <= set(ports) and MONITORING <= set(ports), ports
    assert all(ports[p] in ("127.0.0.1", "::1") for p in MODEL_SERVERS), ports
    assert ports.get(MAIL, "127.0.0.1") in ("127.0.0.1", "::1"), ports
    assert not unexpected, rows
    others = {p for p, a in ports.items() if a != DOCKER_DNS} - {GATEWAY, MAIL} - WEB_UIS - MODEL_SERVERS - SLURM_DAEMONS - MONITORING
    assert others == set(), rows
