# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: k8s_storageclass_check
short_description: Find what Kubernetes or csi-driver-nfs would reject in an nfs.csi.k8s.io StorageClass
version_added: 0.1.0
description:
  - Checks a StorageClass for the csi-driver-nfs provisioner C(nfs.csi.k8s.io) before it is written,
    so that a role can fail with its own message instead of leaving a PVC Pending.
  - The name must be a DNS-1123 subdomain. Parameter keys must be those the driver knows (C(server),
    C(share), C(subDir), C(mountPermissions), C(onDelete), compared without case as the driver does, each
    at most once) or the two C(csi.storage.k8s.io/provisioner-secret-*) keys that the external-provisioner
    sidecar consumes. The driver answers any other key with C(invalid parameter in storage class).
  - C(server) and C(share) must be set, C(share) an absolute path, C(onDelete) one of C(delete),
    C(retain), C(archive), C(mountPermissions) an octal string, C(subDir) may only use the
    C(${pvc.metadata.name}), C(${pvc.metadata.namespace}) and C(${pv.metadata.name}) placeholders.
  - "A C(subDir) that is set must be a relative path without empty, C(.) or C(..) segments, and name a directory
    of each volume's own: it holds C(${pv.metadata.name}), or C(${pvc.metadata.namespace}) and
    C(${pvc.metadata.name}) in separate path segments. The driver's DeleteVolume removes the volume's whole
    directory, so a constant such as C(data), or C(${pvc.metadata.name}) alone (the same in every namespace),
    would let the deletion of one PVC remove the data of others. Unset (or empty), the driver uses the PV name."
  - With O(exports), C(share) must be the Pseudo path of one of those NFS-Ganesha exports, and that export
    must not squash root (the driver's controller creates and removes volume directories as root).
  - With O(labels), each value must be a DNS-1123 label (namespaces, names of namespaced objects).
  - Never raises on bad input; the result says what is wrong, keyed by where, so the caller can name
    its own variables. The k3s_nfs_csi role does so with P(hpclab.cluster.k3s_nfs_csi_problems#filter), which
    runs this check among its rules.
options:
  _input:
    description: The StorageClass as a dict (apiVersion, kind, metadata, provisioner, parameters, ...).
    type: dict
    required: true
  exports:
    description:
      - NFS-Ganesha exports (dicts with at least C(pseudo), optionally C(squash)) the share must be one of.
      - Omit (or null) to skip that check; an empty list means no export is known, which is an error.
    type: list
    elements: dict
  labels:
    description: Other names that must be DNS-1123 labels, as a dict of what each is to its value.
    type: dict
"""

EXAMPLES = r"""
- name: Refuse a StorageClass the driver would reject
  ansible.builtin.assert:
    that: (storage_class | hpclab.cluster.k8s_storageclass_check) | length == 0
# {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "nfs-csi"},
#  "provisioner": "nfs.csi.k8s.io",
#  "parameters": {"server": "192.168.1.101", "share": "/gv0", "onDelete": "purge", "readOnly": "true"}}
#   | hpclab.cluster.k8s_storageclass_check(exports=[{"pseudo": "/gv0", "squash": "no_root_squash"}],
#                                           labels={"namespace": "kube_system"})
# => {"parameters.onDelete": "'purge' is not one of delete, retain, archive",
#     "parameters.readOnly": "unknown parameter 'readOnly'; csi-driver-nfs accepts only server, share, subDir,
#                             mountPermissions, onDelete (and csi.storage.k8s.io/provisioner-secret-name/-namespace)",
#     "namespace": "'kube_system' is not a DNS-1123 label: at most 63 characters, lowercase letters, digits and '-',
#                   starting and ending with a letter or digit"}
"""

RETURN = r"""
_value:
  description:
    - What is wrong, as a dict from where (C(metadata.name), C(provisioner), C(parameters.<key>), or a key of
      O(labels)) to why. Empty when the StorageClass and the names are valid.
  type: dict
"""

import re

DRIVER_PARAMETERS = ("server", "share", "subDir", "mountPermissions", "onDelete")
# Consumed (and stripped) by the external-provisioner sidecar, never seen by the driver: the workaround
# for DeleteVolume's missing mountOptions (kubernetes-csi/csi-driver-nfs#260).
SIDECAR_PARAMETERS = (
    "csi.storage.k8s.io/provisioner-secret-name",
    "csi.storage.k8s.io/provisioner-secret-namespace",
)
ON_DELETE = ("delete", "retain", "archive")
SUBDIR_PLACEHOLDERS = ("${pvc.metadata.name}", "${pvc.metadata.namespace}", "${pv.metadata.name}")
SUBDIR_EXAMPLE = "${pvc.metadata.namespace}/${pvc.metadata.name}"
PROVISIONER = "nfs.csi.k8s.io"

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_OCTAL = re.compile(r"^0?[0-7]{1,4}$")
_PLACEHOLDER = re.compile(r"\$\{[^}]*\}")
_LABEL_RULE = "at most 63 characters, lowercase letters, digits and '-', starting and ending with a letter or digit"
_SUBDOMAIN_RULE = (
    "at most 253 characters, dot-separated parts of lowercase letters, digits and '-', "
    "each starting and ending with a letter or digit"
)


def is_dns1123_label(value):
    """True for a DNS-1123 label (Kubernetes namespaces and most namespaced object names)."""
    return isinstance(value, str) and len(value) <= 63 and bool(_LABEL.match(value))


def is_dns1123_subdomain(value):
    """True for a DNS-1123 subdomain (names of StorageClasses and other cluster-scoped objects)."""
    return isinstance(value, str) and len(value) <= 253 and bool(_SUBDOMAIN.match(value))


def _check_parameters(params, exports):
    problems = {}
    if not isinstance(params, dict):
        return {"parameters": "must be a dict of strings, got %r" % (params,)}
    seen = {}
    for key, value in params.items():
        where = "parameters.%s" % key
        canonical = next((k for k in DRIVER_PARAMETERS if k.lower() == str(key).lower()), None)
        if canonical is None and key not in SIDECAR_PARAMETERS:
            problems[where] = "unknown parameter %r; csi-driver-nfs accepts only %s (and %s)" % (
                key,
                ", ".join(DRIVER_PARAMETERS),
                "csi.storage.k8s.io/provisioner-secret-name/-namespace",
            )
            continue
        if canonical is not None and canonical in seen:
            problems[where] = "sets %s a second time (already set as %r); the driver ignores case, keep one" % (
                canonical,
                seen[canonical],
            )
            continue
        if not isinstance(value, str):
            problems[where] = "must be a string (quote it), got %r" % (value,)
            continue
        if canonical is not None:
            seen[canonical] = key
    values = {canonical: params[key] for canonical, key in seen.items()}

    for required in ("server", "share"):
        if not values.get(required):
            problems.setdefault("parameters.%s" % required, "is required and empty")
    share = values.get("share")
    if share and not share.startswith("/"):
        problems["parameters.%s" % seen["share"]] = "%r is not an absolute path" % share
    elif share and exports is not None:
        matching = [e for e in exports if isinstance(e, dict) and e.get("pseudo") == share]
        known = sorted({str(e.get("pseudo")) for e in exports if isinstance(e, dict)})
        if not matching:
            problems["parameters.%s" % seen["share"]] = "%r is not the Pseudo path of any NFS-Ganesha export (known: %s)" % (
                share,
                ", ".join(known) or "none",
            )
        elif all(e.get("squash", "root_squash") != "no_root_squash" for e in matching):
            problems["parameters.%s" % seen["share"]] = (
                "the NFS-Ganesha export %r squashes root (%s); the csi-driver-nfs controller creates and removes "
                "volume directories as root and would fail" % (share, matching[0].get("squash", "root_squash"))
            )
    on_delete = values.get("onDelete")
    if on_delete is not None and on_delete not in ON_DELETE:
        problems["parameters.%s" % seen["onDelete"]] = "%r is not one of %s" % (on_delete, ", ".join(ON_DELETE))
    perms = values.get("mountPermissions")
    if perms is not None and not _OCTAL.match(perms):
        problems["parameters.%s" % seen["mountPermissions"]] = (
            "%r is not an octal mode string such as '0' (no chmod), '0755' or '0777' "
            "(quote it: YAML reads an unquoted 0755 as the number 493)" % perms
        )
    sub_dir = values.get("subDir")
    if sub_dir is not None:
        unknown = [p for p in _PLACEHOLDER.findall(sub_dir) if p not in SUBDIR_PLACEHOLDERS]
        if unknown:
            problems["parameters.%s" % seen["subDir"]] = "%r uses %s; only %s are replaced" % (
                sub_dir,
                ", ".join(unknown),
                ", ".join(SUBDIR_PLACEHOLDERS),
            )
        elif sub_dir.startswith("/") or ".." in sub_dir.split("/"):
            problems["parameters.%s" % seen["subDir"]] = "%r must be a relative path inside the share" % sub_dir
        elif sub_dir and any(part in ("", ".") for part in sub_dir.split("/")):
            problems["parameters.%s" % seen["subDir"]] = (
                "%r has an empty or '.' path segment; join the segments with single '/', e.g. %s" % (sub_dir, SUBDIR_EXAMPLE)
            )
        elif sub_dir and not sub_dir_is_per_volume(sub_dir):
            problems["parameters.%s" % seen["subDir"]] = (
                "%r may name one directory for several volumes: csi-driver-nfs's DeleteVolume (onDelete delete, the "
                "default) removes the volume's directory with everything in it, so deleting one PVC would delete the "
                "data of every other PVC that shares it; use ${pv.metadata.name} (unique in the cluster), or "
                "${pvc.metadata.namespace} and ${pvc.metadata.name} in separate path segments, e.g. %s, or leave "
                "subDir unset (the PV name)" % (sub_dir, SUBDIR_EXAMPLE)
            )
    return problems


def sub_dir_is_per_volume(sub_dir):
    """True when a subDir template gives every volume a directory of its own.

    A PV name is unique in the cluster; a PVC name only within its namespace, so it needs the namespace too, and in
    another path segment: namespaces and PVC names both hold '-', so "${ns}-${name}" maps "a-b"/"c" and "a"/"b-c" to
    one directory. Neither holds '/', so separate segments cannot collide.
    """
    if "${pv.metadata.name}" in sub_dir:
        return True
    parts = sub_dir.split("/")
    namespace = [i for i, part in enumerate(parts) if "${pvc.metadata.namespace}" in part]
    name = [i for i, part in enumerate(parts) if "${pvc.metadata.name}" in part]
    return any(i != j for i in namespace for j in name)


def check_storage_class(storage_class, exports=None, labels=None):
    """Return {where: why} for everything Kubernetes or csi-driver-nfs would reject; empty if none."""
    problems = {}
    if not isinstance(storage_class, dict):
        return {"storage_class": "must be a dict, got %r" % (storage_class,)}
    name = (storage_class.get("metadata") or {}).get("name")
    if not is_dns1123_subdomain(name):
        problems["metadata.name"] = "%r is not a DNS-1123 subdomain: %s" % (name, _SUBDOMAIN_RULE)
    if storage_class.get("provisioner") != PROVISIONER:
        problems["provisioner"] = "%r is not %s" % (storage_class.get("provisioner"), PROVISIONER)
    problems.update(_check_parameters(storage_class.get("parameters") or {}, exports))
    for what, value in (labels or {}).items():
        if not is_dns1123_label(value):
            problems[what] = "%r is not a DNS-1123 label: %s" % (value, _LABEL_RULE)
    return problems


def k8s_storageclass_check(storage_class, exports=None, labels=None):
    """Filter entry point: see DOCUMENTATION."""
    return check_storage_class(storage_class, exports=exports, labels=labels)


class FilterModule:
    """Kubernetes StorageClass filters."""

    def filters(self):
        return {"k8s_storageclass_check": k8s_storageclass_check}
