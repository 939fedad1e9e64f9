"""Reading Prometheus and Alertmanager from the monitoring host, and following a real fault until its
alert fires in Alertmanager's API (/api/v2/alerts) and until it resolves, for every scenario that runs
the monitoring layer. Each measured time is printed by the test that measures it (pytest -rA shows it in the log)."""

from __future__ import annotations

import json
import re
import shlex
import time
from urllib.parse import quote

import pytest
from helpers import get_host, inventory_hosts, journal_on_failure, run_playbook


def monitoring_server() -> str:
    return inventory_hosts("monitoring")[0]


def listen_address(name: str | None = None, default_file: str = "/etc/default/prometheus") -> str:
    """HOST:PORT of --web.listen-address in a daemon's EnvironmentFile (ARGS="...")."""
    args = get_host(name or monitoring_server()).file(default_file).content_string
    return re.search(r"--web\.listen-address=([^\s\"]+)", args).group(1)


PASSWORD_FILE = "/etc/prometheus/hpclab-web-password"
USERNAME = "hpclab"
# GET with basic auth, the password read on the monitoring host from the file the role keeps it in (never shown here).
HTTP_GET = """
import base64, sys, urllib.request
password = open(sys.argv[3]).read().strip()
request = urllib.request.Request(sys.argv[1])
request.add_header("Authorization", "Basic " + base64.b64encode(f"{sys.argv[2]}:{password}".encode()).decode())
print(urllib.request.urlopen(request, timeout=10).read().decode())
"""


def http_json(url: str):
    """GET url from the monitoring host (the services listen on its cluster address only), logged in as the role's
    web user."""
    command = f"python3 -c {shlex.quote(HTTP_GET)} {shlex.quote(url)} {USERNAME} {PASSWORD_FILE}"
    return json.loads(get_host(monitoring_server()).check_output(command))


def prometheus(path: str):
    return http_json(f"http://{listen_address()}{path}")


def query(expr: str) -> list:
    """[(labels, value)] of an instant PromQL query."""
    data = prometheus(f"/api/v1/query?query={quote(expr)}")
    assert data["status"] == "success", data
    return [(r["metric"], float(r["value"][1])) for r in data["data"]["result"]]


def value(expr: str) -> float | None:
    result = query(expr)
    return result[0][1] if result else None


def alerts() -> list:
    """Active alerts in Alertmanager: [{labels}] (a resolved alert is no longer listed)."""
    address = listen_address(default_file="/etc/default/prometheus-alertmanager")
    url = f"http://{address}/api/v2/alerts?active=true&silenced=false&inhibited=false"
    return [a["labels"] for a in http_json(url) if a["status"]["state"] == "active"]


def firing(name: str, **labels) -> bool:
    return any(a.get("alertname") == name and all(a.get(k) == v for k, v in labels.items()) for a in alerts())


def wait_for(predicate, timeout: float, what: str, interval: float = 2.0) -> float:
    """Seconds until predicate() was true; fails naming `what` after timeout."""
    start = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            pytest.fail(f"{what}: not within {timeout} s (alerts now: {alerts()})")
        time.sleep(interval)


def follow_fault(name: str, alert: str, labels: dict, timeout: float = 180) -> float:
    took = wait_for(lambda: firing(alert, **labels), timeout, f"{alert} {labels} firing")
    print(f"{name}: {alert} {labels} firing in Alertmanager after {took:.1f} s")
    return took


def follow_repair(name: str, alert: str, labels: dict, timeout: float = 240) -> float:
    took = wait_for(lambda: not firing(alert, **labels), timeout, f"{alert} {labels} resolved")
    print(f"{name}: {alert} {labels} resolved after {took:.1f} s")
    return took


def converge_monitoring_twice(playbook: str = "monitoring_only.yml") -> None:
    """playbooks/monitoring.yml alone over the converged cluster (through the scenario's PLAYBOOK), then once more:
    the second run changes nothing and restarts no node_exporter."""
    nodes = inventory_hosts("all")
    first = run_playbook(playbook)
    assert first.rc == 0, first
    pids = {n: get_host(n).check_output("systemctl show -p MainPID --value prometheus-node-exporter") for n in nodes}
    second = run_playbook(playbook)
    assert second.rc == 0 and second.total_changed == 0, second
    assert {n: get_host(n).check_output("systemctl show -p MainPID --value prometheus-node-exporter") for n in nodes} == pids


# The units of the monitoring role: on the server, and on every node.
SERVER_UNITS = ("prometheus", "prometheus-alertmanager")
NODE_UNITS = ("prometheus-node-exporter", "hpclab-metrics.timer")


def assert_units_running(node: str, units) -> None:
    """Each unit running and enabled on NODE; the journal of the failing one is shown."""
    host = get_host(node)
    for unit in units:
        with journal_on_failure(host, unit.removesuffix(".timer")):
            assert host.service(unit).is_running and host.service(unit).is_enabled, unit


# --- who is told: root's mailbox on the monitoring host (Postfix) and a webhook listener ------------------------

# The role's Postfix delivers the alerts' mails here where monitoring_admin_email is empty (the Molecule scenarios).
MAILBOX = "/var/mail/root"
# Each mail of the mailbox as {subject, to, date, body} (the text/plain part, decoded), as JSON; [] without a mailbox.
READ_MAILBOX = """
import json, mailbox, sys
out = []
try:
    for message in mailbox.mbox(sys.argv[1], create=False):
        body = b""
        for part in message.walk():
            if part.get_content_type() == "text/plain":
                body = part.get_payload(decode=True) or b""
                break
        out.append({"subject": " ".join(str(message.get("Subject", "")).split()), "to": str(message.get("To", "")),
                    "date": str(message.get("Date", "")), "body": body.decode("utf-8", "replace")})
except (FileNotFoundError, mailbox.NoSuchMailboxError):
    pass
print(json.dumps(out))
"""


def mails() -> list[dict]:
    """The mails in root's mailbox on the monitoring host, oldest first."""
    return json.loads(get_host(monitoring_server()).check_output(f"python3 -c {shlex.quote(READ_MAILBOX)} {MAILBOX}"))


def mails_about(host: str, status: str, since: int = 0) -> list[dict]:
    """Mails from the since-th on whose subject says STATUS (FIRING or RESOLVED) for HOST: '[FIRING:2] cn1: ...'."""
    return [m for m in mails()[since:] if m["subject"].startswith(f"[{status}") and f"] {host}:" in m["subject"]]


def follow_mail(name: str, status: str, host: str, since: int, start: float, timeout: float = 240) -> dict:
    """Waits for the first mail from the since-th on that says STATUS for HOST; prints the seconds from START
    (time.monotonic() of the fault or the repair) as NAME's time to the mail."""
    found: list[dict] = []

    def arrived():
        found[:] = mails_about(host, status, since)
        return bool(found)

    wait_for(arrived, timeout - (time.monotonic() - start), f"a {status} mail about {host} in {MAILBOX} (subjects now: "
             f"{[m['subject'] for m in mails()[since:]]})", interval=1.0)
    took = round(time.monotonic() - start, 1)
    print(f"{name}: {status} mail about {host} after {took} s: {found[0]['subject']}")
    return found[0]


def inhibited_alerts(host: str) -> list[str]:
    """Names of the alerts about HOST that Alertmanager holds back (inhibited) while another fires."""
    address = listen_address(default_file="/etc/default/prometheus-alertmanager")
    url = f"http://{address}/api/v2/alerts?active=true&silenced=true&inhibited=true"
    return sorted(a["labels"]["alertname"] for a in http_json(url)
                  if a["labels"].get("host") == host and a["status"].get("inhibitedBy"))


# A small HTTP listener on the monitoring host for the role's webhook receiver: each POST's path and JSON body, one line
# each, in WEBHOOK_LOG. Started as a transient unit (systemd-run), stopped by stop_webhook_listener().
WEBHOOK_UNIT = "hpclab-test-webhook"
WEBHOOK_LOG = "/var/tmp/hpclab-webhook.jsonl"
WEBHOOK_LISTENER = """
import http.server, json, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[2], "a") as log:
            log.write(json.dumps({"path": self.path, "body": json.loads(body)}) + "\\n")
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def start_webhook_listener(port: int) -> None:
    host = get_host(monitoring_server())
    host.run(f"systemctl stop {WEBHOOK_UNIT}; systemctl reset-failed {WEBHOOK_UNIT}; rm -f {WEBHOOK_LOG}")
    host.check_output(f"systemd-run --unit={WEBHOOK_UNIT} --collect python3 -c {shlex.quote(WEBHOOK_LISTENER)} {port} {WEBHOOK_LOG}")
    wait_for(lambda: host.socket(f"tcp://127.0.0.1:{port}").is_listening, 30, f"the webhook listener on port {port}", interval=0.5)


def stop_webhook_listener() -> None:
    get_host(monitoring_server()).run(f"systemctl stop {WEBHOOK_UNIT}")


def webhook_posts() -> list[dict]:
    """[{path, body}] of every POST the listener received: body is Alertmanager's webhook JSON (status, alerts, ...)."""
    text = get_host(monitoring_server()).run(f"cat {WEBHOOK_LOG}").stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def webhook_alerts(status: str, alertname: str, host: str) -> list[dict]:
    """The alerts of the posts whose alert ALERTNAME about HOST has STATUS (firing or resolved)."""
    return [a for post in webhook_posts() for a in post["body"]["alerts"]
            if a["status"] == status and a["labels"].get("alertname") == alertname and a["labels"].get("host") == host]
