"""docker_container_change on results of community.docker.docker_container captured on the testbed."""

import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.docker_container_change import docker_container_change

RESULTS = json.loads((Path(__file__).parents[2] / "fixtures/docker/docker_container_results.json").read_text())


@pytest.mark.parametrize("name", ["created", "unchanged", "reconnected", "recreated", "started"])
def test_each_captured_result(name):
    assert docker_container_change(RESULTS[name]) == name


def test_a_skipped_task_is_pending():
    assert docker_container_change({"skipped": True, "changed": False}) == "pending"


def test_a_network_and_another_setting_is_a_recreation():
    result = json.loads(json.dumps(RESULTS["reconnected"]))
    result["diff"]["differences"].append(RESULTS["recreated"]["diff"]["differences"][0])
    assert docker_container_change(result) == "recreated"


def test_a_changed_result_without_diff_is_refused():
    with pytest.raises(AnsibleFilterError, match="diff: true"):
        docker_container_change({"changed": True})
