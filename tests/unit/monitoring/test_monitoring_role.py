"""The monitoring role's tasks and variables read offline (YAML, and Ansible's own Templar through role_render): who may
read the files it writes, that each skip condition expects what the task writes, the directory the collectors write
into, and that the preflight sees every input it checks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from role_render import RoleRender

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "monitoring"
WANT_FILE = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__monitoring_want_file"]
WRITERS = ("ansible.builtin.template", "ansible.builtin.copy")


def tasks(name):
    return yaml.safe_load((ROLE / "tasks" / name).read_text(encoding="utf-8"))


def task(name, title):
    return next(t for t in tasks(name) if t["name"].startswith(title))


def _file_tasks():
    for path in sorted((ROLE / "tasks").glob("*.yml")):
        for entry in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            # Only a task skipped by the read of the file it writes (a task without such a condition decides itself).
            if any(module in entry for module in WRITERS) and "__monitoring_state.paths" in str(entry.get("when", "")):
                yield pytest.param(entry, id=f"{path.name}:{entry['name']}")


@pytest.fixture(scope="module")
def role():
    return RoleRender(ROLE, {}, facts={"ansible_facts": {"default_ipv4": {"address": "10.0.0.1"}, "all_ipv4_addresses": ["10.0.0.1"]}},
                      play={"inventory_hostname": "n1", "groups": {"monitoring": ["n1"]}, "group_names": ["monitoring"]})


@pytest.mark.parametrize("entry", list(_file_tasks()))
def test_skip_condition_expects_the_owner_group_and_mode_the_task_writes(entry):
    """A task skipped on a file 'as the role makes it' must compare with what it makes: else it runs every time
    (not idempotent), or never fixes a file left with the wrong group or mode."""
    args = next(entry[module] for module in WRITERS if module in entry)
    condition = " ".join(str(c) for c in (entry["when"] if isinstance(entry["when"], list) else [entry["when"]]))
    expected = dict(WANT_FILE)
    for key, value in re.findall(r"'(pw_name|gr_name|mode)': '([^']*)'", condition):
        expected[key] = value
    assert (args["owner"], args["group"], args["mode"]) == (expected["pw_name"], expected["gr_name"], expected["mode"])


def test_alertmanager_configuration_is_for_root_and_alertmanager_only():
    """It holds the receivers' secrets: Debian's prometheus-alertmanager runs as user prometheus."""
    entry = task("configure.yml", "configure | Alertmanager's configuration")
    args = entry["ansible.builtin.template"]
    assert (args["owner"], args["group"], args["mode"]) == ("root", "prometheus", "0640")
    assert entry["diff"] is False


def test_alertmanager_config_option_is_no_log():
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert specs["main"]["options"]["monitoring_alertmanager_config"]["no_log"] is True


def test_textfile_directory_is_made_for_a_custom_value(role):
    entry = task("exporter_configure.yml", "exporter_configure | Directory of the collectors' files")
    assert entry["ansible.builtin.file"] == {"path": "{{ monitoring_textfile_dir }}", "state": "directory", "owner": "root", "group": "root",
                                             "mode": "0755"}
    host_vars = {"monitoring_textfile_dir": "/srv/hpclab-textfile"}
    assert "/srv/hpclab-textfile" in role.evaluate("__monitoring_exporter_paths", host_vars=host_vars)
    want_dir = role.evaluate("__monitoring_want_dir")
    condition = entry["when"]
    missing = {"paths": {"/srv/hpclab-textfile": {"exists": False}}}
    assert role.evaluate(condition, host_vars=host_vars, extra={"__monitoring_state": missing}) is True
    converged = {"paths": {"/srv/hpclab-textfile": dict(want_dir)}}
    assert role.evaluate(condition, host_vars=host_vars, extra={"__monitoring_state": converged}) is False


@pytest.mark.parametrize(
    "host_vars,expected",
    [
        ({"monitoring_collectors": ["glusterfs"]}, "n1: monitoring_collectors has 'glusterfs'"),
        ({"monitoring_collector_timeout": 0}, "n1: monitoring_collector_timeout 0 is not a whole number"),
    ],
)
def test_preflight_sees_the_collectors_and_their_timeout(role, host_vars, expected):
    problems = role.evaluate(
        "__monitoring_settings | hpclab.cluster.monitoring_problems(host=inventory_hostname, group_hosts=['n1'], server=true,"
        " host_addresses=['10.0.0.1'])",
        host_vars={"monitoring_listen_address": "10.0.0.1", "monitoring_node_exporter_listen_address": "10.0.0.1", **host_vars},
    )
    assert len(problems) == 1 and problems[0].startswith(expected), problems
