# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: llm_gateway_problems
short_description: What is wrong with the llm_gateway role's input on one host, before any change
version_added: 0.4.0
description:
  - The llm_gateway role puts nginx (with its njs module) in front of the model servers as one authenticated
    OpenAI-compatible endpoint. nginx refuses a whole configuration for one bad line, and a reload that fails
    leaves the old routes and keys in place without a word to the client. So the role checks everything that
    ends up in the gateway's configuration with this filter first, before anything is installed or written.
    Types are left to the role's argument spec.
  - Returns a list of problems, each naming the host, the variable and the fix; an empty list means the role
    may go on. Keys and passwords (O(keys), O(backend_api_key), O(web_passwords)) are never part of a message; the
    users they belong to are named instead.
  - "Backends (O(_input)): (1) a non-empty list of dicts; (2) each C(name) is letters, digits, C(.), C(_) and C(-),
    starting with a letter or digit, at most 128 characters (it becomes an nginx named location C(@backend_NAME)
    and the C(model) clients send); (3) no name twice; (4) each C(port) is a TCP port 1..65535; (5) C(host)
    (default C(127.0.0.1)) is an IP address or a host name; (6) no host and port twice."
  - "Users (O(users)): (7) a list of dicts, each with a C(name) (a POSIX user name: C([a-z_][a-z0-9_-]*), at most
    32 characters: it names a file of O(key_dir) and a home under O(home_root)) and numeric C(uid) and C(gid)
    (the owner of the key file in the home, whether or not the user exists on the gateway host); (8) no name twice."
  - "Keys (O(keys)): (9) a dict of user name to key; (10) each names a user of O(users); (11) each key is 32 to 200
    characters of an RFC 6750 bearer token (letters, digits, C(-._~+/), trailing C(=)): it is matched in an nginx
    map and written to a shell environment file; (12) no two users have the same key, compared ignoring case as
    nginx's map compares strings; (13) O(backend_api_key) is empty or a bearer token too."
  - "Listening: (14) O(port) is a TCP port 1..65535, (15) not the port of a backend on this host (loopback, the
    listen address or one of O(host_addresses)), (16) not one of O(reserved_ports) or O(more_reserved_ports) (each
    C(N) or C(FIRST-LAST)); (17) O(listen_address) is an IP address of this host (O(host_addresses)) or a loopback
    address, and not a wildcard (C(0.0.0.0), C(::)): the gateway answers on the cluster network only."
  - "Limits and paths: (18) O(rate_limit) is an nginx rate C(Nr/s) or C(Nr/m) with N at least 1; (19)
    O(rate_burst) is a whole number, 0 or more; (20) O(max_body_size) is an nginx size (C(1m), C(512k)), not 0:
    the request body is read into memory of that size so that the router can read C(model); (21) O(read_timeout)
    is 1..86400 seconds; (22) O(key_dir) and O(home_root) are canonical absolute paths without blanks or quotes,
    and O(key_dir) is not under O(home_root) (the kept keys stay on the gateway host, root-only)."
  - "Web logins (the web UI in front of which the users log in, O(web_url)): (23) no user of O(users) has the name
    O(web_identity), the web UI's own key at the gateway (its line in the keys map and its name in the access log);
    (24) O(web_passwords) is a dict of user name to password, each for a user of O(users), 16 to 200 characters of
    letters, digits and C(-._+/=@%^) (it is written to gradio's login file, where C(,) and C(:) separate users and
    passwords, and to a shell environment file); (25) O(web_url) is empty (no web UI) or an http or https URL of
    letters, digits and C(-._~:/[]%+=) (written to the same environment file); (26) O(web_password_dir) is a
    canonical absolute path without blanks or quotes, not under O(home_root), and neither O(key_dir) nor a
    directory inside it or around it (each directory's revocation removes every file it does not expect)."
  - "Model servers' key: (27) O(backend_api_key) is set where O(users) is not empty: the model servers' host is shared
    (a Slurm worker, in the reference design), and servers without a key would let anyone there bypass the gateway."
  - "Web UI without users: (28) O(web_url) is empty where O(users) is: the web UI sends every chat through the gateway
    with its own key, and only the users get logins, so with none anyone who reaches it would use every model. The
    llm_serving role refuses such a web UI too (its rule 46), but only after this role changed the gateway."
  - "Accounts (issue 54): (29) no user takes a name the collection's services use (munge, slurm, mysql, prometheus,
    nginx, the LLM service user, Docker's group, root, nobody...), nor the name of a system account or group of the
    gateway host (O(accounts), its ID below O(min_uid)), nor a UID or GID below O(min_uid), nor a UID another account
    of the host has: the key file written into that home, and the web login, would belong to a system account. The
    rule is the Slurm roles' (the collection's C(plugin_utils/_users.py))."
  - "Per-user limits (issue 56): (30) O(user_limits) and each entry of O(user_limits_by_user) are dicts of
    C(daily_tokens) and C(concurrent_requests) only, each a whole number 0 or more (or null), and every name of
    O(user_limits_by_user) is a user of O(users); (31) O(usage_textfile_dir) is empty or a canonical absolute path
    without blanks or quotes."
options:
  _input:
    description: C(llm_gateway_backends), each C(name), C(port), optional C(host); other keys (C(engine)) are ignored.
    type: list
    elements: dict
    required: true
  host:
    description: The host's inventory name (C(inventory_hostname)), for the messages.
    type: str
    required: true
  users:
    description: C(llm_gateway_users).
    type: list
    elements: dict
    default: []
  keys:
    description: C(llm_gateway_keys), user name to key; never shown.
    type: dict
    default: {}
  backend_api_key:
    description: C(llm_gateway_backend_api_key); never shown.
    type: str
    default: ""
  port:
    description: C(llm_gateway_port).
    type: int
    default: 4000
  reserved_ports:
    description: Ports (C(N) or C(FIRST-LAST)) of the collection's other daemons, mapped to what holds them.
    type: dict
    default: {}
  more_reserved_ports:
    description: C(llm_gateway_reserved_ports), ports (C(N) or C(FIRST-LAST)) the playbook keeps for other services.
    type: list
    elements: raw
    default: []
  listen_address:
    description: C(llm_gateway_listen_address).
    type: str
    default: ""
  host_addresses:
    description: The host's IPv4 and IPv6 addresses (C(ansible_facts.all_ipv4_addresses + all_ipv6_addresses)); empty
      when unknown (then only wildcards are refused).
    type: list
    elements: str
    default: []
  rate_limit:
    description: C(llm_gateway_rate_limit).
    type: str
    default: 20r/s
  rate_burst:
    description: C(llm_gateway_rate_burst).
    type: int
    default: 40
  max_body_size:
    description: C(llm_gateway_max_body_size).
    type: str
    default: 1m
  read_timeout:
    description: C(llm_gateway_read_timeout), seconds.
    type: int
    default: 900
  key_dir:
    description: C(llm_gateway_key_dir).
    type: str
    default: /etc/hpclab/llm-gateway/keys
  home_root:
    description: C(llm_gateway_home_root).
    type: str
    default: /gfsv/home
  web_url:
    description: C(llm_gateway_web_url); empty when there is no web UI.
    type: str
    default: ""
  web_passwords:
    description: C(llm_gateway_web_passwords), user name to web password; never shown.
    type: dict
    default: {}
  web_password_dir:
    description: C(llm_gateway_web_password_dir).
    type: str
    default: /etc/hpclab/llm-gateway/web-passwords
  web_identity:
    description: The web UI's own name at the gateway (the role's C(__llm_gateway_web_identity)), which no user may have.
    type: str
    default: webui
  accounts:
    description:
      - The gateway host's account databases as read before any change, C({passwd, group}), each the text of
        C(getent passwd) and C(getent group); null judges rule 29 on the names and IDs only.
    type: dict
  min_uid:
    description: C(llm_gateway_users_min_uid), the first UID and GID of a cluster user (rule 29); null judges
      no ID against a minimum (the accounts of O(accounts) against Debian's, 1000).
    type: raw
  user_limits:
    description: C(llm_gateway_user_limits), every user's limits (rule 30).
    type: raw
  user_limits_by_user:
    description: C(llm_gateway_user_limits_by_user), a user's own limits by name (rule 30).
    type: raw
  usage_textfile_dir:
    description: C(llm_gateway_usage_textfile_dir), where the usage metrics go (rule 31).
    type: raw
"""

EXAMPLES = r"""
# [{"name": "llama 3", "port": 8000}] | hpclab.cluster.llm_gateway_problems(host="gpu1", listen_address="10.0.0.5", ...)
# => ["gpu1: llm_gateway_backends: name 'llama 3' cannot be routed: ... Fix: ..."]
- name: Check the role's input
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
    quiet: true
  vars:
    __problems: >-
      {{ llm_gateway_backends | hpclab.cluster.llm_gateway_problems(
           host=inventory_hostname, users=llm_gateway_users, keys=llm_gateway_keys, port=llm_gateway_port,
           listen_address=llm_gateway_listen_address, host_addresses=ansible_facts.all_ipv4_addresses) }}
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

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

# An nginx named location and an OpenAI model id at once: no blank, quote, ';', '{', '$' or '/'.
BACKEND_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
BACKEND_NAME_MAX = 128
# RFC 952/1123 host names, as proxy_pass takes them.
HOST_NAME = re.compile(r"^(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z")
# RFC 6750 b64token: safe inside an nginx quoted string, a map key and an environment file line.
BEARER_TOKEN = re.compile(r"^[A-Za-z0-9._~+/-]+=*\Z")
KEY_MIN = 32
# nginx's map keeps each key in a hash bucket; the role sets map_hash_bucket_size 256, which holds
# "Bearer " and a key of this length.
KEY_MAX = 200
# ngx_http_limit_req_module: rate=Nr/s or Nr/m.
RATE = re.compile(r"^([0-9]+)r/[sm]\Z")
# ngx_parse_size: a number, optionally k/K or m/M (g/G is not accepted for client_max_body_size).
SIZE = re.compile(r"^([0-9]+)[kKmM]?\Z")
ROUTED_PATHS = "/v1/chat/completions, /v1/completions and /v1/models"
# The web UI's address in llm.env: an http(s) URL of characters a shell leaves alone.
WEB_URL = re.compile(r"^https?://[A-Za-z0-9.:\[\]-]+(/[A-Za-z0-9._~:/%+=-]*)?\Z")


def _ranges(reserved, more):
    """[(first, last, what)] from the role's port table ({N or 'FIRST-LAST': what}) and the playbook's list; and the
    entries of the list that are neither."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import port_problem, to_int
    out, bad = [], []
    for key, what in (reserved or {}).items():
        first, _sep, last = str(key).partition("-")
        a, b = to_int(first), to_int(last or first)
        if a is None or b is None:
            raise AnsibleFilterError(f"llm_gateway_problems: reserved port {key!r} is not N or FIRST-LAST")
        out.append((a, b, what))
    for entry in more or []:
        first, _sep, last = str(entry).partition("-")
        a, b = to_int(first), to_int(last or first)
        if isinstance(entry, (bool, float)) or a is None or b is None or port_problem(a) or port_problem(b) or a > b:
            bad.append(entry)
        else:
            out.append((a, b, "a port kept for another service (llm_gateway_reserved_ports)"))
    return out, bad


def _ip(value):
    try:
        return ipaddress.ip_address(str(value).split("%", maxsplit=1)[0]) if isinstance(value, str) else None
    except ValueError:
        return None


def _backend_problems(backends, problem):
    """Rules 1-6. Returns the well-formed backends as (name, host, port)."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import port_problem
    fix_list = ("Fix: pass the model servers, e.g. llm_gateway_backends: \"{{ llm_serving_result.models }}\", or list them as "
                "[{name: llama-3-8b, port: 8000, host: 127.0.0.1}].")
    if not isinstance(backends, (list, tuple)):
        problem(f"llm_gateway_backends is not a list of model servers ({type(backends).__name__}). {fix_list}")
        return []
    if not backends:
        problem(f"llm_gateway_backends is empty: the gateway would answer 404 to every model. {fix_list}")
        return []
    good, names, places = [], {}, {}
    for index, backend in enumerate(backends):
        if not isinstance(backend, Mapping):
            problem(f"llm_gateway_backends[{index}] is not a dict ({backend!r}). Fix: give name, port and optionally host.")
            continue
        name = backend.get("name")
        label = f"llm_gateway_backends[{index}]" + (f" ({name})" if isinstance(name, str) and name else "")
        ok = True
        if not isinstance(name, str) or not BACKEND_NAME.fullmatch(name) or len(name) > BACKEND_NAME_MAX:
            problem(
                f"{label}: name {name!r} cannot be routed: the router matches the request's model against it and sends the "
                f"request to the nginx location @backend_NAME. Fix: use letters, digits, '.', '_' and '-', starting with a "
                f"letter or digit, at most {BACKEND_NAME_MAX} characters (as the llm_serving role requires of model names)."
            )
            ok = False
        elif name in names:
            problem(f"{label}: name {name} is also llm_gateway_backends[{names[name]}]'s: one model name would have two servers. "
                    "Fix: give each backend its own name.")
            ok = False
        else:
            names[name] = index
        port = backend.get("port")
        if port_problem(port):
            problem(f"{label}: port {port!r} is not a TCP port 1..65535. Fix: give the port its model server listens on.")
            ok = False
        host = backend.get("host", "127.0.0.1")
        address = _ip(host)
        if address is None and not (isinstance(host, str) and HOST_NAME.fullmatch(host)):
            problem(f"{label}: host {host!r} is neither an IP address nor a host name. Fix: give the model server's address "
                    "(default 127.0.0.1, the llm_serving role's client address).")
            ok = False
        if not ok:
            continue
        place = (str(address) if address else host.lower(), int(port))
        if place in places:
            problem(f"{label}: {host}:{port} is also llm_gateway_backends[{places[place]}]'s address: two model names would "
                    "reach the same server. Fix: give each backend its own host and port.")
            continue
        places[place] = index
        good.append((name, address, host, int(port)))
    return good


def _user_problems(users, web_identity, problem):
    """Rules 7-8 and 23. Returns the names of the well-formed users."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import USER_NAME, USER_NAME_MAX
    fix = ("Fix: list users as [{name: alice, uid: 2001, gid: 2001}] (the default is hpclab_cluster_users, the cluster's "
           "users with the same IDs on every node).")
    if not isinstance(users, (list, tuple)):
        problem(f"llm_gateway_users is not a list of users ({type(users).__name__}). {fix}")
        return set()
    names = {}
    for index, user in enumerate(users):
        if not isinstance(user, Mapping):
            problem(f"llm_gateway_users[{index}] is not a dict ({user!r}). {fix}")
            continue
        name = user.get("name")
        if not isinstance(name, str) or not USER_NAME.fullmatch(name) or len(name) > USER_NAME_MAX:
            problem(f"llm_gateway_users[{index}]: name {name!r} is not a user name ([a-z_][a-z0-9_-]*, at most {USER_NAME_MAX} "
                    f"characters); it names the user's key file and home. {fix}")
            continue
        missing = [key for key in ("uid", "gid") if isinstance(user.get(key), bool) or not str(user.get(key, "")).isdigit()]
        if missing:
            problem(f"llm_gateway_users[{index}] ({name}) has no numeric {' and '.join(missing)}: the key file in the user's home "
                    f"is owned by these numbers, whether or not the user exists on this host. {fix}")
        if name in names:
            problem(f"llm_gateway_users[{index}]: {name} is listed twice (also llm_gateway_users[{names[name]}]). Fix: list each "
                    "user once.")
            continue
        if name == web_identity:
            problem(f"llm_gateway_users[{index}]: {name} is the name of the web UI's own key at the gateway (its line in the keys "
                    "map, its name in the access log); a user of that name would be taken for the web UI. Fix: give the user "
                    "another name, or keep them out of llm_gateway_users.")
            continue
        names[name] = index
    return set(names)


def _account_problems(host, users, user_names, accounts, min_uid):
    """Rule 29, on the users rules 7-8 accept."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._users import cluster_user_problems
    good = [u for u in users or [] if isinstance(u, Mapping) and u.get("name") in user_names
            and all(not isinstance(u.get(k), bool) and str(u.get(k, "")).isdigit() for k in ("uid", "gid"))]
    return cluster_user_problems(host, "llm_gateway_users", good, min_uid, accounts, "llm_gateway_users_min_uid")


def _key_problem(key):
    if not isinstance(key, str) or len(key) < KEY_MIN:
        return f"is shorter than {KEY_MIN} characters"
    if len(key) > KEY_MAX:
        return f"is longer than {KEY_MAX} characters"
    if not BEARER_TOKEN.fullmatch(key):
        return "is not a bearer token: only letters, digits, '-', '.', '_', '~', '+', '/' and a trailing '='"
    return None


def _key_problems(keys, user_names, backend_api_key, problem):
    """Rules 9-13."""
    if not isinstance(keys, Mapping):
        problem(f"llm_gateway_keys is not a dict of user name to key ({type(keys).__name__}, value not shown). Fix: write "
                "{alice: \"{{ vault_llm_key_alice }}\"}, or {} to have the role generate every key.")
        keys = {}
    owners = {}
    for name, key in keys.items():
        if name not in user_names:
            problem(f"llm_gateway_keys has a key for {name!r}, who is not in llm_gateway_users (a misspelt name, or a user whose "
                    "access was revoked): nobody could use that key. Fix: remove it from llm_gateway_keys, or add the user.")
            continue
        reason = _key_problem(key)
        if reason:
            problem(f"llm_gateway_keys: {name}'s key (value not shown) {reason}. Fix: give a key of {KEY_MIN} to {KEY_MAX} letters "
                    f"and digits (e.g. openssl rand -hex 24), or remove the entry to have the role generate one.")
            continue
        owners.setdefault(key.lower(), []).append(name)
    for names in owners.values():
        if len(names) > 1:
            problem(f"llm_gateway_keys: {', '.join(sorted(names))} have the same key (compared ignoring case, as nginx's map "
                    "compares them): the gateway could not tell them apart. Fix: give each user a key of their own.")
    if not isinstance(backend_api_key, str) or (backend_api_key and not BEARER_TOKEN.fullmatch(backend_api_key)):
        problem("llm_gateway_backend_api_key (value not shown) is not a bearer token: only letters, digits, '-', '.', '_', '~', "
                "'+', '/' and a trailing '='. Fix: pass the model servers' key (llm_serving_api_key), or \"\" when they need none.")


def _backend_key_problem(problem):
    """Rule 27. The model servers sit on a host shared with others (the reference design's GPU server is also a Slurm
    worker): without a key of their own, any process there would reach them on loopback, bypassing the gateway."""
    problem("llm_gateway_backend_api_key is empty, so the model servers behind the gateway answer without a key: any job, "
            "login or process on their host could call them directly, bypassing the users' keys, revocation, the rate "
            "limit and the access log. Fix: set llm_serving_api_key for the llm hosts from the vault (generate one with "
            "openssl rand -hex 32 | ansible-vault encrypt_string --stdin-name vault_llm_api_key, then llm_serving_api_key: "
            "\"{{ vault_llm_api_key }}\"); playbooks/llm_gateway.yml passes it as llm_gateway_backend_api_key.")


def _listen_problems(port, listen_address, host_addresses, backends, reserved, more_reserved, problem):
    """Rules 14-17."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import port_problem
    address = _ip(listen_address)
    if address is None:
        problem(f"llm_gateway_listen_address {listen_address!r} is not an IP address (the default is the address of the host's "
                "default route, from its network facts). Fix: give this host's address on the cluster network.")
    elif address.is_unspecified:
        problem(f"llm_gateway_listen_address {listen_address} would listen on every network of the host, not only the cluster "
                "network. Fix: give this host's address on the cluster network (the default).")
    own = {a for a in map(_ip, host_addresses or []) if a is not None}
    if address is not None and own and address not in own and not address.is_loopback and not address.is_unspecified:
        problem(f"llm_gateway_listen_address {listen_address} is not an address of this host "
                f"({', '.join(sorted(map(str, own)))}); nginx could not listen there. Fix: give its address on the cluster network.")
    if port_problem(port):
        problem(f"llm_gateway_port {port!r} is not a TCP port 1..65535. Fix: keep the default 4000.")
        return
    port = int(port)
    local = own | ({address} if address is not None else set())
    for name, backend_address, host, backend_port in backends:
        here = host.lower() == "localhost" or (backend_address is not None and (backend_address.is_loopback or backend_address in local))
        if here and backend_port == port:
            problem(f"llm_gateway_port {port} is the port of the model server {name} ({host}:{backend_port}, llm_gateway_backends) "
                    "on this host. Fix: choose another port for the gateway.")
    ranges, bad = _ranges(reserved, more_reserved)
    for entry in bad:
        problem(f"llm_gateway_reserved_ports: {entry!r} is neither a port nor FIRST-LAST. Fix: list ports as 7860 or '9100-9110'.")
    for first, last, holder in ranges:
        if first <= port <= last:
            problem(f"llm_gateway_port {port} is the port of {holder}; nginx could not listen there beside it. Fix: choose another "
                    "port (the default 4000).")


def _limit_problems(rate_limit, rate_burst, max_body_size, read_timeout, problem):
    """Rules 18-21."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import seconds_problem, to_int
    match = RATE.fullmatch(rate_limit) if isinstance(rate_limit, str) else None
    if not match or int(match.group(1)) < 1:
        problem(f"llm_gateway_rate_limit {rate_limit!r} is not an nginx rate. Fix: write requests per second or minute per key, "
                "e.g. '20r/s' or '600r/m'.")
    burst = to_int(rate_burst)
    if burst is None or isinstance(rate_burst, float) or burst < 0:
        problem(f"llm_gateway_rate_burst {rate_burst!r} is not a whole number of requests, 0 or more. Fix: keep the default 40.")
    match = SIZE.fullmatch(str(max_body_size)) if isinstance(max_body_size, (str, int)) and not isinstance(max_body_size, bool) else None
    if not match or int(match.group(1)) == 0:
        problem(f"llm_gateway_max_body_size {max_body_size!r} is not an nginx size of at least 1 byte (0 would lift the limit, and "
                "a body the router cannot hold in memory cannot be routed). Fix: write e.g. '1m' or '512k'.")
    if seconds_problem(read_timeout) or to_int(read_timeout) > 86400:
        problem(f"llm_gateway_read_timeout {read_timeout!r} is not 1..86400 seconds. Fix: keep the default 900 (a long "
                "generation sends nothing until it ends when it does not stream).")


def _user_limit_problems(user_limits, by_user, user_names, usage_textfile_dir, problem):
    """Rules 30 and 31."""
    from ansible_collections.hpclab.cluster.plugins.module_utils._llm_usage import LIMITS
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import path_problem, to_int
    example = "{daily_tokens: 200000, concurrent_requests: 2}"

    def check(variable, limits):
        if limits is None:
            return
        if not isinstance(limits, Mapping):
            problem(f"{variable} is not a dict of limits ({type(limits).__name__}). Fix: write e.g. {example}.")
            return
        for name, value in limits.items():
            if name not in LIMITS:
                problem(f"{variable} has {name!r}, which is not a limit of the gateway. Fix: use daily_tokens and "
                        "concurrent_requests only, e.g. " + example + ".")
            elif value is not None and (to_int(value) is None or isinstance(value, (bool, float)) or to_int(value) < 0):
                problem(f"{variable} {name} {value!r} is not a whole number, 0 or more (0 is no limit). Fix: write e.g. {example}.")

    check("llm_gateway_user_limits", user_limits)
    if not isinstance(by_user, Mapping):
        problem(f"llm_gateway_user_limits_by_user is not a dict of user name to limits ({type(by_user).__name__}). Fix: write "
                f"e.g. {{bob: {example}}}.")
        by_user = {}
    for name, limits in by_user.items():
        if name not in user_names:
            problem(f"llm_gateway_user_limits_by_user has limits for {name!r}, who is not in llm_gateway_users (a misspelt name, "
                    "or a user whose access was revoked). Fix: remove the entry, or add the user.")
        check(f"llm_gateway_user_limits_by_user {name}", limits)
    reason = path_problem(usage_textfile_dir) if usage_textfile_dir else None
    if reason:
        problem(f"llm_gateway_usage_textfile_dir {usage_textfile_dir!r} {reason}. Fix: give node_exporter's textfile directory "
                "(the monitoring role's monitoring_textfile_dir, default /var/lib/prometheus/node-exporter), or '' for no metrics.")


def _web_problems(web_passwords, user_names, web_url, problem):
    """Rules 24-25."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import (
        SAFE_PASSWORD,
        SAFE_PASSWORD_REASON,
        WEB_PASSWORD_MAX,
        WEB_PASSWORD_MIN,
        web_password_reason,
    )
    if not isinstance(web_passwords, Mapping):
        problem(f"llm_gateway_web_passwords is not a dict of user name to password ({type(web_passwords).__name__}, value not "
                "shown). Fix: write {alice: \"{{ vault_llm_web_password_alice }}\"}, or {} to have the role generate every one.")
        web_passwords = {}
    for name, password in web_passwords.items():
        if name not in user_names:
            problem(f"llm_gateway_web_passwords has a password for {name!r}, who is not in llm_gateway_users (a misspelt name, or "
                    "a user whose access was revoked): nobody could log in with it. Fix: remove it from llm_gateway_web_passwords, "
                    "or add the user.")
            continue
        # FastChat reads gradio's login file as USER:PASSWORD pairs split at ',' and ':' (fastchat.utils
        # parse_gradio_auth_creds), and llm.env is read by shells (`source`): SAFE_PASSWORD means nothing to either.
        reason = web_password_reason(password, SAFE_PASSWORD, SAFE_PASSWORD_REASON
                                     + " (gradio's login file splits at ',' and ':', and llm.env is read by shells)")
        if reason is None:
            continue
        problem(f"llm_gateway_web_passwords: {name}'s password (value not shown) {reason}. Fix: give a password of "
                f"{WEB_PASSWORD_MIN} to {WEB_PASSWORD_MAX} letters and digits (e.g. openssl rand -hex 12), or remove the entry to "
                "have the role generate one.")
    if not isinstance(web_url, str) or (web_url and not WEB_URL.fullmatch(web_url)):
        problem(f"llm_gateway_web_url {web_url!r} is not an http or https URL of letters, digits and '-._~:/[]%+=' (it is written "
                "to each user's llm.env). Fix: pass the web UI's address (llm_serving_result.web_url, e.g. http://10.0.0.5:7860/), "
                "or \"\" when there is no web UI.")


def _path_problems(key_dir, home_root, web_password_dir, problem):
    """Rules 22 and 26."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import is_within, path_problem
    paths = {}
    for variable, value in (("llm_gateway_key_dir", key_dir), ("llm_gateway_home_root", home_root)):
        reason = path_problem(value)
        if reason:
            problem(f"{variable} {value!r} {reason}. Fix: give a canonical absolute path such as the default.")
        else:
            paths[variable] = value
    if "llm_gateway_key_dir" in paths and "llm_gateway_home_root" in paths and is_within(key_dir, home_root):
        problem(f"llm_gateway_key_dir {key_dir} is under llm_gateway_home_root {home_root}: the kept keys would sit on the users' "
                "shared volume. Fix: keep them on the gateway host (the default /etc/hpclab/llm-gateway/keys).")
    reason = path_problem(web_password_dir)
    if reason:
        problem(f"llm_gateway_web_password_dir {web_password_dir!r} {reason}. Fix: give a canonical absolute path such as the "
                "default /etc/hpclab/llm-gateway/web-passwords.")
        return
    if "llm_gateway_home_root" in paths and is_within(web_password_dir, home_root):
        problem(f"llm_gateway_web_password_dir {web_password_dir} is under llm_gateway_home_root {home_root}: the kept web "
                "passwords would sit on the users' shared volume. Fix: keep them on the gateway host (the default "
                "/etc/hpclab/llm-gateway/web-passwords).")
    elif "llm_gateway_key_dir" in paths and (is_within(web_password_dir, key_dir) or is_within(key_dir, web_password_dir)):
        problem(f"llm_gateway_web_password_dir {web_password_dir} and llm_gateway_key_dir {key_dir} are the same directory or one "
                "holds the other: each run removes from either every file that is not one of its users', so the keys and the "
                "passwords would delete each other. Fix: keep them apart (the defaults /etc/hpclab/llm-gateway/keys and "
                "/etc/hpclab/llm-gateway/web-passwords).")


def llm_gateway_problems(backends, host, users=None, keys=None, backend_api_key="", port=4000, reserved_ports=None,
                         more_reserved_ports=None, listen_address="", host_addresses=None, rate_limit="20r/s", rate_burst=40,
                         max_body_size="1m", read_timeout=900, key_dir="/etc/hpclab/llm-gateway/keys", home_root="/gfsv/home",
                         web_url="", web_passwords=None, web_password_dir="/etc/hpclab/llm-gateway/web-passwords",
                         web_identity="webui", accounts=None, min_uid=None, user_limits=None, user_limits_by_user=None,
                         usage_textfile_dir=""):
    """Filter entry point: see DOCUMENTATION."""
    problems = []

    def problem(text):
        problems.append(f"{host}: {text}")

    good_backends = _backend_problems(backends, problem)
    user_names = _user_problems([] if users is None else users, web_identity, problem)
    _key_problems({} if keys is None else keys, user_names, backend_api_key, problem)
    if users and backend_api_key == "":
        _backend_key_problem(problem)
    _listen_problems(port, listen_address, host_addresses, good_backends, reserved_ports, more_reserved_ports, problem)
    _limit_problems(rate_limit, rate_burst, max_body_size, read_timeout, problem)
    _web_problems({} if web_passwords is None else web_passwords, user_names, web_url, problem)
    if not users and isinstance(web_url, str) and web_url:
        problem(f"llm_gateway_web_url {web_url} names a web UI, but llm_gateway_users is empty: the web UI sends every chat "
                "through the gateway with its own key and only the gateway's users get logins, so anyone who reaches it would "
                "use every model without logging in (the llm_serving role refuses that web UI, after this role changed the "
                "gateway). Fix: list the cluster's users in hpclab_cluster_users (the gateway gives each a web password), "
                "or set llm_serving_fastchat_enabled: false.")
    _path_problems(key_dir, home_root, web_password_dir, problem)
    _user_limit_problems(user_limits, {} if user_limits_by_user is None else user_limits_by_user, user_names,
                         usage_textfile_dir, problem)
    problems += _account_problems(host, users, user_names, accounts, min_uid)
    return problems


class FilterModule:
    """The llm_gateway role's checks of its input."""

    def filters(self):
        return {"llm_gateway_problems": llm_gateway_problems}
