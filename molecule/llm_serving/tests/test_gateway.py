"""The LLM gateway (roles/llm_gateway, playbooks/llm_gateway.yml) in front of both model servers: one OpenAI
address on llm1's network address, a key per user read from the user's home, 401 without a valid key, a user
removed from the inventory losing access (key and web password) on the next run while the web UI keeps its own key,
and bad gateway input (the web logins' and the web UIs' address included) failing before any change.
The requests come from the test machine, a client outside the node."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest
from helpers import case_key, get_host, inventory_hosts, run_playbook, run_playbooks_side_by_side

testinfra_hosts = inventory_hosts("llm")
NODE = testinfra_hosts[0]
GATEWAY_PLAYBOOK = "../../playbooks/llm_gateway.yml"
PORT = 4000
MODELS = ["tiny-a", "tiny-b"]
USERS = [{"name": "alice", "uid": 2001, "gid": 2001}, {"name": "bob", "uid": 2002, "gid": 2002}]
SITE = "/etc/nginx/conf.d/hpclab-llm-gateway.conf"
KEYS_MAP = "/etc/nginx/hpclab-llm-gateway/keys.map"
WEB_PASSWORD_DIR = "/etc/hpclab/llm-gateway/web-passwords"
KEY_DIR = "/etc/hpclab/llm-gateway/keys"
WEB_UI_KEY = f"{KEY_DIR}/webui"


def node():
    return get_host(NODE)


def address() -> str:
    return node().interface("eth0").addresses[0]


def env_file(user: str) -> str:
    return f"/home/{user}/.config/hpclab/llm.env"


def user_env(user: str) -> dict:
    text = node().check_output(f"cat {env_file(user)}")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def call(path: str, key: str | None = None, body: dict | None = None, timeout: float = 120) -> tuple[int, bytes]:
    """One request to the gateway from the test machine: (status, body)."""
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://{address()}:{PORT}{path}", data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def nginx_pid() -> str:
    return node().check_output("systemctl show -p MainPID --value nginx")


def chat(model: str, **extra) -> dict:
    return {"model": model, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8, **extra}


def test_nginx_running_enabled_and_listening_on_the_cluster_address_only(host):
    assert host.service("nginx").is_running
    assert host.service("nginx").is_enabled
    listening = host.check_output("ss -Htln")
    assert f"{address()}:{PORT} " in listening
    assert f"0.0.0.0:{PORT} " not in listening and f"*:{PORT} " not in listening
    assert ":80 " not in listening  # Debian's default site is gone


@pytest.mark.parametrize("port", [8101, 8102])
def test_model_servers_listen_on_loopback_only(host, port):
    listening = host.check_output("ss -Htln")
    assert f"127.0.0.1:{port} " in listening
    assert f"0.0.0.0:{port} " not in listening


@pytest.mark.parametrize("user", USERS, ids=[u["name"] for u in USERS])
def test_each_user_finds_the_url_and_a_key_in_a_file_only_they_can_read(host, user):
    key_file = host.file(env_file(user["name"]))
    assert key_file.mode == 0o600
    assert (key_file.uid, key_file.gid) == (user["uid"], user["gid"])
    env = user_env(user["name"])
    assert env["OPENAI_BASE_URL"] == f"http://{address()}:{PORT}/v1"
    assert len(env["OPENAI_API_KEY"]) >= 32


def test_keys_are_kept_root_only_and_differ(host):
    assert host.file(KEYS_MAP).mode == 0o600 and host.file(KEYS_MAP).user == "root"
    assert user_env("alice")["OPENAI_API_KEY"] != user_env("bob")["OPENAI_API_KEY"]


def test_models_lists_both_lab_models_with_a_users_key():
    status, body = call("/v1/models", user_env("alice")["OPENAI_API_KEY"])
    assert status == 200, body
    assert sorted(model["id"] for model in json.loads(body)["data"]) == MODELS


@pytest.mark.parametrize("model", MODELS)
def test_chat_completion_is_routed_by_model_name(model):
    status, body = call("/v1/chat/completions", user_env("alice")["OPENAI_API_KEY"], chat(model))
    assert status == 200, body
    answer = json.loads(body)
    assert answer["model"] == model
    assert answer["usage"]["completion_tokens"] > 0


@pytest.mark.parametrize("model", MODELS)
def test_streamed_completion_arrives_as_server_sent_events(model):
    status, body = call("/v1/chat/completions", user_env("bob")["OPENAI_API_KEY"], chat(model, stream=True))
    assert status == 200, body
    events = [line[len("data: "):] for line in body.decode().splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]", body
    assert len(events) >= 2 and all(json.loads(event)["object"] == "chat.completion.chunk" for event in events[:-1])


@pytest.mark.parametrize("key", [None, "not-a-key-of-anyone-at-all-0123456789"], ids=["no-key", "unknown-key"])
@pytest.mark.parametrize("path,body", [("/v1/models", None), ("/v1/chat/completions", chat("tiny-a"))], ids=["models", "chat"])
def test_without_a_valid_key_401(key, path, body):
    status, answer = call(path, key, body)
    assert status == 401, answer


def test_unknown_model_is_404_in_openai_form():
    status, body = call("/v1/chat/completions", user_env("alice")["OPENAI_API_KEY"], chat("no-such-model"))
    assert status == 404, body
    assert json.loads(body)["error"]["code"] == "model_not_found"


def test_access_log_names_the_user_never_the_key(host):
    # Its own request: testinfra runs the tests that take `host` before the others.
    assert call("/v1/chat/completions", user_env("alice")["OPENAI_API_KEY"], chat("tiny-b"))[0] == 200
    log = host.check_output("cat /var/log/nginx/hpclab-llm-gateway*.log")
    assert re.search(r"user=alice .*model=tiny-b", log), log
    for user in ("alice", "bob"):
        assert user_env(user)["OPENAI_API_KEY"] not in log


def test_gateway_run_that_changes_nothing_reloads_nothing():
    pid = nginx_pid()
    run = run_playbook(GATEWAY_PLAYBOOK)
    assert run.rc == 0, run
    assert run.total_changed == 0, run
    assert nginx_pid() == pid


def test_a_user_removed_from_the_inventory_loses_access_on_the_next_run(host):
    alice_key, bob_key = user_env("alice")["OPENAI_API_KEY"], user_env("bob")["OPENAI_API_KEY"]
    bob_web_password = user_env("bob")["HPCLAB_LLM_WEB_PASSWORD"]
    web_ui_key = host.file(WEB_UI_KEY).content_string.strip()
    run = run_playbook(GATEWAY_PLAYBOOK, extra_vars={"hpclab_cluster_users": USERS[:1]})
    try:
        assert run.rc == 0, run
        assert call("/v1/models", bob_key)[0] == 401
        assert not host.file(env_file("bob")).exists
        assert not host.file(f"{WEB_PASSWORD_DIR}/bob").exists  # his web password goes with his key
        assert call("/v1/models", alice_key)[0] == 200  # the others keep their keys
        assert user_env("alice")["OPENAI_API_KEY"] == alice_key
        assert call("/v1/models", web_ui_key)[0] == 200  # the web UI's key is nobody's: it stays
    finally:
        # Bob comes back with his old web password given: the web UIs' login file is written by playbooks/llm.yml, not
        # by this playbook alone, so it still holds that password, and the next converge finds nothing to change.
        back = run_playbook(GATEWAY_PLAYBOOK, extra_vars={"llm_gateway_web_passwords": {"bob": bob_web_password}})
    assert back.rc == 0, back
    new_bob_key = user_env("bob")["OPENAI_API_KEY"]
    assert new_bob_key != bob_key  # a new key, not the revoked one
    assert call("/v1/models", new_bob_key)[0] == 200
    assert call("/v1/models", bob_key)[0] == 401
    assert user_env("bob")["HPCLAB_LLM_WEB_PASSWORD"] == bob_web_password
    assert host.file(WEB_UI_KEY).content_string.strip() == web_ui_key


# A user's key first used by a run limited by --tags to the configure step (nginx's key map): that run keeps it, and
# the next full run gives the user the same key. Before, the key decision ran under any tags but its keep only under
# llm_gateway_keys: the map got a key that nobody held, and the next full run made and mapped another one.
def test_a_key_first_used_by_a_run_limited_by_tags_is_kept_and_stays(host):
    bob_web_password = user_env("bob")["HPCLAB_LLM_WEB_PASSWORD"]
    removed = run_playbook(GATEWAY_PLAYBOOK, extra_vars={"hpclab_cluster_users": USERS[:1]})
    assert removed.rc == 0, removed
    try:
        tagged = run_playbook(GATEWAY_PLAYBOOK, "--tags", "llm_gateway_configure")
        assert tagged.rc == 0, tagged
        kept = host.file(f"{KEY_DIR}/bob")
        assert kept.exists and kept.user == "root" and kept.mode == 0o600
        key = kept.content_string.strip()
        keys_map = host.file(KEYS_MAP).sha256sum
        assert call("/v1/models", key)[0] == 200  # the map has it, nginx reloaded
    finally:
        full = run_playbook(GATEWAY_PLAYBOOK, extra_vars={"llm_gateway_web_passwords": {"bob": bob_web_password}})
    assert full.rc == 0, full
    assert host.file(KEYS_MAP).sha256sum == keys_map
    assert user_env("bob")["OPENAI_API_KEY"] == key
    assert call("/v1/models", key)[0] == 200


# Each message names the host and the variable, and says the fix; never the key itself.
SHORT_KEY = "tooshort0123456789"
SAME_KEY = "a" * 20 + "0123456789abcdef"
BAD_INPUT = [
    pytest.param({"llm_gateway_keys": {"alice": SHORT_KEY}},
                 f"{NODE}: llm_gateway_keys: alice's key (value not shown) is shorter than 32 characters", id="short-key"),
    pytest.param({"llm_gateway_keys": {"alice": SAME_KEY, "bob": SAME_KEY}},
                 f"{NODE}: llm_gateway_keys: alice, bob have the same key", id="same-key"),
    pytest.param({"llm_gateway_port": 8101}, f"{NODE}: llm_gateway_port 8101 is the port of the model server tiny-a", id="model-port"),
    pytest.param({"llm_gateway_port": 7860}, f"{NODE}: llm_gateway_port 7860 is the port of", id="web-ui-port"),
    # The web logins (the gateway's) and the web UIs' address (the llm_serving role's checks, which this playbook runs
    # alone through its read-only entry point).
    pytest.param({"llm_gateway_web_passwords": {"alice": "short-password1"}},
                 f"{NODE}: llm_gateway_web_passwords: alice's password (value not shown) is shorter than 16 characters",
                 id="short-web-password"),
    pytest.param({"hpclab_cluster_users": USERS + [{"name": "webui", "uid": 2003, "gid": 2003}]},
                 f"{NODE}: llm_gateway_users[2]: webui is the name of the web UI's own key at the gateway", id="user-named-webui"),
    # No users, so no web logins, in front of a web UI that sends every chat through the gateway: refused here, not by
    # the llm_serving role after the gateway changed.
    pytest.param({"hpclab_cluster_users": []},
                 "names a web UI, but llm_gateway_users is empty: the web UI sends every chat through the gateway",
                 id="web-ui-without-users"),
    # Per-user limits (issue 56): a misspelt user, a negative budget.
    pytest.param({"llm_gateway_user_limits_by_user": {"carol": {"daily_tokens": 5000}}},
                 f"{NODE}: llm_gateway_user_limits_by_user has limits for 'carol', who is not in llm_gateway_users",
                 id="limits-of-an-unknown-user"),
    pytest.param({"llm_gateway_user_limits": {"daily_tokens": -1}},
                 f"{NODE}: llm_gateway_user_limits daily_tokens -1 is not a whole number, 0 or more", id="negative-budget"),
    pytest.param({"llm_serving_fastchat_bind_address": "0.0.0.0"},
                 f"{NODE}: llm_serving_fastchat_bind_address 0.0.0.0 would listen on every network of the host",
                 id="web-ui-on-every-address"),
]


@pytest.fixture(scope="module")
def bad_input_runs():
    """Every bad input's run, side by side, and the gateway's files and nginx before them."""
    before = node().file(SITE).sha256sum, node().file(KEYS_MAP).sha256sum, nginx_pid()
    return before, run_playbooks_side_by_side(GATEWAY_PLAYBOOK, [case.values[0] for case in BAD_INPUT])


@pytest.mark.parametrize("extra_vars,message", BAD_INPUT)
def test_bad_input_fails_before_any_change(host, bad_input_runs, extra_vars, message):
    before, runs = bad_input_runs
    run = runs[case_key(extra_vars)]
    assert run.rc != 0, run
    assert message in run.output and "Fix:" in run.output, run
    assert run.total_changed == 0, run
    for value in list(extra_vars.get("llm_gateway_keys", {}).values()) + list(extra_vars.get("llm_gateway_web_passwords", {}).values()):
        assert value not in run.output
    assert (host.file(SITE).sha256sum, host.file(KEYS_MAP).sha256sum, nginx_pid()) == before
