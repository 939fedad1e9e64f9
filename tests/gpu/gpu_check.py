#!/usr/bin/env python
# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks only a real NVIDIA GPU can answer, in one script (issue 19). Run it as root on a Debian 12 host with
the NVIDIA driver, from a checkout with `make venv` done:

    tests/gpu/gpu_check.py --model /srv/models/Qwen2.5-0.5B-Instruct [--wheelhouse /srv/wheels] [--max-model-len 4096]

--model is a model directory on the host (config.json and weights; the machine may be offline). The script:
  1. reads the GPUs with nvidia-smi (no nvidia-smi: prints SKIP and exits 77, so the project's tests pass without one);
  2. deploys the model with the llm_serving role (playbooks/llm.yml) on this host, its GPUs given to the planner as
     nvidia-smi reports them: vLLM must load the model and list it on /v1/models (the role waits for that);
  3. compares each vLLM process's GPU memory (nvidia-smi --query-compute-apps) with the plan: at least the weights,
     at most what the plan budgets (--gpu-memory-utilization of the GPU) plus the CUDA context it counts outside;
  4. asks the model a chat completion;
  5. shows what Slurm would be offered on this host (hpclab.cluster.slurm_gpus_for_jobs): never the model's GPU.
Every step prints what it measured; the exit code is 0 only if all passed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))

MIB = 1024 * 1024
SKIP = 77


def parse_gpus(lines):
    """nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits -> [{index, name, memory_total}]."""
    gpus = []
    for line in lines:
        match = re.fullmatch(r"\s*([0-9]+)\s*,\s*(.*?)\s*,\s*([0-9]+)\s*", line)
        if match:
            gpus.append({"index": int(match.group(1)), "name": match.group(2), "memory_total": f"{match.group(3)} MiB"})
    return gpus


def parse_compute_apps(lines):
    """nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits -> [{pid, gpu_uuid, used_mib}]."""
    apps = []
    for line in lines:
        match = re.fullmatch(r"\s*([0-9]+)\s*,\s*(\S+)\s*,\s*([0-9]+)\s*", line)
        if match:
            apps.append({"pid": int(match.group(1)), "gpu_uuid": match.group(2), "used_mib": int(match.group(3))})
    return apps


def memory_verdict(used_mib, planned, cuda_context_gib, tolerance=0.03):
    """(ok, sentence): a model's measured GPU memory on one GPU against its plan entry (one rank)."""
    floor = planned["weights_bytes"] / MIB
    ceiling = (planned["budget_bytes"] + cuda_context_gib * 1024 * MIB) / MIB * (1 + tolerance)
    ok = floor <= used_mib <= ceiling
    return ok, (f"{planned['name']}: {used_mib} MiB used on its GPU; planned weights {floor:.0f} MiB, budget "
                f"{planned['budget_bytes'] / MIB:.0f} MiB + CUDA context {cuda_context_gib * 1024:.0f} MiB "
                f"(+{tolerance:.0%}) = at most {ceiling:.0f} MiB: {'OK' if ok else 'OUTSIDE THE PLAN'}")


def unit_of(pid):
    """The systemd unit a process runs in, from its cgroup (vLLM's engine core is a child of the server)."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as handle:
            found = re.search(r"/([^/]+\.service)", handle.read())
    except OSError:
        return None
    return found.group(1) if found else None


def run(argv, **kwargs):
    print("$", " ".join(argv), flush=True)
    return subprocess.run(argv, check=False, text=True, capture_output=True, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a model directory on this host (config.json and weights)")
    parser.add_argument("--name", default="gpu-check", help="served model name")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--wheelhouse", help="pip --find-links directory with vLLM's wheels, for an offline host")
    args = parser.parse_args()

    smi = run(["nvidia-smi", "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"]) \
        if any(os.access(os.path.join(d, "nvidia-smi"), os.X_OK) for d in os.environ.get("PATH", "").split(os.pathsep)) else None
    if smi is None or smi.returncode != 0:
        print("SKIP: no working nvidia-smi on this machine; these checks need an NVIDIA GPU and its driver.")
        return SKIP
    gpus = parse_gpus(smi.stdout.splitlines())
    print("GPUs:", json.dumps(gpus))

    with open(os.path.join(args.model, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    model = {"name": args.name, "port": args.port, "model": args.model, "dtype": args.dtype, "gpu": 0,
             "max_model_len": args.max_model_len, "config": config}
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                                 "ansible_python_interpreter": sys.executable}},
                         "children": {"llm": {"hosts": {"localhost": {}}}},
                         "vars": {"llm_serving_engine": "vllm", "llm_serving_models": [model], "llm_serving_gpus": gpus,
                                  "llm_serving_hf_offline": True, "llm_serving_fastchat_enabled": False}}}
    if args.wheelhouse:
        inventory["all"]["vars"].update(llm_serving_pip_find_links=[args.wheelhouse], llm_serving_pip_no_index=True)
    failures = []

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(inventory, handle)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    started = time.monotonic()
    deploy = run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "-i", handle.name,
                  os.path.join(ROOT, "playbooks", "llm.yml")], env=env)
    print(deploy.stdout[-4000:], deploy.stderr[-2000:])
    print(f"1. llm_serving deployed {args.name} in {time.monotonic() - started:.0f} s: rc {deploy.returncode}")
    if deploy.returncode != 0:
        return 1

    from ansible_collections.hpclab.cluster.plugins.filter.slurm_gpus_for_jobs import slurm_gpus_for_jobs
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import plan

    planned = plan(gpus, [model])
    entry = planned["models"][0]
    apps = parse_compute_apps(run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory",
                                   "--format=csv,noheader,nounits"]).stdout.splitlines())
    used = sum(app["used_mib"] for app in apps if unit_of(app["pid"]) == f"llm-{args.name}.service")
    ok, sentence = memory_verdict(used, entry, cuda_context_gib=0.5)
    print("2.", sentence)
    if not ok:
        failures.append(sentence)

    request = urllib.request.Request(
        f"http://127.0.0.1:{args.port}/v1/chat/completions",
        data=json.dumps({"model": args.name, "max_tokens": 16,
                         "messages": [{"role": "user", "content": "Say hello."}]}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        answer = json.load(response)["choices"][0]["message"]["content"]
    print(f"3. chat completion from {args.name}: {answer!r}")
    if not answer.strip():
        failures.append("empty chat completion")

    slurm = slurm_gpus_for_jobs({}, serving={"gpus": planned["gpus"]}, detected=[
        f"{g['index']}, {g['name']}" for g in gpus], host="localhost")
    print(f"4. Slurm would be offered {slurm['gpus'] or 'no GPU'}; kept for serving: {slurm['withheld']}")
    if any(f"/dev/nvidia{entry['gpu']}" == f for f in slurm["gpus"].get("files", [])):
        failures.append(f"Slurm would be offered GPU {entry['gpu']}, which {args.name} takes")

    print("FAILED:" if failures else "all GPU checks passed", *failures, sep="\n  ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
