# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: k3s_nfs_csi_problems
short_description: What is wrong with the k3s_nfs_csi role's input on one host, before any change
version_added: 0.2.0
description:
  - K3s applies what the role writes into its manifests directory on its own, and only logs what the API
    server or the chart refuses; a StorageClass csi-driver-nfs cannot use leaves every PVC Pending while
    the run succeeds. No configuration check runs offline (C(kubectl apply --dry-run=client) needs the API
    server), so the role checks everything that ends up in the HelmChart and the StorageClass first, with
    this filter. Types and choices are left to the role's argument spec.
  - Returns a list of problems, each naming the host, the variable and the fix; an empty list means the
    role may go on.
  - "Rules: (1) O(manifests_dir) is a canonical absolute path and a directory on the host (K3s runs there);
    (2) without O(chart_file), O(chart_repo) is an http(s) URL and O(chart_version) a pinned version
    without C(v); (3) O(chart_file) is a C(.tgz) file on the controller; (4) O(release_name) is a DNS-1123
    label of at most 53 characters (Helm's limit) and O(namespace) a DNS-1123 label; (5) the image registry
    and the driver's image repository (O(image_base_repo), O(image_nfs_repository)) are valid image names;
    (6) the kubelet directory is a canonical absolute path other than C(/); (7) the controller replicas are
    at least 1; (8) the driver's mount permissions are an octal string; (9) O(chart_values) does not rename
    the driver away from the StorageClass's provisioner C(nfs.csi.k8s.io), and rules 5 to 8 hold for what it
    sets; (10) everything P(hpclab.cluster.k8s_storageclass_check#filter) finds: the StorageClass name is a
    DNS-1123 subdomain; (11) C(server) and C(share) are set, (12) C(share) is an absolute path, the Pseudo
    path of an NFS-Ganesha export of O(exports) that does not squash root; (13) C(subDir), C(mountPermissions),
    C(onDelete) and O(extra_parameters) are what the driver accepts; (14) C(server) is an IP address or a
    host name; (15) each mount option is one word, an NFS version among 3, 4, 4.0, 4.1, 4.2, at most one,
    served by the share's export; (16) the smoke test's namespace and name are DNS-1123 labels (rule 10's
    check) and (17) its image an image reference; (18) the smoke test's retries and delay and
    O(apply_timeout) are at least 1; (19) O(k3s_binary) and O(kubeconfig) are canonical absolute paths."
options:
  _input:
    description: The StorageClass the role writes (the role's C(__k3s_nfs_csi_storage_class)).
    type: dict
    required: true
  host:
    description: The host's inventory name (C(inventory_hostname)), for the messages.
    type: str
    required: true
  exports:
    description:
      - C(nfs_ganesha_exports) of every host of the NFS group; the share must be one of them. Null when that
        group is not in the inventory (then the share is not looked up).
    type: list
    elements: dict
  nfs_group:
    description: C(k3s_nfs_csi_nfs_group), for the messages.
    type: str
    default: nfs_ganesha
  manifests_dir:
    description: C(k3s_nfs_csi_manifests_dir).
    type: str
  manifests_dir_is_dir:
    description: Whether O(manifests_dir) is a directory on the host.
    type: bool
    default: false
  chart_version:
    description: C(k3s_nfs_csi_chart_version).
    type: str
  chart_repo:
    description: C(k3s_nfs_csi_chart_repo).
    type: str
  chart_file:
    description: C(k3s_nfs_csi_chart_file).
    type: str
    default: ""
  chart_file_is_file:
    description: Whether O(chart_file) is a file on the controller.
    type: bool
    default: false
  release_name:
    description: C(k3s_nfs_csi_release_name).
    type: str
  namespace:
    description: C(k3s_nfs_csi_namespace).
    type: str
  image_base_repo:
    description: C(k3s_nfs_csi_image_base_repo).
    type: str
  image_nfs_repository:
    description: C(k3s_nfs_csi_image_nfs_repository).
    type: str
  kubelet_dir:
    description: C(k3s_nfs_csi_kubelet_dir).
    type: str
  controller_replicas:
    description: C(k3s_nfs_csi_controller_replicas).
    type: int
  driver_mount_permissions:
    description: C(k3s_nfs_csi_driver_mount_permissions).
    type: str
  chart_values:
    description: C(k3s_nfs_csi_chart_values).
    type: dict
    default: {}
  extra_parameters:
    description: C(k3s_nfs_csi_extra_parameters), to name the variable a StorageClass parameter comes from.
    type: dict
    default: {}
  smoke_namespace:
    description: C(k3s_nfs_csi_smoke_namespace).
    type: str
  smoke_name:
    description: C(k3s_nfs_csi_smoke_name).
    type: str
  smoke_image:
    description: C(k3s_nfs_csi_smoke_image).
    type: str
  smoke_retries:
    description: C(k3s_nfs_csi_smoke_retries).
    type: int
  smoke_delay:
    description: C(k3s_nfs_csi_smoke_delay).
    type: int
  apply_timeout:
    description: C(k3s_nfs_csi_apply_timeout).
    type: int
  k3s_binary:
    description: C(k3s_nfs_csi_k3s_binary).
    type: str
  kubeconfig:
    description: C(k3s_nfs_csi_kubeconfig).
    type: str
"""

EXAMPLES = r"""
# The role's StorageClass with k3s_nfs_csi_mount_options: [nfsvers=3] and an export that serves NFSv4 only:
# storage_class | hpclab.cluster.k3s_nfs_csi_problems(host="k3s1", manifests_dir_is_dir=true,
#                    exports=[{"pseudo": "/gv0", "squash": "no_root_squash", "protocols": [4]}], ...)
# => ["k3s1: k3s_nfs_csi_mount_options asks for NFS version 3, which the NFS-Ganesha export /gv0 does not serve
#      (its protocols: 4). Fix: ask for a version the export serves, e.g. nfsvers=4.1."]
- name: Check every input that ends up in the HelmChart and the StorageClass
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
    quiet: true
  vars:
    __problems: >-
      {{ __k3s_nfs_csi_storage_class | hpclab.cluster.k3s_nfs_csi_problems(host=inventory_hostname,
           manifests_dir=k3s_nfs_csi_manifests_dir, manifests_dir_is_dir=true, release_name=k3s_nfs_csi_release_name) }}
"""

RETURN = r"""
_value:
  description: One message per problem; empty when there is none.
  type: list
  elements: str
"""

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from ansible_collections.hpclab.cluster.plugins.filter.k8s_storageclass_check import PROVISIONER, check_storage_class, is_dns1123_label
# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
OCTAL = re.compile(r"^0?[0-7]{1,4}$")
# Helm 3 refuses a release name longer than 53 characters (its own limit, below DNS-1123's 63).
RELEASE_NAME_MAX = 53
# NFS versions mount.nfs knows (nfs(5)); the NFS-Ganesha role serves 3 and 4 (4.0, 4.1 and 4.2).
NFS_VERSIONS = ("3", "4", "4.0", "4.1", "4.2")
LABEL_FIX = "use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit"
# StorageClass fields the role sets from its variables, and how to fix each.
FIELDS = {
    "metadata.name": ("k3s_nfs_csi_storage_class_name", "use lowercase letters, digits, '-' and '.', e.g. nfs-csi"),
    "parameters.server": ("k3s_nfs_csi_server", None),
    "parameters.share": ("k3s_nfs_csi_share", None),
    "parameters.subDir": (
        "k3s_nfs_csi_sub_dir",
        "write a relative path with ${pv.metadata.name}, or ${pvc.metadata.namespace} and ${pvc.metadata.name} in separate segments "
        "(e.g. ${pvc.metadata.namespace}/${pvc.metadata.name}), and no other placeholder, or leave it empty (the PV name)",
    ),
    "parameters.mountPermissions": ("k3s_nfs_csi_mount_permissions", 'quote an octal mode, e.g. "0755", or leave it empty'),
    "parameters.onDelete": ("k3s_nfs_csi_on_delete", "use delete, retain or archive"),
}
EXTRA_FIX = (
    "keep only server, share, subDir, mountPermissions, onDelete and csi.storage.k8s.io/provisioner-secret-name/-namespace, "
    "each once, as strings"
)


def _share_fix(nfs_group):
    return (
        f"k3s_nfs_csi_server and k3s_nfs_csi_share default to the first host of group '{nfs_group}' (k3s_nfs_csi_nfs_group) and "
        "the pseudo path of the first entry of its nfs_ganesha_exports: set nfs_ganesha_exports in the inventory "
        f"(group_vars/{nfs_group}.yml) so that both roles read the same exports, with squash: no_root_squash on the export "
        "the driver provisions from, or set k3s_nfs_csi_server and k3s_nfs_csi_share"
    )


def _get(values, path):
    """The value at PATH (dotted) of nested dict VALUES, and whether it is there."""
    for key in path.split("."):
        if not isinstance(values, Mapping) or key not in values:
            return None, False
        values = values[key]
    return values, True


def k3s_nfs_csi_problems(storage_class, host, exports=None, nfs_group="nfs_ganesha", manifests_dir=None, manifests_dir_is_dir=False,
                         chart_version=None, chart_repo=None, chart_file="", chart_file_is_file=False, release_name=None, namespace=None,
                         image_base_repo=None, image_nfs_repository=None, kubelet_dir=None, controller_replicas=None,
                         driver_mount_permissions=None, chart_values=None, extra_parameters=None, smoke_namespace=None, smoke_name=None,
                         smoke_image=None, smoke_retries=None, smoke_delay=None, apply_timeout=None, k3s_binary=None, kubeconfig=None):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._names import host_problem, image_reference_problem, registry_problem
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import path_problem, to_int
    problems = []

    def problem(text, fix):
        problems.append(f"{host}: {text}. Fix: {fix}.")

    why = path_problem(manifests_dir)
    if why:
        problem(f"k3s_nfs_csi_manifests_dir {manifests_dir!r} {why}", "keep the default /var/lib/rancher/k3s/server/manifests")
    elif not manifests_dir_is_dir:
        problem(
            f"the host has no directory {manifests_dir} (variable k3s_nfs_csi_manifests_dir), so it is not a running K3s server. "
            "This role installs the NFS CSI driver into an existing K3s cluster; it does not install K3s",
            "install K3s on this host first (e.g. with k3s-io/k3s-ansible), run the role only on the server nodes (group "
            "k3s_server), or point k3s_nfs_csi_manifests_dir to the server's manifests directory (--data-dir)",
        )

    if chart_file:
        if not (chart_file_is_file and str(chart_file).endswith(".tgz")):
            problem(
                f"k3s_nfs_csi_chart_file {chart_file!r} is not a .tgz file on the Ansible controller",
                f"download csi-driver-nfs-{chart_version}.tgz from the chart repository on a machine with Internet access, copy it "
                "next to the inventory and set k3s_nfs_csi_chart_file to its path",
            )
    else:
        parts = urlsplit(chart_repo) if isinstance(chart_repo, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or re.search(r"\s", chart_repo):
            problem(
                f"k3s_nfs_csi_chart_repo {chart_repo!r} is not an http(s) URL of a chart repository",
                "keep the default, or give the URL of a mirror, e.g. https://kubernetes-csi.github.io/csi-driver-nfs",
            )
        if not isinstance(chart_version, str) or not VERSION.match(chart_version):
            problem(
                f"k3s_nfs_csi_chart_version {chart_version!r} is not a pinned chart version without a 'v' prefix "
                "(csi-driver-nfs charts dropped it at 4.11.0)",
                'quote a version, e.g. k3s_nfs_csi_chart_version: "4.13.4", or ship the chart with k3s_nfs_csi_chart_file',
            )

    if is_dns1123_label(release_name) and len(release_name) > RELEASE_NAME_MAX:
        problem(
            f"k3s_nfs_csi_release_name {release_name!r} has {len(release_name)} characters; Helm refuses release names "
            f"longer than {RELEASE_NAME_MAX}",
            "keep the default csi-driver-nfs",
        )

    # Chart values: the named variables, unless k3s_nfs_csi_chart_values sets the same key over them.
    chart_values = chart_values if isinstance(chart_values, Mapping) else {}
    named = {
        "image.baseRepo": ("k3s_nfs_csi_image_base_repo", image_base_repo),
        "image.nfs.repository": ("k3s_nfs_csi_image_nfs_repository", image_nfs_repository),
        "kubeletDir": ("k3s_nfs_csi_kubelet_dir", kubelet_dir),
        "controller.replicas": ("k3s_nfs_csi_controller_replicas", controller_replicas),
        "driver.mountPermissions": ("k3s_nfs_csi_driver_mount_permissions", driver_mount_permissions),
    }
    effective = {}
    for key, (variable, value) in named.items():
        override, present = _get(chart_values, key)
        effective[key] = (f"k3s_nfs_csi_chart_values.{key}", override) if present else (variable, value)

    variable, base = effective["image.baseRepo"]
    base_why = registry_problem(base)
    if base_why:
        problem(f"{variable} {base!r} {base_why}", "give the registry the sidecar images come from, e.g. registry.k8s.io or registry.lab:5000")
    variable, value = effective["image.nfs.repository"]
    why = image_reference_problem(value, tag=False)
    # By default the driver's repository is under the registry: one message, for the registry.
    if why and not (base_why and isinstance(value, str) and isinstance(base, str) and value.startswith(f"{base}/")):
        problem(f"{variable} {value!r} {why}", "give the driver image's repository, e.g. registry.k8s.io/sig-storage/nfsplugin")
    variable, value = effective["kubeletDir"]
    why = path_problem(value)
    if why:
        problem(f"{variable} {value!r} {why}", "keep the default /var/lib/kubelet (rootless K3s: its kubelet directory)")
    variable, value = effective["controller.replicas"]
    replicas = to_int(value)
    if replicas is None or replicas < 1 or isinstance(value, float):
        problem(f"{variable} {value!r} is not a number of at least 1", "keep the default 1 (more needs anti-affinity)")
    variable, value = effective["driver.mountPermissions"]
    if not isinstance(value, str) or not OCTAL.match(value):
        problem(
            f"{variable} {value!r} is not an octal mode string",
            'quote it, e.g. "0" (no chmod) or "0755": an unquoted 0755 is read as the number 493',
        )
    driver_name, present = _get(chart_values, "driver.name")
    if present and driver_name != PROVISIONER:
        problem(
            f"k3s_nfs_csi_chart_values.driver.name {driver_name!r} renames the driver, but the role's StorageClass asks for the "
            f"provisioner {PROVISIONER}: its PVCs would stay Pending",
            "leave driver.name out of k3s_nfs_csi_chart_values",
        )

    labels = {
        "k3s_nfs_csi_release_name": release_name,
        "k3s_nfs_csi_namespace": namespace,
        "k3s_nfs_csi_smoke_namespace": smoke_namespace,
        "k3s_nfs_csi_smoke_name": smoke_name,
    }
    extra_parameters = extra_parameters if isinstance(extra_parameters, Mapping) else {}
    found = check_storage_class(storage_class, exports=exports, labels=labels)
    for where, why in found.items():
        if where in labels:
            problem(f"{where}: {why}", LABEL_FIX)
        elif where.startswith("parameters.") and where[len("parameters."):] in extra_parameters:
            problem(f"k3s_nfs_csi_extra_parameters[{where[len('parameters.'):]}]: {why}", EXTRA_FIX)
        elif where in FIELDS:
            variable, fix = FIELDS[where]
            problem(f"{variable}: {why}", fix or _share_fix(nfs_group))
        else:
            problem(f"the StorageClass's {where}: {why}", "report this: the role builds that field itself")

    parameters = (storage_class or {}).get("parameters") if isinstance(storage_class, Mapping) else None
    parameters = parameters if isinstance(parameters, Mapping) else {}
    server = parameters.get("server")
    if server and "parameters.server" not in found:
        why = host_problem(server)
        if why:
            problem(f"k3s_nfs_csi_server {server!r} {why}", "give the NFS server's address or host name, e.g. 192.168.1.101")
    share = parameters.get("share")
    if share and "parameters.share" not in found:
        why = path_problem(share)
        if why:
            problem(f"k3s_nfs_csi_share {share!r} {why}", "give the export's Pseudo path, e.g. /gv0")

    options = (storage_class or {}).get("mountOptions") if isinstance(storage_class, Mapping) else None
    versions = []
    for option in options or []:
        if not isinstance(option, str) or not option or re.search(r"\s", option):
            problem(f"k3s_nfs_csi_mount_options entry {option!r} is not a mount option", "write one option per entry, e.g. nfsvers=4.1")
            continue
        name, _eq, value = option.partition("=")
        if name in ("nfsvers", "vers"):
            if value not in NFS_VERSIONS:
                problem(
                    f"k3s_nfs_csi_mount_options entry {option!r} is not an NFS version ({', '.join(NFS_VERSIONS)})",
                    "keep the default nfsvers=4.1",
                )
            else:
                versions.append(value)
    if len(versions) > 1:
        problem(f"k3s_nfs_csi_mount_options gives the NFS version {len(versions)} times", "give nfsvers once")
    elif versions and exports and share:
        served = set()
        for export in exports:
            if isinstance(export, Mapping) and export.get("pseudo") == share:
                served.update(str(to_int(p)) for p in (export.get("protocols") or (3, 4)))
        major = versions[0].split(".", 1)[0]
        if served and major not in served:
            problem(
                f"k3s_nfs_csi_mount_options asks for NFS version {versions[0]}, which the NFS-Ganesha export {share} does not "
                f"serve (its protocols: {', '.join(sorted(served))})",
                "ask for a version the export serves, e.g. nfsvers=4.1",
            )

    why = image_reference_problem(smoke_image)
    if why:
        problem(f"k3s_nfs_csi_smoke_image {smoke_image!r} {why}", "keep the default docker.io/library/busybox:1.36 or its mirror")
    for variable, value in (
        ("k3s_nfs_csi_smoke_retries", smoke_retries),
        ("k3s_nfs_csi_smoke_delay", smoke_delay),
        ("k3s_nfs_csi_apply_timeout", apply_timeout),
    ):
        number = to_int(value)
        if number is None or number < 1:
            problem(f"{variable} {value!r} is not a number of at least 1", "keep its default")
    for variable, value in (("k3s_nfs_csi_k3s_binary", k3s_binary), ("k3s_nfs_csi_kubeconfig", kubeconfig)):
        why = path_problem(value)
        if why:
            problem(f"{variable} {value!r} {why}", "keep its default (K3s's install script puts them there)")
    return problems


class FilterModule:
    """The k3s_nfs_csi role's checks of its input."""

    def filters(self):
        return {"k3s_nfs_csi_problems": k3s_nfs_csi_problems}
