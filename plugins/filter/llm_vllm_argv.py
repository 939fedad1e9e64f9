# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: llm_vllm_argv
short_description: The vLLM OpenAI-server command line for one model planned by llm_gpu_plan
version_added: 0.1.0
description:
  - Turns one entry of the C(models) list returned by M(hpclab.cluster.llm_gpu_plan) into an argv list.
  - The argv passes C(--model), C(--served-model-name), C(--host), C(--port), C(--gpu-memory-utilization), C(--max-model-len),
    C(--dtype) and C(--kv-cache-dtype). It adds C(--tensor-parallel-size) when the entry's C(tensor_parallel_size) is above 1,
    C(--quantization) when it sets C(quantization), C(--enforce-eager) and C(--trust-remote-code) when it sets them,
    and C(--api-key) when O(api_key_env) is given.
  - "C(--quantization awq) (or C(gptq)) makes vLLM use that kernel even where it would pick the faster Marlin one for the
    checkpoint by itself; plan with C(awq_marlin) or C(gptq_marlin) to get it. On an already quantized checkpoint the value must
    match the C(quant_method) of its config.json, or vLLM refuses to start."
  - The ranks of a tensor-parallel instance run on the GPUs in its C(CUDA_VISIBLE_DEVICES) (the entry's C(gpus)); the role's unit
    sets it.
  - C(--gpu-memory-utilization) is always explicit because vLLM's default changed from 0.9 to 0.92.
  - "The API key is never a value here. O(api_key_env) names an environment variable and the argv carries C(${NAME}).
    systemd expands it in C(ExecStart=) from C(Environment=) or C(EnvironmentFile=), so the secret stays out of the unit
    file. It still shows in the process's command line, which every local user can read (C(ps), C(/proc/PID/cmdline)).
    vLLM's OpenAI server also reads C(VLLM_API_KEY) from its environment without the flag: prefer that and leave
    O(api_key_env) out, as the C(llm_serving) role does."
  - The default O(executable) is the OpenAI API server module, which takes C(--model) on every vLLM version, including the
    old ones DeciLM-7B needs. Pass a virtual environment's python to use that environment.
  - Pure computation; returns a list, never a shell string.
positional: _input
options:
  _input:
    description: One planned model, an item of the C(models) list that M(hpclab.cluster.llm_gpu_plan) returns.
    type: dict
    required: true
  executable:
    description: The program and its leading arguments.
    type: list
    elements: str
    default: [python3, -m, vllm.entrypoints.openai.api_server]
  host:
    description: Address to listen on. vLLM listens on every interface without it; set to V(null) to leave it to vLLM.
    type: str
    default: 127.0.0.1
  api_key_env:
    description: NAME of the environment variable holding the API key (for example V(VLLM_API_KEY)); no C(--api-key) when unset.
    type: str
"""

EXAMPLES = r"""
- name: Command line of the first planned model
  ansible.builtin.set_fact:
    llm_argv: "{{ llm_plan.models[0] | hpclab.cluster.llm_vllm_argv(api_key_env='VLLM_API_KEY') }}"
# {name: llama-3-8b, model: meta-llama/Meta-Llama-3-8B-Instruct, port: 8000, gpu_memory_utilization: "0.227",
#  max_model_len: 8192, dtype: bfloat16, kv_cache_dtype: auto, enforce_eager: false, ...}
#   | hpclab.cluster.llm_vllm_argv(api_key_env='VLLM_API_KEY')
# => [python3, -m, vllm.entrypoints.openai.api_server, --model, meta-llama/Meta-Llama-3-8B-Instruct,
#     --served-model-name, llama-3-8b, --host, 127.0.0.1, --port, "8000", --gpu-memory-utilization, "0.227",
#     --max-model-len, "8192", --dtype, bfloat16, --kv-cache-dtype, auto, --api-key, "${VLLM_API_KEY}"]
# A model planned with tensor_parallel_size 2 and quantization fp8 gets, after --kv-cache-dtype:
#     --tensor-parallel-size, "2", --quantization, fp8

- name: Into a systemd unit (one word per argument)
  ansible.builtin.copy:
    dest: /etc/systemd/system/vllm-llama.service
    mode: "0644"
    content: |
      [Service]
      EnvironmentFile=/etc/vllm/api-key.env
      ExecStart={{ llm_plan.models[0] | hpclab.cluster.llm_vllm_argv(executable=['/opt/vllm/bin/python', '-m',
        'vllm.entrypoints.openai.api_server'], api_key_env='VLLM_API_KEY') | join(' ') }}
"""

RETURN = r"""
_value:
  description: The argv, every element a string.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError


def llm_vllm_argv(planned_model, executable=None, host="127.0.0.1", api_key_env=None):
    """Filter entry point: see DOCUMENTATION. executable defaults to the planner's (python3 -m vllm.entrypoints.openai.api_server)."""
    # Imported here, not at the top: Ansible imports every file of plugins/filter in each worker process that looks up
    # any filter of this collection, and _gpu_plan is the largest module they would import (about 15 ms a worker).
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import DEFAULT_EXECUTABLE, GpuPlanError, vllm_argv

    try:
        return vllm_argv(planned_model, executable=DEFAULT_EXECUTABLE if executable is None else executable, host=host,
                         api_key_env=api_key_env)
    except GpuPlanError as exc:
        raise AnsibleFilterError(f"llm_vllm_argv: {exc}") from None


class FilterModule:
    """vLLM command lines."""

    def filters(self):
        return {"llm_vllm_argv": llm_vllm_argv}
