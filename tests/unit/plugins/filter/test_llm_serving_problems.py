"""The llm_serving role's preflight: every input that ends up in a unit, a command line or api_endpoints.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.llm_serving_problems import FilterModule

PROBLEMS = FilterModule().filters()["llm_serving_problems"]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "llm"
GPUS = [{"index": 0, "memory_total": "81559 MiB"}]
PACKAGES = {"vllm": ["vllm==0.11.0"], "llama_cpp": ["llama-cpp-python[server]==0.3.36", "fastapi==0.115.14"],
            "fastchat": ["fschat[webui]==0.2.36", "psutil", "torch==2.13.0"]}
# vars/main.yml's table, as the role passes it.
RESERVED = {22: "sshd", 2049: "NFS-Ganesha (nfs_ganesha)", 6817: "slurmctld (slurm_master)", 3306: "MariaDB (slurm_master)",
            9090: "Prometheus / FastChat's hard-coded rate-limit monitor", "49152-60999": "GlusterFS bricks (glusterfs)"}
DIRECTORIES = [
    {"path": "/opt/llm", "mode": "0755", "variable": "llm_serving_home"},
    {"path": "/etc/llm", "group": "llm", "mode": "0750", "variable": "the configuration directory"},
    {"path": "/var/lib/llm", "owner": "llm", "group": "llm", "mode": "0750", "variable": "the state directory"},
    {"path": "/var/lib/llm/models", "owner": "llm", "group": "llm", "mode": "0750", "variable": "llm_serving_model_dir"},
    {"path": "/var/lib/llm/hf", "owner": "llm", "group": "llm", "mode": "0750", "variable": "llm_serving_hf_home"},
]


HOST_ADDRESSES = ["10.0.0.5", "127.0.0.1", "fd00::5"]
# What playbooks/llm.yml passes from llm_gateway_result.
LOGINS = [{"user": "alice", "password": "alicesWebPassword0123456"}, {"user": "bob", "password": "bob-given@web%password"}]
GATEWAY_KEY = "GatewayKeyOfTheWebUI0123456789abcdefghijklmnop"
BEHIND_THE_GATEWAY = {"fastchat_bind_address": "10.0.0.5", "host_addresses": HOST_ADDRESSES, "fastchat_logins": LOGINS,
                      "fastchat_api_base": "http://10.0.0.5:4000/v1", "fastchat_api_key": GATEWAY_KEY}


def tiny(**overrides):
    return {"name": "tiny-a", "port": 8101, "engine": "llama_cpp", "gguf_src": "/srv/tiny-a.gguf", "n_ctx": 512, **overrides}


def tiny_without_src(**overrides):
    """A llama.cpp model whose GGUF file comes from somewhere other than the controller."""
    return {**{k: v for k, v in tiny().items() if k != "gguf_src"}, **overrides}


def vllm(**overrides):
    return {"name": "llama-3-8b", "port": 8000, "model": "meta-llama/Meta-Llama-3-8B-Instruct", "dtype": "bfloat16",
            "max_model_len": 8192, **overrides}


def reference_models():
    models = json.loads((FIXTURES / "reference_models.json").read_text(encoding="utf-8"))
    for position, model in enumerate(models):
        model["port"] = 8000 + position
    return models


def check(models=None, **kwargs):
    kwargs = {"host": "llm1", "packages": PACKAGES, "reserved_ports": RESERVED, "directories": DIRECTORIES,
              "gpus": GPUS, **kwargs}
    return PROBLEMS([tiny()] if models is None else models, **kwargs)


def test_registered():
    assert set(FilterModule().filters()) == {"llm_serving_problems"}


@pytest.mark.parametrize(
    "models,kwargs",
    [
        pytest.param(None, {}, id="one-llama-cpp-model"),
        pytest.param([tiny(), tiny(name="tiny-b", port=8102, extra_args=["--n_threads", "1"])], {}, id="the-molecule-pair"),
        pytest.param(reference_models(), {}, id="reference-design-five-vllm-models"),
        pytest.param([vllm(gpu=0, kv_cache_dtype="fp8", enforce_eager=True, min_sequences=2)], {}, id="vllm-every-key"),
        pytest.param([vllm(model="/srv/models/llama-3-8b", weights_gib=15,
                           config={"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096})],
                     {"host_paths": {"/srv/models/llama-3-8b": {"exists": True, "isdir": True}}}, id="vllm-local-path"),
        pytest.param([vllm(gpu_memory_utilization="0.3")], {}, id="vllm-explicit-utilization"),
        pytest.param([vllm()], {"gpus": [], "detected_gpus": [{"index": 0, "memory_total_mib": 81559}]}, id="gpus-from-nvidia-smi"),
        pytest.param([tiny_without_src(gguf_path="/srv/models/tiny-a.gguf")],
                     {"host_paths": {"/srv/models/tiny-a.gguf": {"exists": True, "isreg": True}}}, id="gguf-path"),
        pytest.param([vllm(extra_args=["--chat-template", "/srv/templates/a b.jinja", "--max-num-seqs", 8, "--x", "100%"])],
                     {}, id="extra-args-with-blanks-numbers-and-percent"),
        pytest.param([tiny(extra_args=["--n_threads", "-1"])], {}, id="negative-number-is-a-value"),
        # The role starts llama.cpp with --interrupt_requests false; the README's way back to the server's default.
        pytest.param([tiny(extra_args=["--interrupt_requests", "true"])], {}, id="interrupt-requests-back-on"),
        pytest.param([tiny(max_position_embeddings=512)], {}, id="n-ctx-at-the-limit"),
        pytest.param([tiny_without_src(gguf_url="https://example.org/tiny.gguf", gguf_checksum="sha256:" + "a" * 64)],
                     {}, id="gguf-url-and-checksum"),
        # The URL answered (or its file was there and it was not asked); the source found on the controller.
        pytest.param([tiny_without_src(gguf_url="https://example.org/tiny.gguf", gguf_checksum="sha256:" + "a" * 64)],
                     {"url_errors": {"https://example.org/tiny.gguf": ""}}, id="gguf-url-answers"),
        pytest.param([tiny_without_src(gguf_url="https://example.org/tiny.gguf", gguf_checksum="sha256:" + "a" * 64)],
                     {"url_errors": {}}, id="gguf-url-file-already-there"),
        pytest.param([tiny(gguf_src="/srv/tiny-a.gguf")], {"controller_files": {"/srv/tiny-a.gguf": True}}, id="gguf-src-found"),
        pytest.param(None, {"bind_address": "0.0.0.0", "client_address": "10.0.0.5", "api_key": GATEWAY_KEY},
                     id="bind-all-client-an-address"),
        pytest.param(None, {"bind_address": "::", "client_address": "127.0.0.1", "api_key": GATEWAY_KEY}, id="dual-stack"),
        pytest.param(None, {"bind_address": "::1", "client_address": "::1", "fastchat_bind_address": "::",
                            "fastchat_bind_wildcard": True, "fastchat_logins": LOGINS}, id="ipv6"),
        # The web UIs on the cluster address (rule 44), behind the gateway's logins (rules 45, 46).
        pytest.param(None, {"fastchat_bind_address": "10.0.0.5", "host_addresses": HOST_ADDRESSES, "fastchat_logins": LOGINS},
                     id="web-ui-on-the-cluster-address"),
        pytest.param(None, {"fastchat_bind_address": "fd00::5", "host_addresses": HOST_ADDRESSES, "fastchat_logins": LOGINS},
                     id="web-ui-on-an-ipv6-address"),
        pytest.param(None, {"fastchat_bind_address": "10.0.0.5", "host_addresses": [], "fastchat_logins": LOGINS},
                     id="web-ui-addresses-unknown"),
        pytest.param(None, {"fastchat_bind_address": "0.0.0.0", "fastchat_bind_wildcard": True, "fastchat_logins": LOGINS},
                     id="web-ui-everywhere-on-purpose"),
        pytest.param(None, {"fastchat_bind_address": "10.0.0.5", "fastchat_logins_pending": True},
                     id="web-ui-logins-not-known-yet-in-the-gpus-entry-point"),
        pytest.param(None, BEHIND_THE_GATEWAY, id="web-ui-behind-the-gateway"),
        pytest.param(None, {"fastchat_logins": LOGINS}, id="logins-without-the-gateway"),
        pytest.param(None, {"fastchat_logins": [{"user": "alice", "password": "!#$%&'()*+-./;<=>?@[]^_`{|}~0"}]},
                     id="login-password-every-printable-but-comma-and-colon"),
        pytest.param(None, {**BEHIND_THE_GATEWAY, "fastchat_api_base": "http://[fd00::5]:4000/v1"}, id="gateway-ipv6"),
        pytest.param([], {**BEHIND_THE_GATEWAY, "fastchat_logins": [], "fastchat_enabled": False}, id="web-ui-off-no-logins"),
        pytest.param(None, {"api_key": "abc-DEF_123.~+/xyz=="}, id="bearer-token"),
        pytest.param(None, {"hf_token": "hf_abcdefghijklmnopqrstuvwxyz012345678"}, id="hf-token"),
        pytest.param(None, {"user": "svc_llm", "group": "ai-users"}, id="other-user-and-group"),
        pytest.param(None, {"home": "/srv/llm", "model_dir": "/data/models", "hf_home": "/data/models"}, id="model-dir-is-hf-home"),
        pytest.param(None, {"health_timeout": 1}, id="shortest-timeout"),
        pytest.param(None, {"health_timeout": "86400"}, id="longest-timeout-as-string"),
        pytest.param(None, {"pip_find_links": ["/opt/hpclab-wheelhouse/current", "https://wheels.example.org/simple",
                                               "file:///srv/wheels"], "pip_no_index": True}, id="wheelhouse"),
        pytest.param(None, {"pip_extra_args": ["--index-url", "https://pypi.example.org/simple"]}, id="pip-extra-args"),
        pytest.param([], {"fastchat_enabled": False}, id="no-model-no-web-ui"),
        pytest.param([tiny(), tiny(name="tiny-b", port=8102)], {"fastchat_anony_only": ["tiny-b"]}, id="anony-only"),
        pytest.param(None, {"fastchat_multi_enabled": False, "fastchat_multi_port": 8101}, id="port-of-a-ui-that-is-off"),
        pytest.param(None, {"cuda_context_gib": 0}, id="no-cuda-context"),
        pytest.param(None, {"gpus": [], "cuda_context_gib": "0.75"}, id="cpu-host"),
    ],
)
def test_valid_input_has_no_problem(models, kwargs):
    assert check(models, **kwargs) == []


@pytest.mark.parametrize(
    "models,kwargs,expected",
    [
        # rule 1: known keys
        pytest.param([tiny(n_threads=1)], {}, ["llm1: llm_serving_models[0] (tiny-a): unknown key 'n_threads'"], id="unknown-key"),
        pytest.param([tiny(max_model_len=512)], {},
                     ["key 'max_model_len' is not read by engine llama_cpp (it is a key of vllm models; llama_cpp reads n_ctx)"],
                     id="vllm-key-on-llama-cpp"),
        pytest.param([vllm(n_ctx=4096)], {}, ["key 'n_ctx' is not read by engine vllm", "vllm reads max_model_len"],
                     id="llama-cpp-key-on-vllm"),
        pytest.param(["tiny-a"], {}, ["llm_serving_models[0] is not a dict"], id="not-a-dict"),
        # rule 2: names
        pytest.param([tiny(name="tiny a")], {}, ["name 'tiny a' cannot name the systemd unit llm-NAME.service"], id="name-blank"),
        pytest.param([tiny(name="-tiny")], {}, ["name '-tiny' cannot name"], id="name-leading-dash"),
        pytest.param([tiny(name="tiny-a\n")], {}, ["name 'tiny-a\\n' cannot name"], id="name-trailing-newline"),
        pytest.param([tiny(name="tiny@1")], {}, ["name 'tiny@1' cannot name"], id="name-at-sign"),
        pytest.param([tiny(name="a" * 244)], {}, ["at most 243 characters"], id="name-too-long"),
        pytest.param([tiny(name=None)], {}, ["name None cannot name"], id="name-missing"),
        pytest.param([tiny(name=8101)], {}, ["name 8101 cannot name"], id="name-number"),
        # rule 3: unique names
        pytest.param([tiny(), tiny(port=8102)], {},
                     ["llm_serving_models[1] (tiny-a): name tiny-a is also the name of llm_serving_models[0]"], id="duplicate-name"),
        # rule 4: engine
        pytest.param([tiny(engine="ollama")], {}, ["engine 'ollama' is not one of vllm, llama_cpp"], id="unknown-engine"),
        pytest.param([{k: v for k, v in tiny().items() if k != "engine"}], {"engine": "llama.cpp"},
                     ["engine 'llama.cpp' is not one of"], id="unknown-default-engine"),
        # rule 5: port range
        pytest.param([tiny(port=80)], {}, ["llm_serving_models[0] (tiny-a): port 80 is not an integer 1024..65535"], id="port-privileged"),
        pytest.param([tiny(port=65536)], {}, ["port 65536 is not an integer 1024..65535"], id="port-too-big"),
        pytest.param([tiny(port="81o1")], {}, ["port '81o1' is not an integer"], id="port-typo"),
        pytest.param([tiny(port=8101.5)], {}, ["port 8101.5 is not an integer"], id="port-float"),
        pytest.param([tiny(port=None)], {}, ["port None is not an integer"], id="port-missing"),
        pytest.param([tiny(port=True)], {}, ["port True is not an integer"], id="port-bool"),
        pytest.param(None, {"fastchat_port": 443}, ["FastChat web UI (llm_serving_fastchat_port): port 443 is not an integer"],
                     id="web-ui-port-privileged"),
        # rule 6: port clashes
        pytest.param([tiny(), tiny(name="tiny-b")], {},
                     ["llm_serving_models[1] (tiny-b): port 8101 is also the port of llm_serving_models[0] (tiny-a)"],
                     id="two-models-one-port"),
        pytest.param([tiny(port=7860)], {},
                     ["FastChat web UI (llm_serving_fastchat_port): port 7860 is also the port of llm_serving_models[0] (tiny-a)"],
                     id="model-on-the-web-ui-port"),
        pytest.param(None, {"fastchat_multi_port": 7860},
                     ["FastChat side-by-side UI (llm_serving_fastchat_multi_port): port 7860 is also the port of FastChat web UI"],
                     id="two-web-uis-one-port"),
        pytest.param([tiny(port="8101"), tiny(name="tiny-b", port=8101)], {}, ["port 8101 is also the port of"],
                     id="same-port-string-and-int"),
        # rule 7: other services' ports
        pytest.param([tiny(port=6817)], {}, ["llm_serving_models[0] (tiny-a): port 6817 is slurmctld (slurm_master)'s"],
                     id="slurmctld-port"),
        pytest.param([tiny(port=9090)], {}, ["FastChat's hard-coded rate-limit monitor"], id="port-9090"),
        pytest.param([tiny(port=49200)], {}, ["port 49200 is GlusterFS bricks (glusterfs)'s"], id="gluster-brick-range"),
        pytest.param(None, {"fastchat_port": 3306}, ["FastChat web UI (llm_serving_fastchat_port): port 3306 is MariaDB"],
                     id="web-ui-on-mariadb"),
        # rule 8: extra_args
        pytest.param([tiny(extra_args="--n_threads 1")], {}, ["extra_args '--n_threads 1' is not a list"], id="extra-args-string"),
        pytest.param([tiny(extra_args=[{"n_threads": 1}])], {}, ["extra_args item {'n_threads': 1} is not a word"],
                     id="extra-args-dict"),
        pytest.param([tiny(extra_args=["--verbose", True])], {}, ["extra_args item True is not a word"], id="extra-args-bool"),
        pytest.param([tiny(extra_args=["--chat_format", "chatml\n"])], {}, ["has a line break or control character"],
                     id="extra-args-newline"),
        pytest.param([tiny(extra_args=["--port", "9090"])], {}, ["extra_args sets --port, which the role sets"], id="extra-args-port"),
        pytest.param([tiny(extra_args=["--n-ctx=4096"])], {}, ["extra_args sets --n-ctx"], id="extra-args-n-ctx-dashed"),
        pytest.param([vllm(extra_args=["--served_model_name", "other"])], {}, ["extra_args sets --served_model_name"],
                     id="extra-args-vllm-served-name"),
        pytest.param([vllm(extra_args=["--gpu-memory-utilization=0.9"])], {}, ["extra_args sets --gpu-memory-utilization"],
                     id="extra-args-vllm-utilization"),
        # rule 9: max_position_embeddings
        pytest.param([tiny(max_position_embeddings=0)], {}, ["max_position_embeddings 0 is not a positive integer"],
                     id="max-position-0"),
        # rule 10: vLLM model
        pytest.param([vllm(model=None)], {}, ["llm_serving_models[0] (llama-3-8b): no model"], id="vllm-no-model"),
        pytest.param([vllm(model="meta llama/llama 3")], {}, ["model 'meta llama/llama 3' is neither a Hugging Face"],
                     id="vllm-model-blank"),
        pytest.param([vllm(model="a/b/c")], {}, ["model 'a/b/c' is neither"], id="vllm-model-two-slashes"),
        pytest.param([vllm(model="meta--llama/x")], {}, ["is neither"], id="vllm-model-double-dash"),
        pytest.param([vllm(model="/srv/models/../x")], {}, ["model '/srv/models/../x' is not canonical"], id="vllm-path-dotdot"),
        # rule 11: dtypes
        pytest.param([vllm(dtype="bf16")], {}, ["dtype 'bf16' is not one of auto, half, float16, bfloat16, float, float32"],
                     id="vllm-dtype"),
        pytest.param([vllm(kv_cache_dtype="int8")], {}, ["kv_cache_dtype 'int8' is not one of"], id="vllm-kv-cache-dtype"),
        # rule 12: max_model_len
        pytest.param([vllm(max_model_len=None)], {}, ["max_model_len None is missing or not a positive integer"],
                     id="vllm-no-max-model-len"),
        pytest.param([vllm(max_model_len="8k")], {}, ["max_model_len '8k' is missing or not"], id="vllm-max-model-len-text"),
        pytest.param([vllm(max_model_len=32768, max_position_embeddings=16384)], {},
                     ["max_model_len 32768 is above the model's own limit (max_position_embeddings 16384)"],
                     id="vllm-max-model-len-over-given-limit"),
        # rule 13: min_sequences
        pytest.param([vllm(min_sequences=0)], {}, ["min_sequences 0 is not a positive integer"], id="vllm-min-sequences"),
        # rule 14: gpu
        pytest.param([vllm(gpu=-1)], {}, ["gpu -1 is not a GPU index"], id="vllm-gpu-negative"),
        pytest.param([vllm(gpu="0")], {}, ["gpu '0' is not a GPU index"], id="vllm-gpu-string"),
        # rule 15: gpu_memory_utilization
        pytest.param([vllm(gpu_memory_utilization=90)], {}, ["gpu_memory_utilization 90 is not a fraction in (0, 1]"],
                     id="vllm-utilization-percent"),
        pytest.param([vllm(gpu_memory_utilization=0)], {}, ["gpu_memory_utilization 0 is not a fraction"], id="vllm-utilization-0"),
        # rule 16: booleans
        pytest.param([vllm(enforce_eager="yes")], {}, ["enforce_eager 'yes' is not true or false"], id="vllm-enforce-eager-string"),
        pytest.param([vllm(trust_remote_code=1)], {}, ["trust_remote_code 1 is not true or false"], id="vllm-trust-remote-code-int"),
        # rule 17: what the planner needs
        pytest.param([vllm(max_model_len=32768)], {},
                     ["the GPU planner cannot size it: model 'llama-3-8b' max_model_len 32768 exceeds the model's max_position_embeddings 8192"],
                     id="vllm-max-model-len-over-known-limit"),
        pytest.param([vllm(model="acme/unknown-7b")], {}, ["the GPU planner cannot size it: model 'llama-3-8b': 'acme/unknown-7b' is not a built-in"],
                     id="vllm-unknown-model"),
        pytest.param([vllm(num_layers=32)], {}, ["give all of num_layers, kv_heads and head_dim"], id="vllm-partial-geometry"),
        # rule 18: GGUF source
        pytest.param([tiny(gguf_path="/srv/tiny-a.gguf")], {}, ["needs exactly one of gguf_src", "got gguf_src, gguf_path"],
                     id="two-gguf-sources"),
        pytest.param([tiny_without_src()], {}, ["needs exactly one of", "got none"], id="no-gguf-source"),
        pytest.param([tiny(gguf_src="")], {}, ["gguf_src '' is not a file name"], id="gguf-src-empty"),
        pytest.param([tiny_without_src(gguf_path="models/tiny.gguf")], {},
                     ["gguf_path 'models/tiny.gguf' is not an absolute path"], id="gguf-path-relative"),
        pytest.param([tiny_without_src(gguf_path="/srv/my models/t.gguf")], {},
                     ["gguf_path '/srv/my models/t.gguf' has a character a unit file cannot hold"], id="gguf-path-blank"),
        pytest.param([tiny_without_src(gguf_url="hf://x/y.gguf", gguf_checksum="sha256:" + "a" * 64)], {},
                     ["gguf_url 'hf://x/y.gguf' is not an http, https, ftp, file URL"], id="gguf-url-scheme"),
        pytest.param([tiny(gguf_checksum="sha256:abc")], {}, ["gguf_checksum is only checked on a download"], id="checksum-without-url"),
        pytest.param([tiny_without_src(gguf_url="https://x.org/t.gguf", gguf_checksum="sha256:abc")], {},
                     ["gguf_checksum 'sha256:abc' is not ALGORITHM:HEX"], id="checksum-short"),
        # rule 19: n_ctx
        pytest.param([tiny(n_ctx=0)], {}, ["n_ctx 0 is not a positive integer"], id="n-ctx-0"),
        pytest.param([tiny(n_ctx=4096, max_position_embeddings=2048)], {},
                     ["n_ctx 4096 is above the model's max_position_embeddings (2048)"], id="n-ctx-over-limit"),
        # rule 20: files on the host
        pytest.param([tiny_without_src(gguf_path="/srv/t.gguf")], {"host_paths": {}},
                     ["gguf_path /srv/t.gguf is missing on the host"], id="gguf-path-missing"),
        pytest.param([tiny_without_src(gguf_path="/srv")],
                     {"host_paths": {"/srv": {"exists": True, "isdir": True, "isreg": False}}}, ["gguf_path /srv is not a file on the host"],
                     id="gguf-path-a-directory"),
        pytest.param([vllm(model="/srv/models/Meta-Llama-3-8B-Instruct")], {"host_paths": {}},
                     ["model /srv/models/Meta-Llama-3-8B-Instruct is missing on the host"],
                     id="vllm-path-missing"),
        pytest.param([tiny(gguf_src="/nonexistent/model.gguf")], {"controller_files": {"/nonexistent/model.gguf": False}},
                     ["llm1: llm_serving_models[0] (tiny-a): gguf_src /nonexistent/model.gguf is not a file on the Ansible "
                      "controller"], id="gguf-src-missing-on-the-controller"),
        pytest.param([tiny(gguf_src="tiny-a.gguf")], {"controller_files": {}},
                     ["gguf_src tiny-a.gguf is not a file on the Ansible controller"], id="gguf-src-not-read"),
        pytest.param([tiny_without_src(gguf_url="https://x.org/t.gguf", gguf_checksum="sha256:" + "a" * 64)],
                     {"url_errors": {"https://x.org/t.gguf": "HTTP Error 404: Not Found"}},
                     ["gguf_url https://x.org/t.gguf does not answer from this host (HTTP Error 404: Not Found)"],
                     id="gguf-url-not-found"),
        pytest.param([tiny_without_src(gguf_url="https://x.org/t.gguf")], {},
                     ["gguf_url has no gguf_checksum"], id="gguf-url-without-checksum"),
        # rule 21: llm_serving_gpus
        pytest.param(None, {"gpus": [{"index": 0}]}, ["llm_serving_gpus is not what the planner reads: GPU 0 has no memory total"],
                     id="gpu-without-memory"),
        pytest.param(None, {"gpus": [{"index": 0, "memory_total": "80 GB"}, {"index": 0, "memory_total": "80 GB"}]},
                     ["GPU index 0 is listed twice"], id="gpu-twice"),
        pytest.param(None, {"gpus": [{"index": 0, "memory_total": 80}]}, ["implausibly small"], id="gpu-memory-in-gib"),
        # rule 22: a GPU for vLLM
        pytest.param([vllm()], {"gpus": [], "nvidia_smi_error": "No such file or directory: b'nvidia-smi'"},
                     ["llm1: has no GPU (nvidia-smi: No such file or directory: b'nvidia-smi') but llm_serving_models gives it "
                      "vLLM models (llama-3-8b)"], id="vllm-without-gpu"),
        # rule 23: the plan fits
        pytest.param(reference_models(), {"gpus": [{"index": 0, "memory_total": "40960 MiB"}]},
                     ["the vLLM models of llm_serving_models do not fit the GPUs", "does not fit"], id="plan-does-not-fit"),
        pytest.param([vllm(gpu_memory_utilization=0.6), vllm(name="b", port=8001, gpu_memory_utilization="0.5")], {},
                     ["the gpu_memory_utilization of b, llama-3-8b in llm_serving_models brings GPU 0 to 1.100"],
                     id="explicit-utilizations-over-the-card"),
        # rule 24: CUDA context
        pytest.param(None, {"cuda_context_gib": 512}, ["llm_serving_cuda_context_gib 512 is not 0..8 GiB"], id="cuda-context-in-mib"),
        pytest.param(None, {"cuda_context_gib": -0.1}, ["llm_serving_cuda_context_gib -0.1"], id="cuda-context-negative"),
        # rule 25: bind addresses
        pytest.param(None, {"bind_address": "127.0.0.300"}, ["llm_serving_bind_address '127.0.0.300' is not an IP address"],
                     id="bind-typo"),
        pytest.param(None, {"fastchat_bind_address": "0.0.0.0 "}, ["llm_serving_fastchat_bind_address '0.0.0.0 ' is not an IP"],
                     id="web-ui-bind-blank"),
        pytest.param(None, {"fastchat_bind_address": ""},
                     ["llm_serving_fastchat_bind_address '' is not an IP address (the default is the address of the host's "
                      "default route"], id="web-ui-bind-no-default-route"),
        pytest.param(None, {"bind_address": "fe80::1%eth0", "client_address": "::1"}, ["has a scope"], id="bind-scope"),
        # rule 26: client address
        pytest.param(None, {"client_address": "0.0.0.0", "bind_address": "0.0.0.0", "api_key": GATEWAY_KEY},
                     ["llm_serving_client_address 0.0.0.0 is a wildcard"], id="client-wildcard"),
        pytest.param(None, {"client_address": "10.0.0.5"},
                     ["llm_serving_client_address 10.0.0.5 does not reach the servers, which listen on 127.0.0.1 only",
                      "Fix: set llm_serving_client_address to 127.0.0.1"], id="client-not-the-bind-address"),
        pytest.param(None, {"bind_address": "0.0.0.0", "client_address": "::1", "api_key": GATEWAY_KEY},
                     ["is IPv6 but the servers listen on IPv4 only"],
                     id="client-ipv6-bind-ipv4"),
        # rule 27: API key
        pytest.param(None, {"api_key": 'se"cret'}, ["llm_serving_api_key (value not shown) is not a bearer token"], id="key-quote"),
        pytest.param(None, {"api_key": "secret\n"}, ["llm_serving_api_key (value not shown)"], id="key-newline"),
        pytest.param(None, {"api_key": "my secret"}, ["llm_serving_api_key (value not shown)"], id="key-blank"),
        pytest.param(None, {"api_key": "a=b"}, ["llm_serving_api_key (value not shown)"], id="key-inner-equals"),
        # rule 28: HF token
        pytest.param(None, {"hf_token": "hf_abc\n"}, ["llm_serving_hf_token (value not shown) has a blank"], id="hf-token-newline"),
        pytest.param(None, {"hf_token": "'hf_abc'"}, ["llm_serving_hf_token (value not shown)"], id="hf-token-quoted"),
        # rule 29: user and group
        pytest.param(None, {"user": "root"}, ["llm_serving_user is root: the role would give root the home"], id="user-root"),
        pytest.param(None, {"group": "root"}, ["llm_serving_group is root"], id="group-root"),
        pytest.param(None, {"user": "LLM"}, ["llm_serving_user 'LLM' is not a user name"], id="user-upper-case"),
        pytest.param(None, {"group": "llm users"}, ["llm_serving_group 'llm users' is not a group name"], id="group-blank"),
        pytest.param(None, {"user": "a" * 33}, ["is not a user name"], id="user-too-long"),
        # rule 30: directories
        pytest.param(None, {"home": "opt/llm"}, ["llm_serving_home 'opt/llm' is not an absolute path"], id="home-relative"),
        pytest.param(None, {"home": "/opt"}, ["llm_serving_home '/opt' is a directory of the system"], id="home-opt"),
        pytest.param(None, {"model_dir": "/var/lib"}, ["llm_serving_model_dir '/var/lib' is a directory of the system"],
                     id="model-dir-var-lib"),
        pytest.param(None, {"model_dir": "/"}, ["llm_serving_model_dir '/' is a directory of the system"], id="model-dir-root"),
        pytest.param(None, {"hf_home": "/tmp/hf"}, ["llm_serving_hf_home '/tmp/hf' is on a file system that is emptied"],
                     id="hf-home-tmp"),
        pytest.param(None, {"hf_home": "/run/llm"}, ["is on a file system that is emptied"], id="hf-home-run"),
        pytest.param(None, {"model_dir": "/srv/models/"}, ["llm_serving_model_dir '/srv/models/' is not canonical"],
                     id="model-dir-trailing-slash"),
        pytest.param(None, {"home": "/opt/my llm"}, ["llm_serving_home '/opt/my llm' has a character"], id="home-blank"),
        # rule 31: one directory, two owners
        pytest.param(None, {"directories": DIRECTORIES + [{"path": "/opt/llm", "owner": "llm", "group": "llm", "mode": "0750",
                                                           "variable": "llm_serving_model_dir"}]},
                     ["llm_serving_model_dir and llm_serving_home are both /opt/llm"], id="model-dir-is-home"),
        # rule 32: health timeout
        pytest.param(None, {"health_timeout": 0}, ["llm_serving_health_timeout 0 is not 1..86400 seconds"], id="timeout-0"),
        pytest.param(None, {"health_timeout": "15m"}, ["llm_serving_health_timeout '15m'"], id="timeout-with-unit"),
        pytest.param(None, {"health_timeout": 86401}, ["llm_serving_health_timeout 86401"], id="timeout-too-long"),
        # rule 33: find-links
        pytest.param(None, {"pip_find_links": ["wheelhouse"]}, ["llm_serving_pip_find_links entry 'wheelhouse' is not an absolute"],
                     id="find-links-relative"),
        pytest.param(None, {"pip_find_links": ["/srv/my wheels"]}, ["entry '/srv/my wheels'"], id="find-links-blank"),
        pytest.param(None, {"pip_find_links": ["ftp://x/wheels"]}, ["entry 'ftp://x/wheels'"], id="find-links-ftp"),
        # rule 34: no index without find-links
        pytest.param(None, {"pip_no_index": True}, ["llm_serving_pip_no_index is true but llm_serving_pip_find_links is empty"],
                     id="no-index-no-wheelhouse"),
        # rule 35: pip extra args
        pytest.param(None, {"pip_extra_args": ["index-url=https://x"]}, ["llm_serving_pip_extra_args item 'index-url=https://x'"],
                     id="extra-args-not-an-option"),
        pytest.param(None, {"pip_extra_args": ["--pre\n"]}, ["llm_serving_pip_extra_args item '--pre\\n'"], id="pip-args-newline"),
        # rule 36: packages
        pytest.param(None, {"packages": {**PACKAGES, "llama_cpp": []}},
                     ["llm_serving_llamacpp_packages is empty but this host needs the llama_cpp virtualenv"], id="no-llama-cpp-package"),
        pytest.param(None, {"packages": {**PACKAGES, "fastchat": ["fschat[webui]=0.2.36"]}},
                     ["llm_serving_fastchat_packages entry 'fschat[webui]=0.2.36' is not a PEP 508 requirement"],
                     id="requirement-single-equals"),
        pytest.param([vllm()], {"packages": {**PACKAGES, "vllm": ["vllm 0.11.0"]}},
                     ["llm_serving_vllm_packages entry 'vllm 0.11.0' is not a PEP 508"], id="requirement-blank"),
        # rule 37: something for the web UI to show
        pytest.param([], {}, ["llm1: llm_serving_models is empty but llm_serving_fastchat_enabled is true"], id="web-ui-without-models"),
        pytest.param(None, {"fastchat_anony_only": ["tiny-a"]}, ["llm_serving_fastchat_anony_only hides every served model"],
                     id="every-model-anony-only"),
        # rule 38: anony_only names served models
        pytest.param([tiny(), tiny(name="tiny-b", port=8102)], {"fastchat_anony_only": ["tiny-c"]},
                     ["llm_serving_fastchat_anony_only names 'tiny-c', which llm_serving_models does not serve (tiny-a, tiny-b)"],
                     id="anony-only-unknown-model"),
        # rule 44: the web UIs on the cluster network
        pytest.param(None, {"fastchat_bind_address": "0.0.0.0", "fastchat_logins": LOGINS},
                     ["llm1: llm_serving_fastchat_bind_address 0.0.0.0 would listen on every network of the host",
                      "set llm_serving_fastchat_bind_wildcard: true"], id="web-ui-every-address"),
        pytest.param(None, {"fastchat_bind_address": "::", "host_addresses": HOST_ADDRESSES, "fastchat_logins": LOGINS},
                     ["llm_serving_fastchat_bind_address :: would listen on every network"], id="web-ui-every-ipv6-address"),
        pytest.param(None, {"fastchat_bind_address": "10.9.9.9", "host_addresses": HOST_ADDRESSES, "fastchat_logins": LOGINS},
                     ["llm_serving_fastchat_bind_address 10.9.9.9 is not an address of this host (10.0.0.5, 127.0.0.1, fd00::5)"],
                     id="web-ui-foreign-address"),
        # rule 45: logins
        pytest.param(None, {**BEHIND_THE_GATEWAY, "fastchat_logins": [{"user": "alice", "password": "short-password1"}]},
                     ["llm_serving_fastchat_logins[0] (alice): the password (value not shown) is shorter than 16 characters"],
                     id="login-password-15"),
        pytest.param(None, {"fastchat_logins": [{"user": "alice", "password": "alice:password-0123"}]},
                     ["llm_serving_fastchat_logins[0] (alice): the password (value not shown) has a blank, ',', ':'"],
                     id="login-password-colon"),
        pytest.param(None, {"fastchat_logins": [{"user": "alice", "password": "alice,password-0123"}]},
                     ["the password (value not shown) has a blank, ',', ':'"], id="login-password-comma"),
        pytest.param(None, {"fastchat_logins": [{"user": "alice", "password": "alice password 0123"}]},
                     ["the password (value not shown) has a blank"], id="login-password-blank"),
        pytest.param(None, {"fastchat_logins": [{"user": "alice", "password": "x" * 201}]}, ["is longer than 200 characters"],
                     id="login-password-long"),
        pytest.param(None, {"fastchat_logins": [{"user": "al:ce", "password": "alicesWebPassword0123456"}]},
                     ["llm_serving_fastchat_logins[0]: user 'al:ce' is not a user name"], id="login-user-colon"),
        pytest.param(None, {"fastchat_logins": LOGINS + [LOGINS[0]]}, ["llm_serving_fastchat_logins[2]: alice is listed twice"],
                     id="login-twice"),
        pytest.param(None, {"fastchat_logins": ["alice:alicesWebPassword0123456"]},
                     ["llm_serving_fastchat_logins[0] is not a dict of user and password"], id="login-string"),
        pytest.param(None, {"fastchat_logins": {"alice": "alicesWebPassword0123456"}},
                     ["llm_serving_fastchat_logins is not a list of logins (dict, values not shown)"], id="logins-dict"),
        # rule 46: the gateway, its key, and logins in front of it
        pytest.param(None, {**BEHIND_THE_GATEWAY, "fastchat_logins": []},
                     ["llm_serving_fastchat_logins is empty: anyone who reaches a web UI would use the models without a key",
                      "Fix: list the cluster's users in hpclab_cluster_users"], id="gateway-without-logins"),
        pytest.param(None, {**BEHIND_THE_GATEWAY, "fastchat_api_key": ""},
                     ["llm_serving_fastchat_api_key is empty: the gateway would answer 401 to every chat"], id="gateway-without-key"),
        pytest.param(None, {**BEHIND_THE_GATEWAY, "fastchat_api_key": "not a token"},
                     ["llm_serving_fastchat_api_key (value not shown) is not a bearer token"], id="gateway-key-blank"),
        pytest.param(None, {**BEHIND_THE_GATEWAY, "fastchat_api_base": "10.0.0.5:4000/v1"},
                     ["llm_serving_fastchat_api_base '10.0.0.5:4000/v1' is not an http or https URL"], id="gateway-url-no-scheme"),
    ],
)
def test_one_problem(models, kwargs, expected):
    found = check(models, **kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert found[0].startswith("llm1: ") and "Fix:" in found[0]


def test_host_names_are_two_problems():
    """Rules 25 and 26: each variable is named in its own message."""
    found = check(bind_address="localhost", client_address="localhost")
    assert len(found) == 2, found
    assert "llm_serving_bind_address 'localhost' is not an IP address" in found[0]
    assert "llm_serving_client_address 'localhost' is not an IP address" in found[1]


@pytest.mark.parametrize("kwargs", [
    {"models": [tiny(name="tiny-a\n")]}, {"home": "/opt/llm\n"}, {"user": "llm\n"}, {"api_key": "k\n"},
], ids=["name", "home", "user", "api-key"])
def test_a_trailing_line_break_is_refused(kwargs):
    found = check(kwargs.pop("models", None), **kwargs)
    assert len(found) == 1, found


@pytest.mark.parametrize("kwargs", [{"api_key": 'se"cret value'}, {"hf_token": "hf_secret value"}], ids=["api-key", "hf-token"])
def test_secrets_are_never_shown(kwargs):
    found = check(**kwargs)
    assert len(found) == 1, found
    assert "secret" not in found[0]


def test_a_vllm_model_on_a_cpu_host_is_not_planned():
    found = check([vllm(), vllm(name="b", port=8001)], gpus=[])
    assert len(found) == 1 and "has no GPU (nvidia-smi: no GPU listed)" in found[0], found


def test_a_bad_vllm_model_is_not_planned_too():
    found = check([vllm(dtype="bf16", max_model_len=10 ** 6)])
    assert len(found) == 1 and "dtype 'bf16'" in found[0], found


def test_several_problems_are_all_reported():
    found = check([tiny(port=6817, name="a b"), tiny(name="b", port=6817)], bind_address="::::", health_timeout=0)
    assert len(found) == 5, found
    assert all(p.startswith("llm1: ") and "Fix:" in p for p in found)


@pytest.mark.parametrize("kwargs", [
    {"fastchat_logins": [{"user": "alice", "password": "tooshortsecret"}]},
    {"fastchat_logins": [{"user": "alice", "password": "secret,with:colons0123"}]},
    {**BEHIND_THE_GATEWAY, "fastchat_api_key": "secret key of the UI"},
    {**BEHIND_THE_GATEWAY, "fastchat_logins": []},
], ids=["short", "colons", "bad-key", "no-logins"])
def test_web_secrets_are_never_shown(kwargs):
    found = check(**kwargs)
    assert len(found) == 1, found
    secrets = [login["password"] for login in kwargs["fastchat_logins"]] + [kwargs.get("fastchat_api_key", "")]
    assert all(secret not in found[0] for secret in secrets if secret), found


def test_web_ui_ports_are_not_checked_when_it_is_off():
    assert check([tiny(port=7860)], fastchat_enabled=False, fastchat_bind_address="nonsense") == []


def test_reserved_ports_must_be_ports():
    with pytest.raises(AnsibleFilterError, match="reserved_ports key 'x-y'"):
        check(reserved_ports={"x-y": "nobody"})


def test_not_a_list():
    with pytest.raises(AnsibleFilterError, match="must be the list llm_serving_models"):
        PROBLEMS({"name": "tiny-a"}, host="llm1")


def test_the_role_reserves_the_ports_of_the_cluster_roles():
    """vars/main.yml's table is the one the role passes; it holds every daemon the other roles start."""
    import yaml

    table = yaml.safe_load((Path(__file__).resolve().parents[4] / "roles" / "llm_serving" / "vars" / "main.yml").read_text())
    reserved = table["__llm_serving_reserved_ports"]
    for port in (22, 111, 2049, 3306, 6443, 6817, 6818, 6819, 9090, 24007, "49152-60999"):
        assert port in reserved, port
    for port, owner in [(6818, "slurmd"), (50000, "GlusterFS"), (9090, "rate-limit monitor")]:
        found = PROBLEMS([tiny(port=port)], host="llm1", reserved_ports=reserved, packages=PACKAGES)
        assert len(found) == 1 and owner in found[0], found


# ---- issue 19: tensor parallelism and quantized weights (rules 39-43, and 24 for llm_serving_nccl_gib) ------------

TWO_GPUS = [{"index": 0, "memory_total": "81920 MiB"}, {"index": 1, "memory_total": "81920 MiB"}]
# meta-llama/Llama-3.1-70B-Instruct: its config.json's KV fields and embedding, and its parameter count.
LLAMA_70B = {"name": "llama-70b", "port": 8010, "model": "meta-llama/Llama-3.1-70B-Instruct", "dtype": "bfloat16",
             "max_model_len": 8192, "parameters": 70553706496,
             "config": {"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8, "hidden_size": 8192,
                        "vocab_size": 128256, "max_position_embeddings": 131072}}


def llama_70b(**overrides):
    return {**LLAMA_70B, **overrides}


@pytest.mark.parametrize(
    "models,kwargs",
    [
        pytest.param([llama_70b(tensor_parallel_size=2)], {"gpus": TWO_GPUS}, id="tp2-over-two-gpus"),
        pytest.param([llama_70b(tensor_parallel_size=2, gpus=[1, 0])], {"gpus": TWO_GPUS}, id="tp2-pinned"),
        pytest.param([llama_70b(tensor_parallel_size="2")], {"gpus": [], "detected_gpus": [
            {"index": 0, "memory_total_mib": 81920}, {"index": 1, "memory_total_mib": 81920}]}, id="tp2-gpus-from-nvidia-smi"),
        pytest.param([llama_70b(quantization="awq")], {"gpus": TWO_GPUS}, id="awq-70b-on-one-gpu"),
        pytest.param([llama_70b(quantization="gptq_marlin", bits=8, group_size=64, tensor_parallel_size=2)], {"gpus": TWO_GPUS},
                     id="gptq-8bit-tp2"),
        pytest.param([llama_70b(quantization="fp8", bits=8, gpu=1)], {"gpus": TWO_GPUS}, id="fp8-pinned"),
        pytest.param([vllm(quantization="awq", weights_gib=5.4)], {}, id="awq-with-checkpoint-size"),
        pytest.param([vllm(model="Qwen/Qwen2.5-7B-Instruct", tensor_parallel_size=8)],
                     {"gpus": [{"index": i, "memory_total": "81920 MiB"} for i in range(8)]}, id="kv-heads-replicated"),
        pytest.param([vllm(tensor_parallel_size=2, num_layers=32, kv_heads=8, head_dim=128, hidden_size=4096,
                           vocab_size=128256, tie_word_embeddings=False, quantization="awq")], {"gpus": TWO_GPUS},
                     id="geometry-and-embedding-keys"),
        pytest.param(reference_models() + [llama_70b(quantization="awq", tensor_parallel_size=2)], {"gpus": TWO_GPUS},
                     id="tp-model-next-to-the-reference-design"),
        pytest.param([vllm()], {"nccl_gib": "0"}, id="no-nccl"),
    ],
)
def test_valid_parallel_and_quantized_input(models, kwargs):
    assert check(models, **kwargs) == []


@pytest.mark.parametrize(
    "models,kwargs,expected",
    [
        # rule 39: tensor_parallel_size and gpus
        pytest.param([llama_70b(tensor_parallel_size=0)], {"gpus": TWO_GPUS},
                     ["llm_serving_models[0] (llama-70b): tensor_parallel_size 0 is not a positive integer"], id="tp-0"),
        pytest.param([llama_70b(tensor_parallel_size=1.5)], {"gpus": TWO_GPUS}, ["tensor_parallel_size 1.5 is not"], id="tp-float"),
        pytest.param([llama_70b(tensor_parallel_size=2, gpus=[0])], {"gpus": TWO_GPUS},
                     ["gpus [0] lists 1 GPU(s) but tensor_parallel_size is 2", "set tensor_parallel_size: 1"], id="gpus-too-few"),
        pytest.param([llama_70b(tensor_parallel_size=2, gpus=[1, 1])], {"gpus": TWO_GPUS},
                     ["gpus [1, 1] is not a list of distinct GPU indexes"], id="gpus-twice"),
        pytest.param([llama_70b(tensor_parallel_size=2, gpus="0,1")], {"gpus": TWO_GPUS},
                     ["gpus '0,1' is not a list of distinct GPU indexes"], id="gpus-string"),
        pytest.param([llama_70b(gpu=0, gpus=[0])], {"gpus": TWO_GPUS}, ["gives both gpu 0 and gpus [0]"], id="gpu-and-gpus"),
        pytest.param([llama_70b(tensor_parallel_size=2, gpu=1)], {"gpus": TWO_GPUS},
                     ["gpu 1 pins one GPU but tensor_parallel_size is 2", "pin all 2 with gpus"], id="gpu-with-tp2"),
        # rule 40: KV heads
        pytest.param([llama_70b(tensor_parallel_size=3)], {"gpus": TWO_GPUS + [{"index": 2, "memory_total": "81920 MiB"}]},
                     ["llm_serving_models[0] (llama-70b): tensor_parallel_size 3 does not divide the model's 8 KV heads "
                      "(num_key_value_heads)", "Fix: use a tensor_parallel_size of 1, 2, 4, 8"], id="kv-heads-by-3"),
        pytest.param([vllm(model="Qwen/Qwen2.5-7B-Instruct", tensor_parallel_size=6)],
                     {"gpus": [{"index": i, "memory_total": "81920 MiB"} for i in range(8)]},
                     ["tensor_parallel_size 6 does not divide the model's 4 KV heads", "of 1, 2, 4"], id="kv-heads-builtin-by-6"),
        # rule 41: quantization, bits, group_size
        pytest.param([llama_70b(quantization="int4")], {"gpus": TWO_GPUS},
                     ["quantization 'int4' is not one the GPU planner sizes (awq, awq_marlin, gptq, gptq_marlin, fp8)",
                      "give the checkpoint's size as weights_gib"], id="unknown-quantization"),
        pytest.param([llama_70b(quantization="awq", bits=8)], {"gpus": TWO_GPUS},
                     ["bits 8 does not fit quantization awq (vLLM's AWQ reads only 4-bit checkpoints"], id="awq-8-bit"),
        pytest.param([llama_70b(quantization="gptq", bits=3)], {"gpus": TWO_GPUS},
                     ["bits 3 does not fit quantization gptq (gptq weights have 4 or 8 bits)"], id="gptq-3-bit"),
        pytest.param([llama_70b(quantization="fp8", bits=4)], {"gpus": TWO_GPUS}, ["bits 4 does not fit quantization fp8"],
                     id="fp8-4-bit"),
        pytest.param([llama_70b(quantization="awq", group_size=0)], {"gpus": TWO_GPUS}, ["group_size 0 is not a positive integer"],
                     id="group-size-0"),
        pytest.param([llama_70b(quantization="fp8", group_size=128)], {"gpus": TWO_GPUS},
                     ["group_size applies to AWQ and GPTQ weights, not fp8"], id="fp8-group-size"),
        pytest.param([llama_70b(bits=4)], {"gpus": TWO_GPUS}, ["bits 4 describes quantized weights but quantization is not set"],
                     id="bits-without-quantization"),
        pytest.param([llama_70b(quantization="awq", dtype="float32")], {"gpus": TWO_GPUS},
                     ["quantization awq computes in 16 bits but dtype is float32"], id="awq-float32"),
        pytest.param([vllm(quantization="awq", model="acme/unknown-7b", num_layers=32, kv_heads=8, head_dim=128, parameters=7e9)],
                     {}, ["the GPU planner cannot size it", "keeps the embedding in bfloat16: give config"],
                     id="awq-without-embedding-size"),
        # rule 42: no more ranks than GPUs
        pytest.param([llama_70b(tensor_parallel_size=4)], {"gpus": TWO_GPUS},
                     ["llm_serving_models[0] (llama-70b): tensor_parallel_size 4 is more than this host's 2 GPU(s) "
                      "(llm_serving_gpus)", "lower tensor_parallel_size to at most 2"], id="tp-over-the-gpus"),
        pytest.param([llama_70b(tensor_parallel_size=2)], {"gpus": [], "detected_gpus": [{"index": 0, "memory_total_mib": 81920}]},
                     ["tensor_parallel_size 2 is more than this host's 1 GPU(s) (nvidia-smi)"], id="tp-over-the-detected-gpus"),
        # rule 43: pins name the host's GPUs
        pytest.param([vllm(gpu=1)], {}, ["llm_serving_models[0] (llama-3-8b): gpu 1: it is pinned to GPU 1, which is not "
                                         "among the GPUs of this host (0; llm_serving_gpus)"], id="pinned-to-a-missing-gpu"),
        pytest.param([llama_70b(tensor_parallel_size=2, gpus=[1, 2])], {"gpus": TWO_GPUS},
                     ["gpus [1, 2]: it is pinned to GPU 2, which is not among the GPUs of this host (0, 1; llm_serving_gpus)"],
                     id="a-rank-pinned-to-a-missing-gpu"),
        # rule 24: NCCL buffers
        pytest.param([vllm()], {"nccl_gib": 600}, ["llm_serving_nccl_gib 600 is not 0..8 GiB"], id="nccl-in-mib"),
        # rule 8: the flags the role now sets
        pytest.param([llama_70b(tensor_parallel_size=2, extra_args=["-tp", "2"])], {"gpus": TWO_GPUS}, ["extra_args sets -tp"],
                     id="extra-args-tp"),
        pytest.param([vllm(extra_args=["--quantization=awq"])], {}, ["extra_args sets --quantization"], id="extra-args-quantization"),
        # rule 23 with tensor parallelism: the plan must fit, and says when more GPUs would make it
        pytest.param([llama_70b()], {"gpus": TWO_GPUS},
                     ["the vLLM models of llm_serving_models do not fit the GPUs", "tensor parallelism over 2 GPUs "
                      "(tensor_parallel_size: 2, on GPUs 0, 1: fits)"], id="70b-needs-tp2"),
    ],
)
def test_one_parallel_or_quantization_problem(models, kwargs, expected):
    found = check(models, **kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert found[0].startswith("llm1: ") and "Fix:" in found[0]


def test_an_explicit_utilization_of_a_tensor_parallel_model_is_checked_on_each_of_its_gpus():
    found = check([llama_70b(tensor_parallel_size=2, gpu_memory_utilization="0.99")], gpus=TWO_GPUS)
    assert len(found) == 2, found
    for index, problem in enumerate(found):
        assert f"brings GPU {index} to 0.990 of its memory plus 0.016 of CUDA contexts and NCCL buffers" in problem, problem
