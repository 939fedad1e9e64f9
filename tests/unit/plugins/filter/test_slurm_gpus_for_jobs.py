from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.slurm_gpus_for_jobs import FilterModule
from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import plan

GPUS_FOR_JOBS = FilterModule().filters()["slurm_gpus_for_jobs"]

# nvidia-smi --query-gpu=index,name --format=csv,noheader on a two-A100 server (the format nvidia-smi documents).
A100_LINES = ["0, NVIDIA A100-SXM4-80GB", "1, NVIDIA A100-SXM4-80GB"]
TWO_GPUS = [{"index": 0, "memory_total": "81920 MiB"}, {"index": 1, "memory_total": "81920 MiB"}]
STABLELM = {"name": "stablelm-2", "model": "stabilityai/stablelm-2-1_6b-chat", "dtype": "float16", "max_model_len": 4096}


def serving(models, gpus=None):
    """llm_serving_result as the role publishes it: the planner's own GPU list."""
    return {"gpus": plan(gpus or TWO_GPUS, models)["gpus"]}


def test_undeclared_worker_gets_the_gpu_serving_leaves_free_typed_by_nvidia_smi():
    result = GPUS_FOR_JOBS({}, serving=serving([dict(STABLELM, gpu=0)]), detected=A100_LINES, host="gpu1")
    assert result == {"gpus": {"count": 1, "type": "a100", "files": ["/dev/nvidia1"]},
                      "withheld": [{"index": 0, "models": ["stablelm-2"]}], "problems": []}


def test_without_nvidia_smi_the_plan_gpus_are_the_hosts_and_have_no_type():
    result = GPUS_FOR_JOBS({}, serving=serving([dict(STABLELM, gpu=1)]))
    assert result["gpus"] == {"count": 1, "files": ["/dev/nvidia0"]}
    assert result["withheld"] == [{"index": 1, "models": ["stablelm-2"]}]


def test_models_on_every_gpu_leave_slurm_none():
    models = [dict(STABLELM, name="a", gpu=0), dict(STABLELM, name="b", gpu=1), dict(STABLELM, name="c", gpu=1)]
    result = GPUS_FOR_JOBS({}, serving=serving(models), detected=A100_LINES)
    assert result["gpus"] == {}
    assert result["withheld"] == [{"index": 0, "models": ["a"]}, {"index": 1, "models": ["b", "c"]}]


def test_tensor_parallel_model_takes_both_gpus():
    # inventory/example/group_vars/llm-70b.yml's model, geometry from its config.json
    model = {"name": "llama-70b", "model": "meta-llama/Llama-3.1-70B-Instruct", "dtype": "bfloat16",
             "max_model_len": 16384, "tensor_parallel_size": 2, "parameters": 70553706496,
             "config": {"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
                        "hidden_size": 8192, "vocab_size": 128256, "tie_word_embeddings": False,
                        "max_position_embeddings": 131072}}
    result = GPUS_FOR_JOBS({}, serving=serving([model]), detected=A100_LINES)
    assert result["gpus"] == {} and [g["index"] for g in result["withheld"]] == [0, 1]


def test_share_offers_every_gpu_and_withholds_none():
    result = GPUS_FOR_JOBS({}, serving=serving([dict(STABLELM, gpu=0)]), detected=A100_LINES, share=True)
    assert result == {"gpus": {"count": 2, "type": "a100", "files": ["/dev/nvidia0", "/dev/nvidia1"]},
                      "withheld": [], "problems": []}


def test_no_serving_and_nvidia_smi_gives_every_gpu_as_before():
    expected = {"count": 2, "type": "a100", "files": ["/dev/nvidia0", "/dev/nvidia1"]}
    assert GPUS_FOR_JOBS({}, detected=A100_LINES)["gpus"] == expected


def test_nothing_known_gives_nothing():
    assert GPUS_FOR_JOBS({}) == {"gpus": {}, "withheld": [], "problems": []}
    assert GPUS_FOR_JOBS(None, serving={}, detected=[]) == {"gpus": {}, "withheld": [], "problems": []}


def test_nvidia_smi_error_lines_are_not_gpus():
    lines = ["NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."]
    assert GPUS_FOR_JOBS({}, detected=lines)["gpus"] == {}


def test_custom_device_pattern():
    result = GPUS_FOR_JOBS({}, detected=A100_LINES[:1], device_pattern="/dev/dri/renderD{index}")
    assert result["gpus"]["files"] == ["/dev/dri/renderD0"]


@pytest.mark.parametrize(
    "declared,busy_gpu,problem",
    [
        ({"count": 1, "files": ["/dev/nvidia0"]}, 0, "GPU 0 (/dev/nvidia0)"),
        ({"count": 2, "type": "a100"}, 1, "GPU 1 (/dev/nvidia1)"),  # files default to /dev/nvidia0..1
        ({"count": 1, "files": ["/dev/nvidia1"]}, 1, "GPU 1 (/dev/nvidia1)"),
        # a file that is not /dev/nvidiaN is GPU number its position
        ({"count": 2, "files": ["/dev/null", "/dev/zero"]}, 1, "GPU 1 (/dev/zero)"),
    ],
)
def test_declared_gpu_that_serving_takes_is_a_problem_naming_host_variable_and_fix(declared, busy_gpu, problem):
    result = GPUS_FOR_JOBS(declared, serving=serving([dict(STABLELM, gpu=busy_gpu)]), host="gpu1")
    assert result["gpus"] == declared
    assert len(result["problems"]) == 1, result
    message = result["problems"][0]
    assert message.startswith(f"gpu1: slurm_worker_gpus lists {problem}, which LLM serving also takes (stablelm-2)")
    assert "Fix:" in message and "hpclab_slurm_share_serving_gpus: true" in message


def test_declared_gpus_apart_from_serving_are_kept_as_declared():
    declared = {"count": 1, "type": "a100", "files": ["/dev/nvidia1"]}
    result = GPUS_FOR_JOBS(declared, serving=serving([dict(STABLELM, gpu=0)]))
    assert result == {"gpus": declared, "withheld": [{"index": 0, "models": ["stablelm-2"]}], "problems": []}


def test_declared_overlap_is_allowed_when_shared():
    declared = {"count": 1, "files": ["/dev/nvidia0"]}
    assert GPUS_FOR_JOBS(declared, serving=serving([dict(STABLELM, gpu=0)]), share=True)["problems"] == []


def test_malformed_declaration_is_left_to_the_slurm_checks():
    declared = {"count": 2, "type": "testgpu", "files": ["/dev/null"]}
    assert GPUS_FOR_JOBS(declared, serving=serving([dict(STABLELM, gpu=0)])) == {
        "gpus": declared, "withheld": [{"index": 0, "models": ["stablelm-2"]}], "problems": []}


@pytest.mark.parametrize(
    "kwargs,words",
    [
        ({"serving": {"gpus": "0"}}, "a list 'gpus'"),
        ({"serving": {"gpus": [{"models": []}]}}, "has no index"),
        ({"serving": {"gpus": [{"index": "x"}]}}, "'x' is not a whole number"),
        ({"detected": [{"name": "A100"}]}, "has no index"),
        ({"detected": [{"index": True}]}, "True is not a whole number"),
    ],
)
def test_bad_playbook_input_raises(kwargs, words):
    with pytest.raises(AnsibleFilterError, match="slurm_gpus_for_jobs: .*" + words.replace("(", r"\(").replace(")", r"\)")):
        GPUS_FOR_JOBS({}, **kwargs)
