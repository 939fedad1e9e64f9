"""The example inventory's GPU server (issue 19): its five models and the 70B alternative, as the role would deploy them.

Rendered offline from inventory/example with the role's own variables and templates (conftest.RoleRenderer), so the
units, the preflight and the plan printed by playbooks/llm_plan.yml are the role's, not a copy of its logic.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible.template import trust_as_template

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "inventory" / "example"
SEED_MODELS = ["meta-llama/Meta-Llama-3-8B-Instruct", "google/gemma-1.1-7b-it", "Qwen/Qwen2.5-7B-Instruct",
               "microsoft/Phi-3-mini-128k-instruct", "stabilityai/stablelm-2-1_6b-chat"]


def _load(path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _load_inventory(path):
    """An inventory file as Ansible reads it: its strings may be templates (e.g. a vaulted variable's name)."""
    from ansible.parsing.dataloader import DataLoader

    return DataLoader().load_from_file(str(path), trusted_as_template=True)


# What the user's vault (group_vars/all/vault.yml, not in the repository) gives the inventory's references.
VAULT = {"vault_llm_api_key": "ExampleVaultedServersKey0123456789abcdef"}
GPU1 = {**VAULT, **_load_inventory(EXAMPLE / "group_vars" / "llm.yml"), **_load_inventory(EXAMPLE / "host_vars" / "gpu1.yml")}
GPU1_70B = {**GPU1, **_load_inventory(EXAMPLE / "group_vars" / "llm-70b.yml")}  # -e @ wins over the inventory


def unit_lines(text, key):
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(key + "=")]


# What playbooks/llm.yml passes to the role from the gateway (llm_gateway_result.web_logins): a web password per user of
# group_vars/all/users.yml.
WEB_LOGINS = [{"user": user["name"], "password": "WebPasswordOf-" + user["name"] + "-0123456789"}
              for user in _load(EXAMPLE / "group_vars" / "all" / "users.yml")["hpclab_cluster_users"]]


def preflight_problems(role, host_vars):
    """What preflight.yml's one assertion reports for gpu1 (no nvidia-smi, no local model paths), in playbooks/llm.yml."""
    host_vars = {"llm_serving_fastchat_logins": WEB_LOGINS, **host_vars}
    tasks = _load(ROOT / "roles" / "llm_serving" / "tasks" / "preflight.yml")
    check = next(task for task in tasks if "ansible.builtin.assert" in task)
    registered = {"__llm_serving_local_read": {"skipped": True}, "__llm_serving_nvidia_smi": {"skipped": True}}
    return role.templar(host_vars=host_vars, extra=registered).template(trust_as_template(check["vars"]["__llm_serving_problems"]))


def test_gpu1_is_the_llm_group():
    hosts = _load(EXAMPLE / "hosts.yml")
    assert list(hosts["all"]["children"]["llm"]["hosts"]) == ["gpu1"]
    # llm-70b.yml is an alternative passed with -e @, never a group's variables.
    assert "llm-70b" not in hosts["all"]["children"]


def test_the_seed_models_on_two_a100():
    assert [m["model"] for m in GPU1["llm_serving_models"]] == SEED_MODELS
    assert GPU1["llm_serving_gpus"] == [{"index": 0, "memory_total": "81920 MiB"}, {"index": 1, "memory_total": "81920 MiB"}]


@pytest.mark.parametrize("host_vars", [GPU1, GPU1_70B], ids=["five-models", "llama-70b-tp2"])
def test_preflight_passes(role, host_vars):
    assert preflight_problems(role, host_vars) == []


@pytest.mark.parametrize("host_vars", [GPU1, GPU1_70B], ids=["five-models", "llama-70b-tp2"])
def test_each_unit_runs_on_its_planned_gpus(role, host_vars):
    plan = role.evaluate("__llm_serving_plan", host_vars=host_vars)
    units = role.render_units(host_vars)
    assert list(units) == [m["name"] for m in plan["models"]]
    for planned in plan["models"]:
        # Two GPUs on the host: CUDA numbers them as nvidia-smi does, so the indexes mean the same GPUs.
        assert unit_lines(units[planned["name"]], "Environment")[1] == \
            "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=" + ",".join(map(str, planned["gpus"]))
    for gpu in plan["gpus"]:
        committed = sum(s["requested_bytes"] for s in gpu["startup"]) + gpu["cuda_context_bytes"] + gpu["nccl_bytes"]
        assert committed + gpu["margin_bytes"] <= gpu["total_bytes"]


def test_the_five_models_use_both_gpus(role):
    plan = role.evaluate("__llm_serving_plan", host_vars=GPU1)
    assert {tuple(m["gpus"]) for m in plan["models"]} == {(0,), (1,)}
    assert all(m["kv_capacity_tokens"] >= m["max_model_len"] for m in plan["models"])


def test_the_70b_unit_splits_the_model_over_both_gpus(role):
    text = role.render_units(GPU1_70B)["llama-3.1-70b"]
    exec_start = unit_lines(text, "ExecStart")[0]
    assert " --tensor-parallel-size 2" in exec_start and "--quantization" not in exec_start
    assert "CUDA_VISIBLE_DEVICES=0,1" in unit_lines(text, "Environment")[1]
    assert [u["unit"] for u in role.evaluate("__llm_serving_fastchat_units", host_vars=GPU1_70B)] == ["fastchat-web"]


@pytest.mark.parametrize("host_vars", [GPU1, GPU1_70B], ids=["five-models", "llama-70b-tp2"])
def test_the_printed_plan(role, host_vars):
    """playbooks/llm_plan.yml prints this template: one line per GPU and per model, each model's from its plan."""
    lines = role.render_text("llm-plan.txt.j2", host_vars=host_vars).strip().splitlines()
    plan = role.evaluate("__llm_serving_plan", host_vars=host_vars)
    models = lines[1 + len(plan["gpus"]):1 + len(plan["gpus"]) + len(plan["models"])]
    for line, planned in zip(models, plan["models"]):
        assert line.startswith(f"{planned['name']}: port {planned['port']}, GPU")
        assert f"--gpu-memory-utilization {planned['gpu_memory_utilization']}," in line
        assert f"KV cache {planned['kv_capacity_tokens']} tokens = {planned['kv_capacity_sequences']} x " in line
    # The README shows the real output of both runs.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(line in readme for line in lines), [line for line in lines if line not in readme]


def test_the_plan_playbook_cannot_touch_the_host():
    play = _load(ROOT / "playbooks" / "llm_plan.yml")[0]
    assert (play["hosts"], play["gather_facts"], play["connection"]) == ("llm", False, "local")
    tasks = _load(ROOT / "roles" / "llm_serving" / "tasks" / "plan.yml")
    assert {next(k for k in task if k.startswith("ansible.builtin.")) for task in tasks} == {
        "ansible.builtin.assert", "ansible.builtin.debug"}
