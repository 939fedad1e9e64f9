"""The monitoring role's tasks and variables read offline (YAML, and Ansible's own Templar through role_render): who may
read the files it writes, that the modules that write them decide for themselves, the directory the collectors write
into, and that the preflight sees every input it checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from role_render import RoleRender

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "monitoring"
WRITERS = ("ansible.builtin.template", "ansible.builtin.copy", "ansible.builtin.file")


def tasks(name):
    return yaml.safe_load((ROLE / "tasks" / name).read_text(encoding="utf-8"))


def task(name, title):
    return next(t for t in tasks(name) if t["name"].startswith(title))


def _file_tasks():
    for path in sorted((ROLE / "tasks").glob("*.yml")):
        for entry in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            if any(module in entry for module in WRITERS):
                yield pytest.param(entry, id=f"{path.name}:{entry['name']}")


@pytest.fixture(scope="module")
def role():
    return RoleRender(ROLE, {}, facts={"ansible_facts": {"default_ipv4": {"address": "10.0.0.1"}, "all_ipv4_addresses": ["10.0.0.1"]}},
                      play={"inventory_hostname": "n1", "groups": {"monitoring": ["n1"]}, "group_names": ["monitoring"]})


@pytest.mark.parametrize("entry", list(_file_tasks()))
def test_file_tasks_decide_for_themselves(entry):
    """A task that writes a file runs on every run and compares the file itself: no read of the host, no rendering of
    the template only to compare its checksum, decides whether it runs (at most a package not installed yet in check
    mode, or an input that makes the file unwanted)."""
    condition = str(entry.get("when", ""))
    assert "__monitoring_state" not in condition and "lookup(" not in condition and "hash(" not in condition, condition


def test_alertmanager_configuration_is_for_root_and_alertmanager_only():
    """It holds the receivers' secrets: Debian's prometheus-alertmanager runs as user prometheus."""
    entry = task("configure.yml", "configure | Alertmanager's configuration")
    args = entry["ansible.builtin.template"]
    assert (args["owner"], args["group"], args["mode"]) == ("root", "prometheus", "0640")
    assert entry["diff"] is False


def test_alertmanager_config_option_is_no_log():
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert specs["main"]["options"]["monitoring_alertmanager_config"]["no_log"] is True


def test_textfile_directory_is_made_for_a_custom_value():
    entry = task("exporter_configure.yml", "exporter_configure | Directory of the collectors' files")
    assert entry["ansible.builtin.file"] == {"path": "{{ monitoring_textfile_dir }}", "state": "directory", "owner": "root", "group": "root",
                                             "mode": "0755"}
    # No condition: the module makes a custom directory as it makes the default one.
    assert "when" not in entry


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
