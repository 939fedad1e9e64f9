from __future__ import annotations

import importlib.util
import itertools
import os
import pathlib
import re
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "gpu_check.py")
SPEC = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(gpu_check)

from ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan import plan  # noqa: E402  pylint: disable=wrong-import-position

# The script's own output on an NVIDIA H200 (driver 580.159.04, CUDA 13.0, PyTorch 2.11; device machine, 2026-12-04),
# with the planner's default cuda_context_gib and with 0.5.
FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures" / "gpu"
H200_LOG = (FIXTURES / "h200-gpu_check.log").read_text(encoding="utf-8").splitlines()
H200_LOG_05 = (FIXTURES / "h200-gpu_check-0.5.log").read_text(encoding="utf-8").splitlines()


def output_of(log, command):
    """The lines a command printed in the log: those after its `$ ...` line, up to the next line the script wrote."""
    start = log.index(command) + 1
    return list(itertools.takewhile(lambda line: re.match(r"[0-9]+, ", line), log[start:]))


GPU_LINES = output_of(H200_LOG, "$ nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits")
APP_LINES = output_of(H200_LOG, "$ nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits")


def test_parse_gpus_gives_the_planner_its_input():
    gpus = gpu_check.parse_gpus(GPU_LINES + ["No devices were found"])
    assert gpus == [{"index": 0, "name": "NVIDIA H200", "memory_total": "143771 MiB"}]
    assert plan(gpus, [{"name": "m", "model": "stabilityai/stablelm-2-1_6b-chat", "dtype": "float16", "gpu": 0,
                        "max_model_len": 4096}])["models"][0]["gpus"] == [0]


def test_parse_compute_apps():
    assert gpu_check.parse_compute_apps(APP_LINES + [""]) == [
        {"pid": 580, "gpu_uuid": "GPU-a72bba94-ec52-a341-f1be-0c0ad5b754e5", "used_mib": 1806}]


# The probe printed PyTorch's reserved bytes; the log shows them in MiB (1024 held + 98 for cuBLAS and the kernels).
H200_RESERVED = 1122 * gpu_check.MIB


@pytest.mark.parametrize(("log", "context_gib", "ok"), [(H200_LOG, 0.7, True), (H200_LOG_05, 0.5, False)],
                         ids=["default", "0.5"])
def test_context_verdict_is_the_one_printed_on_the_h200(log, context_gib, ok):
    used = gpu_check.parse_compute_apps(output_of(log, "$ nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory "
                                                       "--format=csv,noheader,nounits"))[0]["used_mib"]
    verdict, sentence = gpu_check.context_verdict(used, H200_RESERVED, context_gib)
    assert verdict is ok
    assert any(line.startswith("1. torch 2.11.0+cu130 (CUDA 13.0), holding 1024 MiB: ") and line.endswith(sentence)
               for line in log), sentence
    assert log[-1] == ("rc=0" if ok else "rc=1")


def test_the_planners_default_context_is_the_one_checked_on_the_h200():
    assert "(cuda_context_gib 0.7): OK" in "\n".join(H200_LOG)
    assert plan(gpu_check.parse_gpus(GPU_LINES), [{"name": "m", "model": "stabilityai/stablelm-2-1_6b-chat",
                                                   "gpu": 0, "max_model_len": 4096}])["gpus"][0]["cuda_context_gib"] == 0.7


def test_without_a_model_only_the_checks_without_vllm_run(tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + "".join(f"echo '{line}'\n" for line in GPU_LINES), encoding="utf-8")
    smi.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run([sys.executable, SCRIPT, "--torch-python", str(tmp_path / "none")], env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done
    assert "1. CUDA context not measured: no Python here imports torch" in done.stdout
    assert "steps 2 (deploy), 3 (memory per process) and 4 (chat) did not run" in done.stdout
    assert "5. Slurm would be offered no GPU; kept for serving: [{'index': 0, 'models': ['stablelm']}]" in done.stdout


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
