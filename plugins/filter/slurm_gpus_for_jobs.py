# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_gpus_for_jobs
short_description: The GPUs a Slurm worker offers to jobs, once LLM serving has taken its GPUs
version_added: 0.1.0
description:
  - One GPU plan for serving and Slurm. A host that is both an LLM server (role C(llm_serving)) and a Slurm worker
    must not offer jobs the GPUs its vLLM models fill, or a job's C(--gres=gpu:1) lands on a card that is already 95%
    allocated. This filter gives the worker's C(slurm_worker_gpus) (C({count, type, files})) from the same plan.
  - B(Not declared) (O(_input) empty) - the host's GPUs are those nvidia-smi lists (O(detected)), else those the
    serving plan was made on (O(serving)'s C(gpus)). Slurm gets each one that no vLLM model takes, as
    C(/dev/nvidiaINDEX) (O(device_pattern)), typed by nvidia-smi's name (e.g. V(a100) from
    C(NVIDIA A100-SXM4-80GB)) where nvidia-smi answered.
  - B(Declared) (O(_input) given in the inventory) - taken as is. The GPU index of a file is N for C(/dev/nvidiaN), else
    its position in C(files). A GPU that serving also takes is a problem (host, variable, fix), unless O(share).
  - O(share) (C(hpclab_slurm_share_serving_gpus)) offers every GPU to Slurm as well, serving's included, as the admin's
    explicit choice that jobs and models may run out of memory on a shared card.
  - Pure. Fails only on O(serving) or O(detected) that are not what the playbook passes.
options:
  _input:
    description: The worker's C(slurm_worker_gpus) from the inventory (C({}) when not declared).
    type: raw
    required: true
  serving:
    description:
      - The C(llm_serving) role's result C(llm_serving_result) on this host (C({}) or omitted where the host serves
        no models). Only its C(gpus) is read, a list of C({index, models}) where C(models) names the vLLM models on
        that GPU (empty for a GPU serving leaves free).
    type: dict
    default: {}
  detected:
    description:
      - The GPUs nvidia-smi lists on the host (empty where it has none or was not asked), each C({index, name}) or a
        line of C(nvidia-smi --query-gpu=index,name --format=csv,noheader) (C(0, NVIDIA A100-SXM4-80GB)); other lines
        are ignored.
    type: list
    elements: raw
    default: []
  share:
    description: Offer the GPUs that serving takes to Slurm too.
    type: bool
    default: false
  host:
    description: The host's name, for the messages.
    type: str
    default: ""
  device_pattern:
    description: The device file of GPU index N, with C({index}) for N.
    type: str
    default: /dev/nvidia{index}
"""

EXAMPLES = r"""
- name: Slurm's GPUs on this worker, from the serving plan
  ansible.builtin.set_fact:
    __slurm_gpus: >-
      {{ slurm_worker_gpus | default({}, true)
         | hpclab.cluster.slurm_gpus_for_jobs(serving=llm_serving_result | default({}), detected=__detected,
                                              share=hpclab_slurm_share_serving_gpus | default(false), host=inventory_hostname) }}

# {} | slurm_gpus_for_jobs(serving={"gpus": [{"index": 0, "models": ["llama"]}, {"index": 1, "models": []}]},
#                          detected=[{"index": 0, "name": "NVIDIA A100-SXM4-80GB"}, {"index": 1, "name": "NVIDIA A100-SXM4-80GB"}])
# => {"gpus": {"count": 1, "type": "a100", "files": ["/dev/nvidia1"]},
#     "withheld": [{"index": 0, "models": ["llama"]}], "problems": []}
# {"count": 1, "files": ["/dev/nvidia0"]} | slurm_gpus_for_jobs(serving={"gpus": [{"index": 0, "models": ["llama"]}]}, host="gpu1")
# => {"gpus": {"count": 1, "files": ["/dev/nvidia0"]}, "withheld": [{"index": 0, "models": ["llama"]}],
#     "problems": ["gpu1: slurm_worker_gpus lists GPU 0 (/dev/nvidia0), which LLM serving also takes (llama). ..."]}
"""

RETURN = r"""
_value:
  description: What the playbook sets.
  type: dict
  contains:
    gpus:
      description: The worker's C(slurm_worker_gpus) for Slurm, C({count, type, files}), or C({}) when it offers no GPU.
      type: dict
    withheld:
      description: The GPUs kept from Slurm because serving takes them, C({index, models}) each (empty with O(share)).
      type: list
      elements: dict
    problems:
      description: Why the inventory cannot be deployed as it is, one sentence each with host, variable and fix.
      type: list
      elements: str
"""

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

NVIDIA_DEVICE = re.compile(r"/dev/nvidia([0-9]+)")


def _fail(message):
    raise AnsibleFilterError(f"slurm_gpus_for_jobs: {message}")


def _gpu_type(name):
    """nvidia-smi's name as a one-word gres type: the first word with a digit, e.g. 'NVIDIA A100-SXM4-80GB' -> 'a100'."""
    words = [w for w in re.findall(r"[a-z0-9]+", str(name or "").lower()) if re.search(r"[0-9]", w)]
    return words[0] if words else ""


def _index(value, what):
    if isinstance(value, bool) or not str(value).isdigit():
        _fail(f"{what}: GPU index {value!r} is not a whole number")
    return int(value)


def _serving_gpus(serving):
    """{index: [vLLM model names]} of the serving plan, every GPU it was made on (empty lists for free ones)."""
    if not serving:
        return {}
    if not isinstance(serving, Mapping) or not isinstance(serving.get("gpus", []), list):
        _fail(f"serving must be llm_serving_result, a dict with a list 'gpus', got {serving!r}")
    taken = {}
    for gpu in serving.get("gpus", []):
        if not isinstance(gpu, Mapping) or "index" not in gpu:
            _fail(f"serving: GPU entry {gpu!r} has no index")
        taken[_index(gpu["index"], "serving")] = [str(m) for m in gpu.get("models") or []]
    return taken


NVIDIA_SMI_LINE = re.compile(r"\s*([0-9]+)\s*,\s*(.*?)\s*")


def _detected(detected):
    found = {}
    for gpu in detected or []:
        if isinstance(gpu, str):
            match = NVIDIA_SMI_LINE.fullmatch(gpu)
            if not match:
                continue  # not a GPU line (nvidia-smi prints its errors on stdout)
            gpu = {"index": match.group(1), "name": match.group(2)}
        if not isinstance(gpu, Mapping) or "index" not in gpu:
            _fail(f"detected: GPU entry {gpu!r} has no index")
        found[_index(gpu["index"], "detected")] = str(gpu.get("name", ""))
    return found


def _declared_indexes(gpus):
    """(index, file) of a declared slurm_worker_gpus: N of /dev/nvidiaN, else the file's position."""
    count = int(gpus["count"]) if str(gpus.get("count", "")).isdigit() else 0
    files = gpus.get("files")
    if not isinstance(files, list):
        files = [f"/dev/nvidia{i}" for i in range(count)]
    pairs = []
    for position, path in enumerate(files):
        match = NVIDIA_DEVICE.fullmatch(str(path))
        pairs.append((int(match.group(1)) if match else position, str(path)))
    return pairs


def slurm_gpus_for_jobs(gpus, serving=None, detected=None, share=False, host="", device_pattern="/dev/nvidia{index}"):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import gpus_shape_ok
    taken = _serving_gpus(serving)
    found = _detected(detected)
    busy = {i: models for i, models in taken.items() if models}
    withheld = [] if share else [{"index": i, "models": busy[i]} for i in sorted(busy)]
    where = f"{host}: " if host else ""
    if gpus:
        if not gpus_shape_ok(gpus):
            # Its shape is the slurm_worker and slurm_master checks' business (their messages say the fix).
            return {"gpus": gpus, "withheld": withheld, "problems": []}
        problems = []
        for index, path in _declared_indexes(gpus):
            if index in busy and not share:
                problems.append(
                    f"{where}slurm_worker_gpus lists GPU {index} ({path}), which LLM serving also takes "
                    f"({', '.join(busy[index])}): jobs and models would run out of memory on it. Fix: leave "
                    "slurm_worker_gpus unset (Slurm then gets the GPUs serving leaves free), remove the GPU from it, pin "
                    "the models to other GPUs (llm_serving_models' gpu or gpus), or set hpclab_slurm_share_serving_gpus: "
                    "true to share it on purpose.")
        return {"gpus": dict(gpus), "withheld": withheld, "problems": problems}
    indexes = sorted(found) if found else sorted(taken)
    free = [i for i in indexes if share or i not in busy]
    if not free:
        return {"gpus": {}, "withheld": withheld, "problems": []}
    result = {"count": len(free), "files": [device_pattern.format(index=i) for i in free]}
    gpu_type = _gpu_type(found.get(free[0], ""))
    if gpu_type:
        result["type"] = gpu_type
    return {"gpus": result, "withheld": withheld, "problems": []}


class FilterModule:
    """hpclab.cluster.slurm_gpus_for_jobs"""

    def filters(self):
        return {"slurm_gpus_for_jobs": slurm_gpus_for_jobs}
