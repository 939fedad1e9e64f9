"""The FastChat web UIs behind the gateway's logins (playbooks/llm.yml: the llm_gateway role's web passwords, the
llm_serving role's gradio login file): without a login each UI answers gradio's login page and nothing of the chat; a
user's name and password from their llm.env log in and reach the chat; a wrong password is refused. The UIs listen on
llm1's cluster address only, ask every model through the gateway with the web UI's own key, and keep their login file
and conversation logs to the service user. Last, a real browser (Debian's headless Chromium, driven by Selenium) logs
in as alice, sends one prompt and shows the model's answer, which the gateway's access log records for `webui`.
The HTTP requests and the browser run on the test machine, a client outside the node."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from helpers import get_host, inventory_hosts, journal_on_failure

testinfra_hosts = inventory_hosts("llm")
NODE = testinfra_hosts[0]
WEB_UIS = {"fastchat-web": 7860, "fastchat-arena": 7861}
MODELS = ["tiny-a", "tiny-b"]
USERS = ["alice", "bob"]
GATEWAY_PORT = 4000
ENDPOINTS = "/etc/llm/api_endpoints.json"
LOGIN_FILE = "/etc/llm/fastchat-auth/logins"
LOGDIR = "/var/lib/llm/fastchat"
WEB_UI_KEY = "/etc/hpclab/llm-gateway/keys/webui"
KEYS_MAP = "/etc/nginx/hpclab-llm-gateway/keys.map"
ACCESS_LOG = "/var/log/nginx/hpclab-llm-gateway.access.log"
# gradio 4.44.1 writes the page's configuration into it (js/build: `<script>window.gradio_config = {{ config | toorjson
# }};</script>`, JSON with '<' escaped, so no '</script>' inside). Without a login (gradio/routes.py `main`) that is
# only {"auth_required": true, "auth_message", "space_id", "root"}; after it, the app's whole config: its components
# (the chatbot, the model dropdowns) and "username".
GRADIO_CONFIG = re.compile(r"window\.gradio_config = (.*?);</script>", re.S)
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def node():
    return get_host(NODE)


def address() -> str:
    return node().interface("eth0").addresses[0]


def user_env(user: str) -> dict:
    text = node().check_output(f"cat /home/{user}/.config/hpclab/llm.env")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def opener() -> urllib.request.OpenerDirector:
    """An HTTP client that keeps cookies, as a browser does: gradio's session is a cookie set by POST /login."""
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))


def request(client, port: int, path: str, form: dict | None = None, wait: float = 180) -> tuple[int, str]:
    """GET (or POST a form to) a web UI: (status, body). Waits while the UI does not answer (it imports torch first)."""
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    deadline = time.monotonic() + wait
    while True:
        try:
            with client.open(f"http://{address()}:{port}{path}", data=data, timeout=30) as response:
                return response.status, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode("utf-8", "replace")
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(3)


def page_config(page: str) -> dict:
    found = GRADIO_CONFIG.search(page)
    assert found, page[:2000]
    return json.loads(found.group(1))


def login(client, port: int, user: str, password: str) -> tuple[int, str]:
    """gradio's login, as its login form sends it (Login.svelte: POST /login with username and password)."""
    return request(client, port, "/login", form={"username": user, "password": password})


def cookie_names(client) -> list[str]:
    jar = next(h.cookiejar for h in client.handlers if isinstance(h, urllib.request.HTTPCookieProcessor))
    return [cookie.name for cookie in jar]


@pytest.mark.parametrize("user", USERS)
def test_each_user_finds_the_web_address_and_a_login_of_their_own(user):
    env = user_env(user)
    assert env["HPCLAB_LLM_WEB_URL"] == f"http://{address()}:{WEB_UIS['fastchat-web']}/"
    assert env["HPCLAB_LLM_WEB_USER"] == user
    assert len(env["HPCLAB_LLM_WEB_PASSWORD"]) >= 16
    assert env["HPCLAB_LLM_WEB_PASSWORD"] != user_env("bob" if user == "alice" else "alice")["HPCLAB_LLM_WEB_PASSWORD"]


@pytest.mark.parametrize("port", WEB_UIS.values(), ids=list(WEB_UIS))
def test_without_a_login_each_ui_answers_only_its_login_page(port):
    status, page = request(opener(), port, "/")
    assert status == 200, page[:2000]
    config = page_config(page)
    assert config.get("auth_required") is True, config
    assert "components" not in config and "username" not in config, config
    # Nor does the app's configuration answer without the session cookie (gradio's login_check).
    assert request(opener(), port, "/config")[0] == 401


@pytest.mark.parametrize("port", WEB_UIS.values(), ids=list(WEB_UIS))
def test_the_users_password_logs_in_and_reaches_the_chat(port):
    env, client = user_env("alice"), opener()
    status, answer = login(client, port, env["HPCLAB_LLM_WEB_USER"], env["HPCLAB_LLM_WEB_PASSWORD"])
    assert status == 200, answer
    assert json.loads(answer) == {"success": True}
    assert any(name.startswith("access-token") for name in cookie_names(client)), cookie_names(client)
    status, page = request(client, port, "/")
    assert status == 200
    config = page_config(page)
    assert "auth_required" not in config and config.get("username") == "alice", {k: config[k] for k in config if k != "components"}
    assert any(c.get("props", {}).get("elem_id") == "chatbot" for c in config["components"])
    for model in MODELS:
        assert model in page


@pytest.mark.parametrize("port", WEB_UIS.values(), ids=list(WEB_UIS))
def test_a_wrong_password_is_refused(port):
    env, client = user_env("alice"), opener()
    status, answer = login(client, port, "alice", env["HPCLAB_LLM_WEB_PASSWORD"] + "x")
    assert status == 400, answer
    assert json.loads(answer)["detail"] == "Incorrect credentials."
    assert cookie_names(client) == []
    assert page_config(request(client, port, "/")[1]).get("auth_required") is True


def test_login_file_is_the_service_users_alone(host):
    login_file, directory = host.file(LOGIN_FILE), host.file(os.path.dirname(LOGIN_FILE))
    assert (login_file.mode, login_file.user, login_file.group) == (0o600, "llm", "llm")
    assert (directory.mode, directory.user, directory.group) == (0o700, "llm", "llm")
    # USER:PASSWORD pairs, one per user of the gateway (only the names are compared: no password in a failure).
    users = sorted(pair.split(":", 1)[0] for pair in login_file.content_string.strip().split(","))
    assert users == USERS


def test_conversation_logs_are_the_service_users_alone(host):
    logdir = host.file(LOGDIR)
    assert (logdir.mode, logdir.user, logdir.group) == (0o700, "llm", "llm")
    for unit in WEB_UIS:
        assert host.check_output(f"systemctl show -p UMask {unit}") == "UMask=0077"


@pytest.mark.parametrize("unit,port", WEB_UIS.items())
def test_web_uis_listen_on_the_cluster_address_only(host, unit, port):
    listening = [line.split()[3] for line in host.check_output("ss -Htlnp").splitlines() if line.split()[3].endswith(f":{port}")]
    with journal_on_failure(host, unit):
        assert listening == [f"{address()}:{port}"], host.check_output("ss -Htlnp")


def test_web_uis_ask_every_model_through_the_gateway_with_their_own_key(host):
    endpoints = json.loads(host.file(ENDPOINTS).content_string)
    web_ui_key = host.file(WEB_UI_KEY).content_string.strip()
    assert sorted(endpoints) == MODELS
    assert {entry["api_base"] for entry in endpoints.values()} == {f"http://{address()}:{GATEWAY_PORT}/v1"}
    assert {entry["api_key"] == web_ui_key for entry in endpoints.values()} == {True}
    assert len(web_ui_key) >= 32 and web_ui_key != "molecule-not-secret"
    # The gateway knows the key as the web UI's own, not as a user's.
    assert host.run(f"grep -c ' webui;$' {KEYS_MAP}").stdout.strip() == "1"


def browser(profile: str, server: str):
    """Debian's Chromium, headless, driven by its own chromedriver (no Selenium Manager download). The flags keep it
    off the network this closed machine does not have: no QUIC, no background or component updates, no sync, and every
    host name but localhost and SERVER (the UI's address: the rule's * matches IP literals too) unresolved at once
    (gradio's page names Google's fonts and a CDN script)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    options.page_load_strategy = "eager"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,1024", f"--user-data-dir={profile}",
                 f"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE {server}"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


def test_a_browser_logs_in_sends_a_prompt_and_shows_the_answer_through_the_gateway(host):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    env = user_env("alice")
    log_lines = len(host.check_output(f"cat {ACCESS_LOG}").splitlines())
    os.environ.setdefault("SE_OFFLINE", "true")
    # On a failure: the web UI's journal and both model servers' (an empty answer in CI on 2026-12-04 left no trace in
    # the first), and the gateway's new log lines in the assertion's message.
    with tempfile.TemporaryDirectory(prefix="hpclab-chromium-") as profile, journal_on_failure(host, "fastchat-web"), \
            journal_on_failure(host, "llm-tiny-a"), journal_on_failure(host, "llm-tiny-b"):
        driver = browser(profile, address())
        try:
            driver.get(env["HPCLAB_LLM_WEB_URL"])
            # gradio's login form (js/core/src/Login.svelte): a username textbox, a password box, a Login button.
            password = WebDriverWait(driver, 60).until(
                lambda d: d.find_element(By.CSS_SELECTOR, 'input[data-testid="password"]'))
            driver.find_element(By.CSS_SELECTOR, 'input[data-testid="textbox"]').send_keys(env["HPCLAB_LLM_WEB_USER"])
            password.send_keys(env["HPCLAB_LLM_WEB_PASSWORD"])
            driver.find_element(By.XPATH, "//button[normalize-space()='Login']").click()
            # The page reloads with the chat: FastChat's prompt box (elem_id input_box) and its Send button.
            prompt = WebDriverWait(driver, 60).until(lambda d: d.find_element(By.CSS_SELECTOR, "#input_box textarea"))
            prompt.send_keys("Hello! Who are you?")
            driver.find_element(By.XPATH, "//button[normalize-space()='Send']").click()
            # FastChat enables Regenerate once the answer is complete, or failed; Upvote only when it is complete.
            WebDriverWait(driver, 120).until(
                lambda d: d.find_element(By.XPATH, "//button[contains(., 'Regenerate')]").is_enabled())
            answers = [e.text for e in driver.find_elements(By.CSS_SELECTOR, '#chatbot [data-testid="bot"]')]
            completed = driver.find_element(By.XPATH, "//button[contains(., 'Upvote')]").is_enabled()
        finally:
            driver.quit()
        new = host.check_output(f"cat {ACCESS_LOG}").splitlines()[log_lines:]
        # Inside the block, so that a failure prints the journals.
        assert answers and completed, (answers, new)
        assert answers[-1].strip() and "ERROR" not in answers[-1] and "error_code" not in answers[-1], (answers, new)
    # The UI asked the model through the gateway, which logs its key's name (webui), never the key.
    assert any(re.search(r"user=webui .*model=tiny-[ab] ", line) and " status=200 " in line for line in new), new
