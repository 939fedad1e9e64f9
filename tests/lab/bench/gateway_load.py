"""Load for tests/bench-gateway, run ON the gateway host (python3, standard library only): the same requests through
the gateway (its address, a user's key) and straight to the model server (127.0.0.1:PORT, the servers' key), at 1
and at 8 clients, for GET /v1/models, a short chat completion and a streamed one. Prints one JSON object: per case the
latencies' p50 and p95 (ms) and the requests per second of each path.

Usage: python3 gateway_load.py ENV_FILE REQUESTS   (ENV_FILE: a user's ~/.config/hpclab/llm.env)
"""

from __future__ import annotations

import http.client
import json
import re
import statistics
import sys
import threading
import time
import urllib.parse

SITE = "/etc/nginx/conf.d/hpclab-llm-gateway.conf"
BACKEND_AUTH = "/etc/nginx/hpclab-llm-gateway/backend-auth.conf"


def settings(env_file: str) -> dict:
    env = dict(line.split("=", 1) for line in open(env_file, encoding="utf-8").read().splitlines() if "=" in line)
    site = open(SITE, encoding="utf-8").read()
    backend = re.search(r"location @backend_(\S+) \{.*?proxy_pass http://([^;]+);", site, re.S)
    auth = re.search(r'Authorization "Bearer ([^"]+)"', open(BACKEND_AUTH, encoding="utf-8").read())
    return {"gateway": urllib.parse.urlsplit(env["OPENAI_BASE_URL"]).netloc, "key": env["OPENAI_API_KEY"],
            "model": backend.group(1), "direct": backend.group(2), "backend_key": auth.group(1) if auth else "",
            "limits": re.findall(r"limit_conn hpclab_llm_concurrent_\d+ (\d+);", site)}


def one(connection, method: str, path: str, key: str, body: dict | None) -> float:
    """Seconds until the whole answer (a stream to its end) arrived; fails on a status other than 200."""
    start = time.perf_counter()
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    connection.request(method, path, body=data, headers=headers)
    response = connection.getresponse()
    payload = response.read()
    if response.status != 200:
        raise RuntimeError(f"{method} {path}: {response.status} {payload[:200]!r}")
    return time.perf_counter() - start


def run(address: str, key: str, case: tuple, clients: int, requests: int) -> dict:
    method, path, body = case
    latencies, lock = [], threading.Lock()
    per_client = max(1, requests // clients)

    def client():
        connection = http.client.HTTPConnection(address, timeout=300)
        one(connection, method, path, key, body)  # warm: the connection and the server's cache
        mine = [one(connection, method, path, key, body) for _turn in range(per_client)]
        with lock:
            latencies.extend(mine)

    failures = []

    def guarded():
        try:
            client()
        except (OSError, RuntimeError) as error:
            failures.append(str(error))

    threads = [threading.Thread(target=guarded) for _client in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if failures:
        raise SystemExit(f"{address} {method} {path}, {clients} clients: {failures[0]}")
    latencies.sort()
    return {"p50_ms": statistics.median(latencies) * 1000, "p95_ms": latencies[int(0.95 * (len(latencies) - 1))] * 1000,
            "per_s": len(latencies) / elapsed, "n": len(latencies)}


def main(env_file: str, requests: int) -> None:
    conf = settings(env_file)
    chat = {"model": conf["model"], "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4, "temperature": 0}
    cases = {
        "models": ("GET", "/v1/models", None),
        "chat": ("POST", "/v1/chat/completions", chat),
        "stream": ("POST", "/v1/chat/completions", {**chat, "stream": True}),
    }
    results = {"model": conf["model"], "concurrent_limits": conf["limits"], "cases": []}
    for name, case in cases.items():
        for clients in (1, 8):
            gateway = run(conf["gateway"], conf["key"], case, clients, requests)
            direct = run(conf["direct"], conf["backend_key"], case, clients, requests)
            results["cases"].append({"case": name, "clients": clients, "gateway": gateway, "direct": direct})
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40)
