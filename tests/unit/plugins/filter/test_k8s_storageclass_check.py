from __future__ import annotations

import pytest

from ansible_collections.hpclab.cluster.plugins.filter.k8s_storageclass_check import (
    FilterModule,
    is_dns1123_label,
    is_dns1123_subdomain,
)

EXPORTS = [
    {"export_id": 1, "volume": "gv0", "pseudo": "/gv0", "squash": "no_root_squash"},
    {"export_id": 2, "volume": "scratch", "pseudo": "/scratch"},  # root_squash by default
]


def storage_class(name="nfs-csi", provisioner="nfs.csi.k8s.io", **parameters):
    params = {"server": "192.168.1.101", "share": "/gv0"}
    params.update(parameters)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "parameters": {k: v for k, v in params.items() if v is not None},
    }


check = FilterModule().filters()["k8s_storageclass_check"]


@pytest.mark.parametrize(
    "sc",
    [
        storage_class(),
        storage_class(onDelete="delete"),
        storage_class(onDelete="retain", mountPermissions="0"),
        storage_class(onDelete="archive", mountPermissions="0777", subDir="${pvc.metadata.namespace}/${pvc.metadata.name}"),
        storage_class(mountPermissions="755", subDir="k8s/${pv.metadata.name}"),
        storage_class(subDir="${pv.metadata.name}"),
        storage_class(subDir=""),  # the driver's default: the PV name
        storage_class(subDir="k8s/${pvc.metadata.namespace}/pvc-${pvc.metadata.name}"),
        storage_class(subDir="${pvc.metadata.name}/${pvc.metadata.namespace}"),
        storage_class(name="nfs.csi.hpclab"),
        storage_class(**{"csi.storage.k8s.io/provisioner-secret-name": "mount-options",
                         "csi.storage.k8s.io/provisioner-secret-namespace": "default"}),
        storage_class(server=None, share=None, Server="nfs1", SHARE="/gv0"),  # the driver ignores case
    ],
)
def test_valid(sc):
    assert check(sc, exports=EXPORTS, labels={"ns": "kube-system"}) == {}


@pytest.mark.parametrize(
    ("sc", "where", "says"),
    [
        (storage_class(readOnly="true"), "parameters.readOnly", "unknown parameter 'readOnly'"),
        (storage_class(mountOptions="nfsvers=4.1"), "parameters.mountOptions", "unknown parameter"),
        (storage_class(**{"csi.storage.k8s.io/fstype": "nfs"}), "parameters.csi.storage.k8s.io/fstype", "unknown"),
        (storage_class(Server="other"), "parameters.Server", "sets server a second time"),
        (storage_class(onDelete="purge"), "parameters.onDelete", "'purge' is not one of delete, retain, archive"),
        (storage_class(onDelete="Delete"), "parameters.onDelete", "not one of"),
        (storage_class(mountPermissions="0o755"), "parameters.mountPermissions", "not an octal mode string"),
        (storage_class(mountPermissions="493"), "parameters.mountPermissions", "quote it"),
        (storage_class(mountPermissions="rwx"), "parameters.mountPermissions", "octal"),
        (storage_class(mountPermissions=755), "parameters.mountPermissions", "must be a string"),
        (storage_class(subDir="${pvc.name}"), "parameters.subDir", "uses ${pvc.name}"),
        (storage_class(subDir="/abs/${pv.metadata.name}"), "parameters.subDir", "relative path"),
        (storage_class(subDir="../escape"), "parameters.subDir", "relative path"),
        # one directory for several volumes: deleting one PVC would remove the others' data
        (storage_class(subDir="data"), "parameters.subDir", "'data' may name one directory for several volumes: csi-driver-nfs's DeleteVolume"),
        (storage_class(subDir="${pvc.metadata.name}"), "parameters.subDir", "may name one directory for several volumes"),
        (storage_class(subDir="${pvc.metadata.namespace}"), "parameters.subDir", "may name one directory for several volumes"),
        (storage_class(subDir="${pvc.metadata.namespace}-${pvc.metadata.name}"), "parameters.subDir", "in separate path segments"),
        (storage_class(subDir="${pvc.metadata.namespace}${pvc.metadata.name}/x"), "parameters.subDir", "several volumes"),
        (storage_class(subDir="."), "parameters.subDir", "'.' has an empty or '.' path segment"),
        (storage_class(subDir="./${pv.metadata.name}"), "parameters.subDir", "empty or '.' path segment"),
        (storage_class(subDir="${pvc.metadata.namespace}//${pvc.metadata.name}"), "parameters.subDir", "empty or '.' path segment"),
        (storage_class(subDir="${pv.metadata.name}/"), "parameters.subDir", "empty or '.' path segment"),
        (storage_class(server=""), "parameters.server", "required"),
        (storage_class(share=None), "parameters.share", "required"),
        (storage_class(share="gv0"), "parameters.share", "not an absolute path"),
        (storage_class(share="/gv1"), "parameters.share", "known: /gv0, /scratch"),
        (storage_class(share="/scratch"), "parameters.share", "squashes root (root_squash)"),
        (storage_class(name="NFS-csi"), "metadata.name", "not a DNS-1123 subdomain"),
        (storage_class(name="nfs_csi"), "metadata.name", "DNS-1123"),
        (storage_class(name="-nfs"), "metadata.name", "DNS-1123"),
        (storage_class(name="a" * 254), "metadata.name", "253"),
        (storage_class(name=None), "metadata.name", "None"),
        (storage_class(provisioner="nfs.csi.k8s.io/v2"), "provisioner", "is not nfs.csi.k8s.io"),
    ],
)
def test_invalid(sc, where, says):
    problems = check(sc, exports=EXPORTS)
    assert list(problems) == [where]
    assert says in problems[where]


def test_exports_not_given_skips_the_share_check():
    assert check(storage_class(share="/anything")) == {}


def test_no_known_export_is_an_error():
    assert "known: none" in check(storage_class(), exports=[])["parameters.share"]


def test_several_problems_are_all_reported():
    problems = check(storage_class(name="Bad", onDelete="x", foo="1"), exports=EXPORTS, labels={"k3s_nfs_csi_namespace": "A"})
    assert sorted(problems) == ["k3s_nfs_csi_namespace", "metadata.name", "parameters.foo", "parameters.onDelete"]


@pytest.mark.parametrize("bad_input", [None, "nfs-csi", ["a"]])
def test_not_a_dict(bad_input):
    assert list(check(bad_input)) == ["storage_class"]


def test_parameters_not_a_dict():
    sc = storage_class()
    sc["parameters"] = ["server"]
    assert list(check(sc)) == ["parameters"]


@pytest.mark.parametrize(
    ("value", "label", "subdomain"),
    [
        ("kube-system", True, True),
        ("a", True, True),
        ("0abc", True, True),
        ("a" * 63, True, True),
        ("a" * 64, False, True),
        ("nfs.csi", False, True),
        ("nfs..csi", False, False),
        ("Nfs", False, False),
        ("nfs_", False, False),
        ("-nfs", False, False),
        ("nfs-", False, False),
        ("", False, False),
        (None, False, False),
        (7, False, False),
    ],
)
def test_dns1123(value, label, subdomain):
    assert is_dns1123_label(value) is label
    assert is_dns1123_subdomain(value) is subdomain


def test_labels_are_checked():
    problems = check(storage_class(), labels={"k3s_nfs_csi_smoke_name": "Smoke", "k3s_nfs_csi_namespace": "default"})
    assert list(problems) == ["k3s_nfs_csi_smoke_name"]
    assert "'Smoke' is not a DNS-1123 label" in problems["k3s_nfs_csi_smoke_name"]
