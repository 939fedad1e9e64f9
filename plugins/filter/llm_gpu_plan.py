# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: llm_gpu_plan
short_description: Plan GPU memory for several vLLM instances and size their --gpu-memory-utilization
version_added: 0.1.0
description:
  - Places LLMs on GPUs and computes, for each vLLM instance, the C(--gpu-memory-utilization) that holds
    its weights, its activation and CUDA-graph overhead and a KV cache for at least O(models[].min_sequences)
    full-length sequences, then shares the memory left over between the models on each GPU.
  - Follows current vLLM (V1 engine, about 0.9 onward). C(--gpu-memory-utilization) is a per-instance budget,
    a fraction of the GPU's B(total) memory. Each process's CUDA context lies outside that budget. At startup
    each instance checks that free memory is at least C(total * util), rounded up to a byte.
  - Instances must start one after another, in the order of O(models) (the same order as the ports). Each later
    instance sees the budgets and contexts of the earlier ones as used memory. The plan keeps
    the sum of the budgets + n * O(cuda_context_gib) + the margin within the total, so the last one to start still passes the check.
  - "Per model, the minimum utilisation is rounded UP to a step of 10**-O(utilization_decimals) of the total. The spare
    steps are then shared in proportion to each model's per-sequence KV need (KV bytes per token times
    O(models[].max_model_len)): every model on a GPU gains about the same number of extra full-length sequences.
    The sum of the values never exceeds what was accounted for (extra steps are whole steps, rounded DOWN)."
  - Models are placed with pins first. The others follow largest first, each on the GPU with the most room left.
    This is greedy; pin models where a tighter packing is needed.
  - "Tensor parallelism: a model with O(models[].tensor_parallel_size) N (vLLM C(--tensor-parallel-size)) runs one rank on
    each of N GPUs, pinned with O(models[].gpus) or else the N GPUs with the most room. Each rank holds 1/N of the weights
    and 1/N of the KV heads (N must divide C(num_key_value_heads); with fewer KV heads than GPUs, vLLM gives each GPU one
    copy and N must be a multiple of them). The activation overhead and CUDA graphs count in full on every rank. Every
    rank gets the same C(--gpu-memory-utilization), the largest that any of its GPUs needs. Each rank also holds a CUDA
    context and O(nccl_gib) of NCCL buffers outside its budget: vLLM sets up NCCL before it measures free memory."
  - "Quantized weights: O(models[].quantization) (C(awq), C(awq_marlin), C(gptq), C(gptq_marlin), C(fp8); vLLM
    C(--quantization)) sizes the weights from C(parameters). The embedding and the LM head stay in O(models[].dtype), as
    vLLM quantizes only linear layers: C(vocab_size) x C(hidden_size), twice unless C(tie_word_embeddings). Every other
    weight takes C(bits)/8 bytes. AWQ and GPTQ add, per group of C(group_size) (default 128) input channels and per
    output channel, an fp16 scale and a packed zero point. GPTQ also adds its C(g_idx) (4 / hidden_size bytes per weight).
    fp8 adds one fp32 scale per output channel (4 / hidden_size bytes per weight: the per-channel case, an upper bound
    for vLLM's per-tensor scales). C(bits) is 4 for AWQ (vLLM reads no other), 4 or 8 for GPTQ, and 8 for fp8.
    O(models[].weights_gib) (the checkpoint's size) overrides this estimate."
  - A plan that cannot fit raises an error. It names the model, the GPU or GPUs and the shortfall in GiB, and says what
    would make it fit. That is a shorter max_model_len, an fp8 KV cache, the smallest tensor parallelism over the host's
    GPUs that fits (its size dividing the KV heads), or another GPU.
  - Pure computation; nothing is read from disk. Read C(config.json) yourself (for example with
    M(ansible.builtin.slurp)) and pass it as O(models[].config).
positional: _input, models
options:
  _input:
    description:
      - The GPUs, one dict each, as nvidia-smi facts or inventory give them.
      - C(index) is the CUDA device index (default the list position).
      - "The total memory is one of: C(memory_total) (or C(memory.total)), as C(nvidia-smi --query-gpu=index,memory.total
        --format=csv) prints it (C(81559 MiB)), or a plain number of MiB (C(nounits)); C(memory_total_mib),
        C(memory_total_gib) or C(memory_total_bytes)."
      - nvidia-smi reports about 0.6% more than the CUDA total that vLLM multiplies by. Pass the CUDA total
        (the second value of C(torch.cuda.mem_get_info)) as C(memory_total_bytes) where you have it.
    type: list
    elements: dict
    required: true
  models:
    description:
      - The models to serve, in start order. Ports follow this order, so appending a model never changes another's port.
      - "Keys: C(name) (served model name, required); C(model) (Hugging Face id or local path, required);
        C(dtype) (C(auto), C(bfloat16), C(float16), C(half), C(float32); default C(auto), 2 bytes);
        C(kv_cache_dtype) (C(auto), C(bfloat16), C(fp8), C(fp8_e4m3), C(fp8_e5m2); default C(auto));
        C(max_model_len) (required); C(min_sequences) (full-length sequences the KV cache must hold, default 1);
        C(gpu) (pin to this GPU index); C(enforce_eager) (no CUDA graphs); C(trust_remote_code)."
      - "Tensor parallelism: C(tensor_parallel_size) (default 1); C(gpus) (pin the ranks to these GPU indexes, in rank
        order, one per rank; instead of C(gpu))."
      - "Quantized weights: C(quantization) (C(awq), C(awq_marlin), C(gptq), C(gptq_marlin), C(fp8)); C(bits) (AWQ 4;
        GPTQ 4 or 8, default 4; fp8 8); C(group_size) (AWQ and GPTQ, default 128); C(hidden_size), C(vocab_size) and
        C(tie_word_embeddings) when neither C(config) nor the built-in table has them."
      - "Weights: C(weights_bytes), C(weights_gib), or C(parameters) times the dtype's bytes."
      - "KV geometry: C(num_layers), C(kv_heads) and C(head_dim) directly, or C(config) (the dict read from the model's
        config.json). Otherwise the built-in table is used; it is matched on the last path component of C(model) and covers
        Meta-Llama-3-8B-Instruct, Meta-Llama-3.1-8B-Instruct, gemma-1.1-7b-it, DeciLM-7B-instruct, Phi-3-mini-128k-instruct,
        stablelm-2-1_6b-chat, Mistral-7B-Instruct-v0.2 and Qwen2.5-7B-Instruct. The table also supplies parameters,
        overhead and max_position_embeddings."
      - "For DeciLM's per-layer C(num_key_value_heads_per_layer), vLLM (and so the plan) sizes every layer for the largest
        value. Current vLLM no longer loads DeciLM-7B; it needs an older vLLM (about 0.8.1 or earlier)."
      - "C(overhead_gib) or C(overhead_bytes): activations and non-torch buffers inside the budget, to calibrate from vLLM's
        C(Memory profiling) log line. The default comes from the built-in table, else it follows weight size:
        0.8 GiB up to 6 GiB of weights, 1.5 GiB up to 20 GiB, 2.5 GiB above."
    type: list
    elements: dict
    required: true
  base_port:
    description: Port of the first model; model number N (from 0, in O(models) order) gets O(base_port) + N.
    type: int
    default: 8000
  cuda_context_gib:
    description:
      - CUDA context per process, outside the vLLM budget, with the kernels and libraries the process loads.
      - 0.67 GiB measured on an NVIDIA H200 (driver 580, CUDA 13, PyTorch 2.11) by C(tests/gpu/gpu_check.py), which
        measures it on the target host.
    type: float
    default: 0.7
  cuda_graph_gib:
    description: CUDA-graph memory inside the budget of each instance that does not set C(enforce_eager).
    type: float
    default: 0.5
  margin_fraction:
    description: Fraction of each GPU never allocated (driver and ECC reservations, the nvidia-smi versus CUDA total, stray processes).
    type: float
    default: 0.02
  utilization_decimals:
    description:
      - Decimals of C(--gpu-memory-utilization). vLLM parses the flag as a float, so any precision works.
      - Three decimals make a step 0.1% of the card (0.08 GiB on 80 GB). Two would waste up to 1.4 GiB per instance
        on a 141 GB card when each minimum is rounded up to a step.
    type: int
    default: 3
  block_size:
    description: vLLM KV block size in tokens; the KV cache holds whole blocks.
    type: int
    default: 16
  nccl_gib:
    description:
      - NCCL buffers on each GPU of a tensor-parallel instance, outside its budget, in GiB. It is an estimate.
        NVIDIA/nccl issue 964 measured 544 MB per GPU for a 2-GPU communicator after one all-reduce, and 688 MB for 3 or 4
        GPUs (A100, NVLink). vLLM's custom all-reduce adds a few tens of MiB.
      - Calibrate it on your machine. Take a rank's used memory (C(nvidia-smi --query-compute-apps=pid,used_memory)) and
        subtract its budget and its CUDA context.
    type: float
    default: 0.6
"""

EXAMPLES = r"""
- name: Plan the reference design's five models on one H100 80 GB
  ansible.builtin.set_fact:
    llm_plan: "{{ gpus | hpclab.cluster.llm_gpu_plan(models) }}"
  vars:
    gpus:
      - {index: 0, memory_total: "81559 MiB"}
    models:
      - {name: llama-3-8b, model: meta-llama/Meta-Llama-3-8B-Instruct, dtype: bfloat16, max_model_len: 8192}
      - {name: gemma-7b, model: google/gemma-1.1-7b-it, dtype: bfloat16, kv_cache_dtype: fp8, max_model_len: 8192}
      - {name: decilm-7b, model: Deci/DeciLM-7B-instruct, dtype: bfloat16, max_model_len: 8192}
      - {name: phi-3-mini, model: microsoft/Phi-3-mini-128k-instruct, dtype: bfloat16, max_model_len: 18000}
      - {name: stablelm-2, model: stabilityai/stablelm-2-1_6b-chat, dtype: float16, max_model_len: 4096}
# llm_plan.models (abridged):
#   [{name: llama-3-8b, gpu: 0, port: 8000, gpu_memory_utilization: "0.226", kv_cache_gib: 1.04,  kv_capacity_tokens: 8544, ...},
#    {name: gemma-7b,   gpu: 0, port: 8001, gpu_memory_utilization: "0.254", kv_cache_gib: 1.82,  kv_capacity_tokens: 8528, ...},
#    {name: decilm-7b,  gpu: 0, port: 8002, gpu_memory_utilization: "0.197", kv_cache_gib: 0.58,  kv_capacity_tokens: 9456, ...},
#    {name: phi-3-mini, gpu: 0, port: 8003, gpu_memory_utilization: "0.194", kv_cache_gib: 6.64,  kv_capacity_tokens: 18112, ...},
#    {name: stablelm-2, gpu: 0, port: 8004, gpu_memory_utilization: "0.065", kv_cache_gib: 0.82,  kv_capacity_tokens: 4480, ...}]
# llm_plan.gpus[0] (abridged):
#   {index: 0, total_gib: 79.65, weights_gib: 54.15, kv_cache_gib: 10.9, overhead_gib: 9.5, cuda_context_gib: 3.5,
#    margin_gib: 1.59, unused_gib: 0.0, utilization_sum: "0.936", models: [llama-3-8b, gemma-7b, decilm-7b, phi-3-mini, stablelm-2]}

- name: A model with no built-in entry, geometry from its config.json
  ansible.builtin.set_fact:
    llm_plan: "{{ [{'index': 0, 'memory_total': 143771}] | hpclab.cluster.llm_gpu_plan(models, base_port=9000) }}"
  vars:
    models:
      - name: my-model
        model: /srv/models/my-model
        weights_gib: 14.0
        max_model_len: 16384
        min_sequences: 4
        config: "{{ (lookup('ansible.builtin.file', '/srv/models/my-model/config.json') | from_json) }}"

- name: Llama-3.1-70B-Instruct in bf16 over two A100 80 GB (geometry from its config.json)
  ansible.builtin.set_fact:
    llm_plan: "{{ gpus | hpclab.cluster.llm_gpu_plan(models) }}"
  vars:
    gpus:
      - {index: 0, memory_total: "81920 MiB"}
      - {index: 1, memory_total: "81920 MiB"}
    models:
      - name: llama-3.1-70b
        model: meta-llama/Llama-3.1-70B-Instruct
        dtype: bfloat16
        max_model_len: 8192
        tensor_parallel_size: 2
        parameters: 70553706496
        config: {num_hidden_layers: 80, num_attention_heads: 64, num_key_value_heads: 8, hidden_size: 8192,
                 vocab_size: 128256, max_position_embeddings: 131072}
# llm_plan.models[0] (abridged): {gpus: [0, 1], tensor_parallel_size: 2, gpu_memory_utilization: "0.963",
#   weights_gib: 65.71 (per GPU), weights_total_gib: 131.42, kv_cache_gib: 8.33 (per GPU), kv_capacity_tokens: 54592, ...}
# Without tensor_parallel_size => AnsibleFilterError "... 59.28 GiB short. To make it fit: ...; or tensor parallelism
#   over 2 GPUs (tensor_parallel_size: 2, on GPUs 0, 1: fits); or another or a larger GPU."
# With quantization: awq (4-bit, group 128) its weights are 37.03 GiB and it fits on one GPU.

# Does not fit: the whole Phi-3 context on a 40 GB card next to two 8B models
# => AnsibleFilterError "llm_gpu_plan: model '...' does not fit on ...: ... GiB short. To make it fit:
#    max_model_len <= N; or kv_cache_dtype fp8 (1 byte per KV value: fits); or another or a larger GPU."
"""

RETURN = r"""
_value:
  description: The plan, per model (in O(models) order) and per GPU.
  type: dict
  contains:
    models:
      description:
        - One entry per model. Feed an entry to M(hpclab.cluster.llm_vllm_argv) for its command line.
        - C(gpus) (the GPU indexes of its ranks, in rank order, which is its C(CUDA_VISIBLE_DEVICES)), C(tensor_parallel_size),
          C(gpu) (the first of C(gpus)), C(start_index) (position in the start order of its first GPU), C(port).
        - C(gpu_memory_utilization) is a string with exactly O(utilization_decimals) decimals, to pass to vLLM as is.
        - C(budget_bytes) is what vLLM requests, C(total * util) rounded up to a byte. C(weights_bytes), C(overhead_bytes) (activations,
          non-torch buffers, CUDA graphs) and C(kv_cache_bytes) add up to it; each also comes as C(*_gib), rounded to 2 decimals.
          With tensor parallelism these are per GPU (one rank; on GPUs of different sizes, the rank with the least KV cache).
          C(weights_total_bytes) (and C(weights_total_gib)) are the whole model's weights.
        - C(kv_bytes_per_token), C(kv_capacity_tokens) (whole blocks) and C(kv_capacity_sequences) (tokens / max_model_len,
          the concurrency vLLM logs; at least C(min_sequences)).
        - C(name), C(model), C(max_model_len), C(min_sequences), C(dtype), C(kv_cache_dtype), C(quantization), C(bits),
          C(group_size) (V(null) when not quantized), C(enforce_eager), C(trust_remote_code) as resolved.
      type: list
      elements: dict
    gpus:
      description:
        - One entry per GPU. C(index), C(models) (served names in start order) and C(utilization_sum).
        - C(total_bytes) is accounted for as C(weights_bytes) + C(kv_cache_bytes) + C(overhead_bytes) + C(cuda_context_bytes)
          + C(nccl_bytes) (tensor-parallel ranks) + C(margin_bytes) + C(unused_bytes) (rounding left-over); each also as C(*_gib).
        - C(startup) lists, per instance in start order, the free memory it will see (C(free_bytes), nothing else on the GPU)
          and what it requests (C(requested_bytes)).
      type: list
      elements: dict
"""

from ansible.errors import AnsibleFilterError


def llm_gpu_plan(gpus, models, base_port=8000, cuda_context_gib=None, cuda_graph_gib=0.5, margin_fraction=0.02,
                 utilization_decimals=3, block_size=16, nccl_gib=None):
    """Filter entry point: see DOCUMENTATION. cuda_context_gib and nccl_gib default to the planner's defaults."""
    # Imported here, not at the top: Ansible imports every file of plugins/filter in each worker process that looks up
    # any filter of this collection, and _gpu_plan is the largest module they would import (about 15 ms a worker).
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import (
        DEFAULT_CUDA_CONTEXT_GIB, DEFAULT_NCCL_GIB, GpuPlanError, plan)

    try:
        return plan(gpus, models, base_port=base_port,
                    cuda_context_gib=DEFAULT_CUDA_CONTEXT_GIB if cuda_context_gib is None else cuda_context_gib,
                    cuda_graph_gib=cuda_graph_gib, margin_fraction=margin_fraction, utilization_decimals=utilization_decimals,
                    block_size=block_size, nccl_gib=DEFAULT_NCCL_GIB if nccl_gib is None else nccl_gib)
    except GpuPlanError as exc:
        raise AnsibleFilterError(f"llm_gpu_plan: {exc}") from None


class FilterModule:
    """GPU memory planning for vLLM."""

    def filters(self):
        return {"llm_gpu_plan": llm_gpu_plan}
