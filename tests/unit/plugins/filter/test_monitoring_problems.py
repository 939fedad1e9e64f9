"""The monitoring role's preflight: every input Prometheus, Alertmanager or node_exporter would refuse or
that would clash with another daemon of the collection, one rule at a time."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.monitoring_problems import COLLECTOR_LAYERS, FilterModule, duration_seconds


ROOT = Path(__file__).resolve().parents[4]
PROBLEMS = FilterModule().filters()["monitoring_problems"]
# The role's own port table, so that the tests follow it.
RESERVED = yaml.safe_load((ROOT / "roles/monitoring/vars/main.yml").read_text())["__monitoring_reserved_ports"]
DEFAULTS = yaml.safe_load((ROOT / "roles/monitoring/defaults/main.yml").read_text())


ALERTMANAGER = {"route": {"receiver": "default", "group_by": ["host"]}, "receivers": [{"name": "default", "email_configs": [{"to": "root@localhost"}]}]}
SMARTHOST = {"host": "smtp.example.org", "port": 587, "tls": "starttls", "username": "hpclab", "password": "Zq7-smtp-secret"}


def settings(**overrides):
    base = {
        "monitoring_prometheus_retention": DEFAULTS["monitoring_prometheus_retention"],
        "monitoring_prometheus_retention_size": DEFAULTS["monitoring_prometheus_retention_size"],
        "monitoring_scrape_interval": DEFAULTS["monitoring_scrape_interval"],
        "monitoring_evaluation_interval": DEFAULTS["monitoring_evaluation_interval"],
        "monitoring_alert_for": {"node_down": "10m", "split_brain": "0s"},
        "monitoring_collector_interval": DEFAULTS["monitoring_collector_interval"],
        "monitoring_collector_timeout": DEFAULTS["monitoring_collector_timeout"],
        "monitoring_collectors": ["slurm", "gluster", "munge"],
        "monitoring_prometheus_port": DEFAULTS["monitoring_prometheus_port"],
        "monitoring_alertmanager_port": DEFAULTS["monitoring_alertmanager_port"],
        "monitoring_node_exporter_port": DEFAULTS["monitoring_node_exporter_port"],
        "monitoring_listen_address": "10.0.0.1",
        "monitoring_node_exporter_listen_address": "10.0.0.1",
        "monitoring_llm_models": [],
        "monitoring_web_username": DEFAULTS["monitoring_web_username"],
        "monitoring_web_password": DEFAULTS["monitoring_web_password"],
        "monitoring_web_password_file": DEFAULTS["monitoring_web_password_file"],
        "monitoring_admin_email": DEFAULTS["monitoring_admin_email"],
        "monitoring_mail_from": "hpclab-alertmanager@mon1",
        "monitoring_mail_smarthost": DEFAULTS["monitoring_mail_smarthost"],
        "monitoring_webhook_urls": DEFAULTS["monitoring_webhook_urls"],
        # As the role passes it: its own route and receiver, merged with the inventory's.
        "monitoring_alertmanager_config": ALERTMANAGER,
    }
    return {**base, **overrides}


def check(values=None, **kwargs):
    kwargs = {"host": "mon1", "group_hosts": ["mon1"], "server": True, "reserved_ports": RESERVED, "host_addresses": ["10.0.0.1", "fd00::1"], **kwargs}
    return PROBLEMS(settings() if values is None else values, **kwargs)


def test_registered():
    assert set(FilterModule().filters()) == {"monitoring_problems"}


def test_input_must_be_a_dict():
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        PROBLEMS(["x"], host="mon1")


def test_bad_reserved_table_raises():
    with pytest.raises(AnsibleFilterError, match="reserved port 'x-y'"):
        check(reserved_ports={"x-y": "what"})


@pytest.mark.parametrize(
    "values,kwargs",
    [
        pytest.param(None, {}, id="role-defaults"),
        pytest.param(None, {"server": False, "group_hosts": ["mon9"]}, id="exporter-only-node"),
        pytest.param(settings(monitoring_prometheus_retention="1y2w3d4h5m6s7ms"), {}, id="every-unit"),
        pytest.param(settings(monitoring_prometheus_retention="90d", monitoring_prometheus_retention_size="20GB"), {}, id="size"),
        pytest.param(settings(monitoring_scrape_interval="5s", monitoring_evaluation_interval="500ms"), {}, id="short-intervals"),
        pytest.param(settings(monitoring_listen_address="fd00::1", monitoring_node_exporter_listen_address="127.0.0.1"), {}, id="ipv6-and-loopback"),
        pytest.param(settings(monitoring_llm_models=[{"name": "m", "port": 8000}]), {}, id="model-on-own-port"),
        pytest.param(settings(monitoring_prometheus_port=9190), {}, id="other-free-port"),
        pytest.param(None, {"host_addresses": []}, id="addresses-unknown"),
        pytest.param(settings(monitoring_collectors=["slurm", "gluster", "munge", "ganesha", "nfs_exports", "llm"]), {}, id="every-layer"),
        pytest.param(settings(monitoring_collectors=[]), {}, id="no-layer"),
        pytest.param(settings(monitoring_collector_timeout=1), {}, id="timeout-one"),
    ],
)
def test_valid_input_has_no_problem(values, kwargs):
    assert check(values, **kwargs) == []


@pytest.mark.parametrize(
    "values,kwargs,expected",
    [
        # rule 1
        pytest.param(None, {"group_hosts": []}, "mon1: the inventory group 'monitoring' (variable monitoring_group) has no host", id="empty-group"),
        pytest.param(None, {"group_hosts": [], "group": "mon"}, "Fix: add the monitoring host (the controller in the reference design) to the group 'mon'",
                     id="empty-group-named"),
        # rule 2
        pytest.param(settings(monitoring_prometheus_retention="15days"), {}, "monitoring_prometheus_retention '15days' is not a non-zero duration",
                     id="retention-word"),
        pytest.param(settings(monitoring_prometheus_retention="1.5d"), {}, "monitoring_prometheus_retention '1.5d'", id="retention-fraction"),
        pytest.param(settings(monitoring_prometheus_retention="1h1d"), {}, "monitoring_prometheus_retention '1h1d'", id="retention-order"),
        pytest.param(settings(monitoring_prometheus_retention="0"), {}, "monitoring_prometheus_retention '0'", id="retention-zero"),
        pytest.param(settings(monitoring_prometheus_retention=""), {}, "Fix: write e.g. '15d'", id="retention-empty"),
        pytest.param(settings(monitoring_prometheus_retention=15), {}, "monitoring_prometheus_retention 15 ", id="retention-number"),
        # rule 3
        pytest.param(settings(monitoring_prometheus_retention_size="20G"), {}, "monitoring_prometheus_retention_size '20G'", id="size-unit"),
        # rule 4
        pytest.param(settings(monitoring_scrape_interval="0s"), {}, "monitoring_scrape_interval '0s' is not a non-zero", id="scrape-zero"),
        pytest.param(settings(monitoring_evaluation_interval="30"), {}, "monitoring_evaluation_interval '30'", id="eval-no-unit"),
        # rule 5
        pytest.param(settings(monitoring_alert_for={"node_down": "ten minutes"}), {}, "monitoring_alert_for.node_down 'ten minutes'", id="for-word"),
        pytest.param(settings(monitoring_alert_for=["10m"]), {}, "monitoring_alert_for ['10m'] is not a dict", id="for-list"),
        # rule 6
        pytest.param(settings(monitoring_collector_interval=0), {}, "monitoring_collector_interval 0 is not a whole number", id="interval-zero"),
        pytest.param(settings(monitoring_collector_interval="1m"), {}, "monitoring_collector_interval '1m'", id="interval-unit"),
        pytest.param(settings(monitoring_collector_timeout=0), {}, "monitoring_collector_timeout 0 is not a whole number of seconds of at least 1. "
                     "Fix: keep the default 20.", id="timeout-zero"),
        pytest.param(settings(monitoring_collector_timeout=-5), {}, "monitoring_collector_timeout -5 ", id="timeout-negative"),
        pytest.param(settings(monitoring_collector_timeout="20s"), {}, "monitoring_collector_timeout '20s'", id="timeout-unit"),
        # rule 15
        pytest.param(settings(monitoring_collectors=["glusterfs"]), {}, "monitoring_collectors has 'glusterfs', which is not a layer the collectors "
                     "read (slurm, gluster, munge, ganesha, nfs_exports, llm). Fix: write the layer's name", id="collector-group-name"),
        pytest.param(settings(monitoring_collectors=["slurm", "nfs"]), {}, "monitoring_collectors has 'nfs'", id="collector-typo"),
        pytest.param(settings(monitoring_collectors="slurm"), {}, "monitoring_collectors 'slurm' is not a list of layers", id="collector-string"),
        # rule 7
        pytest.param(settings(monitoring_prometheus_port=70000), {}, "monitoring_prometheus_port 70000 is not a port", id="port-range"),
        # rule 8
        pytest.param(settings(monitoring_node_exporter_port=6818), {}, "monitoring_node_exporter_port 6818 is the port of slurmd (slurm_worker)",
                     id="port-slurmd"),
        pytest.param(settings(monitoring_alertmanager_port=50000), {}, "monitoring_alertmanager_port 50000 is the port of GlusterFS bricks (glusterfs)",
                     id="port-brick-range"),
        pytest.param(settings(monitoring_prometheus_port=2049), {}, "NFS-Ganesha (nfs_ganesha) in this collection; Prometheus could not listen there",
                     id="port-ganesha"),
        # rule 9
        pytest.param(settings(monitoring_alertmanager_port=9100), {}, "monitoring_node_exporter_port's port on this host", id="port-twice"),
        # rule 10
        pytest.param(settings(monitoring_llm_models=[{"name": "llama", "port": 9100}]), {}, "the port of the model server 'llama'", id="port-model"),
        # rule 11
        pytest.param(settings(monitoring_listen_address="0.0.0.0"), {}, "monitoring_listen_address 0.0.0.0 would listen on every network", id="listen-any"),
        pytest.param(settings(monitoring_node_exporter_listen_address="::"), {"server": False}, "monitoring_node_exporter_listen_address :: would listen",
                     id="listen-any6"),
        pytest.param(settings(monitoring_listen_address="mon1"), {}, "monitoring_listen_address 'mon1' is not an IP address", id="listen-name"),
        pytest.param(settings(monitoring_listen_address=""), {}, "monitoring_listen_address '' is not an IP address", id="listen-unknown"),
        pytest.param(settings(monitoring_listen_address="10.9.9.9"), {},
                     "monitoring_listen_address 10.9.9.9 is not an address of this host (10.0.0.1, fd00::1)", id="listen-foreign"),
    ],
)
def test_each_problem_names_host_variable_and_fix(values, kwargs, expected):
    found = check(values, **kwargs)
    assert len(found) == 1, found
    assert expected in found[0], found
    assert found[0].startswith("mon1: ") and "Fix:" in found[0]


def test_collector_layers_are_the_scripts():
    """Rule 15 knows exactly the layers roles/monitoring/files/hpclab_metrics.py reads (its COLLECTORS table)."""
    script = ast.parse((ROOT / "roles/monitoring/files/hpclab_metrics.py").read_text(encoding="utf-8"))
    table = next(node.value for node in script.body if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "COLLECTORS")
    assert tuple(key.value for key in table.keys) == COLLECTOR_LAYERS


def test_server_ports_are_not_checked_on_an_exporter_node():
    assert check(settings(monitoring_prometheus_port=6818, monitoring_listen_address="0.0.0.0"), server=False) == []


def test_every_problem_is_reported_at_once():
    found = check(settings(monitoring_prometheus_retention="x", monitoring_node_exporter_port=22), group_hosts=[])
    assert len(found) == 3


@pytest.mark.parametrize(
    "text,seconds",
    [("15d", 15 * 86400.0), ("1h30m", 5400.0), ("500ms", 0.5), ("0", 0.0), ("0s", 0.0), ("1y", 365 * 86400.0),
     ("", None), ("1h1h", None), ("-1s", None), ("1 h", None), (None, None), ("1d1w", None)],
)
def test_duration_seconds(text, seconds):
    assert duration_seconds(text) == seconds


SECRET = "Zq7-secret.value/with=odd%chars^"


def test_defaults_pass_with_an_empty_password_on_the_server():
    """Empty: the monitoring host keeps or generates one."""
    assert check() == []


def test_exporter_entry_point_requires_the_password():
    problems = check(server=False, password_required=True)
    assert len(problems) == 1
    assert problems[0].startswith("mon1: monitoring_web_password is empty")
    assert "entry point password" in problems[0]
    assert check(settings(monitoring_web_password=SECRET), server=False, password_required=True) == []


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        ("short-but-15chr", "is shorter than 16 characters"),
        ("x" * 73, "is longer than 72 characters (bcrypt reads no more)"),
        ("with a blank in it, long enough", "has a character other than letters, digits"),
        ("colon:is:not:allowed:here:1234", "has a character other than letters, digits"),
    ],
)
def test_bad_password_is_named_but_never_shown(password, reason):
    problems = check(settings(monitoring_web_password=password))
    assert len(problems) == 1
    assert problems[0].startswith("mon1: monitoring_web_password (value not shown) " + reason)
    assert password not in problems[0]
    assert "Fix:" in problems[0]


def test_password_of_72_characters_is_taken():
    assert check(settings(monitoring_web_password="a" * 72)) == []


@pytest.mark.parametrize("username", ["", "has blank", "a:b", "x" * 65, None])
def test_bad_username(username):
    problems = check(settings(monitoring_web_username=username))
    assert problems == [f"mon1: monitoring_web_username {username!r} is not 1 to 64 letters, digits and '._-'. Fix: keep the default 'hpclab'."]


@pytest.mark.parametrize("path", ["relative/file", "/etc/prometheus/", "/etc/pro metheus/pw", ""])
def test_bad_password_file(path):
    problems = check(settings(monitoring_web_password_file=path))
    assert len(problems) == 1
    assert problems[0].startswith(f"mon1: monitoring_web_password_file {path!r} ")


# --- rules 17 to 20: who is told, and how ------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"monitoring_admin_email": "hpc-admins@example.org"}, id="one-address"),
        pytest.param({"monitoring_admin_email": ["a@example.org", "b.c+hpc@dept.example.org", "root@localhost"]}, id="addresses"),
        pytest.param({"monitoring_admin_email": ""}, id="no-address-string"),
        pytest.param({"monitoring_mail_smarthost": SMARTHOST}, id="smarthost-login"),
        pytest.param({"monitoring_mail_smarthost": {"host": "10.0.0.25", "port": "25", "tls": "none"}}, id="smarthost-plain"),
        pytest.param({"monitoring_mail_smarthost": {"host": "smtp.example.org", "port": 465, "tls": "tls", "verify": False}}, id="smarthost-smtps"),
        pytest.param({"monitoring_webhook_urls": ["https://chat.example.org/hooks/abc?token=x", "http://127.0.0.1:9199/hpclab"]}, id="webhooks"),
        pytest.param({"monitoring_alertmanager_config": {
            "route": {"receiver": "default", "routes": [{"receiver": "oncall", "routes": [{"receiver": "default"}]}, {"matchers": ["a=b"]}]},
            "receivers": [{"name": "default"}, {"name": "oncall"}]}}, id="nested-routes"),
    ],
)
def test_valid_notification_input_has_no_problem(overrides):
    assert check(settings(**overrides)) == []


@pytest.mark.parametrize(
    "overrides,expected",
    [
        # rule 17
        pytest.param({"monitoring_admin_email": "hpc-admins"}, "monitoring_admin_email has 'hpc-admins', which is not an e-mail address. Fix: write "
                     "user@domain", id="email-no-domain"),
        pytest.param({"monitoring_admin_email": ["a@example.org", "b@exa mple.org"]}, "monitoring_admin_email has 'b@exa mple.org'", id="email-blank"),
        pytest.param({"monitoring_admin_email": "a@example.org, b@example.org"}, "monitoring_admin_email has 'a@example.org, b@example.org'",
                     id="email-comma-list"),
        pytest.param({"monitoring_admin_email": {"to": "a@example.org"}}, "monitoring_admin_email {'to': 'a@example.org'} is not an address or a list",
                     id="email-dict"),
        pytest.param({"monitoring_mail_from": "alertmanager"}, "monitoring_mail_from 'alertmanager' is not an e-mail address", id="from"),
        # rule 18
        pytest.param({"monitoring_mail_smarthost": {"host": "smtp.example.org"}}, "monitoring_mail_smarthost has no port. Fix: give the port",
                     id="smarthost-no-port"),
        pytest.param({"monitoring_mail_smarthost": {"host": "smtp.example.org", "port": 70000}}, "monitoring_mail_smarthost.port 70000 is not a port",
                     id="smarthost-port-range"),
        pytest.param({"monitoring_mail_smarthost": {"host": "smtp.example.org:587", "port": 587}}, "monitoring_mail_smarthost.host 'smtp.example.org:587'",
                     id="smarthost-port-in-host"),
        pytest.param({"monitoring_mail_smarthost": {"port": 587}}, "monitoring_mail_smarthost.host None", id="smarthost-no-host"),
        pytest.param({"monitoring_mail_smarthost": {**SMARTHOST, "tls": "ssl"}}, "monitoring_mail_smarthost.tls 'ssl' is not one of starttls, tls, none",
                     id="smarthost-tls"),
        pytest.param({"monitoring_mail_smarthost": {**SMARTHOST, "password": ""}}, "monitoring_mail_smarthost has a username but no password",
                     id="smarthost-no-password"),
        pytest.param({"monitoring_mail_smarthost": {**SMARTHOST, "user": "x"}}, "monitoring_mail_smarthost has unknown keys user", id="smarthost-key"),
        pytest.param({"monitoring_mail_smarthost": "smtp.example.org:587"}, "monitoring_mail_smarthost is not a dict", id="smarthost-string"),
        # rule 19
        pytest.param({"monitoring_webhook_urls": ["ftp://chat.example.org/hook"]}, "monitoring_webhook_urls[0] (value not shown: it may hold a token) "
                     "is not an http or https URL with a host (scheme 'ftp')", id="webhook-ftp"),
        pytest.param({"monitoring_webhook_urls": ["https://ok.example.org/x", "chat.example.org/hook"]}, "monitoring_webhook_urls[1]",
                     id="webhook-no-scheme"),
        pytest.param({"monitoring_webhook_urls": ["https:///hook"]}, "monitoring_webhook_urls[0]", id="webhook-no-host"),
        pytest.param({"monitoring_webhook_urls": "https://chat.example.org/hook"}, "monitoring_webhook_urls is not a list", id="webhook-string"),
        # rule 20
        pytest.param({"monitoring_alertmanager_config": {**ALERTMANAGER, "route": {"receiver": "oncall"}}},
                     "monitoring_alertmanager_config route names the receiver 'oncall', which is not one of its receivers (default). "
                     "Fix: add a receiver named 'oncall'", id="route-unknown"),
        pytest.param({"monitoring_alertmanager_config": {**ALERTMANAGER, "route": {"receiver": "default", "routes": [{"receiver": "pager"}]}}},
                     "monitoring_alertmanager_config route.routes[0] names the receiver 'pager'", id="nested-route-unknown"),
        pytest.param({"monitoring_alertmanager_config": {"route": {"receiver": "default"}, "receivers": [{"name": "team"}]}},
                     "names the receiver 'default', which is not one of its receivers (team)", id="receivers-replaced"),
        pytest.param({"monitoring_alertmanager_config": {**ALERTMANAGER, "route": {"group_by": ["host"]}}},
                     "monitoring_alertmanager_config route names no receiver", id="route-no-receiver"),
    ],
)
def test_each_notification_problem_names_host_variable_and_fix(overrides, expected):
    found = check(settings(**overrides))
    assert len(found) == 1, found
    assert expected in found[0], found
    assert found[0].startswith("mon1: ") and "Fix:" in found[0]


def test_secrets_of_the_notifications_are_never_shown():
    """The smarthost's password and a webhook's URL (its token) are named, never written into a message."""
    token = "https://chat.example.org/hooks/Zq7-webhook-token"
    found = check(settings(monitoring_mail_smarthost={**SMARTHOST, "username": "", "password": "Zq7 smtp secret"},
                           monitoring_webhook_urls=["ftp" + token[5:]]))
    assert len(found) == 3, found
    text = " ".join(found)
    assert "Zq7" not in text and "password (value not shown)" in text and "monitoring_webhook_urls[0] (value not shown" in text


def test_role_default_receiver_and_route_agree():
    """The role's own Alertmanager route names its own receiver, and its inhibition lists real alerts of the rules."""
    role_vars = yaml.safe_load((ROOT / "roles/monitoring/vars/main.yml").read_text())
    default = role_vars["__monitoring_alertmanager_default"]
    assert default["route"]["receiver"] in [r["name"] for r in default["receivers"]]
    rules = (ROOT / "roles/monitoring/templates/hpclab.rules.yml.j2").read_text()
    alerts = set(re.findall(r"- alert: (\w+)", rules))
    assert set(role_vars["__monitoring_node_layer_alerts"]) <= alerts
    assert "TargetDown" in alerts and "TargetDown" not in role_vars["__monitoring_node_layer_alerts"]
