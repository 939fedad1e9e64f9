# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: llm_serving_problems
short_description: What is wrong with the llm_serving role's input on one host, before any change
version_added: 0.2.0
description:
  - vLLM, llama.cpp's server and FastChat have no configuration check mode; a bad value is found when the
    restarted server exits or, worse, answers on the wrong port or under the wrong name. So the role checks
    everything that ends up in a unit, a command line or C(api_endpoints.json) first, with this filter. Types
    and choices are left to the role's argument spec.
  - Returns a list of problems, each naming the host, the variable and the fix; an empty list means the role
    may go on. Secrets (O(api_key), O(hf_token), O(fastchat_api_key), the passwords of O(fastchat_logins)) are never part
    of a message.
  - "Models (O(_input)): (1) each entry is a dict of keys the role knows for its engine; (2) C(name) is letters,
    digits, C(.), C(_) and C(-), starting with a letter or digit, at most 243 characters (the systemd unit
    C(llm-NAME.service) holds at most 255); (3) no name twice; (4) C(engine) (or O(engine)) is C(vllm) or
    C(llama_cpp); (5) every port (C(port), O(fastchat_port), O(fastchat_multi_port)) is an integer 1024..65535
    (the servers run as an unprivileged user); (6) no port twice on the host; (7) no port of another service
    (O(reserved_ports)); (8) C(extra_args) is a list of strings or numbers without control characters that
    leaves the flags the role sets (C(--port), C(--host), ...) to the role; (9) C(max_position_embeddings) is
    a positive integer."
  - "vLLM models: (10) C(model) is a Hugging Face repository id or a canonical absolute path; (11) C(dtype) and
    C(kv_cache_dtype) are ones vLLM and the planner know; (12) C(max_model_len) is a positive integer not above
    C(max_position_embeddings); (13) C(min_sequences) is a positive integer; (14) C(gpu) is a GPU index;
    (15) C(gpu_memory_utilization) is a fraction in (0, 1]; (16) C(enforce_eager) and C(trust_remote_code)
    are booleans; (17) the planner P(hpclab.cluster.llm_gpu_plan#filter) can size the model (its geometry,
    weights and context limit are known)."
  - "llama.cpp models: (18) exactly one of C(gguf_src), C(gguf_path), C(gguf_url); C(gguf_path) a canonical
    absolute path, C(gguf_url) an http, https, ftp or file URL, C(gguf_checksum) C(ALGORITHM:HEX) and only
    with C(gguf_url); (19) C(n_ctx) is a positive integer not above C(max_position_embeddings); (20) a
    C(gguf_path) is a file, and a vLLM C(model) path a directory, on the host (O(host_paths)); a C(gguf_src) is a
    file on the controller (O(controller_files)); a C(gguf_url) has a C(gguf_checksum), and answers from the host
    where its file is not there yet (O(url_errors))."
  - "GPUs: (21) O(gpus) is what the planner reads (an index and a memory total each, no index twice);
    (22) vLLM models run only where there are GPUs (O(gpus) or O(detected_gpus)); (23) the vLLM models fit
    the GPUs (P(hpclab.cluster.llm_gpu_plan#filter)), explicit C(gpu_memory_utilization) values included (with the
    planner's values of the other models on that GPU, within what the planner leaves to the servers once the CUDA
    contexts, NCCL buffers and its margin are set aside); (24) O(cuda_context_gib) and O(nccl_gib) are 0..8 GiB."
  - "Addresses: (25) O(bind_address) and O(fastchat_bind_address) are IP addresses; (26) O(client_address)
    is an IP address, not a wildcard, that reaches O(bind_address)."
  - "Secrets: (27) O(api_key) is empty or an RFC 6750 bearer token (letters, digits, C(-._~+/), trailing
    C(=)): it travels in an HTTP header, an environment file and a curl config line; (28) O(hf_token) has
    no blank, quote or control character."
  - "User and paths: (29) O(user) and O(group) are user and group names other than C(root); (30) O(home),
    O(model_dir) and O(hf_home) are canonical absolute paths without blanks or quotes, outside the system's
    own directories (C(/usr), C(/var/lib), ...) and volatile ones (C(/tmp), C(/run)); (31) no directory of
    the role (O(directories)) is listed twice with another owner, group or mode."
  - "Durations and installs: (32) O(health_timeout) is 1..86400 seconds; (33) O(pip_find_links) are
    absolute paths or http, https or file URLs without blanks; (34) O(pip_no_index) only with
    O(pip_find_links); (35) O(pip_extra_args) are strings without line breaks, the first one an option;
    (36) the package list of every engine used (and of FastChat when it is on) is not empty and each entry
    is a PEP 508 requirement."
  - "FastChat: (37) the web UI has at least one model to show outside the anonymous arena; (38)
    O(fastchat_anony_only) names served models."
  - "vLLM tensor parallelism and quantized weights: (39) C(tensor_parallel_size) is a positive integer, and
    C(gpus) is a list of that many distinct GPU indexes, not given with C(gpu); (40) C(tensor_parallel_size)
    splits the model's KV heads (C(num_key_value_heads)) evenly, or is a multiple of them, as vLLM requires,
    when the planner knows the model's geometry; (41) C(quantization) is one the planner sizes (C(awq),
    C(awq_marlin), C(gptq), C(gptq_marlin), C(fp8)), C(bits) is one it reads (AWQ 4; GPTQ 4 or 8; fp8 8),
    C(group_size) is a positive integer and only with AWQ or GPTQ, neither without C(quantization), and the
    dtype is a 16-bit one; (42) C(tensor_parallel_size) is at most the number of GPUs of the host (O(gpus) or
    O(detected_gpus)); (43) a pinned C(gpu) or C(gpus) names GPUs the host has."
  - "The web UIs on the cluster network, behind a login (checked when O(fastchat_enabled)): (44)
    O(fastchat_bind_address) is not a wildcard (C(0.0.0.0), C(::)) unless O(fastchat_bind_wildcard), and is an address
    of this host (O(host_addresses), when known) or a loopback address; (45) O(fastchat_logins) is a list of dicts, each
    a C(user) (a user name: C([a-z_][a-z0-9_-]*), at most 32 characters) and a C(password) of 16 to 200 printable
    characters without blanks, C(,) or C(:) (gradio's login file holds C(USER:PASSWORD) pairs split at C(,) and C(:)),
    no user twice; (46) O(fastchat_api_base) is empty or an http or https URL, O(fastchat_api_key) empty or a bearer
    token; with O(fastchat_api_base) set (the UIs send every request through the gateway), O(fastchat_api_key) is set
    and O(fastchat_logins) is not empty (else anyone reaching a UI would use the gateway with the UI's key)."
  - "Keys and logins in front of the models: (47) O(api_key) is set where O(bind_address) is not a loopback address (other
    hosts reach the model servers; the gateway's per-user keys would be bypassed); (48) O(fastchat_logins) is not empty
    where the web UIs listen on an address other than loopback (checked when O(fastchat_enabled), unless
    O(fastchat_logins_pending))."
  - "C(dtype), C(kv_cache_dtype) and C(quantization) (rules 11 and 41) are compared as written: the model's own value reaches
    vLLM's command line, whose choices are lower case."
options:
  _input:
    description: C(llm_serving_models).
    type: list
    elements: dict
    required: true
  host:
    description: The host's inventory name (C(inventory_hostname)), for the messages.
    type: str
    required: true
  engine:
    description: C(llm_serving_engine), the engine of models that do not name one.
    type: str
    default: vllm
  bind_address:
    description: C(llm_serving_bind_address).
    type: str
    default: 127.0.0.1
  client_address:
    description: C(llm_serving_client_address).
    type: str
    default: 127.0.0.1
  api_key:
    description: C(llm_serving_api_key); never shown.
    type: str
    default: ""
  hf_token:
    description: C(llm_serving_hf_token); never shown.
    type: str
    default: ""
  user:
    description: C(llm_serving_user).
    type: str
    default: llm
  group:
    description: C(llm_serving_group).
    type: str
    default: llm
  home:
    description: C(llm_serving_home).
    type: str
    default: /opt/llm
  model_dir:
    description: C(llm_serving_model_dir).
    type: str
    default: /var/lib/llm/models
  hf_home:
    description: C(llm_serving_hf_home).
    type: str
    default: /var/lib/llm/hf
  directories:
    description:
      - The directories the role creates, each C(path), C(mode), optional C(owner) and C(group) (default C(root)),
        and C(variable) (what sets it, for the messages).
    type: list
    elements: dict
    default: []
  gpus:
    description: C(llm_serving_gpus).
    type: list
    elements: dict
    default: []
  detected_gpus:
    description: The GPUs C(nvidia-smi) reported on the host, as P(hpclab.cluster.llm_gpu_plan#filter) reads them; V(null) when it was not asked or failed.
    type: list
    elements: dict
  nvidia_smi_error:
    description: Why C(nvidia-smi) gave no GPUs, for the message.
    type: str
    default: ""
  cuda_context_gib:
    description: C(llm_serving_cuda_context_gib).
    type: float
    default: 0.7
  nccl_gib:
    description: C(llm_serving_nccl_gib).
    type: float
    default: 0.6
  health_timeout:
    description: C(llm_serving_health_timeout).
    type: int
    default: 900
  pip_find_links:
    description: C(llm_serving_pip_find_links).
    type: list
    elements: str
    default: []
  pip_no_index:
    description: C(llm_serving_pip_no_index).
    type: bool
    default: false
  pip_extra_args:
    description: C(llm_serving_pip_extra_args).
    type: list
    elements: str
    default: []
  packages:
    description: The package lists by virtualenv, C(vllm), C(llama_cpp) and C(fastchat).
    type: dict
    default: {}
  fastchat_enabled:
    description: C(llm_serving_fastchat_enabled).
    type: bool
    default: true
  fastchat_multi_enabled:
    description: C(llm_serving_fastchat_multi_enabled).
    type: bool
    default: true
  fastchat_port:
    description: C(llm_serving_fastchat_port).
    type: int
    default: 7860
  fastchat_multi_port:
    description: C(llm_serving_fastchat_multi_port).
    type: int
    default: 7861
  fastchat_bind_address:
    description: C(llm_serving_fastchat_bind_address).
    type: str
    default: 127.0.0.1
  fastchat_bind_wildcard:
    description: C(llm_serving_fastchat_bind_wildcard).
    type: bool
    default: false
  host_addresses:
    description: The host's IPv4 and IPv6 addresses (C(ansible_facts.all_ipv4_addresses + all_ipv6_addresses)); empty
      when unknown (then only wildcards are refused as O(fastchat_bind_address)).
    type: list
    elements: str
    default: []
  fastchat_logins:
    description: C(llm_serving_fastchat_logins), each C(user) and C(password); passwords never shown.
    type: list
    elements: dict
    default: []
  fastchat_api_base:
    description: C(llm_serving_fastchat_api_base).
    type: str
    default: ""
  fastchat_api_key:
    description: C(llm_serving_fastchat_api_key); never shown.
    type: str
    default: ""
  fastchat_logins_pending:
    description:
      - True where the logins are not known yet and the web UIs are not deployed (the role's C(gpus) entry point, which
        C(playbooks/llm.yml) runs before the gateway hands out its logins); rule 48 is then left to the main entry point.
    type: bool
    default: false
  fastchat_anony_only:
    description: C(llm_serving_fastchat_anony_only).
    type: list
    elements: str
    default: []
  reserved_ports:
    description: Ports of other services on the cluster's hosts, a port or a range C(FIRST-LAST) to its owner.
    type: dict
    default: {}
  host_paths:
    description:
      - What is at each local path the models name (C(gguf_path), a vLLM C(model) starting with C(/)), as
        M(ansible.builtin.stat) returns it (C(exists), C(isreg), C(isdir)). V(null) skips rule 20.
    type: dict
  controller_files:
    description:
      - Each C(gguf_src) to whether the copy would find it as a file on the controller (a relative name in the role's
        or the playbook's C(files)). V(null) skips that part of rule 20.
    type: dict
  url_errors:
    description:
      - Each C(gguf_url) asked from the host to why it did not answer, V("") where it did. A URL not listed (its file
        already there) is not judged. V(null) skips that part of rule 20.
    type: dict
"""

EXAMPLES = r"""
# [{"name": "tiny-a", "port": 6817, "engine": "llama_cpp", "gguf_path": "/srv/tiny-a.gguf"}]
#   | hpclab.cluster.llm_serving_problems(host="llm1", reserved_ports={6817: "slurmctld (slurm_master)"})
# => ["llm1: llm_serving_models[0] (tiny-a): port 6817 is slurmctld (slurm_master)'s. Fix: move the model server
#     or web UI to a free port (8000-8999 is usual) in llm_serving_models or llm_serving_fastchat_*_port."]
- name: Check every input that ends up in a unit, a command line or api_endpoints.json
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
    quiet: true
  vars:
    __problems: >-
      {{ llm_serving_models | hpclab.cluster.llm_serving_problems(host=inventory_hostname, engine=llm_serving_engine,
           bind_address=llm_serving_bind_address, client_address=llm_serving_client_address) }}
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

# The GPU planner (plugin_utils/_gpu_plan) is imported in the functions that use it, not here: Ansible imports every
# file of plugins/filter in each worker process that looks up any filter of this collection, and _gpu_plan is the
# largest module they would import (about 15 ms a worker). Only the workers that run this filter need it.


ENGINES = ("vllm", "llama_cpp")
COMMON_KEYS = frozenset({"name", "port", "engine", "extra_args", "max_position_embeddings"})
ENGINE_KEYS = {
    "vllm": frozenset({"model", "dtype", "kv_cache_dtype", "max_model_len", "enforce_eager", "trust_remote_code",
                       "min_sequences", "gpu", "gpu_memory_utilization", "config", "num_layers", "kv_heads", "head_dim",
                       "weights_bytes", "weights_gib", "parameters", "overhead_gib", "overhead_bytes",
                       "tensor_parallel_size", "gpus", "quantization", "bits", "group_size", "hidden_size", "vocab_size",
                       "tie_word_embeddings"}),
    "llama_cpp": frozenset({"gguf_src", "gguf_path", "gguf_url", "gguf_checksum", "n_ctx"}),
}
# What the other engine calls a key, for the fix of a key given to the wrong engine.
OTHER_ENGINE_KEY = {"n_ctx": "max_model_len", "max_model_len": "n_ctx"}
# Flags the role puts on each server's command line (templates/llm-model.service.j2, llm_vllm_argv). argparse
# keeps the last value, so one in extra_args would silently override the checked one (the readiness wait would
# then ask the wrong port). Compared without leading dashes, '_' read as '-' (vLLM accepts both). vLLM's
# short forms -tp and -q are --tensor-parallel-size and --quantization.
ROLE_FLAGS = {
    "vllm": ("model", "served-model-name", "host", "port", "gpu-memory-utilization", "max-model-len", "dtype",
             "kv-cache-dtype", "api-key", "enforce-eager", "trust-remote-code", "tensor-parallel-size", "tp",
             "quantization", "q"),
    "llama_cpp": ("model", "model-alias", "host", "port", "n-ctx", "api-key"),
}
# systemd's UNIT_NAME_MAX is 255 characters: "llm-" + NAME + ".service".
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
NAME_MAX = 255 - len("llm-") - len(".service")
# huggingface_hub's validate_repo_id (utils/_validators.py): an optional namespace, a name of at most 96
# word characters, '.' or '-', no '--' or '..', not ending in '.git'.
HF_REPO_ID = re.compile(r"^(\b[\w.-]+\b/)?\b[\w.-]{1,96}\b$", re.ASCII)
# RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
BEARER_TOKEN = re.compile(r"^[A-Za-z0-9._~+/-]+=*$")
PRINTABLE = re.compile(r"^[\x21-\x7e]+$")
NO_QUOTES = re.compile(r"[\"'\\]")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Checksums get_url takes (ALGORITHM:HEX), with each algorithm's hex length.
CHECKSUM_HEX = {"md5": 32, "sha1": 40, "sha224": 56, "sha256": 64, "sha384": 96, "sha512": 128}
URL_SCHEMES = ("http", "https", "ftp", "file")
# The servers run as an unprivileged user, which cannot bind a port below 1024.
PORT_MIN = 1024
HEALTH_TIMEOUT_MAX = 86400
CUDA_CONTEXT_MAX_GIB = 8  # also the bound of llm_serving_nccl_gib
# Directories the role must never create, chown or chmod, and trees where its files would not last
# (tmpfs, cleaned by systemd-tmpfiles) or cannot live (kernel file systems).
SYSTEM_DIRS = frozenset({
    "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt", "/opt", "/proc",
    "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
    "/usr/bin", "/usr/include", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/local", "/usr/sbin", "/usr/share", "/usr/src",
    "/usr/local/bin", "/usr/local/lib", "/usr/local/sbin", "/usr/local/share",
    "/var/backups", "/var/cache", "/var/lib", "/var/local", "/var/log", "/var/mail", "/var/opt", "/var/spool", "/var/tmp",
    "/etc/systemd", "/etc/systemd/system",
})
VOLATILE_TREES = ("/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp")
# gradio's login file as FastChat reads it (fastchat.utils.parse_gradio_auth_creds): USER:PASSWORD pairs split at ','
# and ':', each stripped. A password is printable, without a blank, ',' or ':'.
WEB_PASSWORD = re.compile(r"^[\x21-\x2b\x2d-\x39\x3b-\x7e]+$")
WEB_API_BASE = re.compile(r"^https?://[A-Za-z0-9.:\[\]-]+(/[A-Za-z0-9._~:/%+=-]*)?$")
PACKAGE_VARIABLES = {"vllm": "llm_serving_vllm_packages", "llama_cpp": "llm_serving_llamacpp_packages",
                     "fastchat": "llm_serving_fastchat_packages"}


def _whole(value):
    """VALUE as an int when it is one (or a string of digits); None for floats, bools, blanks and the rest."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import to_int
    if isinstance(value, str):
        return int(value) if value.isascii() and value.isdigit() else None
    if isinstance(value, float):
        return None
    return to_int(value)


def _fraction(value):
    """VALUE as a float when it is a number or a numeric string (not a bool); else None."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _case_hint(value, table):
    """A hint for a VALUE that differs from an entry of TABLE only by case, else ''."""
    if isinstance(value, str) and value != value.lower() and value.lower() in table:
        return f" (write {value.lower()}: vLLM takes only these spellings, in lower case)"
    return ""


def _path_problem(value):
    """Why VALUE is not a canonical absolute path a unit file can hold, or None."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import PATH_CHARS, not_canonical
    if not isinstance(value, str) or not value.startswith("/"):
        return "is not an absolute path"
    if not PATH_CHARS.fullmatch(value):
        return "has a character a unit file cannot hold bare (blank, quote, ';', '{', '}', '#' or '%')"
    if value != "/" and not_canonical(value[1:].split("/")):
        return "is not canonical (a trailing or doubled '/', or a '.' or '..' part)"
    return None


def _directory_problem(value):
    """Why VALUE cannot be a directory the role owns, or None."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import is_within
    reason = _path_problem(value)
    if reason:
        return reason
    if value == "/" or value in SYSTEM_DIRS:
        return "is a directory of the system, which the role would chown and chmod"
    if any(is_within(value, tree) for tree in VOLATILE_TREES):
        return "is on a file system that is emptied at boot or by systemd-tmpfiles, or not a disk at all"
    return None


def _address(value):
    """(ipaddress object, None) or (None, why VALUE is not an IP address)."""
    if not isinstance(value, str):
        return None, "is not an IP address"
    if "%" in value:
        return None, "has a scope ('%'), which the servers cannot bind"
    try:
        return ipaddress.ip_address(value), None
    except ValueError:
        return None, "is not an IP address (a host name is resolved by each server differently, or not at all)"


def _port_ranges(reserved):
    """[(first, last, owner)] from {port or 'FIRST-LAST': owner}."""
    ranges = []
    for key, owner in (reserved or {}).items():
        first, _dash, last = str(key).partition("-")
        low, high = _whole(first), _whole(last) if last else _whole(first)
        if low is None or high is None or low > high:
            raise AnsibleFilterError(f"llm_serving_problems: reserved_ports key {key!r} is not a port or FIRST-LAST")
        ranges.append((low, high, str(owner)))
    return ranges


def _flag_name(arg):
    """'port' for '--port', '--port=8000' and '-port'; 'n-ctx' for '--n_ctx'; None for a value."""
    if not isinstance(arg, str) or not arg.startswith("-") or arg.lstrip("-") == "" or arg[1:2].isdigit():
        return None
    return arg.lstrip("-").split("=", 1)[0].replace("_", "-").lower()


def _web_address_problems(address, wildcard, host_addresses, problem):
    """Rules 25 (the web UIs' address) and 44. Returns the address (an ipaddress object), or None when it is none."""
    ip, reason = _address(address)
    if address == "":
        reason = ("is not an IP address (the default is the address of the host's default route, from its network facts, "
                  "and this host has none)")
    if reason:
        problem(f"llm_serving_fastchat_bind_address {address!r} {reason}. Fix: give this host's address on the cluster "
                "network.")
        return None
    if ip.is_unspecified:
        if not wildcard:
            problem(f"llm_serving_fastchat_bind_address {address} would listen on every network of the host, not only the "
                    "cluster network. Fix: leave it out (the default is the host's address on the cluster network) or give "
                    "that address; to listen everywhere on purpose, behind a firewall, set "
                    "llm_serving_fastchat_bind_wildcard: true.")
        return ip
    own = set()
    for value in host_addresses or []:
        found, _why = _address(value) if isinstance(value, str) else (None, None)
        if found is not None:
            own.add(found)
    if own and ip not in own and not ip.is_loopback:
        problem(f"llm_serving_fastchat_bind_address {address} is not an address of this host "
                f"({', '.join(sorted(map(str, own)))}); the web UIs could not listen there. Fix: give its address on the "
                "cluster network (the default).")
    return ip


def _web_login_problems(logins, api_base, api_key, exposed, problem):
    """Rules 45, 46 and 48 (EXPOSED: the web UIs' address, when other hosts can reach it; else None). Passwords and keys
    are never shown."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import (
        USER_NAME,
        USER_NAME_MAX,
        WEB_PASSWORD_MAX,
        WEB_PASSWORD_MIN,
        web_password_reason,
    )
    fix = ("Fix: pass the gateway's web logins (playbooks/llm.yml passes llm_gateway_result.web_logins), or list "
           "[{user: alice, password: \"{{ vault_web_password_alice }}\"}].")
    if isinstance(logins, (str, bytes, Mapping)) or not isinstance(logins, (list, tuple)):
        problem(f"llm_serving_fastchat_logins is not a list of logins ({type(logins).__name__}, values not shown). {fix}")
        logins = []
    users = {}
    for index, login in enumerate(logins):
        if not isinstance(login, Mapping):
            problem(f"llm_serving_fastchat_logins[{index}] is not a dict of user and password (value not shown). {fix}")
            continue
        user = login.get("user")
        if not isinstance(user, str) or not USER_NAME.fullmatch(user) or len(user) > USER_NAME_MAX:
            problem(f"llm_serving_fastchat_logins[{index}]: user {user!r} is not a user name ([a-z_][a-z0-9_-]*, at most "
                    f"{USER_NAME_MAX} characters). {fix}")
            continue
        if user in users:
            problem(f"llm_serving_fastchat_logins[{index}]: {user} is listed twice (also llm_serving_fastchat_logins"
                    f"[{users[user]}]); gradio would keep one of the passwords. Fix: list each user once.")
            continue
        users[user] = index
        password = login.get("password")
        reason = web_password_reason(password, WEB_PASSWORD, "has a blank, ',', ':' or a character that is not printable "
                                     "(gradio's login file splits at ',' and ':')")
        if reason is None:
            continue
        problem(f"llm_serving_fastchat_logins[{index}] ({user}): the password (value not shown) {reason}. Fix: give a password "
                f"of {WEB_PASSWORD_MIN} to {WEB_PASSWORD_MAX} letters and digits, or let the gateway make one (it generates "
                "each user's web password unless llm_gateway_web_passwords gives it).")
    if not isinstance(api_base, str) or (api_base and not WEB_API_BASE.fullmatch(api_base)):
        problem(f"llm_serving_fastchat_api_base {api_base!r} is not an http or https URL. Fix: pass the gateway's URL "
                "(llm_gateway_result.url, e.g. http://10.0.0.5:4000/v1), or \"\" to send each model's requests to its own "
                "server.")
        return
    if not isinstance(api_key, str) or (api_key and not BEARER_TOKEN.fullmatch(api_key)):
        problem("llm_serving_fastchat_api_key (value not shown) is not a bearer token: only letters, digits, '-', '.', '_', "
                "'~', '+', '/' and a trailing '='. Fix: pass the gateway's key for the web UI (llm_gateway_result.web_key).")
        return
    if api_base and not api_key:
        problem(f"llm_serving_fastchat_api_base sends the web UIs' requests to {api_base}, but llm_serving_fastchat_api_key is "
                "empty: the gateway would answer 401 to every chat. Fix: pass the gateway's key for the web UI "
                "(llm_gateway_result.web_key), as playbooks/llm.yml does.")
    elif api_base and not logins:
        problem(f"llm_serving_fastchat_api_base sends the web UIs' requests through {api_base} with the web UI's own key, but "
                "llm_serving_fastchat_logins is empty: anyone who reaches a web UI would use the models without a key of "
                "their own. Fix: list the cluster's users in hpclab_cluster_users (the gateway gives each a web password), "
                "or set llm_serving_fastchat_enabled: false.")
    elif exposed is not None and not logins:
        problem(f"llm_serving_fastchat_logins is empty but the web UIs listen on {exposed} (llm_serving_fastchat_bind_address), "
                "where other hosts reach them: anyone on that network would use every model without logging in. Fix: list "
                "the cluster's users in hpclab_cluster_users and run playbooks/llm.yml (the gateway gives each a web password "
                "and hands them to the web UIs), give llm_serving_fastchat_logins, keep the web UIs on 127.0.0.1, or set "
                "llm_serving_fastchat_enabled: false.")


def _requirement_problem(value):
    if not isinstance(value, str) or not value.strip():
        return "is not a requirement"
    try:  # imported here: ansible-core installs packaging, ansible-test's import sanity environment lacks it
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:  # pragma: no cover
        return None
    try:
        Requirement(value)
    except InvalidRequirement as exc:
        return f"is not a PEP 508 requirement ({str(exc).splitlines()[0]})"
    return None


def llm_serving_problems(models, host, engine="vllm", bind_address="127.0.0.1", client_address="127.0.0.1", api_key="",
                         hf_token="", user="llm", group="llm", home="/opt/llm", model_dir="/var/lib/llm/models",
                         hf_home="/var/lib/llm/hf", directories=None, gpus=None, detected_gpus=None, nvidia_smi_error="",
                         cuda_context_gib=None, nccl_gib=None, health_timeout=900, pip_find_links=None, pip_no_index=False,
                         pip_extra_args=None, packages=None, fastchat_enabled=True, fastchat_multi_enabled=True,
                         fastchat_port=7860, fastchat_multi_port=7861, fastchat_bind_address="127.0.0.1",
                         fastchat_anony_only=None, reserved_ports=None, host_paths=None, fastchat_bind_wildcard=False,
                         host_addresses=None, fastchat_logins=None, fastchat_api_base="", fastchat_api_key="",
                         fastchat_logins_pending=False, controller_files=None, url_errors=None):
    """Filter entry point: see DOCUMENTATION. cuda_context_gib and nccl_gib default to the planner's defaults."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import USER_NAME, USER_NAME_MAX, port_problem, seconds_problem, to_int
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import (
        DEFAULT_CUDA_CONTEXT_GIB, DEFAULT_NCCL_GIB, GpuPlanError, normalize_gpus, normalize_model)

    if isinstance(models, (str, bytes, Mapping)) or not hasattr(models, "__iter__"):
        raise AnsibleFilterError(f"llm_serving_problems: input must be the list llm_serving_models, got {models!r}")
    if cuda_context_gib is None:
        cuda_context_gib = DEFAULT_CUDA_CONTEXT_GIB
    if nccl_gib is None:
        nccl_gib = DEFAULT_NCCL_GIB
    models = list(models)
    reserved = _port_ranges(reserved_ports)
    problems = []

    def problem(text):
        problems.append(f"{host}: {text}")

    # ---- every model: keys, name, engine, port, extra_args --------------------------------------------------
    names, ports = {}, {}  # name -> index; port -> (owner, variable)
    vllm_models, bad_vllm, served = [], False, []

    def claim_port(value, owner, variable):
        port = None if port_problem(value) else to_int(value)
        if port is None or port < PORT_MIN:
            problem(f"{owner}: port {value!r} is not an integer {PORT_MIN}..65535 (the servers run as an unprivileged "
                    f"user). Fix: give {variable} a free port, e.g. 8000-8999 for models.")
            return False
        if port in ports:
            problem(f"{owner}: port {port} is also the port of {ports[port]}. Fix: give each model server and web UI "
                    "its own port (llm_serving_models[].port, llm_serving_fastchat_port, llm_serving_fastchat_multi_port).")
            return False
        ports[port] = owner
        for low, high, service in reserved:
            if low <= port <= high:
                problem(f"{owner}: port {port} is {service}'s. Fix: move the model server or web UI to a free port "
                        "(8000-8999 is usual) in llm_serving_models or llm_serving_fastchat_*_port.")
                return False
        return True

    for index, model in enumerate(models):
        where = f"llm_serving_models[{index}]"
        if not isinstance(model, Mapping):
            problem(f"{where} is not a dict. Fix: give name, port and the engine's keys (see the role's README).")
            continue
        name = model.get("name")
        where = f"{where} ({name})"
        model_engine = model.get("engine", engine)
        start = len(problems)

        if not isinstance(name, str) or not NAME.fullmatch(name) or len(name) > NAME_MAX:
            problem(f"{where}: name {name!r} cannot name the systemd unit llm-NAME.service. Fix: use letters, digits, "
                    f"'.', '_' and '-', starting with a letter or digit, at most {NAME_MAX} characters.")
        elif name in names:
            problem(f"{where}: name {name} is also the name of llm_serving_models[{names[name]}]. Fix: give every model "
                    "of the host its own name (it is the served model name and the unit's).")
        else:
            names[name] = index

        if model_engine not in ENGINES:
            problem(f"{where}: engine {model_engine!r} is not one of {', '.join(ENGINES)}. Fix: set engine (or "
                    "llm_serving_engine) to vllm on GPU nodes or llama_cpp for GGUF files.")
            continue
        known = COMMON_KEYS | ENGINE_KEYS[model_engine]
        for key in sorted(set(model) - known, key=str):
            other = next((e for e in ENGINES if e != model_engine and key in ENGINE_KEYS[e]), None)
            if other:
                hint = f"it is a key of {other} models"
                if key in OTHER_ENGINE_KEY:
                    hint += f"; {model_engine} reads {OTHER_ENGINE_KEY[key]}"
                problem(f"{where}: key {key!r} is not read by engine {model_engine} ({hint}). Fix: remove it, or set "
                        f"engine: {other}.")
            else:
                problem(f"{where}: unknown key {key!r} (a typo is otherwise ignored). Fix: use only "
                        f"{', '.join(sorted(known))}.")

        claim_port(model.get("port"), f"{where}", f"{where} port")

        extra = model.get("extra_args", [])
        if isinstance(extra, (str, bytes, Mapping)) or not isinstance(extra, (list, tuple)):
            problem(f"{where}: extra_args {extra!r} is not a list. Fix: give one list item per word, e.g. "
                    "['--max-num-seqs', 8].")
        else:
            for arg in extra:
                if isinstance(arg, bool) or not isinstance(arg, (str, int, float)) or (isinstance(arg, str) and not arg):
                    problem(f"{where}: extra_args item {arg!r} is not a word of a command line. Fix: give strings or "
                            "numbers (write a flag's value as a string, e.g. 'true').")
                elif isinstance(arg, str) and CONTROL.search(arg):
                    problem(f"{where}: extra_args item {arg!r} has a line break or control character, which would end "
                            "the unit's ExecStart line. Fix: remove it.")
                elif _flag_name(arg) in ROLE_FLAGS[model_engine]:
                    problem(f"{where}: extra_args sets {arg.split('=', 1)[0]}, which the role sets from the model's keys "
                            "(the last value wins, and the checks would not see it). Fix: use the model's key (port, "
                            "name, max_model_len, n_ctx, dtype, ...) or llm_serving_bind_address instead.")

        max_pos = model.get("max_position_embeddings")
        if max_pos is not None and (_whole(max_pos) or 0) < 1:
            problem(f"{where}: max_position_embeddings {max_pos!r} is not a positive integer. Fix: give the model's "
                    "context limit from its config.json, or leave it out.")
            max_pos = None
        max_pos = _whole(max_pos)

        if model_engine == "vllm":
            _vllm_problems(model, where, max_pos, problem)
            _parallel_problems(model, where, problem)
            if len(problems) == start:
                _split_problem(model, where, problem)
            if len(problems) == start:
                try:
                    normalize_model(dict(model), index)
                except GpuPlanError as exc:
                    problem(f"{where}: the GPU planner cannot size it: {exc}. Fix: give what it names: a max_model_len "
                            "within the model's limit and, for a model it does not know, its config (config.json as a "
                            "dict) or num_layers, kv_heads and head_dim, and weights_gib.")
            vllm_models.append(dict(model, engine="vllm"))
            bad_vllm = bad_vllm or len(problems) > start
            path = model.get("model")
            if len(problems) == start and isinstance(path, str) and path.startswith("/") and host_paths is not None:
                found = host_paths.get(path) or {}
                if not found.get("isdir"):
                    problem(f"{where}: model {path} is {'not a directory' if found.get('exists') else 'missing'} on the "
                            "host; vLLM would exit at its start. Fix: put the model's files there first, or give its "
                            "Hugging Face id.")
        else:
            _llamacpp_problems(model, where, max_pos, problem)
            path = model.get("gguf_path")
            if len(problems) == start and path is not None and host_paths is not None:
                found = host_paths.get(path) or {}
                if not found.get("isreg"):
                    problem(f"{where}: gguf_path {path} is {'not a file' if found.get('exists') else 'missing'} on the "
                            "host; llama.cpp would exit at its start. Fix: put the GGUF file there first, or use gguf_src "
                            "(a file on the controller) or gguf_url.")
            src = model.get("gguf_src")
            if len(problems) == start and isinstance(src, str) and controller_files is not None and not controller_files.get(src):
                problem(f"{where}: gguf_src {src} is not a file on the Ansible controller; its copy would fail after the "
                        "run had changed other models. Fix: give the GGUF file's path on the controller (absolute, or "
                        "relative to the playbook's files/), or use gguf_path or gguf_url.")
            url = model.get("gguf_url")
            if len(problems) == start and isinstance(url, str) and url_errors and url_errors.get(url):
                problem(f"{where}: gguf_url {url} does not answer from this host ({url_errors[url]}); its download would "
                        "fail after the run had changed other models. Fix: correct the URL, or let the host reach it "
                        "(proxy, firewall), or copy the file there and use gguf_path.")
        if isinstance(name, str):
            served.append(name)

    # ---- web UIs: ports, what they show ---------------------------------------------------------------------
    if fastchat_enabled:
        claim_port(fastchat_port, "FastChat web UI (llm_serving_fastchat_port)", "llm_serving_fastchat_port")
        if fastchat_multi_enabled:
            claim_port(fastchat_multi_port, "FastChat side-by-side UI (llm_serving_fastchat_multi_port)",
                       "llm_serving_fastchat_multi_port")
        anony = list(fastchat_anony_only or [])
        for name in anony:
            if name not in served:
                problem(f"llm_serving_fastchat_anony_only names {name!r}, which llm_serving_models does not serve "
                        f"({', '.join(served) or 'nothing'}). Fix: list served model names only.")
        if not models:
            problem("llm_serving_models is empty but llm_serving_fastchat_enabled is true: FastChat's web UI would "
                    "have no model and its side-by-side UI fails to start (lm-sys/FastChat #3111). Fix: list models, "
                    "or set llm_serving_fastchat_enabled: false.")
        elif served and not set(served) - set(anony):
            problem("llm_serving_fastchat_anony_only hides every served model from the named chat: FastChat's direct "
                    "chat would have none to show. Fix: leave at least one model out of llm_serving_fastchat_anony_only.")

    # ---- GPUs and the memory plan -----------------------------------------------------------------------------
    gpu_list, gpus_ok = list(gpus or []), True
    if gpu_list:
        try:
            normalize_gpus(gpu_list)
        except GpuPlanError as exc:
            gpus_ok = False
            problem(f"llm_serving_gpus is not what the planner reads: {exc}. Fix: give each GPU its index and memory "
                    "total, e.g. {index: 0, memory_total: '81559 MiB'}, or leave the list empty to ask nvidia-smi.")
    context = _fraction(cuda_context_gib)
    if context is None or not 0 <= context <= CUDA_CONTEXT_MAX_GIB:
        gpus_ok = False
        problem(f"llm_serving_cuda_context_gib {cuda_context_gib!r} is not 0..{CUDA_CONTEXT_MAX_GIB} GiB (a CUDA context "
                "is 0.3 to 1 GiB; a larger value is likely MiB). Fix: keep 0.5, or measure it on your driver.")
    effective = gpu_list or list(detected_gpus or [])
    if vllm_models and not effective:
        gpus_ok = False
        why = (nvidia_smi_error or "").strip()[:120] or "no GPU listed"
        problem(f"has no GPU (nvidia-smi: {why}) but llm_serving_models gives it vLLM models "
                f"({', '.join(str(m.get('name')) for m in vllm_models)}); vLLM needs an NVIDIA GPU and its driver. "
                "Fix: serve them on a GPU node, or set engine llama_cpp (GGUF files) for CPU nodes.")
    nccl = _fraction(nccl_gib)
    if nccl is None or not 0 <= nccl <= CUDA_CONTEXT_MAX_GIB:
        gpus_ok = False
        problem(f"llm_serving_nccl_gib {nccl_gib!r} is not 0..{CUDA_CONTEXT_MAX_GIB} GiB (NCCL takes about 0.5 GiB per GPU of a "
                "tensor-parallel model; a larger value is likely MiB). Fix: keep 0.6, or measure it on your machine.")
    if vllm_models and gpus_ok and not bad_vllm and _host_gpu_problems(vllm_models, effective, bool(gpu_list), problem):
        _plan_problems(effective, vllm_models, context, nccl, problem)

    # ---- addresses ----------------------------------------------------------------------------------------------
    bind, reason = _address(bind_address)
    if reason:
        problem(f"llm_serving_bind_address {bind_address!r} {reason}. Fix: use 127.0.0.1 (this host only) or 0.0.0.0 "
                "(every interface, then protect the servers with llm_serving_api_key).")
    client, reason = _address(client_address)
    if reason:
        problem(f"llm_serving_client_address {client_address!r} {reason}. Fix: use the address the servers listen on, "
                "e.g. 127.0.0.1.")
    elif client.is_unspecified:
        problem(f"llm_serving_client_address {client_address} is a wildcard, not an address to connect to. Fix: use "
                "127.0.0.1, or the address in llm_serving_bind_address.")
    elif bind is not None:
        if bind.is_unspecified and bind.version == 4 and client.version == 6:
            problem(f"llm_serving_client_address {client_address} is IPv6 but the servers listen on IPv4 only "
                    f"(llm_serving_bind_address {bind_address}). Fix: use 127.0.0.1, or bind to '::'.")
        elif not bind.is_unspecified and client != bind:
            problem(f"llm_serving_client_address {client_address} does not reach the servers, which listen on "
                    f"{bind_address} only (llm_serving_bind_address); FastChat and the readiness wait would find "
                    f"nothing. Fix: set llm_serving_client_address to {bind_address}.")
    if fastchat_enabled:
        web = _web_address_problems(fastchat_bind_address, fastchat_bind_wildcard, host_addresses, problem)
        exposed = web if web is not None and not web.is_loopback and not fastchat_logins_pending else None
        _web_login_problems([] if fastchat_logins is None else fastchat_logins, fastchat_api_base, fastchat_api_key, exposed,
                            problem)
    # Rule 47. The gateway's per-user keys are only worth something if its model servers refuse everyone else: a model
    # server other hosts can reach needs the key (llm_gateway_problems asks it of the servers behind the gateway too).
    if models and bind is not None and not bind.is_loopback and api_key == "":
        problem(f"llm_serving_bind_address {bind_address} lets other hosts reach the model servers, but llm_serving_api_key "
                "is empty: anyone on that network could use every model, bypassing the gateway's per-user keys, revocation, "
                "rate limit and access log. Fix: set llm_serving_api_key from the vault (generate one with "
                "openssl rand -hex 32 | ansible-vault encrypt_string --stdin-name vault_llm_api_key, then "
                "llm_serving_api_key: \"{{ vault_llm_api_key }}\"), or keep the servers on 127.0.0.1.")

    # ---- secrets (never shown) ----------------------------------------------------------------------------------
    if not isinstance(api_key, str) or (api_key and not BEARER_TOKEN.fullmatch(api_key)):
        problem("llm_serving_api_key (value not shown) is not a bearer token: only letters, digits, '-', '.', '_', "
                "'~', '+', '/' and a trailing '=' travel safely in the Authorization header, the environment file "
                "and curl's config (RFC 6750). Fix: generate one, e.g. openssl rand -hex 32.")
    if not isinstance(hf_token, str) or (hf_token and not PRINTABLE.fullmatch(hf_token)) or NO_QUOTES.search(hf_token or ""):
        problem("llm_serving_hf_token (value not shown) has a blank, quote or control character (a line break "
                "copied with it?). Fix: give the token alone, e.g. hf_...")

    # ---- user, group and directories ----------------------------------------------------------------------------
    for variable, value, kind in (("llm_serving_user", user, "user"), ("llm_serving_group", group, "group")):
        if not isinstance(value, str) or not USER_NAME.fullmatch(value) or len(value) > USER_NAME_MAX:
            problem(f"{variable} {value!r} is not a {kind} name (lower-case letters, digits, '_' and '-', at most 32). "
                    "Fix: keep the default llm.")
        elif value == "root":
            harm = ("give root the home /var/lib/llm and the shell nologin, and run the servers with every privilege"
                    if kind == "user" else "run the servers in group root and hand it the API key file")
            problem(f"{variable} is root: the role would {harm}. Fix: keep the default llm.")
    for variable, value in (("llm_serving_home", home), ("llm_serving_model_dir", model_dir),
                            ("llm_serving_hf_home", hf_home)):
        reason = _directory_problem(value)
        if reason:
            problem(f"{variable} {value!r} {reason}. Fix: use a directory of its own, e.g. the default.")
    seen = {}
    for entry in directories or []:
        path = entry.get("path")
        owner = (entry.get("owner", "root"), entry.get("group", "root"), str(entry.get("mode")))
        variable = entry.get("variable", path)
        if path in seen and seen[path][0] != owner:
            problem(f"{variable} and {seen[path][1]} are both {path}, which the role would make {':'.join(owner[:2])} "
                    f"{owner[2]} and {':'.join(seen[path][0][:2])} {seen[path][0][2]} by turns. Fix: give them "
                    "different directories.")
        seen.setdefault(path, (owner, variable))

    # ---- durations and installs -----------------------------------------------------------------------------------
    if seconds_problem(health_timeout) or to_int(health_timeout) > HEALTH_TIMEOUT_MAX:
        problem(f"llm_serving_health_timeout {health_timeout!r} is not 1..{HEALTH_TIMEOUT_MAX} seconds. Fix: keep 900 "
                "(vLLM's memory profiling takes minutes), or less for llama.cpp.")
    links = list(pip_find_links or [])
    for link in links:
        parts = urlsplit(link) if isinstance(link, str) else None
        if parts is None or not link or any(c.isspace() for c in link) or (
                not link.startswith("/") and (parts.scheme not in ("http", "https", "file") or not (parts.netloc or parts.path))):
            problem(f"llm_serving_pip_find_links entry {link!r} is not an absolute path or an http, https or file URL "
                    "without blanks. Fix: give the wheelhouse directory, e.g. /srv/wheelhouse.")
    if pip_no_index and not links:
        problem("llm_serving_pip_no_index is true but llm_serving_pip_find_links is empty: pip would find no package. "
                "Fix: give the wheelhouse in llm_serving_pip_find_links, or set llm_serving_pip_no_index: false.")
    extra_pip = list(pip_extra_args or [])
    for position, arg in enumerate(extra_pip):
        if not isinstance(arg, str) or not arg or CONTROL.search(arg) or (position == 0 and not arg.startswith("-")):
            problem(f"llm_serving_pip_extra_args item {arg!r} is not a pip option (the first item must start with '-', "
                    "none may hold a line break). Fix: e.g. ['--index-url', 'https://pypi.example.org/simple'].")
    used = sorted({str(m.get("engine", engine)) for m in models if isinstance(m, Mapping)} & set(ENGINES))
    if fastchat_enabled:
        used.append("fastchat")
    for venv in used:
        variable = PACKAGE_VARIABLES[venv]
        wanted = list((packages or {}).get(venv) or [])
        if not wanted:
            problem(f"{variable} is empty but this host needs the {venv} virtualenv. Fix: keep the role's default list.")
        for requirement in wanted:
            reason = _requirement_problem(requirement)
            if reason:
                problem(f"{variable} entry {requirement!r} {reason}. Fix: write it as pip does, e.g. vllm==0.11.0.")
    return problems


def _vllm_problems(model, where, max_pos, problem):
    """Rules 10-16 for one vLLM model."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import DTYPE_BYTES, KV_CACHE_DTYPE_BYTES

    path = model.get("model")
    if not isinstance(path, str) or not path:
        problem(f"{where}: no model (a Hugging Face id or a local path). Fix: set model, e.g. "
                "meta-llama/Meta-Llama-3-8B-Instruct.")
    elif path.startswith("/"):
        reason = _path_problem(path)
        if reason:
            problem(f"{where}: model {path!r} {reason}. Fix: give the model directory's canonical absolute path.")
    elif not HF_REPO_ID.fullmatch(path) or "--" in path or ".." in path or path.endswith(".git"):
        problem(f"{where}: model {path!r} is neither a Hugging Face repository id (OWNER/NAME) nor an absolute path. "
                "Fix: write e.g. meta-llama/Meta-Llama-3-8B-Instruct, or /srv/models/NAME.")
    # Compared as written: the planner reads them in any case, but the model's own value is what reaches vLLM's command
    # line (vars/main.yml combines the model over its plan), and vLLM's argparse choices are lower case.
    for key, table in (("dtype", DTYPE_BYTES), ("kv_cache_dtype", KV_CACHE_DTYPE_BYTES)):
        value = model.get(key, "auto")
        if not isinstance(value, str) or value not in table:
            problem(f"{where}: {key} {value!r} is not one of {', '.join(table)}{_case_hint(value, table)}. Fix: use one of "
                    f"those ({'bfloat16 for most current models' if key == 'dtype' else 'auto, or fp8 to halve the KV cache'}).")
    max_len = _whole(model.get("max_model_len"))
    if max_len is None or max_len < 1:
        problem(f"{where}: max_model_len {model.get('max_model_len')!r} is missing or not a positive integer. Fix: set "
                "max_model_len (tokens per sequence, prompt and answer).")
    elif max_pos is not None and max_len > max_pos:
        problem(f"{where}: max_model_len {max_len} is above the model's own limit (max_position_embeddings {max_pos}); "
                "vLLM refuses it. Fix: lower max_model_len.")
    if "min_sequences" in model and (_whole(model["min_sequences"]) or 0) < 1:
        problem(f"{where}: min_sequences {model['min_sequences']!r} is not a positive integer. Fix: give the number of "
                "full-length sequences the KV cache must hold (default 1).")
    gpu = model.get("gpu")
    if gpu is not None and (isinstance(gpu, bool) or not isinstance(gpu, int) or gpu < 0):
        problem(f"{where}: gpu {model['gpu']!r} is not a GPU index. Fix: give the CUDA index (0, 1, ...) from "
                "nvidia-smi, or leave it out to let the planner place the model.")
    if "gpu_memory_utilization" in model:
        util = _fraction(model["gpu_memory_utilization"])
        if util is None or not 0 < util <= 1:
            problem(f"{where}: gpu_memory_utilization {model['gpu_memory_utilization']!r} is not a fraction in (0, 1]. "
                    "Fix: leave it out to use the plan, or give e.g. '0.45'.")
    for key in ("enforce_eager", "trust_remote_code"):
        if key in model and not isinstance(model[key], bool):
            problem(f"{where}: {key} {model[key]!r} is not true or false. Fix: write true or false, unquoted.")


def _llamacpp_problems(model, where, max_pos, problem):
    """Rules 18-19 for one llama.cpp model."""
    sources = [key for key in ("gguf_src", "gguf_path", "gguf_url") if key in model]
    if len(sources) != 1:
        problem(f"{where}: needs exactly one of gguf_src (a file on the controller), gguf_path (a file on the host) "
                f"or gguf_url, got {', '.join(sources) or 'none'}. Fix: keep one GGUF source.")
    if "gguf_src" in model and (not isinstance(model["gguf_src"], str) or not model["gguf_src"].strip()):
        problem(f"{where}: gguf_src {model['gguf_src']!r} is not a file name. Fix: give the GGUF file on the controller.")
    if "gguf_path" in model:
        reason = _path_problem(model["gguf_path"])
        if reason:
            problem(f"{where}: gguf_path {model['gguf_path']!r} {reason}. Fix: give the GGUF file's canonical absolute path.")
    if "gguf_url" in model:
        url = model["gguf_url"]
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in URL_SCHEMES or not (parts.netloc or parts.path) or any(c.isspace() for c in url):
            problem(f"{where}: gguf_url {url!r} is not an {', '.join(URL_SCHEMES)} URL. Fix: give the GGUF file's URL, "
                    "e.g. https://huggingface.co/OWNER/REPO/resolve/main/FILE.gguf.")
    if "gguf_url" in model and "gguf_checksum" not in model:
        problem(f"{where}: gguf_url has no gguf_checksum; whatever the URL serves would be loaded. Fix: add "
                "gguf_checksum: sha256:<the file's 64 hex digits> (Hugging Face shows it on the file's page).")
    if "gguf_checksum" in model:
        algorithm, _colon, digest = str(model["gguf_checksum"]).partition(":")
        if "gguf_url" not in model:
            problem(f"{where}: gguf_checksum is only checked on a download (gguf_url). Fix: remove it.")
        elif CHECKSUM_HEX.get(algorithm.lower()) != len(digest) or not re.fullmatch(r"[0-9a-fA-F]+", digest):
            problem(f"{where}: gguf_checksum {model['gguf_checksum']!r} is not ALGORITHM:HEX "
                    f"({', '.join(CHECKSUM_HEX)}). Fix: e.g. sha256:<64 hex digits>.")
    n_ctx = _whole(model.get("n_ctx", 2048))
    if n_ctx is None or n_ctx < 1:
        problem(f"{where}: n_ctx {model.get('n_ctx')!r} is not a positive integer. Fix: give the context size in tokens "
                "(default 2048).")
    elif max_pos is not None and n_ctx > max_pos:
        problem(f"{where}: n_ctx {n_ctx} is above the model's max_position_embeddings ({max_pos}). Fix: lower n_ctx.")


def _parallel_problems(model, where, problem):
    """Rules 39 and 41 for one vLLM model: tensor_parallel_size and gpus; quantization, bits and group_size."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import DTYPE_BYTES, QUANTIZATION_BITS, SIXTEEN_BIT

    size = _whole(model.get("tensor_parallel_size", 1))
    if size is None or size < 1:
        problem(f"{where}: tensor_parallel_size {model.get('tensor_parallel_size')!r} is not a positive integer. Fix: give "
                "the number of GPUs the model is split over (vLLM --tensor-parallel-size), or leave it out for one.")
        size = None
    if model.get("gpus") is not None:
        pins = model["gpus"]
        if not isinstance(pins, list) or not pins or any(isinstance(p, bool) or not isinstance(p, int) or p < 0 for p in pins) \
                or len(set(pins)) != len(pins):
            problem(f"{where}: gpus {pins!r} is not a list of distinct GPU indexes. Fix: give the CUDA indexes of its GPUs "
                    "from nvidia-smi, one per rank, e.g. [0, 1], or leave it out to let the planner choose.")
        elif model.get("gpu") is not None:
            problem(f"{where}: gives both gpu {model['gpu']!r} and gpus {pins!r}. Fix: pin one GPU with gpu, or all the "
                    "model's GPUs with gpus.")
        elif size is not None and len(pins) != size:
            problem(f"{where}: gpus {pins!r} lists {len(pins)} GPU(s) but tensor_parallel_size is {size}. Fix: list one GPU "
                    f"per rank, or set tensor_parallel_size: {len(pins)}.")
    elif size is not None and size > 1 and model.get("gpu") is not None:
        problem(f"{where}: gpu {model['gpu']!r} pins one GPU but tensor_parallel_size is {size}. Fix: pin all {size} with "
                "gpus, e.g. [0, 1], or leave the pin out.")

    method = model.get("quantization")
    if method is None:
        for key in ("bits", "group_size"):
            if key in model:
                problem(f"{where}: {key} {model[key]!r} describes quantized weights but quantization is not set. Fix: set "
                        f"quantization ({', '.join(QUANTIZATION_BITS)}), or remove {key}.")
        return
    if not isinstance(method, str) or method not in QUANTIZATION_BITS:
        problem(f"{where}: quantization {method!r} is not one the GPU planner sizes ({', '.join(QUANTIZATION_BITS)})"
                f"{_case_hint(method, QUANTIZATION_BITS)}. Fix: use one of those; for another format (e.g. compressed-tensors) "
                "leave quantization out, vLLM reads it from config.json, and give the checkpoint's size as weights_gib.")
        return
    allowed = QUANTIZATION_BITS[method]
    if "bits" in model and _whole(model["bits"]) not in allowed:
        why = "vLLM's AWQ reads only 4-bit checkpoints; 8-bit ones are GPTQ" if method.startswith("awq") else \
            f"{method} weights have {' or '.join(map(str, allowed))} bits"
        problem(f"{where}: bits {model['bits']!r} does not fit quantization {method} ({why}). Fix: give the checkpoint's "
                f"bits ({' or '.join(map(str, allowed))}), or leave it out for {allowed[0]}.")
    if "group_size" in model:
        if not method.startswith(("awq", "gptq")):
            problem(f"{where}: group_size applies to AWQ and GPTQ weights, not {method}. Fix: remove group_size.")
        elif (_whole(model["group_size"]) or 0) < 1:
            problem(f"{where}: group_size {model['group_size']!r} is not a positive integer. Fix: give the checkpoint's "
                    "group_size (its quantize_config.json; 128 is usual), or leave it out for 128.")
    dtype = model.get("dtype", "auto")
    if isinstance(dtype, str) and dtype in DTYPE_BYTES and dtype not in SIXTEEN_BIT:
        problem(f"{where}: quantization {method} computes in 16 bits but dtype is {dtype}. Fix: use dtype auto, bfloat16 or "
                "float16.")


def _split_problem(model, where, problem):
    """Rule 40: tensor_parallel_size splits the model's KV heads as vLLM requires (when the planner knows them)."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import known_kv_heads, kv_heads_per_rank, valid_sizes

    size = _whole(model.get("tensor_parallel_size", 1))
    kv_heads = known_kv_heads(model)
    if size is None or kv_heads is None or kv_heads_per_rank(kv_heads, size) is not None:
        return
    usable = ", ".join(map(str, valid_sizes(kv_heads, max(kv_heads, size))))
    problem(f"{where}: tensor_parallel_size {size} does not divide the model's {kv_heads} KV heads (num_key_value_heads); "
            f"vLLM gives every GPU the same number of them and refuses to start. Fix: use a tensor_parallel_size of {usable}.")


def _host_gpu_problems(vllm_models, gpus, listed, problem):
    """Rules 42 and 43: each model's tensor_parallel_size and pins against the host's GPUs. True when none."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import GpuPlanError, normalize_gpus

    try:
        indexes = [gpu["index"] for gpu in normalize_gpus(gpus)]
    except GpuPlanError:
        return True  # the planner names what is wrong with them (rule 23)
    source = "llm_serving_gpus" if listed else "nvidia-smi"
    found = False
    for index, model in enumerate(vllm_models):
        where = f"llm_serving_models[{index}] ({model.get('name')})"
        size = _whole(model.get("tensor_parallel_size", 1))
        if size > len(indexes):
            found = True
            problem(f"{where}: tensor_parallel_size {size} is more than this host's {len(indexes)} GPU(s) ({source}); vLLM "
                    f"needs one GPU per rank. Fix: lower tensor_parallel_size to at most {len(indexes)}, or serve the model on "
                    "a host with more GPUs.")
            continue
        pins = model.get("gpus") if model.get("gpus") is not None else ([model["gpu"]] if model.get("gpu") is not None else [])
        missing = [pin for pin in pins if pin not in indexes]
        if missing:
            found = True
            variable = "gpus" if model.get("gpus") is not None else "gpu"
            problem(f"{where}: {variable} {model.get(variable)!r}: it is pinned to GPU {', '.join(map(str, missing))}, which is not "
                    f"among the GPUs of this host ({', '.join(map(str, indexes))}; {source}). Fix: pin it to GPUs the host has, "
                    "or leave the pin out to let the planner choose.")
    return not found


def _plan_problems(gpus, vllm_models, context, nccl, problem):
    """Rule 23: the plan of hpclab.cluster.llm_gpu_plan fits, and so do explicit utilizations."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import GpuPlanError, plan

    try:
        planned = plan(gpus, vllm_models, cuda_context_gib=context, nccl_gib=nccl)
    except GpuPlanError as exc:
        problem(f"the vLLM models of llm_serving_models do not fit the GPUs ({gpus}): {exc} Fix: follow the planner's "
                "advice above, or set llm_serving_gpus to the real GPUs.")
        return
    fixed = {m["name"]: m["gpu_memory_utilization"] for m in vllm_models if "gpu_memory_utilization" in m}
    if not fixed:
        return
    for gpu in planned["gpus"]:
        chosen = [m for m in planned["models"] if m["name"] in gpu["models"]]
        total = sum(float(fixed.get(m["name"], m["gpu_memory_utilization"])) for m in chosen)
        # What the planner leaves to the budgets on this GPU (_Gpu.capacity_units in _gpu_plan): its total less every
        # rank's CUDA context and NCCL buffers, and its margin (driver reservations, CUDA's total below nvidia-smi's).
        outside = gpu["cuda_context_bytes"] + gpu["nccl_bytes"]
        capacity = (gpu["total_bytes"] - outside - gpu["margin_bytes"]) / gpu["total_bytes"]
        if total - capacity > 1e-9:
            problem(f"the gpu_memory_utilization of {', '.join(sorted(set(fixed) & set(gpu['models'])))} in "
                    f"llm_serving_models brings GPU {gpu['index']} to {total:.3f} of its memory plus "
                    f"{outside / gpu['total_bytes']:.3f} of CUDA contexts{' and NCCL buffers' if gpu['nccl_bytes'] else ''}: "
                    f"above the {capacity:.3f} the planner leaves to the servers there once those and its "
                    f"{gpu['margin_bytes'] / gpu['total_bytes']:.0%} margin (driver reservations, CUDA's total below "
                    "nvidia-smi's) are set aside, so the last server to start would not find its share free. Fix: lower "
                    "those values, or leave them out to use the plan.")


class FilterModule:
    """The llm_serving role's checks of its input."""

    def filters(self):
        return {"llm_serving_problems": llm_serving_problems}
