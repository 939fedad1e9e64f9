from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "gpu_check.py")
SPEC = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(gpu_check)

from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import plan  # noqa: E402  pylint: disable=wrong-import-position

# Lines in the format nvidia-smi documents for these queries (csv,noheader,nounits).
GPU_LINES = ["0, NVIDIA H200, 143771", "1, NVIDIA H200, 143771"]
APP_LINES = ["4242, GPU-1c2f3e4d-0000-1111-2222-333344445555, 30210", "4250, GPU-1c2f3e4d-0000-1111-2222-333344445555, 512"]


def test_parse_gpus_gives_the_planner_its_input():
    gpus = gpu_check.parse_gpus(GPU_LINES + ["No devices were found"])
    assert gpus == [{"index": 0, "name": "NVIDIA H200", "memory_total": "143771 MiB"},
                    {"index": 1, "name": "NVIDIA H200", "memory_total": "143771 MiB"}]
    assert plan(gpus, [{"name": "m", "model": "stabilityai/stablelm-2-1_6b-chat", "dtype": "float16", "gpu": 0,
                        "max_model_len": 4096}])["models"][0]["gpus"] == [0]


def test_parse_compute_apps():
    assert gpu_check.parse_compute_apps(APP_LINES + [""]) == [
        {"pid": 4242, "gpu_uuid": "GPU-1c2f3e4d-0000-1111-2222-333344445555", "used_mib": 30210},
        {"pid": 4250, "gpu_uuid": "GPU-1c2f3e4d-0000-1111-2222-333344445555", "used_mib": 512}]


@pytest.fixture(name="planned")
def fixture_planned():
    gpus = gpu_check.parse_gpus(GPU_LINES)
    model = {"name": "stablelm", "model": "stabilityai/stablelm-2-1_6b-chat", "dtype": "float16", "gpu": 0,
             "max_model_len": 4096, "gpu_memory_utilization": 0.2}
    return plan(gpus, [model])["models"][0]


def test_memory_within_the_plan_passes(planned):
    used = round(planned["budget_bytes"] / gpu_check.MIB)
    ok, sentence = gpu_check.memory_verdict(used, planned, cuda_context_gib=0.5)
    assert ok and sentence.endswith(": OK"), sentence


@pytest.mark.parametrize("factor", [1.2, 0.1])
def test_memory_outside_the_plan_fails(planned, factor):
    used = round(planned["budget_bytes"] * factor / gpu_check.MIB) if factor > 1 else round(planned["weights_bytes"] * factor / gpu_check.MIB)
    ok, sentence = gpu_check.memory_verdict(used, planned, cuda_context_gib=0.5)
    assert not ok and "OUTSIDE THE PLAN" in sentence, sentence


def test_without_nvidia_smi_the_script_skips(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))
    done = subprocess.run([sys.executable, SCRIPT, "--model", str(tmp_path)], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == gpu_check.SKIP, done
    assert done.stdout.startswith("SKIP: no working nvidia-smi"), done.stdout
