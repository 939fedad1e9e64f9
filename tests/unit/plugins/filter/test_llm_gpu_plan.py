from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.llm_gpu_plan import FilterModule

llm_gpu_plan = FilterModule().filters()["llm_gpu_plan"]

REFERENCE = json.loads((Path(__file__).parents[2] / "fixtures" / "llm" / "reference_models.json").read_text())

# nvidia-smi --query-gpu=index,memory.total --format=csv,noheader on an H100 80GB and an H200.
H100 = [{"index": 0, "memory_total": "81559 MiB"}]
H200 = [{"index": 0, "memory_total": "143771 MiB"}]


def test_registered():
    assert set(FilterModule().filters()) == {"llm_gpu_plan"}


@pytest.mark.parametrize(
    "gpus,utils",
    [
        (H100, ["0.227", "0.256", "0.198", "0.201", "0.066"]),
        (H200, ["0.169", "0.215", "0.132", "0.378", "0.068"]),
    ],
    ids=["80GB", "141GB"],
)
def test_reference_design(gpus, utils):
    result = llm_gpu_plan(gpus, REFERENCE)
    assert [m["gpu_memory_utilization"] for m in result["models"]] == utils
    for spec, planned in zip(REFERENCE, result["models"]):
        assert planned["kv_capacity_tokens"] >= spec["max_model_len"]
    gpu = result["gpus"][0]
    assert gpu["models"] == [m["name"] for m in REFERENCE]
    committed = sum(m["budget_bytes"] for m in result["models"]) + gpu["cuda_context_bytes"] + gpu["margin_bytes"]
    assert committed <= gpu["total_bytes"]


def test_options_pass_through():
    result = llm_gpu_plan(H200, REFERENCE[:1], base_port=9100, cuda_context_gib=0.4, cuda_graph_gib=0, margin_fraction=0.05,
                          utilization_decimals=2, block_size=32)
    model, gpu = result["models"][0], result["gpus"][0]
    assert model["port"] == 9100
    assert len(model["gpu_memory_utilization"]) == 4
    assert model["overhead_gib"] == 1.5  # no CUDA-graph allowance
    assert model["kv_capacity_tokens"] % 32 == 0
    assert gpu["cuda_context_gib"] == 0.4
    assert gpu["margin_gib"] == round(143771 * 2 ** 20 * 0.05 / 2 ** 30, 2)


@pytest.mark.parametrize(
    "gpus,models,message",
    [
        ([{"index": 0, "memory_total": "40960 MiB"}], REFERENCE, r"^llm_gpu_plan: model 'decilm-7b' does not fit .* GiB short\. To make it fit: "),
        ([{"index": 0}], REFERENCE, "^llm_gpu_plan: GPU 0 has no memory total"),
        (H100, [dict(REFERENCE[0], max_model_len=-5)], "^llm_gpu_plan: model 'llama-3-8b' max_model_len must be a positive integer, got -5"),
        (H100, [dict(REFERENCE[0], model="acme/mystery")], "'acme/mystery' is not a built-in model"),
    ],
)
def test_errors_are_filter_errors(gpus, models, message):
    with pytest.raises(AnsibleFilterError, match=message):
        llm_gpu_plan(gpus, models)
