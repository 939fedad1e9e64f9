# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: docker_container_current
short_description: Whether a container already runs as wanted, from one docker_host_info read of its engine
version_added: 0.1.0
description:
  - Reads the result of C(community.docker.docker_host_info) with O(images=true), O(containers=true),
    O(containers_all=true) and O(verbose_output=true) and tells whether the container O(name) runs, was created from
    the image that the tag O(image) names now, carries every label of O(labels) with the same value and is on every
    network of O(networks) with its address there.
  - A role that labels its containers with a hash of their settings can then skip C(community.docker.docker_container)
    for a container whose hash is unchanged (one read of the engine per host instead of one module call per
    container); the module still decides for every other container, and creates or recreates it with the new label.
  - Pure. A read without O(verbose_output) has no container state, so no container is current by it.
options:
  name:
    description: The container's name.
    type: str
    required: true
  image:
    description: The image as the container is created from it (C(repository:tag)).
    type: str
    required: true
  labels:
    description: Labels the container must carry with these values; more labels on the container do not matter.
    type: dict
    default: {}
  networks:
    description:
      - Networks the container must be on, each with the IPv4 address it must have there (an empty address, any
        address); more networks do not matter.
      - A container whose network was removed (and made again) keeps running with none, though its settings and their
        label are unchanged, so the label alone would not show it.
    type: dict
    default: {}
    version_added: 0.4.0
extends_documentation_fragment:
  - hpclab.cluster.docker_host_info
"""

EXAMPLES = r"""
- name: The images and containers of this host's engine
  community.docker.docker_host_info:
    images: true
    containers: true
    containers_all: true
    verbose_output: true
  register: engine_read

- name: The container, unless it already runs with these settings
  community.docker.docker_container:
    name: web
    image: nginx:1.25
    labels:
      org.example.spec: "{{ spec_hash }}"
    comparisons:
      labels: ignore
  when: >-
    not engine_read | hpclab.cluster.docker_container_current('web', 'nginx:1.25', {'org.example.spec': spec_hash})

# {"images": [{"RepoTags": ["hpclab/slurmctld:e2150f35ad72"], "Id": "sha256:320b"}],
#  "containers": [{"Names": ["/node1"], "State": "running", "ImageID": "sha256:320b", "Labels": {"spec": "1"}}]}
#   | hpclab.cluster.docker_container_current("node1", "hpclab/slurmctld:e2150f35ad72", {"spec": "1"})
# => true
"""

RETURN = r"""
_value:
  description: Whether the container runs from the tag's current image with the labels given.
  type: bool
"""

from ansible.errors import AnsibleFilterError


def docker_container_current(host_info, name, image, labels=None, networks=None):
    """Filter entry point: see DOCUMENTATION."""
    if not isinstance(host_info, dict):
        raise AnsibleFilterError(f"docker_container_current expects the result of docker_host_info, got {type(host_info).__name__}")
    image_id = next((i.get("Id") for i in host_info.get("images") or [] if image in (i.get("RepoTags") or [])), None)
    container = next((c for c in host_info.get("containers") or [] if "/" + name in (c.get("Names") or [])), None)
    if not image_id or not container or container.get("State") != "running" or container.get("ImageID") != image_id:
        return False
    have = container.get("Labels") or {}
    if not all(have.get(key) == value for key, value in (labels or {}).items()):
        return False
    attached = (container.get("NetworkSettings") or {}).get("Networks") or {}
    return all(network in attached and (not address or (attached[network] or {}).get("IPAddress") == address)
               for network, address in (networks or {}).items())


class FilterModule:
    """Docker container filters."""

    def filters(self):
        return {"docker_container_current": docker_container_current}
