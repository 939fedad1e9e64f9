from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.monitoring_gpu_planned_gib import FilterModule
from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import plan

PLANNED = FilterModule().filters()["monitoring_gpu_planned_gib"]
TWO_GPUS = [{"index": 0, "memory_total": "16384 MiB"}, {"index": 1, "memory_total": "16384 MiB"}]
STABLELM = {"name": "stablelm-2", "model": "stabilityai/stablelm-2-1_6b-chat", "dtype": "float16", "max_model_len": 4096}


def test_the_gpu_of_a_model_gets_its_utilization_share_and_the_free_gpu_none():
    result = {"gpus": plan(TWO_GPUS, [dict(STABLELM, gpu=0)])["gpus"]}
    gpu0 = result["gpus"][0]
    assert PLANNED(result) == {"0": round(float(gpu0["utilization_sum"]) * 16, 2)}
    # What the model servers of the GPU were planned to request at their start.
    assert abs(PLANNED(result)["0"] - sum(s["requested_gib"] for s in gpu0["startup"])) < 0.02


def test_two_models_on_one_gpu_add_up_and_a_list_works_as_well():
    gpus = plan(TWO_GPUS, [dict(STABLELM, gpu=1), dict(STABLELM, name="second", gpu=1)])["gpus"]
    assert list(PLANNED(gpus)) == ["1"]
    assert PLANNED(gpus)["1"] == round(float(gpus[1]["utilization_sum"]) * 16, 2)


@pytest.mark.parametrize("empty", [None, {}, [], {"gpus": []}])
def test_no_plan_gives_no_planned_gpu(empty):
    assert PLANNED(empty) == {}


def test_a_gpu_without_figures_is_an_error_naming_it():
    with pytest.raises(AnsibleFilterError, match="GPU 3 of the plan has no utilization_sum"):
        PLANNED({"gpus": [{"index": 3, "models": ["m"]}]})
