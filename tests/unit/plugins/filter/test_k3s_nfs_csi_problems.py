"""The k3s_nfs_csi role's preflight: every input that ends up in the HelmChart and the StorageClass, one rule
at a time. The role's wiring (its variables into this filter) is tested in tests/unit/k3s."""

from __future__ import annotations

import pytest

from ansible_collections.hpclab.cluster.plugins.filter.k3s_nfs_csi_problems import FilterModule

PROBLEMS = FilterModule().filters()["k3s_nfs_csi_problems"]

EXPORTS = [
    {"export_id": 1, "volume": "gv0", "pseudo": "/gv0", "squash": "no_root_squash"},
    {"export_id": 2, "volume": "gv4", "pseudo": "/v4only", "squash": "no_root_squash", "protocols": [4]},
    {"export_id": 3, "volume": "scratch", "pseudo": "/scratch"},  # root_squash by default
]
# The role's defaults.
DEFAULTS = {
    "host": "k3s1",
    "exports": EXPORTS,
    "manifests_dir": "/var/lib/rancher/k3s/server/manifests",
    "manifests_dir_is_dir": True,
    "chart_version": "4.13.4",
    "chart_repo": "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts",
    "chart_file": "",
    "release_name": "csi-driver-nfs",
    "namespace": "kube-system",
    "image_base_repo": "registry.k8s.io",
    "image_nfs_repository": "registry.k8s.io/sig-storage/nfsplugin",
    "kubelet_dir": "/var/lib/kubelet",
    "controller_replicas": 1,
    "driver_mount_permissions": "0",
    "chart_values": {},
    "extra_parameters": {},
    "smoke_namespace": "default",
    "smoke_name": "nfs-csi-smoke",
    "smoke_image": "docker.io/library/busybox:1.36",
    "smoke_retries": 60,
    "smoke_delay": 5,
    "apply_timeout": 300,
    "k3s_binary": "/usr/local/bin/k3s",
    "kubeconfig": "/etc/rancher/k3s/k3s.yaml",
}


def storage_class(name="nfs-csi", mount_options=("nfsvers=4.1",), **parameters):
    params = {"server": "192.168.1.101", "share": "/gv0", "onDelete": "delete", **parameters}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "annotations": {}},
        "provisioner": "nfs.csi.k8s.io",
        "parameters": {k: v for k, v in params.items() if v is not None},
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
        "allowVolumeExpansion": True,
        "mountOptions": list(mount_options),
    }


def check(sc=None, **kwargs):
    return PROBLEMS(storage_class() if sc is None else sc, **{**DEFAULTS, **kwargs})


def test_registered():
    assert set(FilterModule().filters()) == {"k3s_nfs_csi_problems"}


@pytest.mark.parametrize(
    "sc,kwargs",
    [
        pytest.param(None, {}, id="role-defaults"),
        pytest.param(storage_class(server="pi1.lab.example.org", subDir="${pvc.metadata.namespace}/${pvc.metadata.name}",
                                   mountPermissions="0770", onDelete="archive"), {}, id="every-storageclass-option"),
        pytest.param(storage_class(server="fd00::101"), {}, id="server-ipv6"),
        pytest.param(storage_class(server="pi1"), {}, id="server-short-name"),
        pytest.param(storage_class(share="/v4only", mount_options=["nfsvers=4.2", "hard"]), {}, id="v4-export-v4-mount"),
        pytest.param(storage_class(mount_options=["nfsvers=3"]), {}, id="v3-mount-on-an-export-serving-both"),
        pytest.param(storage_class(mount_options=[]), {}, id="no-mount-option"),
        pytest.param(storage_class(share="/exports/k8s"), {"exports": None}, id="share-without-nfs-group"),
        pytest.param(None, {"chart_file": "files/csi-driver-nfs-4.13.4.tgz", "chart_file_is_file": True, "chart_version": "any",
                            "chart_repo": ""}, id="air-gapped-chart"),
        pytest.param(None, {"chart_repo": "http://charts.lab:8080/csi-driver-nfs"}, id="plain-http-mirror"),
        pytest.param(None, {"release_name": "n" * 53}, id="release-name-53-characters"),
        pytest.param(None, {"image_base_repo": "registry.lab:5000", "image_nfs_repository": "registry.lab:5000/sig-storage/nfsplugin"},
                     id="private-registry"),
        pytest.param(None, {"image_base_repo": "registry.lab:5000/mirror"}, id="registry-with-path"),
        pytest.param(None, {"kubelet_dir": "/var/lib/rancher/k3s/agent/kubelet"}, id="other-kubelet-dir"),
        pytest.param(None, {"controller_replicas": "2", "driver_mount_permissions": "0755"}, id="replicas-as-string"),
        pytest.param(None, {"chart_values": {"driver": {"name": "nfs.csi.k8s.io"}, "controller": {"replicas": 2},
                                             "imagePullSecrets": [{"name": "lab"}]}}, id="chart-values"),
        pytest.param(None, {"smoke_image": "registry.lab:5000/library/busybox@sha256:" + "b" * 64}, id="smoke-image-by-digest"),
        pytest.param(None, {"smoke_retries": 1, "smoke_delay": 1, "apply_timeout": 1}, id="shortest-waits"),
    ],
)
def test_valid_input_has_no_problem(sc, kwargs):
    assert check(sc, **kwargs) == []


@pytest.mark.parametrize(
    "sc,kwargs,expected",
    [
        # rule 1: a K3s server
        pytest.param(None, {"manifests_dir_is_dir": False},
                     ["k3s1: the host has no directory /var/lib/rancher/k3s/server/manifests (variable k3s_nfs_csi_manifests_dir)",
                      "install K3s on this host first"], id="not-a-k3s-server"),
        pytest.param(None, {"manifests_dir": "/var/lib/rancher/k3s/server/manifests/"},
                     ["k3s_nfs_csi_manifests_dir '/var/lib/rancher/k3s/server/manifests/' is not canonical"], id="manifests-dir-trailing-slash"),
        pytest.param(None, {"manifests_dir": "manifests"}, ["k3s_nfs_csi_manifests_dir 'manifests' is not an absolute path"],
                     id="manifests-dir-relative"),
        # rule 2: chart source
        pytest.param(None, {"chart_repo": "raw.githubusercontent.com/kubernetes-csi"}, ["k3s_nfs_csi_chart_repo", "is not an http(s) URL"],
                     id="repo-without-scheme"),
        pytest.param(None, {"chart_repo": "oci://registry.lab/charts"}, ["is not an http(s) URL"], id="repo-oci"),
        pytest.param(None, {"chart_repo": "https:///charts"}, ["is not an http(s) URL"], id="repo-without-host"),
        pytest.param(None, {"chart_repo": "https://charts.lab/a b"}, ["is not an http(s) URL"], id="repo-blank"),
        pytest.param(None, {"chart_version": "v4.13.4"}, ["k3s_nfs_csi_chart_version 'v4.13.4' is not a pinned chart version"],
                     id="version-with-v"),
        pytest.param(None, {"chart_version": "latest"}, ["is not a pinned chart version"], id="version-latest"),
        pytest.param(None, {"chart_version": "4.13"}, ["is not a pinned chart version"], id="version-float"),
        # rule 3: shipped chart
        pytest.param(None, {"chart_file": "files/csi-driver-nfs.tgz", "chart_file_is_file": False},
                     ["k3s_nfs_csi_chart_file 'files/csi-driver-nfs.tgz' is not a .tgz file on the Ansible controller"], id="chart-file-missing"),
        pytest.param(None, {"chart_file": "files/csi-driver-nfs.zip", "chart_file_is_file": True}, ["is not a .tgz file"], id="chart-file-zip"),
        # rule 4: release and namespace
        pytest.param(None, {"release_name": "n" * 54}, ["k3s_nfs_csi_release_name", "has 54 characters; Helm refuses release names longer than 53"],
                     id="release-name-54-characters"),
        pytest.param(None, {"release_name": "CSI"}, ["k3s_nfs_csi_release_name: 'CSI' is not a DNS-1123 label"], id="release-name-uppercase"),
        pytest.param(None, {"namespace": "kube_system"}, ["k3s_nfs_csi_namespace: 'kube_system' is not a DNS-1123 label"], id="namespace-underscore"),
        # rule 5: images of the chart
        pytest.param(None, {"image_base_repo": "https://registry.lab", "image_nfs_repository": "https://registry.lab/sig-storage/nfsplugin"},
                     ["k3s_nfs_csi_image_base_repo 'https://registry.lab' is not a registry"], id="registry-with-scheme"),
        pytest.param(None, {"image_base_repo": "registry.lab/"}, ["is not a registry"], id="registry-trailing-slash"),
        pytest.param(None, {"image_nfs_repository": "registry.k8s.io/sig-storage/nfsplugin:v4.13.0"},
                     ["k3s_nfs_csi_image_nfs_repository", "has a tag or digest; give the repository alone"], id="repository-with-tag"),
        pytest.param(None, {"image_nfs_repository": "registry.k8s.io/Sig-Storage/nfsplugin"}, ["is not an image reference"],
                     id="repository-uppercase"),
        pytest.param(None, {"chart_values": {"image": {"baseRepo": "mirror lab"}}},
                     ["k3s_nfs_csi_chart_values.image.baseRepo 'mirror lab' is not a registry"], id="registry-in-chart-values"),
        # rule 6: kubelet directory
        pytest.param(None, {"kubelet_dir": "var/lib/kubelet"}, ["k3s_nfs_csi_kubelet_dir 'var/lib/kubelet' is not an absolute path"],
                     id="kubelet-relative"),
        pytest.param(None, {"kubelet_dir": "/"}, ["k3s_nfs_csi_kubelet_dir '/' is '/'"], id="kubelet-root"),
        pytest.param(None, {"kubelet_dir": "/var/lib//kubelet"}, ["is not canonical"], id="kubelet-double-slash"),
        # rule 7: replicas
        pytest.param(None, {"controller_replicas": 0}, ["k3s_nfs_csi_controller_replicas 0 is not a number of at least 1"], id="replicas-0"),
        pytest.param(None, {"controller_replicas": "two"}, ["k3s_nfs_csi_controller_replicas 'two'"], id="replicas-word"),
        pytest.param(None, {"controller_replicas": 1.5}, ["k3s_nfs_csi_controller_replicas 1.5"], id="replicas-float"),
        pytest.param(None, {"chart_values": {"controller": {"replicas": 0}}}, ["k3s_nfs_csi_chart_values.controller.replicas 0"],
                     id="replicas-in-chart-values"),
        # rule 8: the driver's mount permissions
        pytest.param(None, {"driver_mount_permissions": 493}, ["k3s_nfs_csi_driver_mount_permissions 493 is not an octal mode string",
                                                               "quote it"], id="driver-permissions-number"),
        pytest.param(None, {"driver_mount_permissions": "0o755"}, ["is not an octal mode string"], id="driver-permissions-python"),
        pytest.param(None, {"driver_mount_permissions": "0778"}, ["is not an octal mode string"], id="driver-permissions-8"),
        # rule 9: the chart's driver name
        pytest.param(None, {"chart_values": {"driver": {"name": "nfs2.csi.k8s.io"}}},
                     ["k3s_nfs_csi_chart_values.driver.name 'nfs2.csi.k8s.io' renames the driver", "leave driver.name out"], id="driver-renamed"),
        # rule 10: the StorageClass's name
        pytest.param(storage_class(name="NFS_CSI"), {}, ["k3s1: k3s_nfs_csi_storage_class_name: 'NFS_CSI' is not a DNS-1123 subdomain"],
                     id="class-name"),
        # rule 11: server and share set
        pytest.param(storage_class(server=""), {}, ["k3s_nfs_csi_server: is required and empty", "k3s_nfs_csi_nfs_group"], id="server-empty"),
        pytest.param(storage_class(share=""), {"nfs_group": "nfs"}, ["k3s_nfs_csi_share: is required and empty", "group_vars/nfs.yml"],
                     id="share-empty"),
        # rule 12: the share is an export that lets root in
        pytest.param(storage_class(share="/nope"), {},
                     ["k3s_nfs_csi_share: '/nope' is not the Pseudo path of any NFS-Ganesha export", "known: /gv0, /scratch, /v4only"],
                     id="share-not-exported"),
        pytest.param(storage_class(share="/scratch"), {}, ["k3s_nfs_csi_share: the NFS-Ganesha export '/scratch' squashes root"],
                     id="share-root-squashed"),
        pytest.param(storage_class(share="gv0"), {}, ["k3s_nfs_csi_share: 'gv0' is not an absolute path"], id="share-relative"),
        pytest.param(storage_class(share="/exports/k8s/"), {"exports": None}, ["k3s_nfs_csi_share '/exports/k8s/' is not canonical"],
                     id="share-trailing-slash-without-nfs-group"),
        # rule 13: what the driver accepts
        pytest.param(storage_class(subDir="${pvc.name}"), {}, ["k3s_nfs_csi_sub_dir: '${pvc.name}' uses ${pvc.name}"], id="sub-dir-placeholder"),
        pytest.param(storage_class(subDir="../up"), {}, ["k3s_nfs_csi_sub_dir: '../up' must be a relative path inside the share"], id="sub-dir-up"),
        pytest.param(storage_class(subDir="${pvc.metadata.name}"), {},
                     ["k3s_nfs_csi_sub_dir: '${pvc.metadata.name}' may name one directory for several volumes",
                      "Fix: write a relative path with ${pv.metadata.name}, or ${pvc.metadata.namespace} and ${pvc.metadata.name}"],
                     id="sub-dir-shared-across-namespaces"),
        pytest.param(storage_class(subDir="."), {}, ["k3s_nfs_csi_sub_dir: '.' has an empty or '.' path segment"], id="sub-dir-dot"),
        pytest.param(storage_class(mountPermissions="493"), {}, ["k3s_nfs_csi_mount_permissions: '493' is not an octal mode string"],
                     id="mount-permissions"),
        pytest.param(storage_class(onDelete="purge"), {}, ["k3s_nfs_csi_on_delete: 'purge' is not one of delete, retain, archive"], id="on-delete"),
        pytest.param(storage_class(readOnly="true"), {"extra_parameters": {"readOnly": "true"}},
                     ["k3s_nfs_csi_extra_parameters[readOnly]: unknown parameter 'readOnly'"], id="unknown-parameter"),
        pytest.param(storage_class(Server="other"), {"extra_parameters": {"Server": "other"}},
                     ["k3s_nfs_csi_extra_parameters[Server]: sets server a second time"], id="parameter-twice"),
        # rule 14: the server is an address or a name
        pytest.param(storage_class(server="nfs://pi1"), {}, ["k3s_nfs_csi_server 'nfs://pi1' is neither an IP address nor a host name"],
                     id="server-url"),
        pytest.param(storage_class(server="192.168.1.300"), {}, ["k3s_nfs_csi_server '192.168.1.300' is neither"], id="server-octet"),
        pytest.param(storage_class(server="pi1:2049"), {}, ["is neither"], id="server-port"),
        pytest.param(storage_class(server="pi 1"), {}, ["is neither"], id="server-blank"),
        # rule 15: mount options
        pytest.param(storage_class(mount_options=["nfsvers=4.1 hard"]), {}, ["k3s_nfs_csi_mount_options entry 'nfsvers=4.1 hard' is not a mount option"],
                     id="option-blank"),
        pytest.param(storage_class(mount_options=[""]), {}, ["entry '' is not a mount option"], id="option-empty"),
        pytest.param(storage_class(mount_options=["nfsvers=5"]), {}, ["k3s_nfs_csi_mount_options entry 'nfsvers=5' is not an NFS version"],
                     id="nfs-version-5"),
        pytest.param(storage_class(mount_options=["vers=4.3"]), {}, ["'vers=4.3' is not an NFS version"], id="nfs-version-4.3"),
        pytest.param(storage_class(mount_options=["nfsvers=4.1", "vers=4.2"]), {}, ["k3s_nfs_csi_mount_options gives the NFS version 2 times"],
                     id="nfs-version-twice"),
        pytest.param(storage_class(share="/v4only", mount_options=["nfsvers=3"]), {},
                     ["k3s_nfs_csi_mount_options asks for NFS version 3, which the NFS-Ganesha export /v4only does not serve (its protocols: 4)"],
                     id="nfs-version-not-served"),
        # rule 16: smoke test names
        pytest.param(None, {"smoke_name": "Smoke"}, ["k3s_nfs_csi_smoke_name: 'Smoke' is not a DNS-1123 label"], id="smoke-name"),
        pytest.param(None, {"smoke_namespace": "-default"}, ["k3s_nfs_csi_smoke_namespace: '-default'"], id="smoke-namespace"),
        # rule 17: smoke test image
        pytest.param(None, {"smoke_image": "busybox:"}, ["k3s_nfs_csi_smoke_image 'busybox:' is not an image reference"], id="smoke-image-empty-tag"),
        pytest.param(None, {"smoke_image": "https://docker.io/busybox"}, ["is not an image reference"], id="smoke-image-url"),
        pytest.param(None, {"smoke_image": ""}, ["k3s_nfs_csi_smoke_image '' is not set"], id="smoke-image-empty"),
        # rule 18: waits
        pytest.param(None, {"smoke_retries": 0}, ["k3s_nfs_csi_smoke_retries 0 is not a number of at least 1"], id="smoke-retries-0"),
        pytest.param(None, {"smoke_delay": -1}, ["k3s_nfs_csi_smoke_delay -1"], id="smoke-delay-negative"),
        pytest.param(None, {"apply_timeout": None}, ["k3s_nfs_csi_apply_timeout None"], id="apply-timeout-none"),
        pytest.param(None, {"apply_timeout": "5m"}, ["k3s_nfs_csi_apply_timeout '5m'"], id="apply-timeout-unit"),
        # rule 19: k3s binary and kubeconfig
        pytest.param(None, {"k3s_binary": "k3s"}, ["k3s_nfs_csi_k3s_binary 'k3s' is not an absolute path"], id="k3s-binary-relative"),
        pytest.param(None, {"kubeconfig": "/etc/rancher/k3s/../k3s.yaml"}, ["k3s_nfs_csi_kubeconfig", "is not canonical"], id="kubeconfig-dotdot"),
    ],
)
def test_one_problem(sc, kwargs, expected):
    found = check(sc, **kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert found[0].startswith("k3s1: ") and ". Fix: " in found[0]


def test_a_registry_that_is_not_one_is_reported_once_for_the_default_driver_repository():
    found = check(image_base_repo="https://registry.lab", image_nfs_repository="https://registry.lab/sig-storage/nfsplugin")
    assert len(found) == 1 and "k3s_nfs_csi_image_base_repo" in found[0], found


def test_several_problems_are_all_reported():
    found = check(storage_class(name="Bad", onDelete="x"), manifests_dir_is_dir=False, chart_version="v1", smoke_retries=0)
    assert len(found) == 5, found
    assert all(p.startswith("k3s1: ") and ". Fix: " in p for p in found)


def test_a_storage_class_that_is_not_a_dict_is_reported():
    found = check("nfs-csi")
    assert len(found) == 1 and "the StorageClass's storage_class: must be a dict" in found[0], found
