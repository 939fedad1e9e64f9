"""The llm_gateway role's preflight: every input nginx would refuse, route wrongly, or that would let a key be guessed,
shared or shown, one rule at a time."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.llm_gateway_problems import FilterModule

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = FilterModule().filters()["llm_gateway_problems"]
# The role's own port table and defaults, so that the tests follow them.
ROLE_VARS = yaml.safe_load((ROOT / "roles/llm_gateway/vars/main.yml").read_text())
RESERVED = ROLE_VARS["__llm_gateway_reserved_ports"]
DEFAULTS = yaml.safe_load((ROOT / "roles/llm_gateway/defaults/main.yml").read_text())

KEY_A = "A" * 20 + "b" * 20
KEY_B = "c" * 40
# The model servers' key (llm_serving_api_key), which playbooks/llm_gateway.yml passes: required where there are users.
BACKEND_KEY = "molecule-not-secret"
WEB_PASSWORD = "alices-web-password-0123"
# What playbooks/llm.yml passes: llm_serving_result.models.
BACKENDS = [{"name": "llama-3-8b", "port": 8000, "engine": "vllm"}, {"name": "qwen2.5-0.5b_q4", "port": 8101, "engine": "llama_cpp"}]
USERS = [{"name": "alice", "uid": 2001, "gid": 2001}, {"name": "bob", "uid": "2002", "gid": "2002", "groups": ["hpc"]}]


def check(backends=None, **kwargs):
    arguments = {
        "host": "gpu1",
        "users": USERS,
        "keys": {"alice": KEY_A},
        "backend_api_key": BACKEND_KEY,
        "port": DEFAULTS["llm_gateway_port"],
        "reserved_ports": RESERVED,
        "more_reserved_ports": [7860, 7861, "9093", "9100-9101"],
        "listen_address": "10.0.0.5",
        "host_addresses": ["10.0.0.5", "127.0.0.1", "fd00::5"],
        "rate_limit": DEFAULTS["llm_gateway_rate_limit"],
        "rate_burst": DEFAULTS["llm_gateway_rate_burst"],
        "max_body_size": DEFAULTS["llm_gateway_max_body_size"],
        "read_timeout": DEFAULTS["llm_gateway_read_timeout"],
        "key_dir": DEFAULTS["llm_gateway_key_dir"],
        "home_root": "/gfsv/home",
        "web_url": "http://10.0.0.5:7860/",
        "web_passwords": {},
        "web_password_dir": DEFAULTS["llm_gateway_web_password_dir"],
        "web_identity": ROLE_VARS["__llm_gateway_web_identity"],
    }
    arguments.update(kwargs)
    return PROBLEMS(BACKENDS if backends is None else backends, **arguments)


def test_registered():
    assert set(FilterModule().filters()) == {"llm_gateway_problems"}


def test_bad_reserved_table_raises():
    with pytest.raises(AnsibleFilterError, match="reserved port 'x-y'"):
        check(reserved_ports={"x-y": "what"})


@pytest.mark.parametrize(
    "backends,kwargs",
    [
        pytest.param(None, {}, id="role-defaults"),
        pytest.param(None, {"keys": {}}, id="every-key-generated"),
        pytest.param(None, {"keys": {"alice": KEY_A, "bob": KEY_B + "=="}}, id="given-keys-with-padding"),
        pytest.param(None, {"keys": {"alice": "x" * 200}}, id="longest-key"),
        # No users yet: valid without a web UI (with one, rule 28).
        pytest.param(None, {"users": [], "keys": {}, "web_url": ""}, id="nobody-yet"),
        pytest.param(None, {"users": [], "keys": {}, "backend_api_key": "", "web_url": ""}, id="nobody-yet-servers-without-a-key"),
        pytest.param([{"name": "a", "port": 8000, "host": "10.0.0.12"}, {"name": "b", "port": 8000, "host": "10.0.0.13"}], {},
                     id="same-port-other-hosts"),
        pytest.param([{"name": "m", "port": 4000, "host": "10.0.0.12"}], {}, id="gateway-port-on-another-host"),
        pytest.param([{"name": "m", "port": 8000, "host": "gpu2.cluster"}], {}, id="backend-host-name"),
        pytest.param([{"name": "m", "port": 8000, "host": "::1"}], {"listen_address": "fd00::5"}, id="ipv6"),
        pytest.param(None, {"listen_address": "127.0.0.1"}, id="loopback"),
        pytest.param(None, {"host_addresses": []}, id="addresses-unknown"),
        pytest.param(None, {"rate_limit": "600r/m", "rate_burst": 0, "max_body_size": "512k", "read_timeout": 86400}, id="other-limits"),
        pytest.param(None, {"port": 80}, id="port-80"),
        pytest.param(None, {"web_url": "", "web_passwords": {}}, id="no-web-ui"),
        pytest.param(None, {"web_passwords": {"alice": WEB_PASSWORD}}, id="given-web-password"),
        pytest.param(None, {"web_passwords": {"alice": "x" * 16, "bob": "A.b_c+d/e=f@g%h^i-j"}}, id="web-passwords-every-character"),
        pytest.param(None, {"web_url": "http://[fd00::5]:7860/"}, id="web-url-ipv6"),
        pytest.param(None, {"web_password_dir": "/etc/hpclab/llm-gateway/web"}, id="web-password-dir-beside-the-keys"),
    ],
)
def test_valid_input_has_no_problem(backends, kwargs):
    assert check(backends, **kwargs) == []


@pytest.mark.parametrize(
    "backends,kwargs,expected",
    [
        # rule 1
        pytest.param([], {}, "llm_gateway_backends is empty: the gateway would answer 404 to every model", id="no-backend"),
        pytest.param({"name": "m"}, {}, "llm_gateway_backends is not a list of model servers (dict)", id="backends-dict"),
        pytest.param(["m:8000"], {}, "llm_gateway_backends[0] is not a dict ('m:8000')", id="backend-string"),
        # rule 2
        pytest.param([{"name": "llama 3", "port": 8000}], {}, "llm_gateway_backends[0] (llama 3): name 'llama 3' cannot be routed", id="name-blank"),
        pytest.param([{"name": "org/model", "port": 8000}], {}, "name 'org/model' cannot be routed", id="name-slash"),
        pytest.param([{"name": "-m", "port": 8000}], {}, "name '-m' cannot be routed", id="name-dash-first"),
        pytest.param([{"name": "m;", "port": 8000}], {}, "name 'm;' cannot be routed", id="name-semicolon"),
        pytest.param([{"name": "m" * 129, "port": 8000}], {}, "at most 128 characters", id="name-long"),
        pytest.param([{"port": 8000}], {}, "llm_gateway_backends[0]: name None cannot be routed", id="name-missing"),
        # rule 3
        pytest.param([{"name": "m", "port": 8000}, {"name": "m", "port": 8001}], {}, "name m is also llm_gateway_backends[0]'s",
                     id="name-twice"),
        # rule 4
        pytest.param([{"name": "m", "port": 0}], {}, "port 0 is not a TCP port 1..65535", id="port-zero"),
        pytest.param([{"name": "m", "port": "http"}], {}, "port 'http' is not a TCP port", id="port-word"),
        pytest.param([{"name": "m"}], {}, "port None is not a TCP port", id="port-missing"),
        # rule 5
        pytest.param([{"name": "m", "port": 8000, "host": "gpu 2"}], {}, "host 'gpu 2' is neither an IP address nor a host name",
                     id="host-blank"),
        pytest.param([{"name": "m", "port": 8000, "host": "http://gpu2"}], {}, "host 'http://gpu2'", id="host-url"),
        # rule 6
        pytest.param([{"name": "a", "port": 8000}, {"name": "b", "port": 8000, "host": "127.0.0.1"}], {},
                     "127.0.0.1:8000 is also llm_gateway_backends[0]'s address", id="port-twice"),
        # rule 7
        pytest.param(None, {"users": [{"name": "Alice", "uid": 1, "gid": 1}], "keys": {}}, "name 'Alice' is not a user name",
                     id="user-name-upper"),
        pytest.param(None, {"users": [{"name": "../root", "uid": 1, "gid": 1}], "keys": {}}, "name '../root' is not a user name",
                     id="user-name-path"),
        pytest.param(None, {"users": [{"uid": 1, "gid": 1}], "keys": {}}, "llm_gateway_users[0]: name None is not a user name",
                     id="user-no-name"),
        pytest.param(None, {"users": [{"name": "carol", "gid": 1}], "keys": {}}, "llm_gateway_users[0] (carol) has no numeric uid",
                     id="user-no-uid"),
        pytest.param(None, {"users": [{"name": "carol", "uid": "x", "gid": True}], "keys": {}}, "has no numeric uid and gid",
                     id="user-bad-ids"),
        pytest.param(None, {"users": ["carol"], "keys": {}}, "llm_gateway_users[0] is not a dict ('carol')", id="user-string"),
        pytest.param(None, {"users": {"carol": 1}, "keys": {}}, "llm_gateway_users is not a list of users (dict)", id="users-dict"),
        # rule 8
        pytest.param(None, {"users": USERS + [{"name": "bob", "uid": 2003, "gid": 2003}]}, "bob is listed twice", id="user-twice"),
        # rule 9
        pytest.param(None, {"keys": [KEY_A]}, "llm_gateway_keys is not a dict of user name to key (list, value not shown)", id="keys-list"),
        # rule 10
        pytest.param(None, {"keys": {"alcie": KEY_A}}, "llm_gateway_keys has a key for 'alcie', who is not in llm_gateway_users",
                     id="key-unknown-user"),
        # rule 11
        pytest.param(None, {"keys": {"alice": "short-key"}}, "alice's key (value not shown) is shorter than 32 characters", id="key-short"),
        pytest.param(None, {"keys": {"alice": "x" * 31}}, "is shorter than 32 characters", id="key-31"),
        pytest.param(None, {"keys": {"alice": 12345678901234567890123456789012345}}, "is shorter than 32 characters", id="key-number"),
        pytest.param(None, {"keys": {"alice": "x" * 201}}, "is longer than 200 characters", id="key-long"),
        pytest.param(None, {"keys": {"alice": KEY_A + '";'}}, "alice's key (value not shown) is not a bearer token", id="key-quote"),
        pytest.param(None, {"keys": {"alice": KEY_A + " x"}}, "is not a bearer token", id="key-blank"),
        # rule 12
        pytest.param(None, {"keys": {"alice": KEY_A, "bob": KEY_A.lower()}},
                     "alice, bob have the same key (compared ignoring case", id="keys-shared"),
        # rule 13
        pytest.param(None, {"backend_api_key": "not a token"}, "llm_gateway_backend_api_key (value not shown) is not a bearer token",
                     id="backend-key-blank"),
        pytest.param(None, {"backend_api_key": None}, "llm_gateway_backend_api_key (value not shown)", id="backend-key-none"),
        # rule 14
        pytest.param(None, {"port": 70000}, "llm_gateway_port 70000 is not a TCP port 1..65535", id="port-range"),
        pytest.param(None, {"port": "4000/tcp"}, "llm_gateway_port '4000/tcp' is not a TCP port", id="port-suffix"),
        # rule 15
        pytest.param(None, {"port": 8000}, "llm_gateway_port 8000 is the port of the model server llama-3-8b (127.0.0.1:8000",
                     id="port-of-backend"),
        pytest.param([{"name": "m", "port": 4000, "host": "10.0.0.5"}], {}, "the port of the model server m (10.0.0.5:4000",
                     id="port-of-backend-on-own-address"),
        pytest.param([{"name": "m", "port": 4000, "host": "localhost"}], {}, "the port of the model server m (localhost:4000",
                     id="port-of-backend-localhost"),
        # rule 16
        pytest.param(None, {"port": 6817}, "llm_gateway_port 6817 is the port of slurmctld (slurm_master)", id="port-slurmctld"),
        pytest.param(None, {"port": 50000}, "llm_gateway_port 50000 is the port of GlusterFS bricks (glusterfs)", id="port-brick-range"),
        pytest.param(None, {"port": 7860}, "llm_gateway_port 7860 is the port of a port kept for another service (llm_gateway_reserved_ports)",
                     id="port-fastchat"),
        pytest.param(None, {"port": 9101}, "llm_gateway_port 9101 is the port of a port kept", id="port-given-range"),
        pytest.param(None, {"more_reserved_ports": ["ui"]}, "llm_gateway_reserved_ports: 'ui' is neither a port nor FIRST-LAST",
                     id="reserved-word"),
        pytest.param(None, {"more_reserved_ports": ["9-1"]}, "'9-1' is neither a port nor FIRST-LAST", id="reserved-backwards"),
        pytest.param(None, {"more_reserved_ports": [True]}, "True is neither a port", id="reserved-bool"),
        # rule 17
        pytest.param(None, {"listen_address": "0.0.0.0"}, "llm_gateway_listen_address 0.0.0.0 would listen on every network", id="listen-any"),
        pytest.param(None, {"listen_address": "::"}, "llm_gateway_listen_address :: would listen on every network", id="listen-any6"),
        pytest.param(None, {"listen_address": ""}, "llm_gateway_listen_address '' is not an IP address (the default is the address of "
                     "the host's default route", id="listen-unknown"),
        pytest.param(None, {"listen_address": "gpu1"}, "llm_gateway_listen_address 'gpu1' is not an IP address", id="listen-name"),
        pytest.param(None, {"listen_address": "10.9.9.9"}, "llm_gateway_listen_address 10.9.9.9 is not an address of this host "
                     "(10.0.0.5, 127.0.0.1, fd00::5)", id="listen-foreign"),
        # rule 18
        pytest.param(None, {"rate_limit": "20/s"}, "llm_gateway_rate_limit '20/s' is not an nginx rate", id="rate-no-r"),
        pytest.param(None, {"rate_limit": "0r/s"}, "llm_gateway_rate_limit '0r/s'", id="rate-zero"),
        pytest.param(None, {"rate_limit": "20r/h"}, "llm_gateway_rate_limit '20r/h'", id="rate-hour"),
        # rule 19
        pytest.param(None, {"rate_burst": -1}, "llm_gateway_rate_burst -1 is not a whole number", id="burst-negative"),
        pytest.param(None, {"rate_burst": 1.5}, "llm_gateway_rate_burst 1.5", id="burst-fraction"),
        # rule 20
        pytest.param(None, {"max_body_size": "0"}, "llm_gateway_max_body_size '0' is not an nginx size of at least 1 byte", id="size-zero"),
        pytest.param(None, {"max_body_size": "1g"}, "llm_gateway_max_body_size '1g'", id="size-giga"),
        pytest.param(None, {"max_body_size": "1 m"}, "llm_gateway_max_body_size '1 m'", id="size-blank"),
        # rule 21
        pytest.param(None, {"read_timeout": 0}, "llm_gateway_read_timeout 0 is not 1..86400 seconds", id="timeout-zero"),
        pytest.param(None, {"read_timeout": "15m"}, "llm_gateway_read_timeout '15m'", id="timeout-unit"),
        pytest.param(None, {"read_timeout": 86401}, "llm_gateway_read_timeout 86401", id="timeout-long"),
        # rule 22
        pytest.param(None, {"key_dir": "keys"}, "llm_gateway_key_dir 'keys' is not an absolute path", id="key-dir-relative"),
        pytest.param(None, {"home_root": "/gfsv/home/"}, "llm_gateway_home_root '/gfsv/home/' is not canonical", id="home-root-slash"),
        pytest.param(None, {"key_dir": "/gfsv/home/.keys"}, "llm_gateway_key_dir /gfsv/home/.keys is under llm_gateway_home_root",
                     id="key-dir-in-homes"),
        # rule 23
        pytest.param(None, {"users": USERS + [{"name": "webui", "uid": 2003, "gid": 2003}]},
                     "llm_gateway_users[2]: webui is the name of the web UI's own key at the gateway", id="user-named-webui"),
        # rule 24
        pytest.param(None, {"web_passwords": {"alice": "short-password1"}},
                     "llm_gateway_web_passwords: alice's password (value not shown) is shorter than 16 characters", id="web-password-15"),
        pytest.param(None, {"web_passwords": {"alice": "x" * 201}}, "alice's password (value not shown) is longer than 200",
                     id="web-password-long"),
        pytest.param(None, {"web_passwords": {"alice": "alice:web,password"}}, "alice's password (value not shown) has a character",
                     id="web-password-colon-comma"),
        pytest.param(None, {"web_passwords": {"alice": "alice web password"}}, "has a character other than", id="web-password-blank"),
        pytest.param(None, {"web_passwords": {"alice": "$(touch /tmp/x)password"}}, "has a character other than",
                     id="web-password-shell"),
        pytest.param(None, {"web_passwords": {"alice": 1234567890123456789}}, "is shorter than 16", id="web-password-number"),
        pytest.param(None, {"web_passwords": {"carol": WEB_PASSWORD}},
                     "llm_gateway_web_passwords has a password for 'carol', who is not in llm_gateway_users", id="web-password-unknown-user"),
        pytest.param(None, {"web_passwords": [WEB_PASSWORD]}, "llm_gateway_web_passwords is not a dict of user name to password (list",
                     id="web-passwords-list"),
        # rule 25
        pytest.param(None, {"web_url": "10.0.0.5:7860"}, "llm_gateway_web_url '10.0.0.5:7860' is not an http or https URL",
                     id="web-url-no-scheme"),
        pytest.param(None, {"web_url": "http://10.0.0.5:7860/;reboot"}, "llm_gateway_web_url 'http://10.0.0.5:7860/;reboot'",
                     id="web-url-shell"),
        # rule 26
        pytest.param(None, {"web_password_dir": "web-passwords"}, "llm_gateway_web_password_dir 'web-passwords' is not an absolute path",
                     id="web-password-dir-relative"),
        pytest.param(None, {"web_password_dir": "/gfsv/home/.web"}, "llm_gateway_web_password_dir /gfsv/home/.web is under "
                     "llm_gateway_home_root", id="web-password-dir-in-homes"),
        pytest.param(None, {"web_password_dir": DEFAULTS["llm_gateway_key_dir"]}, "llm_gateway_web_password_dir "
                     "/etc/hpclab/llm-gateway/keys and llm_gateway_key_dir /etc/hpclab/llm-gateway/keys are the same directory",
                     id="web-password-dir-is-the-key-dir"),
        pytest.param(None, {"web_password_dir": "/etc/hpclab/llm-gateway/keys/web"}, "or one holds the other",
                     id="web-password-dir-in-the-key-dir"),
        pytest.param(None, {"web_password_dir": "/etc/hpclab"}, "or one holds the other", id="web-password-dir-around-the-key-dir"),
    ],
)
def test_each_problem_names_host_variable_and_fix(backends, kwargs, expected):
    found = check(backends, **kwargs)
    assert len(found) == 1, found
    assert expected in found[0], found
    assert found[0].startswith("gpu1: ") and "Fix:" in found[0]


@pytest.mark.parametrize(
    "keys,backend_api_key",
    [
        ({"alice": "tooshortsecret"}, BACKEND_KEY),
        ({"alice": KEY_A + '"x'}, BACKEND_KEY),
        ({"alice": KEY_A, "bob": KEY_A}, BACKEND_KEY),
        ({"alice": KEY_A}, "bad secret"),
        ({"carol": KEY_A}, BACKEND_KEY),
        ({"alice": KEY_A}, ""),
    ],
)
def test_no_message_shows_a_key(keys, backend_api_key):
    found = check(keys=keys, backend_api_key=backend_api_key)
    assert found
    for secret in [s for s in list(keys.values()) + [backend_api_key] if s]:
        assert all(secret not in message for message in found), found


def test_every_problem_is_reported_at_once():
    found = check([{"name": "a b", "port": 8000}], keys={"alice": "short"}, port=22, listen_address="0.0.0.0", rate_limit="fast")
    assert len(found) == 5, found


@pytest.mark.parametrize("web_passwords", [
    {"alice": "tooshortsecret"}, {"alice": "secret,with:colons0123"}, {"alice": "x" * 201}, {"carol": WEB_PASSWORD},
])
def test_no_message_shows_a_web_password(web_passwords):
    found = check(web_passwords=web_passwords)
    assert found
    assert all(password not in message for password in web_passwords.values() for message in found), found


def test_the_defaults_have_no_web_ui_and_pass():
    assert DEFAULTS["llm_gateway_web_url"] == "" and DEFAULTS["llm_gateway_web_passwords"] == {}
    assert check(web_url=DEFAULTS["llm_gateway_web_url"], web_passwords=DEFAULTS["llm_gateway_web_passwords"]) == []


def test_users_need_a_key_in_front_of_the_model_servers():
    """Rule 27: the gateway's users and model servers without a key of their own: anyone on their host bypasses the
    users' keys (the reference design's GPU server is also a Slurm worker)."""
    found = check(backend_api_key="")
    assert len(found) == 1, found
    assert found[0].startswith("gpu1: llm_gateway_backend_api_key is empty, so the model servers behind the gateway answer "
                               "without a key"), found
    assert "Fix: set llm_serving_api_key" in found[0] and "openssl rand -hex 32" in found[0], found


def test_the_backend_key_is_not_needed_before_there_are_users():
    assert check(users=[], keys={}, backend_api_key="", web_url="") == []


def test_a_web_ui_without_users_fails_before_the_gateway_changes():
    """Rule 28: no users, so no web logins, while the web UI sends every chat through the gateway with its own key: the
    llm_serving role would refuse that web UI (its rule 46) only after the gateway's play had changed the gateway."""
    found = check(users=[], keys={}, backend_api_key="")
    assert len(found) == 1, found
    assert found[0].startswith("gpu1: llm_gateway_web_url http://10.0.0.5:7860/ names a web UI, but llm_gateway_users is "
                               "empty"), found
    assert "Fix: list the cluster's users in hpclab_cluster_users" in found[0], found
    assert "llm_serving_fastchat_enabled: false" in found[0], found


# Issue 54, rule 29: the gateway's users are judged as the Slurm roles judge them.
def test_issue54_users_pass_on_a_real_node(fixture_text):
    accounts = {"passwd": fixture_text("debian", "getent-passwd-base.txt"), "group": fixture_text("debian", "getent-group-base.txt")}
    assert check(accounts=accounts, min_uid=1000) == []


@pytest.mark.parametrize(
    "user,words",
    [
        ({"name": "nginx", "uid": 2050, "gid": 2050}, "nginx is the LLM gateway's web server's"),
        ({"name": "llm", "uid": 2050, "gid": 2050}, "llm is the model servers'"),
        ({"name": "carol", "uid": 100, "gid": 2050}, "carol's uid 100 is below 1000"),
    ],
)
def test_issue54_one_problem_naming_host_user_and_fix(fixture_text, user, words):
    accounts = {"passwd": fixture_text("debian", "getent-passwd-base.txt"), "group": fixture_text("debian", "getent-group-base.txt")}
    problems = check(users=USERS + [user], accounts=accounts, min_uid="1000")
    assert len(problems) == 1, problems
    assert problems[0].startswith("gpu1: llm_gateway_users (default hpclab_cluster_users): ")
    assert words in problems[0] and "Fix:" in problems[0] and "llm_gateway_users_min_uid" in problems[0]


def test_issue54_a_malformed_user_is_judged_by_the_shape_rules_only():
    problems = check(users=USERS + [{"name": "root", "uid": "x", "gid": 0}])
    assert not any("which the collection uses" in p for p in problems), problems


# --- rules 30 and 31: per-user limits (issue 56) ------------------------------------------------------------------


def test_the_default_limits_and_a_users_own_pass():
    assert check(user_limits=DEFAULTS["llm_gateway_user_limits"], user_limits_by_user={},
                 usage_textfile_dir=DEFAULTS["llm_gateway_usage_textfile_dir"]) == []
    assert check(user_limits={"daily_tokens": 500000, "concurrent_requests": None},
                 user_limits_by_user={"bob": {"daily_tokens": 0}, "alice": {"concurrent_requests": "2"}}, usage_textfile_dir="") == []


@pytest.mark.parametrize("kwargs,expected", [
    ({"user_limits": {"daily_tokens": -1}}, "gpu1: llm_gateway_user_limits daily_tokens -1 is not a whole number, 0 or more"),
    ({"user_limits": {"daily_tokens": 1.5}}, "gpu1: llm_gateway_user_limits daily_tokens 1.5 is not a whole number"),
    ({"user_limits": {"daily_token": 5}}, "gpu1: llm_gateway_user_limits has 'daily_token', which is not a limit of the gateway"),
    ({"user_limits": "1000"}, "gpu1: llm_gateway_user_limits is not a dict of limits (str)"),
    ({"user_limits_by_user": {"carol": {"daily_tokens": 5}}},
     "gpu1: llm_gateway_user_limits_by_user has limits for 'carol', who is not in llm_gateway_users"),
    ({"user_limits_by_user": {"bob": {"concurrent_requests": "many"}}},
     "gpu1: llm_gateway_user_limits_by_user bob concurrent_requests 'many' is not a whole number"),
    ({"user_limits_by_user": ["bob"]}, "gpu1: llm_gateway_user_limits_by_user is not a dict of user name to limits (list)"),
    ({"usage_textfile_dir": "var/lib/textfiles"}, "gpu1: llm_gateway_usage_textfile_dir 'var/lib/textfiles'"),
])
def test_bad_limits_name_host_variable_and_fix(kwargs, expected):
    problems = check(**kwargs)
    assert len(problems) == 1 and problems[0].startswith(expected) and "Fix:" in problems[0], problems


def test_the_limit_plan_groups_users_by_concurrent_limit_and_lists_budgets():
    from ansible_collections.hpclab.cluster.plugins.filter.llm_gateway_limit_plan import FilterModule as Plan
    plan = Plan().filters()["llm_gateway_limit_plan"]
    assert plan(["alice", "bob", "carol"], DEFAULTS["llm_gateway_user_limits"], {}) == {"daily": {}, "concurrent": {}}
    assert plan(["alice", "bob", "carol"], {"daily_tokens": 1000, "concurrent_requests": 4},
                {"bob": {"concurrent_requests": 1}, "carol": {"daily_tokens": 0, "concurrent_requests": None}}) == {
        "daily": {"alice": 1000, "bob": 1000}, "concurrent": {"4": ["alice", "carol"], "1": ["bob"]}}
