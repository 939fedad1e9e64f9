"""The llm_gateway role's files, rendered offline with Ansible's own Templar from the role's defaults and vars: each key
only where it must be (the root-only map, the user's own llm.env), the backends' key only in its root-only include, the
routes and /v1/models for every backend, and the preflight's filter call passing on the lab's users."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from ansible.template import trust_as_template
from ansible_collections.hpclab.cluster.plugins.modules.host_state_info import directory_contents
from role_render import RoleRender

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "llm_gateway"
LAB_USERS = yaml.safe_load((ROOT / "inventory" / "lab" / "group_vars" / "all" / "users.yml").read_text())["hpclab_cluster_users"]

KEYS = {"alice": "k" * 20 + "ALICE" + "1" * 23, "bob": "Bobs-given-key_0123456789~+/abcdefgh=="}
BACKEND_KEY = "backend-secret-0123456789"
HOST_VARS = {
    "hpclab_shared_path": "/gfsv",
    "hpclab_cluster_users": LAB_USERS + [{"name": "bob", "uid": 2002, "gid": 2002}],
    "llm_gateway_backend_api_key": BACKEND_KEY,
    # As playbooks/llm.yml passes llm_serving_result.models.
    "llm_gateway_backends": [{"name": "llama-3-8b", "port": 8000, "engine": "vllm"},
                             {"name": "qwen2.5-0.5b", "port": 8101, "engine": "llama_cpp", "host": "fd00::12"}],
    "ansible_facts": {"default_ipv4": {"address": "10.0.0.5"}, "all_ipv4_addresses": ["10.0.0.5"], "all_ipv6_addresses": []},
}
# What keys.yml, web.yml and homes.yml set before the templates are written (no web UI: no web password).
SET = {"__llm_gateway_user_keys": KEYS, "__llm_gateway_web_user_passwords": {},
       "__llm_gateway_homes": {"write": ["alice"], "missing": ["bob"], "refused": []}}
# With the web UI (llm_gateway_web_url): its key beside the users', and a web password per user.
WEB_URL = "http://10.0.0.5:7860/"
WEB_KEY = "W" * 24 + "webui" + "0" * 19
WEB_PASSWORDS = {"alice": "alicesWebPassword0123456", "bob": "bob-given@web%password"}
WEB_VARS = {**HOST_VARS, "llm_gateway_web_url": WEB_URL}
WEB_SET = {"__llm_gateway_user_keys": {**KEYS, "webui": WEB_KEY}, "__llm_gateway_web_user_passwords": WEB_PASSWORDS}


@pytest.fixture(scope="module")
def role():
    return RoleRender(ROLE, HOST_VARS, facts=SET, play={"inventory_hostname": "gpu1"})


@pytest.fixture(scope="module")
def files(role):
    return {
        "site": role.render("hpclab-llm-gateway.conf.j2"),
        "router": role.render("router.js.j2"),
        "keys": role.render("keys.map.j2"),
        "backend": role.render("backend-auth.conf.j2"),
        "alice_env": role.render("llm.env.j2", extra={"item": {"name": "alice", "uid": 2001, "gid": 2001}}),
    }


def test_every_template_starts_with_ansible_managed(files):
    for name, text in files.items():
        marker = "// Ansible managed" if name == "router" else "# Ansible managed"
        assert marker in text.splitlines()[:3], name


def test_keys_only_in_the_root_only_map_and_the_users_own_file(files):
    assert files["keys"].splitlines()[4:] == [f'"Bearer {KEYS["alice"]}" alice;', f'"Bearer {KEYS["bob"]}" bob;']
    assert KEYS["alice"] in files["alice_env"] and KEYS["bob"] not in files["alice_env"]
    for name in ("site", "router", "backend"):
        assert all(key not in files[name] for key in KEYS.values()), name


def test_backend_key_only_in_its_include(files, role):
    assert 'proxy_set_header Authorization "Bearer backend-secret-0123456789";' in files["backend"]
    assert all(BACKEND_KEY not in files[name] for name in ("site", "router", "keys", "alice_env"))
    # No key for the model servers: the user's header is dropped, not passed on.
    without = role.render("backend-auth.conf.j2", host_vars={**HOST_VARS, "llm_gateway_backend_api_key": ""})
    assert 'proxy_set_header Authorization "";' in without


def test_user_file(files):
    assert files["alice_env"].splitlines()[3:] == [
        "# Your key for the cluster's LLM gateway; keep it to yourself. For programs (OpenAI's clients read both):",
        "#   set -a; source ~/.config/hpclab/llm.env; set +a",
        "OPENAI_BASE_URL=http://10.0.0.5:4000/v1",
        f"OPENAI_API_KEY={KEYS['alice']}",
    ]


def test_server_listens_on_the_cluster_address_with_the_users_map(files):
    site = files["site"]
    assert "    listen 10.0.0.5:4000;\n" in site
    assert "include /etc/nginx/hpclab-llm-gateway/keys.map;" in site
    assert "include /etc/nginx/hpclab-llm-gateway/backend-auth.conf;" in site
    assert "limit_req_zone $hpclab_llm_user zone=hpclab_llm_gateway:1m rate=20r/s;" in site
    assert "limit_req zone=hpclab_llm_gateway burst=40 nodelay;" in site
    assert "client_max_body_size 1m;" in site and "client_body_buffer_size 1m;" in site
    assert "proxy_buffering off;" in site and "proxy_http_version 1.1;" in site and "proxy_read_timeout 900s;" in site
    # The access log names the user, never the Authorization header.
    log_format = re.search(r"log_format hpclab_llm_gateway (.*?);", site, re.S).group(1)
    assert "$hpclab_llm_user" in log_format and "authorization" not in log_format.lower()


def test_every_backend_has_its_named_location(files):
    site = files["site"]
    usage = "        js_body_filter hpclab_llm_router.usage buffer_type=buffer;\n"
    assert "location @backend_llama-3-8b {\n" + usage + "        proxy_pass http://127.0.0.1:8000;\n    }" in site
    assert "location @backend_qwen2.5-0.5b {\n" + usage + "        proxy_pass http://[fd00::12]:8101;\n    }" in site
    assert 'const BACKENDS = ["llama-3-8b", "qwen2.5-0.5b"];' in files["router"]
    assert "r.internalRedirect('@backend_' + model);" in files["router"]


# Streams of a vLLM server are asked for their usage chunk through a second named location that sends the router's body;
# llama.cpp's server has no stream_options: its streams go as they are.
def test_only_vllm_backends_get_the_location_that_asks_streams_for_their_usage(files):
    site = files["site"]
    assert ("location @usage_llama-3-8b {\n        js_body_filter hpclab_llm_router.usage buffer_type=buffer;\n"
            "        proxy_set_body $hpclab_llm_body;\n        proxy_pass http://127.0.0.1:8000;\n    }") in site
    assert "@usage_qwen2.5-0.5b" not in site
    assert 'const USAGE_STREAMS = ["llama-3-8b"];' in files["router"]
    assert 'const BLOCKED = "/var/lib/hpclab-llm-usage/over-budget.json";' in files["router"]


def test_usage_log_is_json_of_routed_requests_without_key_or_prompt(files):
    site = files["site"]
    assert "access_log /var/log/nginx/hpclab-llm-gateway.usage.log hpclab_llm_usage if=$hpclab_llm_routed;" in site
    log_format = re.search(r"log_format hpclab_llm_usage escape=json (.*?);", site, re.S).group(1)
    line = "".join(re.findall(r"'(.*?)'", log_format))
    fields = json.loads(re.sub(r"\$\w+", "x", line))
    assert sorted(fields) == ["completion_tokens", "model", "prompt_tokens", "status", "time", "user"]
    assert "authorization" not in log_format.lower() and "request_body" not in log_format


def test_no_concurrent_limit_by_default_and_one_zone_per_distinct_limit():
    assert "limit_conn hpclab" not in RoleRender(ROLE, HOST_VARS, facts=SET, play={"inventory_hostname": "gpu1"}).render(
        "hpclab-llm-gateway.conf.j2")
    limited = {**HOST_VARS, "llm_gateway_user_limits": {"concurrent_requests": 4},
               "llm_gateway_user_limits_by_user": {"bob": {"concurrent_requests": 1}}}
    site = RoleRender(ROLE, limited, facts=SET, play={"inventory_hostname": "gpu1"}).render("hpclab-llm-gateway.conf.j2")
    assert "limit_conn hpclab_llm_concurrent_1 1;\n" in site and "limit_conn hpclab_llm_concurrent_4 4;\n" in site
    one = re.search(r"map \$hpclab_llm_user \$hpclab_llm_concurrent_1 \{(.*?)\}", site, re.S).group(1)
    assert re.findall(r'"(\w+)" \$hpclab_llm_user;', one) == ["bob"]
    four = re.search(r"map \$hpclab_llm_user \$hpclab_llm_concurrent_4 \{(.*?)\}", site, re.S).group(1)
    others = sorted(u["name"] for u in HOST_VARS["hpclab_cluster_users"] if u["name"] != "bob")
    assert sorted(re.findall(r'"(\w+)" \$hpclab_llm_user;', four)) == others
    assert 'if ($limit_conn_status = REJECTED)' in site


def test_models_list_is_openai_json(files):
    site = files["site"]
    listed = re.search(r"location = /v1/models \{.*?return 200 '(.*?)\\n';", site, re.S).group(1)
    assert json.loads(listed) == {"object": "list", "data": [
        {"id": "llama-3-8b", "object": "model", "created": 0, "owned_by": "hpclab"},
        {"id": "qwen2.5-0.5b", "object": "model", "created": 0, "owned_by": "hpclab"},
    ]}
    one = re.search(r"location = /v1/models/qwen2\.5-0\.5b \{\s*return 200 '(.*?)\\n';", site, re.S).group(1)
    assert json.loads(one)["id"] == "qwen2.5-0.5b"
    # Every JSON body nginx itself returns is JSON.
    for body in re.findall(r"return \d+ '(.*?)\\n';", site):
        json.loads(body)


def test_map_holds_every_user(role):
    users = [{"name": f"u{i}", "uid": 3000 + i, "gid": 3000 + i} for i in range(1000)]
    keys = {u["name"]: f"{i:048d}" for i, u in enumerate(users)}
    site = role.render("hpclab-llm-gateway.conf.j2", host_vars={**HOST_VARS, "hpclab_cluster_users": users},
                       extra={"__llm_gateway_user_keys": keys})
    assert "map_hash_max_size 4000;" in site


def test_result_paths(role):
    assert role.evaluate("__llm_gateway_key_files") == ["/gfsv/home/alice/.config/hpclab/llm.env"]
    assert role.evaluate("__llm_gateway_url") == "http://10.0.0.5:4000/v1"
    assert role.evaluate("__llm_gateway_home_paths")[:4] == [
        "/gfsv/home/alice/", "/gfsv/home/alice/.config", "/gfsv/home/alice/.config/hpclab", "/gfsv/home/alice/.config/hpclab/llm.env"]


def kept_read(tmp_path, directory, names):
    """The part of install.yml's read that keys.yml (or web.yml) decides by, for DIRECTORY holding a kept file per name:
    host_state_info's directory_contents on a real directory with those files."""
    (tmp_path / "kept").mkdir()
    for name in names:
        (tmp_path / "kept" / name).write_text("k" * 48 + "\n")
    return {"directory_contents": {directory: directory_contents(str(tmp_path / "kept"))}}


def test_revoked_are_the_kept_keys_of_users_no_longer_listed(role, tmp_path):
    kept = kept_read(tmp_path, "/etc/hpclab/llm-gateway/keys", ["alice", "mallory"])
    assert role.evaluate("__llm_gateway_revoked", extra={"__llm_gateway_state": kept}) == ["mallory"]
    # No directory yet (check mode on a fresh host): nothing to revoke.
    assert role.evaluate("__llm_gateway_revoked", extra={"__llm_gateway_state": {"directory_contents": {
        "/etc/hpclab/llm-gateway/keys": {}}}}) == []


def preflight_problems(role, host_vars):
    """What preflight.yml's one assertion reports."""
    tasks = yaml.safe_load((ROLE / "tasks" / "preflight.yml").read_text(encoding="utf-8"))
    check = next(task for task in tasks if "ansible.builtin.assert" in task)
    return role.templar(host_vars=host_vars).template(trust_as_template(check["vars"]["__llm_gateway_problems"]))


def test_preflight_passes_on_the_lab(role):
    assert preflight_problems(role, HOST_VARS) == []


def test_preflight_refuses_without_an_address(role):
    facts = {"all_ipv4_addresses": [], "all_ipv6_addresses": []}
    found = preflight_problems(role, {**HOST_VARS, "ansible_facts": facts, "llm_gateway_keys": {"alice": "tooshortsecret"}})
    assert len(found) == 2, found
    assert found[0].startswith("gpu1: llm_gateway_keys: alice's key (value not shown) is shorter than 32 characters")
    assert found[1].startswith("gpu1: llm_gateway_listen_address '' is not an IP address")
    assert all("tooshortsecret" not in m for m in found)


def test_revoked_keys_of_a_web_ui_that_is_gone(role, tmp_path):
    """The web UI's kept key goes with the web UI; it is never taken for a user's (whose llm.env homes.yml removes)."""
    kept = kept_read(tmp_path, "/etc/hpclab/llm-gateway/keys", ["alice", "webui", "mallory"])
    extra = {"__llm_gateway_state": kept}
    assert role.evaluate("__llm_gateway_revoked_keys", extra=extra) == ["mallory", "webui"]
    assert role.evaluate("__llm_gateway_revoked", extra=extra) == ["mallory"]
    assert role.evaluate("__llm_gateway_revoked_keys", host_vars=WEB_VARS, extra=extra) == ["mallory"]
    assert role.evaluate("__llm_gateway_key_names", host_vars=WEB_VARS) == ["alice", "bob", "webui"]
    assert role.evaluate("__llm_gateway_key_names") == ["alice", "bob"]


def test_revoked_web_passwords(role, tmp_path):
    kept = kept_read(tmp_path, "/etc/hpclab/llm-gateway/web-passwords", ["alice", "mallory"])
    extra = {"__llm_gateway_state": kept}
    assert role.evaluate("__llm_gateway_web_revoked", host_vars=WEB_VARS, extra=extra) == ["mallory"]
    # No web UI: nobody keeps a web password.
    assert role.evaluate("__llm_gateway_web_revoked", extra=extra) == ["alice", "mallory"]
    assert role.evaluate("__llm_gateway_web_users") == []


def test_web_ui_key_in_the_map_under_its_own_name(role):
    keys = role.render("keys.map.j2", host_vars=WEB_VARS, extra=WEB_SET)
    assert keys.splitlines()[4:] == [f'"Bearer {KEYS["alice"]}" alice;', f'"Bearer {KEYS["bob"]}" bob;',
                                     f'"Bearer {WEB_KEY}" webui;']


def test_user_file_with_the_web_login(role):
    text = role.render("llm.env.j2", host_vars=WEB_VARS, extra={**WEB_SET, "item": {"name": "alice", "uid": 2001, "gid": 2001}})
    assert text.splitlines()[5:] == [
        "OPENAI_BASE_URL=http://10.0.0.5:4000/v1",
        f"OPENAI_API_KEY={KEYS['alice']}",
        "# The cluster's LLM web UI: open the address and log in with this name and password.",
        "HPCLAB_LLM_WEB_URL=http://10.0.0.5:7860/",
        "HPCLAB_LLM_WEB_USER=alice",
        f"HPCLAB_LLM_WEB_PASSWORD={WEB_PASSWORDS['alice']}",
    ]
    assert WEB_PASSWORDS["bob"] not in text and WEB_KEY not in text


def test_web_passwords_only_in_the_users_own_file(role):
    """Never in the gateway's configuration, its map or its router; the web UI's key only in the root-only map."""
    for template in ("hpclab-llm-gateway.conf.j2", "router.js.j2", "keys.map.j2", "backend-auth.conf.j2"):
        text = role.render(template, host_vars=WEB_VARS, extra=WEB_SET)
        assert all(password not in text for password in WEB_PASSWORDS.values()), template
        assert (WEB_KEY in text) == (template == "keys.map.j2"), template


def test_result_web_logins(role):
    result = yaml.safe_load((ROLE / "tasks" / "result.yml").read_text(encoding="utf-8"))[0]
    fields = result["ansible.builtin.set_fact"]["llm_gateway_result"]
    templar = role.templar(host_vars=WEB_VARS, extra=WEB_SET)
    assert templar.template(trust_as_template(fields["web_logins"])) == [
        {"user": "alice", "password": WEB_PASSWORDS["alice"]}, {"user": "bob", "password": WEB_PASSWORDS["bob"]}]
    assert templar.template(trust_as_template(fields["web_key"])) == WEB_KEY
    assert role.templar().template(trust_as_template(fields["web_key"])) == ""
    assert result["no_log"] is True


def test_preflight_passes_with_the_web_ui(role):
    assert preflight_problems(role, {**WEB_VARS, "llm_gateway_web_passwords": {"bob": WEB_PASSWORDS["bob"]}}) == []


def test_preflight_refuses_a_user_named_like_the_web_ui(role):
    users = HOST_VARS["hpclab_cluster_users"] + [{"name": "webui", "uid": 2099, "gid": 2099}]
    found = preflight_problems(role, {**WEB_VARS, "hpclab_cluster_users": users})
    assert len(found) == 1 and found[0].startswith("gpu1: llm_gateway_users[2]: webui is the name of the web UI's own key"), found
