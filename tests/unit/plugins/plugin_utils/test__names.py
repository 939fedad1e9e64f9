"""The name and path grammars the docker_macvlan and k3s_nfs_csi check filters share."""

from __future__ import annotations

import pytest

from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import path_problem
from ansible_collections.hpclab.cluster.plugins.plugin_utils._names import (
    docker_name_problem,
    host_problem,
    image_reference_problem,
    interface_name_problem,
    registry_problem,
)


@pytest.mark.parametrize(
    "value,valid",
    [
        ("busybox", True),
        ("busybox:1.36", True),
        ("docker.io/library/busybox:1.36", True),
        ("hpclab-node:bookworm", True),
        ("registry.lab:5000/hpc/slurm_22.05:v1", True),
        ("localhost:5000/a__b/c-d", True),
        ("registry.k8s.io/sig-storage/nfsplugin@sha256:" + "0" * 64, True),
        ("Busybox", False),  # the path is lowercase
        ("busybox:", False),
        ("busybox:-1", False),  # a tag starts with a word character
        ("busybox:" + "a" * 129, False),  # at most 128 characters
        ("-busybox", False),
        ("a//b", False),
        ("https://docker.io/busybox", False),
        ("busybox@sha256:abc", False),  # a digest has at least 32 hex digits
        ("a" * 256, False),  # distribution/reference's 255 characters
        ("", False),
        (None, False),
    ],
)
def test_image_reference(value, valid):
    assert (image_reference_problem(value) is None) is valid


def test_a_repository_has_no_tag():
    assert image_reference_problem("registry.k8s.io/sig-storage/nfsplugin", tag=False) is None
    assert "has a tag or digest" in image_reference_problem("registry.k8s.io/sig-storage/nfsplugin:v4.13.0", tag=False)


@pytest.mark.parametrize(
    "value,valid",
    [("registry.k8s.io", True), ("registry.lab:5000", True), ("registry.lab:5000/mirror/k8s", True), ("localhost", True),
     ("https://registry.lab", False), ("registry.lab/", False), ("registry lab", False), ("registry.lab:port", False), ("", False)],
)
def test_registry(value, valid):
    assert (registry_problem(value) is None) is valid


@pytest.mark.parametrize(
    "value,valid",
    [("ctl", True), ("n1", True), ("node_1.lab-x", True), ("n", False), ("-n1", False), ("n 1", False), ("n/1", False), (7, False)],
)
def test_docker_name(value, valid):
    assert (docker_name_problem(value) is None) is valid


@pytest.mark.parametrize(
    "value,valid",
    [("hpclab-shim", True), ("eth0", True), ("a" * 15, True), ("a" * 16, False), ("", False), ("shim%i", False), ("a:b", False),
     ("a b", False), (".", False), ("-x", False)],
)
def test_interface_name(value, valid):
    assert (interface_name_problem(value) is None) is valid


@pytest.mark.parametrize(
    "value,valid",
    [("192.168.1.101", True), ("fd00::1", True), ("pi1", True), ("nfs.example.org", True), ("nfs.example.org.", True),
     ("192.168.1.300", False), ("nfs://pi1", False), ("pi1:2049", False), ("pi_1", False), ("-pi1", False), ("a" * 64, False),
     ("", False), (None, False)],
)
def test_host(value, valid):
    assert (host_problem(value) is None) is valid


@pytest.mark.parametrize(
    "value,allow_root,expected",
    [
        ("/var/lib/kubelet", False, None),
        ("/", True, None),
        ("/", False, "is '/'"),
        ("var/lib", False, "is not an absolute path"),
        ("/var/lib/", False, "is not canonical"),
        ("/var/./lib", False, "is not canonical"),
        ("/var/lib kubelet", False, "has a blank"),
        (None, False, "is not an absolute path"),
    ],
)
def test_path(value, allow_root, expected):
    found = path_problem(value, allow_root=allow_root)
    if expected is None:
        assert found is None
    else:
        assert found is not None and expected in found, found
