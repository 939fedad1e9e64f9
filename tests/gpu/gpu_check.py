#!/usr/bin/env python
# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks only a real NVIDIA GPU can answer, in one script (issue 19). Run it as root on a Debian 12 host with
the NVIDIA driver, from a checkout with `make venv` done:

    tests/gpu/gpu_check.py --model /srv/models/Qwen2.5-0.5B-Instruct [--wheelhouse /srv/wheels] [--max-model-len 4096]

--model is a model directory on the host (config.json and weights; the machine may be offline). The script:
  1. reads the GPUs with nvidia-smi (no nvidia-smi: prints SKIP and exits 77, so the project's tests pass without one);
     then, where a Python with PyTorch is found (--torch-python, else this one or python3), measures the memory one
     process pays on GPU 0 outside its allocations (CUDA context, kernels, cuBLAS), as nvidia-smi counts it, against
     the planner's cuda_context_gib (llm_serving_cuda_context_gib); a measurement above it fails;
  2. deploys the model with the llm_serving role (playbooks/llm.yml) on this host, its GPUs given to the planner as
     nvidia-smi reports them: vLLM must load the model and list it on /v1/models (the role waits for that);
  3. compares each vLLM process's GPU memory (nvidia-smi --query-compute-apps) with the plan: at least the weights,
     at most what the plan budgets (--gpu-memory-utilization of the GPU) plus the CUDA context it counts outside;
  4. asks the model a chat completion;
  5. shows what Slurm would be offered on this host (hpclab.cluster.slurm_gpus_for_jobs): never the model's GPU.
Without --model, only steps 1 and 5 (for a model of the planner's table on GPU 0) run, and the script says so:
the checks a machine without vLLM or a model can still answer. Every step prints what it measured; the exit code is 0
only if all that ran passed.
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
COMPUTE_APPS = ["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory", "--format=csv,noheader,nounits"]


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


# Run in a child: initialise CUDA, hold `sys.argv[1]` MiB, load cuBLAS and an attention kernel as a model server
# would, print what PyTorch's allocator reserved, and wait on stdin while the parent asks nvidia-smi.
CONTEXT_PROBE = """
import sys, torch
torch.cuda.init()
held = torch.empty(int(sys.argv[1]) << 20, dtype=torch.uint8, device="cuda:0")
a = torch.randn(4096, 4096, dtype=torch.bfloat16, device="cuda:0")
float((a @ a).sum())
q = torch.randn(1, 8, 256, 128, dtype=torch.bfloat16, device="cuda:0")
float(torch.nn.functional.scaled_dot_product_attention(q, q, q).sum())
torch.cuda.synchronize()
print(torch.__version__, torch.version.cuda, torch.cuda.memory_reserved(0), flush=True)
sys.stdin.read()
"""


def context_verdict(used_mib, reserved_bytes, planned_gib):
    """(ok, sentence): one process's memory on its GPU outside PyTorch's allocator against the planner's figure."""
    outside = used_mib - reserved_bytes / MIB
    ok = 0 <= outside <= planned_gib * 1024
    return ok, (f"{outside:.0f} MiB outside the allocator ({used_mib} MiB used, {reserved_bytes / MIB:.0f} MiB reserved); "
                f"the planner counts {planned_gib * 1024:.0f} MiB (cuda_context_gib {planned_gib}): "
                f"{'OK' if ok else 'MORE THAN PLANNED: raise llm_serving_cuda_context_gib'}")


def torch_python(given):
    """The first of --torch-python, this Python and python3 that imports torch; None if none does."""
    for candidate in ([given] if given else [sys.executable, "python3"]):
        try:
            if subprocess.run([candidate, "-c", "import torch"], check=False, capture_output=True).returncode == 0:
                return candidate
        except OSError:
            continue
    return None


def measure_context(python, planned_gib, hold_mib=1024):
    """Step 1: start the probe, read its memory as nvidia-smi reports it, stop it. Returns (ok, sentence)."""
    probe = subprocess.Popen([python, "-c", CONTEXT_PROBE, str(hold_mib)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        fields = probe.stdout.readline().split()
        if len(fields) != 3:
            return False, f"the PyTorch probe printed {fields!r} (rc {probe.poll()})"
        lines = run(COMPUTE_APPS).stdout.splitlines()
        print(*lines, sep="\n")
        used = [app["used_mib"] for app in parse_compute_apps(lines) if app["pid"] == probe.pid]
        if not used:
            return False, f"nvidia-smi lists no process {probe.pid}"
        ok, sentence = context_verdict(used[0], int(fields[2]), planned_gib)
        return ok, f"torch {fields[0]} (CUDA {fields[1]}), holding {hold_mib} MiB: {sentence}"
    finally:
        probe.communicate("")


def run(argv, **kwargs):
    print("$", " ".join(argv), flush=True)
    return subprocess.run(argv, check=False, text=True, capture_output=True, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="a model directory on this host (config.json and weights); without it, only "
                        "the checks that need neither vLLM nor a model run")
    parser.add_argument("--torch-python", help="a Python with PyTorch for the CUDA context measurement")
    parser.add_argument("--cuda-context-gib", type=float, help="the llm_serving_cuda_context_gib to check and plan with "
                        "(default: the planner's)")
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
    print(smi.stdout, end="")
    gpus = parse_gpus(smi.stdout.splitlines())
    print("GPUs:", json.dumps(gpus))
    failures = []

    from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import DEFAULT_CUDA_CONTEXT_GIB, plan

    context_gib = DEFAULT_CUDA_CONTEXT_GIB if args.cuda_context_gib is None else args.cuda_context_gib
    python = torch_python(args.torch_python)
    if python is None:
        print("1. CUDA context not measured: no Python here imports torch (give one with --torch-python)")
    else:
        ok, sentence = measure_context(python, context_gib)
        print("1.", sentence)
        if not ok:
            failures.append(sentence)

    if args.model is None:
        print("No --model: vLLM was not deployed; steps 2 (deploy), 3 (memory per process) and 4 (chat) did not run.")
        model = {"name": "stablelm", "model": "stabilityai/stablelm-2-1_6b-chat", "dtype": "float16", "gpu": 0,
                 "max_model_len": 4096}
        return offer_to_slurm(plan(gpus, [model], cuda_context_gib=context_gib), gpus, model["name"], failures)

    with open(os.path.join(args.model, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    model = {"name": args.name, "port": args.port, "model": args.model, "dtype": args.dtype, "gpu": 0,
             "max_model_len": args.max_model_len, "config": config}
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                                 "ansible_python_interpreter": sys.executable}},
                         "children": {"llm": {"hosts": {"localhost": {}}}},
                         "vars": {"llm_serving_engine": "vllm", "llm_serving_models": [model], "llm_serving_gpus": gpus,
                                  "llm_serving_hf_offline": True, "llm_serving_fastchat_enabled": False,
                                  "llm_serving_cuda_context_gib": context_gib}}}
    if args.wheelhouse:
        inventory["all"]["vars"].update(llm_serving_pip_find_links=[args.wheelhouse], llm_serving_pip_no_index=True)

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(inventory, handle)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    started = time.monotonic()
    deploy = run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "-i", handle.name,
                  os.path.join(ROOT, "playbooks", "llm.yml")], env=env)
    print(deploy.stdout[-4000:], deploy.stderr[-2000:])
    print(f"2. llm_serving deployed {args.name} in {time.monotonic() - started:.0f} s: rc {deploy.returncode}")
    if deploy.returncode != 0:
        return 1

    planned = plan(gpus, [model], cuda_context_gib=context_gib)
    entry = planned["models"][0]
    apps = parse_compute_apps(run(COMPUTE_APPS).stdout.splitlines())
    used = sum(app["used_mib"] for app in apps if unit_of(app["pid"]) == f"llm-{args.name}.service")
    ok, sentence = memory_verdict(used, entry, cuda_context_gib=context_gib)
    print("3.", sentence)
    if not ok:
        failures.append(sentence)

    request = urllib.request.Request(
        f"http://127.0.0.1:{args.port}/v1/chat/completions",
        data=json.dumps({"model": args.name, "max_tokens": 16,
                         "messages": [{"role": "user", "content": "Say hello."}]}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        answer = json.load(response)["choices"][0]["message"]["content"]
    print(f"4. chat completion from {args.name}: {answer!r}")
    if not answer.strip():
        failures.append("empty chat completion")

    return offer_to_slurm(planned, gpus, args.name, failures)


def offer_to_slurm(planned, gpus, name, failures):
    """Step 5: what Slurm would be offered on this host beside the plan; then the verdict of every step."""
    from ansible_collections.hpclab.cluster.plugins.filter.slurm_gpus_for_jobs import slurm_gpus_for_jobs

    slurm = slurm_gpus_for_jobs({}, serving={"gpus": planned["gpus"]}, detected=[
        f"{g['index']}, {g['name']}" for g in gpus], host="localhost")
    print(f"5. Slurm would be offered {slurm['gpus'] or 'no GPU'}; kept for serving: {slurm['withheld']}")
    taken = planned["models"][0]["gpus"]
    if any(f"/dev/nvidia{index}" == f for index in taken for f in slurm["gpus"].get("files", [])):
        failures.append(f"Slurm would be offered GPU {taken}, which {name} takes")

    print("FAILED:" if failures else "all GPU checks that ran passed", *failures, sep="\n  ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
