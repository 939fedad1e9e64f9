# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: monitoring_problems
short_description: What is wrong with the monitoring role's input on one host, before any change
version_added: 0.3.0
description:
  - Prometheus refuses to start on a retention or interval it cannot parse, and a listen port another daemon
    of the cluster holds leaves one of the two down. The monitoring role checks its input with this filter
    on every host before anything is installed. Types are left to the role's argument spec.
  - Returns a list of problems, each naming the host, the variable and the fix; an empty list means the
    role may go on.
  - "Rules: (1) the inventory group O(group) has at least one host (the Prometheus server);
    (2) C(monitoring_prometheus_retention) is a non-zero Prometheus duration (C(15d), C(12h30m): units
    y w d h m s ms, largest first, integers only); (3) C(monitoring_prometheus_retention_size) is empty or
    a size with a unit B KB MB GB TB PB EB; (4) C(monitoring_scrape_interval), C(monitoring_evaluation_interval)
    are non-zero durations and (5) every value of C(monitoring_alert_for) is a duration (0s allowed);
    (6) C(monitoring_collector_interval) is a whole number of seconds of at least 1;
    (7) every port is an integer 1..65535, (8) not one of O(reserved_ports) (the collection's daemons),
    (9) not the port of another service the role starts on the same host, (10) not the port of a model
    server of the host (C(monitoring_llm_models)); (11) a listen address is one of the host's own
    addresses (O(host_addresses)), not a wildcard (C(0.0.0.0), C(::)) or a name; (12) C(monitoring_web_username)
    is 1 to 64 letters, digits and C(._-); (13) C(monitoring_web_password) is empty (the monitoring host keeps or
    generates one) or 16 to 72 letters, digits and C(-._+/=@%^) (bcrypt reads 72 bytes), and not empty where
    O(password_required); its value is never part of a message; (14) C(monitoring_web_password_file) is an
    absolute path; (15) every entry of C(monitoring_collectors) is a layer the collector script reads (C(slurm),
    C(gluster), C(munge), C(ganesha), C(nfs_exports), C(llm)); (16) C(monitoring_collector_timeout) is a whole number
    of seconds of at least 1; (17) C(monitoring_admin_email) is empty, an e-mail address (C(user@domain)) or a list of
    them, and C(monitoring_mail_from) is one; (18) C(monitoring_mail_smarthost) is empty or has a C(host) (a name or
    address) and a C(port) 1..65535, C(tls) one of C(starttls), C(tls), C(none), a boolean C(verify), and a
    C(username) with a C(password) or neither (its value is never part of a message); (19) every entry of
    C(monitoring_webhook_urls) is an http or https URL with a host (the URL, which may hold a token, is never part
    of a message); (20) every receiver a route of C(monitoring_alertmanager_config) names (C(route.receiver) and
    those of its nested C(routes)), as merged over the role's, is the name of one of its C(receivers)."
options:
  _input:
    description: The role's variables by name (C(monitoring_*)), as the role passes them.
    type: dict
    required: true
  host:
    description: The host's inventory name (C(inventory_hostname)), for the messages.
    type: str
    required: true
  group:
    description: C(monitoring_group), for the messages.
    type: str
    default: monitoring
  group_hosts:
    description: The hosts of the inventory group O(group).
    type: list
    elements: str
    default: []
  server:
    description: Whether this host runs Prometheus and Alertmanager (it is in O(group)).
    type: bool
    default: false
  reserved_ports:
    description: Ports (C(N) or C(FIRST-LAST)) of the collection's other daemons, mapped to what holds them.
    type: dict
    default: {}
  host_addresses:
    description: The host's IPv4 and IPv6 addresses (C(ansible_facts.all_ipv4_addresses + all_ipv6_addresses)).
    type: list
    elements: str
    default: []
  password_required:
    description: Whether C(monitoring_web_password) must be given (the exporter entry point, which takes it from the
      monitoring host's entry point password).
    type: bool
    default: false
"""

EXAMPLES = r"""
# {"monitoring_prometheus_retention": "15days", ...} | hpclab.cluster.monitoring_problems(host="mon1", group_hosts=["mon1"], server=true)
# => ["mon1: monitoring_prometheus_retention '15days' is not a duration Prometheus accepts (units y, w, d, h, m, s, ms,
#     largest first, integers: '15d', '12h30m'). Fix: write e.g. '15d'."]
- name: Check the role's input
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
    quiet: true
  vars:
    __problems: >-
      {{ {'monitoring_prometheus_retention': monitoring_prometheus_retention}
         | hpclab.cluster.monitoring_problems(host=inventory_hostname, group_hosts=groups['monitoring'] | default([])) }}
"""

RETURN = r"""
_value:
  description: One message per problem; empty when there is none.
  type: list
  elements: str
"""

import ipaddress
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

# prometheus/common model.ParseDuration (v0.42, the one Prometheus 2.42 uses): each unit at most once,
# largest first, integer counts; "0" alone is also valid.
_DURATION = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?\Z")
# Prometheus' --storage.tsdb.retention.size: units.Base2Bytes with these suffixes.
_SIZE = re.compile(r"^\d+(?:B|KB|MB|GB|TB|PB|EB)\Z")
# The services the role starts: the variable holding each port, where it runs, and what it is.
SERVER_PORTS = (("monitoring_prometheus_port", "Prometheus"), ("monitoring_alertmanager_port", "Alertmanager"))
EXPORTER_PORTS = (("monitoring_node_exporter_port", "node_exporter"),)
DURATIONS = ("monitoring_scrape_interval", "monitoring_evaluation_interval")
LISTEN_ADDRESSES = (("monitoring_listen_address", True), ("monitoring_node_exporter_listen_address", False))
# The basic-auth user (a YAML key in the web configuration, a URL's user part); its password is at most 72
# characters, all bcrypt reads.
WEB_USERNAME = re.compile(r"^[A-Za-z0-9._-]{1,64}\Z")
BCRYPT_MAX = 72
# The layers the collector script reads (roles/monitoring/files/hpclab_metrics.py COLLECTORS; a unit test keeps
# the two the same): a name it does not know only fails as a collector, and the layer meant is never read.
COLLECTOR_LAYERS = ("slurm", "gluster", "munge", "ganesha", "nfs_exports", "llm")
# An address Alertmanager (Go's net/mail) and Postfix both take: a dot-atom local part, @, a host name (a dotless
# one, such as localhost, is a local domain).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
EMAIL = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@" + _LABEL + r"(?:\." + _LABEL + r")*\Z")
HOSTNAME = re.compile(r"^" + _LABEL + r"(?:\." + _LABEL + r")*\Z")
SMARTHOST_KEYS = ("host", "port", "tls", "verify", "username", "password")
SMARTHOST_TLS = ("starttls", "tls", "none")


def duration_seconds(value):
    """Seconds of a Prometheus duration, or None when Prometheus would refuse it."""
    if not isinstance(value, str) or not value:
        return None
    if value == "0":
        return 0.0
    match = _DURATION.match(value)
    if not match or not any(match.groups()):
        return None
    factors = (365 * 86400, 7 * 86400, 86400, 3600, 60, 1, 0.001)
    return float(sum(int(g) * f for g, f in zip(match.groups(), factors) if g))


def _ranges(reserved):
    """[(first, last, what)] from a port table whose keys are N or 'FIRST-LAST'."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import to_int
    out = []
    for key, what in (reserved or {}).items():
        first, _sep, last = str(key).partition("-")
        a, b = to_int(first), to_int(last or first)
        if a is None or b is None:
            raise AnsibleFilterError(f"monitoring_problems: reserved port {key!r} is not N or FIRST-LAST")
        out.append((a, b, what))
    return out


def monitoring_problems(
    settings, host, group="monitoring", group_hosts=None, server=False, reserved_ports=None, host_addresses=None, password_required=False
):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import to_int
    if not isinstance(settings, Mapping):
        raise AnsibleFilterError(f"monitoring_problems: input must be a dict of the role's variables, got {settings!r}")
    problems = []

    def problem(text):
        problems.append(f"{host}: {text}")

    if not group_hosts:
        problem(
            f"the inventory group '{group}' (variable monitoring_group) has no host, so no Prometheus server would scrape "
            f"this node. Fix: add the monitoring host (the controller in the reference design) to the group '{group}', "
            "or set monitoring_group to the group that holds it."
        )

    retention = settings.get("monitoring_prometheus_retention")
    if not duration_seconds(retention):
        problem(
            f"monitoring_prometheus_retention {retention!r} is not a non-zero duration Prometheus accepts (units y, w, d, h, m, s, ms, "
            "each once, largest first, whole numbers: '15d', '12h30m'). Fix: write e.g. '15d'."
        )
    size = settings.get("monitoring_prometheus_retention_size", "")
    if size not in ("", None) and not (isinstance(size, str) and _SIZE.match(size)):
        problem(
            f"monitoring_prometheus_retention_size {size!r} is not a size Prometheus accepts. Fix: write e.g. '20GB' (B, KB, MB, GB, TB, PB, EB), "
            "or '' for none."
        )
    for variable in DURATIONS:
        value = settings.get(variable)
        if not duration_seconds(value):
            problem(f"{variable} {value!r} is not a non-zero Prometheus duration. Fix: write e.g. '30s' or '1m'.")
    alert_for = settings.get("monitoring_alert_for") or {}
    if not isinstance(alert_for, Mapping):
        problem(f"monitoring_alert_for {alert_for!r} is not a dict. Fix: map alert names to durations, e.g. {{node_down: 10m}}.")
    else:
        for key, value in alert_for.items():
            if duration_seconds(value) is None:
                problem(f"monitoring_alert_for.{key} {value!r} is not a Prometheus duration. Fix: write e.g. '5m' ('0s' fires at once).")
    for variable, default in (("monitoring_collector_interval", 60), ("monitoring_collector_timeout", 20)):
        value = settings.get(variable)
        seconds = to_int(value)
        if seconds is None or seconds < 1 or str(value).strip() != str(seconds):
            problem(f"{variable} {value!r} is not a whole number of seconds of at least 1. Fix: keep the default {default}.")
    _collector_problems(settings.get("monitoring_collectors"), problem)

    reserved = _ranges(reserved_ports)
    mine = {}
    for variable, what in EXPORTER_PORTS + (SERVER_PORTS if server else ()):
        value = settings.get(variable)
        port = to_int(value)
        if port is None or not 1 <= port <= 65535:
            problem(f"{variable} {value!r} is not a port 1..65535. Fix: keep its default.")
            continue
        for first, last, holder in reserved:
            if first <= port <= last:
                problem(
                    f"{variable} {port} is the port of {holder} in this collection; {what} could not listen there. Fix: choose a free "
                    "port (the default, or one outside the collection's ports)."
                )
        if port in mine:
            problem(f"{variable} {port} is also {mine[port]}'s port on this host. Fix: give each service its own port.")
        else:
            mine[port] = variable
    for model in settings.get("monitoring_llm_models") or []:
        port = to_int(model.get("port")) if isinstance(model, Mapping) else None
        if port in mine:
            problem(
                f"{mine[port]} {port} is the port of the model server {model.get('name')!r} on this host (monitoring_llm_models). "
                f"Fix: choose another port for {mine[port]}."
            )

    own = set()
    for address in host_addresses or []:
        try:
            own.add(ipaddress.ip_address(str(address).split("%", maxsplit=1)[0]))
        except ValueError:
            continue
    for variable, server_only in LISTEN_ADDRESSES:
        if server_only and not server:
            continue
        value = settings.get(variable)
        try:
            address = ipaddress.ip_address(value) if isinstance(value, str) else None
        except ValueError:
            address = None
        if address is None:
            problem(f"{variable} {value!r} is not an IP address. Fix: give this host's address on the cluster network (the default).")
        elif address.is_unspecified:
            problem(
                f"{variable} {value} would listen on every network of the host, not only the cluster network. Fix: give this "
                "host's address on the cluster network (the default)."
            )
        elif own and address not in own and not address.is_loopback:
            problem(f"{variable} {value} is not an address of this host ({', '.join(sorted(map(str, own)))}). Fix: give its address on the cluster network.")
    _web_problems(settings, password_required, problem)
    _mail_problems(settings, problem)
    _webhook_problems(settings.get("monitoring_webhook_urls"), problem)
    _route_problems(settings.get("monitoring_alertmanager_config"), problem)
    return problems


def _mail_problems(settings, problem):
    """Rules 17 and 18: who is mailed, by whom, and the smarthost Postfix relays through."""
    emails = settings.get("monitoring_admin_email")
    if emails is not None:
        if isinstance(emails, str):
            emails = [emails] if emails else []
        if not isinstance(emails, (list, tuple)):
            problem(f"monitoring_admin_email {emails!r} is not an address or a list of them. Fix: write e.g. 'hpc-admins@example.org' or a list.")
        else:
            for email in emails:
                if not (isinstance(email, str) and EMAIL.match(email)):
                    problem(
                        f"monitoring_admin_email has {email!r}, which is not an e-mail address. Fix: write user@domain "
                        "(one address per entry, e.g. 'hpc-admins@example.org'), or leave it empty for root's mailbox on the monitoring host."
                    )
    sender = settings.get("monitoring_mail_from")
    if sender is not None and not (isinstance(sender, str) and EMAIL.match(sender)):
        problem(f"monitoring_mail_from {sender!r} is not an e-mail address. Fix: write user@domain, e.g. 'hpclab-alertmanager@example.org'.")
    smarthost = settings.get("monitoring_mail_smarthost")
    if smarthost in (None, {}, ""):
        return
    if not isinstance(smarthost, Mapping):
        problem("monitoring_mail_smarthost is not a dict. Fix: give {host: smtp.example.org, port: 587} (with tls, username, password), or {}.")
        return
    _smarthost_problems(smarthost, problem)


def _smarthost_problems(smarthost, problem):
    """Rule 18, for a smarthost that is set (its password never shown)."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import to_int
    unknown = sorted(str(key) for key in smarthost if key not in SMARTHOST_KEYS)
    if unknown:
        problem(f"monitoring_mail_smarthost has unknown keys {', '.join(unknown)}. Fix: use only {', '.join(SMARTHOST_KEYS)}.")
    host = smarthost.get("host")
    address = None
    if isinstance(host, str):
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
    if not (isinstance(host, str) and (address is not None or HOSTNAME.match(host))):
        problem(f"monitoring_mail_smarthost.host {host!r} is not a host name or address. Fix: give your mail server's name, e.g. 'smtp.example.org'.")
    port = smarthost.get("port")
    number = to_int(port)
    if port in (None, ""):
        problem(
            "monitoring_mail_smarthost has no port. Fix: give the port your mail server takes mail on for relaying: "
            "587 (STARTTLS, tls: starttls), 465 (tls: tls) or 25."
        )
    elif isinstance(port, bool) or number is None or not 1 <= number <= 65535 or str(port).strip() != str(number):
        problem(f"monitoring_mail_smarthost.port {port!r} is not a port 1..65535. Fix: give e.g. 587.")
    tls = smarthost.get("tls", "starttls")
    if tls not in SMARTHOST_TLS:
        problem(f"monitoring_mail_smarthost.tls {tls!r} is not one of {', '.join(SMARTHOST_TLS)}. Fix: 'starttls' for port 587, 'tls' for 465.")
    if not isinstance(smarthost.get("verify", True), bool):
        problem(f"monitoring_mail_smarthost.verify {smarthost.get('verify')!r} is not true or false. Fix: leave it out (true: check the server's certificate).")
    username, password = smarthost.get("username") or "", smarthost.get("password") or ""
    if bool(username) != bool(password):
        given, missing = ("username", "password") if username else ("password", "username")
        problem(f"monitoring_mail_smarthost has a {given} but no {missing}. Fix: give both (the password vaulted), or neither.")
    if username and not (isinstance(username, str) and re.match(r"^[^\s:]+\Z", username)):
        problem(f"monitoring_mail_smarthost.username {username!r} has a blank or a ':'. Fix: give the login as your mail server knows it.")
    if password and not (isinstance(password, str) and re.match(r"^\S+\Z", password)):
        problem("monitoring_mail_smarthost.password (value not shown) is not a string without blanks or line breaks. Fix: give the password (vaulted).")


def _webhook_problems(urls, problem):
    """Rule 19: webhooks as http(s) URLs; an URL is never shown (it may hold a token)."""
    if urls is None:
        return
    if isinstance(urls, (str, bytes)) or not isinstance(urls, (list, tuple)):
        problem("monitoring_webhook_urls is not a list of URLs (value not shown). Fix: give a list, e.g. ['https://chat.example.org/hooks/TOKEN'].")
        return
    for index, url in enumerate(urls):
        try:
            parts = urlsplit(url) if isinstance(url, str) else None
            host = parts.hostname if parts else None
        except ValueError:
            parts, host = None, None
        if parts is None or parts.scheme not in ("http", "https") or not host or any(c.isspace() for c in url):
            scheme = f" (scheme {parts.scheme!r})" if parts is not None and parts.scheme else ""
            problem(
                f"monitoring_webhook_urls[{index}] (value not shown: it may hold a token) is not an http or https URL with a host{scheme}. "
                "Fix: write the webhook's full URL, e.g. 'https://chat.example.org/hooks/TOKEN'."
            )


def _route_problems(config, problem):
    """Rule 20: every receiver a route names exists (Alertmanager refuses the whole file otherwise)."""
    if not isinstance(config, Mapping):
        problem("monitoring_alertmanager_config is not a dict. Fix: give Alertmanager's route and receivers as a dict, or {}.")
        return
    receivers = config.get("receivers") or []
    names = {r.get("name") for r in receivers if isinstance(r, Mapping)} if isinstance(receivers, (list, tuple)) else set()
    known = ", ".join(sorted(str(n) for n in names if n is not None)) or "none"

    def walk(route, where):
        if not isinstance(route, Mapping):
            problem(f"monitoring_alertmanager_config {where} is not a dict. Fix: write each route as a dict with a receiver.")
            return
        receiver = route.get("receiver")
        if receiver is None and where == "route":
            problem(f"monitoring_alertmanager_config route names no receiver. Fix: set route.receiver to one of the receivers ({known}).")
        elif receiver is not None and receiver not in names:
            problem(
                f"monitoring_alertmanager_config {where} names the receiver {receiver!r}, which is not one of its receivers ({known}). "
                f"Fix: add a receiver named {receiver!r} to receivers, or name one of those."
            )
        for index, child in enumerate(route.get("routes") or []):
            walk(child, f"{where}.routes[{index}]")

    walk(config.get("route"), "route")


def _collector_problems(collectors, problem):
    """Rule 15: the layers the collector script is to read on this host."""
    known = ", ".join(COLLECTOR_LAYERS)
    if collectors is None:
        return
    if isinstance(collectors, (str, bytes)) or not isinstance(collectors, (list, tuple)):
        problem(f"monitoring_collectors {collectors!r} is not a list of layers. Fix: give a list of {known}, or leave the default (from the node's groups).")
        return
    for name in collectors:
        if name not in COLLECTOR_LAYERS:
            problem(
                f"monitoring_collectors has {name!r}, which is not a layer the collectors read ({known}). Fix: write the layer's name "
                "as listed (e.g. 'gluster' for the glusterfs group), or leave the default (from the node's groups)."
            )


def _web_problems(settings, password_required, problem):
    """Rules 12 to 14: the basic-auth user, password (never shown) and the file that keeps the password."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import (
        SAFE_PASSWORD,
        SAFE_PASSWORD_REASON,
        WEB_PASSWORD_MIN,
        path_problem,
        web_password_reason,
    )
    username = settings.get("monitoring_web_username")
    if not (isinstance(username, str) and WEB_USERNAME.match(username)):
        problem(f"monitoring_web_username {username!r} is not 1 to 64 letters, digits and '._-'. Fix: keep the default 'hpclab'.")
    password = settings.get("monitoring_web_password")
    if password in ("", None):
        if password_required:
            problem(
                "monitoring_web_password is empty, and node_exporter would answer nobody. Fix: run the monitoring role's entry "
                "point password on the monitoring host first and pass its monitoring_password_result.password (as "
                "playbooks/monitoring.yml does), or set monitoring_web_password (vaulted) for every node."
            )
    else:
        if isinstance(password, str) and len(password) > BCRYPT_MAX:
            reason = f"is longer than {BCRYPT_MAX} characters (bcrypt reads no more)"
        else:
            reason = web_password_reason(password, SAFE_PASSWORD, SAFE_PASSWORD_REASON)
        if reason:
            problem(
                f"monitoring_web_password (value not shown) {reason}. Fix: give {WEB_PASSWORD_MIN} to {BCRYPT_MAX} letters and digits "
                "(e.g. openssl rand -hex 16), vaulted, or leave it empty to have the monitoring host generate and keep one."
            )
    reason = path_problem(settings.get("monitoring_web_password_file"))
    if reason:
        problem(f"monitoring_web_password_file {settings.get('monitoring_web_password_file')!r} {reason}. Fix: keep the default.")


class FilterModule:
    """The monitoring role's checks of its input."""

    def filters(self):
        return {"monitoring_problems": monitoring_problems}
