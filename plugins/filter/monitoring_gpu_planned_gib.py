# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: monitoring_gpu_planned_gib
short_description: The GPU memory the GPU plan gives the model servers, by GPU index, for the GpuMemoryOverPlan alert
version_added: 0.3.0
description:
  - The llm_serving role publishes its GPU plan (C(llm_serving_result.gpus), as C(hpclab.cluster.llm_gpu_plan) returns
    it). Each vLLM instance may take its C(gpu_memory_utilization) share of the whole GPU, so the model servers
    of one GPU may hold C(utilization_sum) times its total memory. This filter turns the plan into the
    C(monitoring_gpu_planned_gib) of the monitoring role, so that the alert compares nvidia-smi's use with the
    plan and no number is typed twice.
  - A GPU the plan leaves to Slurm's jobs (no model) is left out, since jobs may fill it and no alert is wanted there.
options:
  _input:
    description: C(llm_serving_result) (a dict with C(gpus)), or its C(gpus) list; missing or empty gives C({}).
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: The monitoring role's GPU plan from the serving role's
  ansible.builtin.include_role:
    name: hpclab.cluster.monitoring
    tasks_from: exporter
  vars:
    monitoring_gpu_planned_gib: "{{ llm_serving_result | default({}) | hpclab.cluster.monitoring_gpu_planned_gib }}"

# {"gpus": [{"index": 0, "models": ["llama"], "utilization_sum": "0.948", "total_bytes": 17179869184},
#           {"index": 1, "models": [], "utilization_sum": "0.000", "total_bytes": 17179869184}]}
# | hpclab.cluster.monitoring_gpu_planned_gib  =>  {"0": 15.17}
"""

RETURN = r"""
_value:
  description: GiB (two decimals) by GPU index as a string, for the GPUs the plan gives to model servers.
  type: dict
"""

from ansible.errors import AnsibleFilterError

GIB = 1024**3


def monitoring_gpu_planned_gib(result):
    gpus = result.get("gpus", []) if isinstance(result, dict) else result
    planned = {}
    for gpu in gpus or []:
        if not isinstance(gpu, dict) or "index" not in gpu:
            raise AnsibleFilterError(f"monitoring_gpu_planned_gib: a GPU of the plan without an index: {gpu!r}")
        if not gpu.get("models"):
            continue
        try:
            gib = float(gpu["utilization_sum"]) * int(gpu["total_bytes"]) / GIB
        except (KeyError, TypeError, ValueError) as exc:
            raise AnsibleFilterError(f"monitoring_gpu_planned_gib: GPU {gpu['index']} of the plan has no utilization_sum and total_bytes: {exc}") from exc
        planned[str(gpu["index"])] = round(gib, 2)
    return planned


class FilterModule:
    """The GPU plan of llm_serving as the monitoring role's planned GiB."""

    def filters(self):
        return {"monitoring_gpu_planned_gib": monitoring_gpu_planned_gib}
