"""Offline validation of the k3s_nfs_csi role's manifests (no K3s, no API server).

StorageClass, PersistentVolumeClaim and Deployment are validated with kubernetes-validate against the
Kubernetes OpenAPI schemas of KUBERNETES_VERSIONS, strict (unknown fields are errors). 1.31 is the
oldest K3s minor the role is meant for; 1.37 is the newest schema kubernetes-validate 1.37.0 ships.
The HelmChart is validated with jsonschema against tests/unit/fixtures/k8s/helmchart-helm.cattle.io-v1.json, a schema
WRITTEN BY HAND from K3s's helm-controller CRD, and its chart values against a hand-written list of the csi-driver-nfs
chart's value keys (csi-driver-nfs-4.13.4-values-keys.json): neither was captured from the upstream files, which this
repository does not keep. Where HPCLAB_HELM_CONTROLLER_CRD and HPCLAB_CSI_DRIVER_NFS_VALUES name the real files
(helm-controller's helm.cattle.io_helmcharts.yaml, the chart's values.yaml or .tgz; tests/unit/fixtures/k8s/README.md),
the tests marked "real" check the rendered HelmChart against the real CRD (k8s_crd.py: group, version and kind, the
openAPIV3Schema, and every field declared, since the API server prunes an undeclared field silently) and the two
hand-written files against their sources; without them those tests are skipped. Not proved here either way: the CRD's
CEL rules, and what helm-controller and Helm make of the chart at run time (no K3s can run on these machines).
"""

from __future__ import annotations

import base64
import copy
import gzip
import io
import tarfile

import jsonschema
import kubernetes_validate
import pytest
import yaml
from k8s_crd import undeclared_fields, unknown_values

from ansible_collections.hpclab.cluster.plugins.filter.k8s_storageclass_check import SIDECAR_PARAMETERS

KUBERNETES_VERSIONS = ("1.31.0", "1.37.0")
TEMPLATES = ("helmchart.yaml.j2", "storageclass.yaml.j2", "smoke-pvc.yaml.j2", "smoke-deployment.yaml.j2")
KUBERNETES_TEMPLATES = ("storageclass.yaml.j2", "smoke-pvc.yaml.j2", "smoke-deployment.yaml.j2")

VARIATIONS = {
    "defaults": {},
    "every StorageClass option": {
        "k3s_nfs_csi_storage_class_name": "nfs.hpclab",
        "k3s_nfs_csi_sub_dir": "${pvc.metadata.namespace}/${pvc.metadata.name}",
        "k3s_nfs_csi_mount_permissions": "0777",
        "k3s_nfs_csi_on_delete": "archive",
        "k3s_nfs_csi_mount_options": ["nfsvers=4.1", "hard"],
        "k3s_nfs_csi_reclaim_policy": "Retain",
        "k3s_nfs_csi_volume_binding_mode": "WaitForFirstConsumer",
        "k3s_nfs_csi_allow_volume_expansion": False,
        "k3s_nfs_csi_default_class": True,
        "k3s_nfs_csi_extra_parameters": {
            "csi.storage.k8s.io/provisioner-secret-name": "mount-options",
            "csi.storage.k8s.io/provisioner-secret-namespace": "kube-system",
        },
        "k3s_nfs_csi_smoke_namespace": "smoke",
        "k3s_nfs_csi_smoke_name": "pvc-probe",
    },
}


def _chart_tarball():
    """A minimal chart .tgz, as an admin would ship for an air-gapped site."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"apiVersion: v2\nname: csi-driver-nfs\nversion: 4.13.4\n"
        info = tarfile.TarInfo("csi-driver-nfs/Chart.yaml")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# --- every template -------------------------------------------------------------------------------


@pytest.mark.parametrize("template", TEMPLATES)
def test_template_starts_with_ansible_managed(role, template):
    text = role.render_text(template)
    assert text.splitlines()[:3] == ["#", "# Ansible managed", "#"]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("variation", VARIATIONS)
@pytest.mark.parametrize("template", KUBERNETES_TEMPLATES)
def test_manifest_is_valid_kubernetes(role, template, variation, version):
    obj = role.render(template, extra=VARIATIONS[variation])
    assert kubernetes_validate.validate(obj, version, strict=True) == version.rsplit(".", 1)[0]


def test_schema_validation_catches_a_misspelt_field(role):
    """Guard the guard: strict schemas must reject what the API server would prune."""
    obj = role.render("storageclass.yaml.j2")
    obj["reclaimPolicies"] = obj.pop("reclaimPolicy")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(obj, KUBERNETES_VERSIONS[0], strict=True)


# --- StorageClass ---------------------------------------------------------------------------------


def test_storageclass_defaults_come_from_the_nfs_ganesha_host(role):
    sc = role.render("storageclass.yaml.j2")
    assert sc["metadata"]["name"] == "nfs-csi"
    assert sc["provisioner"] == "nfs.csi.k8s.io"
    assert sc["parameters"] == {"server": "192.168.1.101", "share": "/gv0", "onDelete": "delete"}
    assert sc["mountOptions"] == ["nfsvers=4.1"]
    assert sc["reclaimPolicy"] == "Delete"
    assert sc["volumeBindingMode"] == "Immediate"
    assert sc["allowVolumeExpansion"] is True
    assert not sc["metadata"].get("annotations")


def test_server_is_the_host_name_without_ansible_host(role):
    hosts = {"storage1": {"nfs_ganesha_exports": [{"export_id": 7, "volume": "data", "pseudo": "/data",
                                                   "squash": "no_root_squash"}]}}
    sc = role.render("storageclass.yaml.j2", nfs_hosts=hosts)
    assert sc["parameters"]["server"] == "storage1"
    assert sc["parameters"]["share"] == "/data"


def test_share_is_the_first_export_of_the_first_nfs_host(role):
    first = {"ansible_host": "10.0.0.5", "nfs_ganesha_exports": [
        {"export_id": 2, "volume": "gv1", "pseudo": "/gv1", "squash": "no_root_squash"},
        {"export_id": 1, "volume": "gv0", "pseudo": "/gv0", "squash": "no_root_squash"},
    ]}
    second = {"ansible_host": "10.0.0.6", "nfs_ganesha_exports": [{"export_id": 3, "volume": "x", "pseudo": "/x"}]}
    sc = role.render("storageclass.yaml.j2", nfs_hosts={"nfs-a": first, "nfs-b": second})
    assert sc["parameters"]["server"] == "10.0.0.5"
    assert sc["parameters"]["share"] == "/gv1"


def test_storageclass_options_are_rendered_as_strings_where_kubernetes_wants_strings(role):
    sc = role.render("storageclass.yaml.j2", extra=VARIATIONS["every StorageClass option"])
    assert sc["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    params = sc["parameters"]
    assert params["subDir"] == "${pvc.metadata.namespace}/${pvc.metadata.name}"
    assert params["mountPermissions"] == "0777"  # a YAML string, not the number 777 or 511
    assert params["onDelete"] == "archive"
    assert set(params) == {"server", "share", "subDir", "mountPermissions", "onDelete", *SIDECAR_PARAMETERS}
    assert all(isinstance(v, str) for v in params.values())
    assert sc["reclaimPolicy"] == "Retain"
    assert sc["volumeBindingMode"] == "WaitForFirstConsumer"
    assert sc["allowVolumeExpansion"] is False


def test_storageclass_file_is_what_the_preflight_checks(role):
    extra = VARIATIONS["every StorageClass option"]
    assert role.render("storageclass.yaml.j2", extra=extra) == role.evaluate("__k3s_nfs_csi_storage_class", extra=extra)


# --- HelmChart ------------------------------------------------------------------------------------

PRIVATE_REGISTRY = {
    "k3s_nfs_csi_image_base_repo": "registry.lab:5000",
    "k3s_nfs_csi_controller_replicas": 2,
    "k3s_nfs_csi_driver_mount_permissions": "0755",
    "k3s_nfs_csi_kubelet_dir": "/var/lib/kubelet",
    "k3s_nfs_csi_chart_values": {
        "imagePullSecrets": [{"name": "lab-registry"}],
        "image": {"csiProvisioner": {"repository": "/mirror/csi-provisioner"}},
        "controller": {"runOnControlPlane": True},
    },
}


def _shipped_chart(tarball):
    return {
        "k3s_nfs_csi_chart_file": "/srv/charts/csi-driver-nfs-4.13.4.tgz",
        "__k3s_nfs_csi_chart_tarball": {"content": base64.b64encode(tarball).decode(), "encoding": "base64"},
    }


HELMCHARTS = {"from the repository": {}, "private registry": PRIVATE_REGISTRY, "shipped chart": _shipped_chart(_chart_tarball())}

# What an API server with the HelmChart CRD refuses (a wrong type or enum value) or prunes (an undeclared field).
REFUSED_OR_PRUNED = [
    {"valueContent": "x: 1"},  # misspelt field
    {"valuesContnet": "x: 1"},  # misspelt field
    {"authSecret": {"nmae": "repo-auth"}},  # misspelt field one level down
    {"failurePolicy": "Retry"},  # the CRD's enum is abort, reinstall, retry
    {"serverSide": True},  # the CRD's enum is the strings "true", "false", "auto"
    {"createNamespace": "yes"},
    {"version": 4.13},
    {"set": {"controller.replicas": 1.5}},  # integer or string
]

# What the CRD accepts though the role never sets it: the hand-written schema must not be stricter than the CRD.
ACCEPTED = [
    {"failurePolicy": "retry"},
    {"serverSide": "auto", "forceConflicts": True, "takeOwnership": True, "driver": "configmap"},
    {"values": {"controller": {"replicas": 2}}, "set": {"controller.replicas": 2, "driver.name": "nfs.csi.k8s.io"}},
    {"targetNamespace": "Kube_System"},  # no pattern in the CRD: Helm refuses it later, the API server does not
    {"chart": ""},
]


def test_helmchart_from_the_repository(role, helmchart_schema):
    hc = role.render("helmchart.yaml.j2")
    jsonschema.validate(hc, helmchart_schema)
    assert hc["apiVersion"] == "helm.cattle.io/v1" and hc["kind"] == "HelmChart"
    assert hc["metadata"] == {"name": "csi-driver-nfs", "namespace": "kube-system"}
    spec = hc["spec"]
    assert spec["chart"] == "csi-driver-nfs"
    assert spec["repo"] == "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts"
    assert spec["version"] == "4.13.4"  # a string, no 'v' prefix since chart 4.11.0
    assert spec["targetNamespace"] == "kube-system"
    assert "chartContent" not in spec


def test_helmchart_values(role):
    values = yaml.safe_load(role.render("helmchart.yaml.j2")["spec"]["valuesContent"])
    assert values == {
        "image": {"baseRepo": "registry.k8s.io", "nfs": {"repository": "registry.k8s.io/sig-storage/nfsplugin"}},
        "kubeletDir": "/var/lib/kubelet",
        "controller": {"replicas": 1},
        "driver": {"mountPermissions": "0"},
    }


def test_helmchart_values_for_a_private_registry(role, helmchart_schema, chart_value_keys):
    """chart_value_keys is written by hand (test_hand_written_value_keys_match_the_real_values_yaml checks it)."""
    hc = role.render("helmchart.yaml.j2", extra=PRIVATE_REGISTRY)
    jsonschema.validate(hc, helmchart_schema)
    values = yaml.safe_load(hc["spec"]["valuesContent"])
    assert values["image"]["baseRepo"] == "registry.lab:5000"
    assert values["image"]["nfs"]["repository"] == "registry.lab:5000/sig-storage/nfsplugin"
    assert values["image"]["csiProvisioner"] == {"repository": "/mirror/csi-provisioner"}
    assert values["controller"] == {"replicas": 2, "runOnControlPlane": True}
    assert values["driver"]["mountPermissions"] == "0755"
    # Helm ignores misspelt values silently: every value set must be a key of the chart's values.yaml.
    assert unknown_values(values, chart_value_keys) == []


def test_chart_values_check_catches_a_misspelt_value(role, chart_value_keys):
    extra = {"k3s_nfs_csi_chart_values": {"controller": {"replica": 2, "affinity": {"nodeAffinity": {}}},
                                          "imagePullSecret": [{"name": "lab-registry"}]}}
    values = yaml.safe_load(role.render("helmchart.yaml.j2", extra=extra)["spec"]["valuesContent"])
    assert unknown_values(values, chart_value_keys) == ["controller.replica", "imagePullSecret"]


def test_helmchart_with_a_shipped_chart(role, helmchart_schema):
    tarball = _chart_tarball()
    hc = role.render("helmchart.yaml.j2", extra=_shipped_chart(tarball))
    jsonschema.validate(hc, helmchart_schema)
    spec = hc["spec"]
    assert "repo" not in spec and "version" not in spec and "chart" not in spec
    assert gzip.decompress(base64.b64decode(spec["chartContent"], validate=True)) == gzip.decompress(tarball)


@pytest.mark.parametrize("change", REFUSED_OR_PRUNED)
def test_helmchart_schema_rejects_what_the_api_server_rejects_or_prunes(role, helmchart_schema, change):
    """The hand-written schema; the same changes against the real CRD: test_real_crd_rejects_..."""
    hc = copy.deepcopy(role.render("helmchart.yaml.j2"))
    hc["spec"].update(change)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(hc, helmchart_schema)


@pytest.mark.parametrize("change", ACCEPTED)
def test_helmchart_schema_accepts_what_the_crd_accepts(role, helmchart_schema, change):
    hc = copy.deepcopy(role.render("helmchart.yaml.j2"))
    hc["spec"].update(change)
    jsonschema.validate(hc, helmchart_schema)


@pytest.mark.parametrize("change", [{"apiVersion": "helm.cattle.io/v2"}, {"kind": "Helmchart"}, {"status": {"jobNmae": "x"}}])
def test_helmchart_schema_checks_the_object_beyond_its_spec(role, helmchart_schema, change):
    hc = copy.deepcopy(role.render("helmchart.yaml.j2"))
    hc.update(change)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(hc, helmchart_schema)


# --- HelmChart against the real upstream files (skipped unless HPCLAB_HELM_CONTROLLER_CRD / HPCLAB_CSI_DRIVER_NFS_VALUES) --


@pytest.mark.parametrize("helmchart", HELMCHARTS)
def test_helmchart_against_the_real_crd(role, real_helmchart_crd, helmchart):
    hc = role.render("helmchart.yaml.j2", extra=HELMCHARTS[helmchart])
    real_helmchart_crd.validate(hc)
    assert undeclared_fields(hc["spec"], real_helmchart_crd.schema("v1")["properties"]["spec"]) == []


def test_real_crd_check_catches_a_misspelt_field(role, real_helmchart_crd):
    """Guard the guard: the CRD's schema alone accepts spec.valuesContnet (a structural schema does not forbid
    unknown fields; the API server prunes them), so the declared-fields walk must be what rejects it."""
    hc = copy.deepcopy(role.render("helmchart.yaml.j2"))
    hc["spec"]["valuesContnet"] = hc["spec"].pop("valuesContent")
    jsonschema.Draft4Validator(real_helmchart_crd.schema("v1")).validate(hc)  # the plain schema lets it through
    with pytest.raises(jsonschema.ValidationError, match=r"spec\.valuesContnet"):
        real_helmchart_crd.validate(hc)


@pytest.mark.parametrize("change", REFUSED_OR_PRUNED)
def test_real_crd_rejects_what_the_api_server_rejects_or_prunes(role, real_helmchart_crd, change):
    hc = copy.deepcopy(role.render("helmchart.yaml.j2"))
    hc["spec"].update(change)
    with pytest.raises(jsonschema.ValidationError):
        real_helmchart_crd.validate(hc)


@pytest.mark.parametrize("change", ACCEPTED)
def test_real_crd_accepts(role, real_helmchart_crd, change):
    hc = copy.deepcopy(role.render("helmchart.yaml.j2"))
    hc["spec"].update(change)
    real_helmchart_crd.validate(hc)


@pytest.mark.parametrize(
    "change",
    [{"apiVersion": "helm.cattle.io/v2"}, {"apiVersion": "helm.k3s.io/v1"}, {"kind": "Helmchart"},
     {"metadata": {"namespace": "kube-system"}}, {"status": {"jobNmae": "x"}}],
)
def test_real_crd_checks_the_object_beyond_its_spec(role, real_helmchart_crd, change):
    hc = copy.deepcopy(role.render("helmchart.yaml.j2"))
    hc.update(change)
    with pytest.raises(jsonschema.ValidationError):
        real_helmchart_crd.validate(hc)


def _declared(schema):
    """{path: (type, enum)} of every property below schema, as far as the hand-written schema goes into it."""
    found = {}
    for name, prop in (schema.get("properties") or {}).items():
        found[name] = (prop.get("type"), prop.get("enum"))
        for sub, value in _declared(prop.get("items") or prop).items():
            found[name + "." + sub] = value
    return found


def test_hand_written_schema_declares_what_the_real_crd_declares(helmchart_schema, real_helmchart_crd):
    real = real_helmchart_crd.schema("v1")["properties"]
    for part in ("spec", "status"):
        mine = _declared(helmchart_schema["properties"][part])
        theirs = _declared(real[part])
        # podSecurityContext and securityContext are only checked to be objects by the hand-written schema.
        theirs = {k: v for k, v in theirs.items() if k in mine or not k.startswith(("podSecurityContext.", "securityContext."))}
        assert mine == theirs, part
    assert helmchart_schema["properties"]["apiVersion"]["const"] == "%s/v1" % real_helmchart_crd.group
    assert helmchart_schema["properties"]["kind"]["const"] == real_helmchart_crd.kind


# Keys the chart's templates read that its values.yaml names in comments only.
TEMPLATE_ONLY_KEYS = {"storageClasses"}


def _all_paths(values, prefix=""):
    for key, value in values.items():
        yield prefix + str(key)
        if isinstance(value, dict):
            yield from _all_paths(value, prefix + str(key) + ".")


def test_hand_written_value_keys_match_the_real_values_yaml(chart_value_keys, real_chart_values):
    assert real_chart_values["image"]["nfs"]["tag"] == "v4.13.4"
    assert unknown_values(real_chart_values, chart_value_keys) == []  # every key of values.yaml is allowed
    assert sorted(set(chart_value_keys) - set(_all_paths(real_chart_values))) == sorted(TEMPLATE_ONLY_KEYS)


# --- smoke test -----------------------------------------------------------------------------------


def test_smoke_pvc_is_the_reference_designs(role):
    pvc = role.render("smoke-pvc.yaml.j2")
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["spec"]["resources"]["requests"]["storage"] == "100Mi"
    assert pvc["spec"]["storageClassName"] == "nfs-csi"
    assert pvc["metadata"]["namespace"] == "default"


@pytest.mark.parametrize("variation", VARIATIONS)
def test_smoke_deployment_mounts_the_smoke_pvc(role, variation):
    extra = VARIATIONS[variation]
    pvc = role.render("smoke-pvc.yaml.j2", extra=extra)
    dep = role.render("smoke-deployment.yaml.j2", extra=extra)
    pod = dep["spec"]["template"]
    assert dep["metadata"]["namespace"] == pvc["metadata"]["namespace"]
    assert pvc["spec"]["storageClassName"] == role.evaluate("k3s_nfs_csi_storage_class_name", extra=extra)
    assert pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
    assert pod["spec"]["containers"][0]["volumeMounts"][0]["name"] == pod["spec"]["volumes"][0]["name"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()


# --- preflight ------------------------------------------------------------------------------------
# The role's call of k3s_nfs_csi_problems (vars/main.yml) with its own variables; the rules themselves are
# tested in tests/unit/plugins/filter/test_k3s_nfs_csi_problems.py.

ON_A_K3S_SERVER = {"__k3s_nfs_csi_manifests_stat": {"stat": {"isdir": True}}}


def problems(role, extra=None, **kwargs):
    return role.evaluate("__k3s_nfs_csi_problems", extra={**ON_A_K3S_SERVER, **(extra or {})}, **kwargs)


def test_preflight_accepts_the_defaults_and_every_option(role):
    assert problems(role) == []
    assert problems(role, extra=VARIATIONS["every StorageClass option"]) == []


def test_preflight_refuses_a_host_without_the_manifests_directory(role):
    found = role.evaluate("__k3s_nfs_csi_problems", extra={"__k3s_nfs_csi_manifests_stat": {"stat": {"exists": False}}})
    assert len(found) == 1 and "k3s1: the host has no directory /var/lib/rancher/k3s/server/manifests" in found[0], found


@pytest.mark.parametrize(
    ("extra", "variable"),
    [
        ({"k3s_nfs_csi_extra_parameters": {"readOnly": "true"}}, "k3s_nfs_csi_extra_parameters[readOnly]"),
        ({"k3s_nfs_csi_extra_parameters": {"Share": "/gv0"}}, "k3s_nfs_csi_extra_parameters[Share]"),
        ({"k3s_nfs_csi_extra_parameters": {"onDelete": "purge"}}, "k3s_nfs_csi_extra_parameters[onDelete]"),
        ({"k3s_nfs_csi_mount_permissions": "0o755"}, "k3s_nfs_csi_mount_permissions"),
        ({"k3s_nfs_csi_mount_permissions": 493}, "k3s_nfs_csi_mount_permissions"),
        ({"k3s_nfs_csi_sub_dir": "${pvc.name}"}, "k3s_nfs_csi_sub_dir"),
        ({"k3s_nfs_csi_storage_class_name": "NFS_csi"}, "k3s_nfs_csi_storage_class_name"),
        ({"k3s_nfs_csi_share": "/gv1"}, "k3s_nfs_csi_share"),
        ({"k3s_nfs_csi_share": "gv0"}, "k3s_nfs_csi_share"),
        ({"k3s_nfs_csi_server": ""}, "k3s_nfs_csi_server"),
        ({"k3s_nfs_csi_server": "nfs://pi1"}, "k3s_nfs_csi_server"),
        ({"k3s_nfs_csi_namespace": "kube.system"}, "k3s_nfs_csi_namespace"),
        ({"k3s_nfs_csi_release_name": "csi-driver-nfs-" + "x" * 50}, "k3s_nfs_csi_release_name"),
        ({"k3s_nfs_csi_smoke_name": "Smoke"}, "k3s_nfs_csi_smoke_name"),
        ({"k3s_nfs_csi_smoke_namespace": "-default"}, "k3s_nfs_csi_smoke_namespace"),
        ({"k3s_nfs_csi_chart_version": "v4.13.4"}, "k3s_nfs_csi_chart_version"),
        ({"k3s_nfs_csi_chart_version": 4.13}, "k3s_nfs_csi_chart_version"),
        ({"k3s_nfs_csi_chart_file": "/nonexistent/csi-driver-nfs-4.13.4.tgz"}, "k3s_nfs_csi_chart_file"),
        ({"k3s_nfs_csi_image_base_repo": "https://registry.lab"}, "k3s_nfs_csi_image_base_repo"),
        ({"k3s_nfs_csi_kubelet_dir": "/var/lib/kubelet/"}, "k3s_nfs_csi_kubelet_dir"),
        ({"k3s_nfs_csi_controller_replicas": 0}, "k3s_nfs_csi_controller_replicas"),
        ({"k3s_nfs_csi_driver_mount_permissions": 755}, "k3s_nfs_csi_driver_mount_permissions"),
        ({"k3s_nfs_csi_chart_values": {"kubeletDir": "var/lib/kubelet"}}, "k3s_nfs_csi_chart_values.kubeletDir"),
        ({"k3s_nfs_csi_mount_options": ["nfsvers=5"]}, "k3s_nfs_csi_mount_options"),
        ({"k3s_nfs_csi_smoke_image": "busybox:"}, "k3s_nfs_csi_smoke_image"),
        ({"k3s_nfs_csi_smoke_delay": 0}, "k3s_nfs_csi_smoke_delay"),
        ({"k3s_nfs_csi_apply_timeout": 0}, "k3s_nfs_csi_apply_timeout"),
        ({"k3s_nfs_csi_kubeconfig": "k3s.yaml"}, "k3s_nfs_csi_kubeconfig"),
    ],
)
def test_preflight_names_the_host_the_variable_and_the_fix(role, extra, variable):
    found = problems(role, extra=extra)
    assert len(found) == 1, found
    assert found[0].startswith("k3s1: ") and variable in found[0] and ". Fix: " in found[0], found


def test_preflight_refuses_a_root_squashed_export(role):
    hosts = {"pi1": {"nfs_ganesha_exports": [{"export_id": 1, "volume": "gv0", "pseudo": "/gv0"}]}}
    found = problems(role, nfs_hosts=hosts)
    assert len(found) == 1 and "k3s_nfs_csi_share" in found[0] and "squashes root" in found[0], found


def test_preflight_refuses_an_nfs_version_the_export_does_not_serve(role):
    hosts = {"pi1": {"nfs_ganesha_exports": [{"export_id": 1, "volume": "gv0", "pseudo": "/gv0", "squash": "no_root_squash",
                                              "protocols": [3]}]}}
    found = problems(role, nfs_hosts=hosts)
    assert len(found) == 1 and "asks for NFS version 4.1, which the NFS-Ganesha export /gv0 does not serve" in found[0], found
    assert problems(role, nfs_hosts=hosts, extra={"k3s_nfs_csi_mount_options": ["nfsvers=3"]}) == []


def test_preflight_finds_the_share_on_any_nfs_host(role):
    hosts = {
        "pi1": {"nfs_ganesha_exports": [{"export_id": 1, "volume": "gv0", "pseudo": "/gv0", "squash": "no_root_squash"}]},
        "pi2": {"nfs_ganesha_exports": [{"export_id": 2, "volume": "gv1", "pseudo": "/gv1", "squash": "no_root_squash"}]},
    }
    assert problems(role, nfs_hosts=hosts, extra={"k3s_nfs_csi_share": "/gv1"}) == []


def test_preflight_without_exports_in_the_inventory(role):
    """The nfs_ganesha role's default exports are not visible to other hosts: the share is empty."""
    found = problems(role, nfs_hosts={"pi1": {"ansible_host": "192.168.1.101"}})
    assert len(found) == 1 and "k3s_nfs_csi_share: is required and empty" in found[0], found
    assert "group_vars/nfs_ganesha.yml" in found[0]


def test_preflight_without_an_nfs_ganesha_group_checks_no_export(role):
    extra = {"k3s_nfs_csi_server": "nfs.example.org", "k3s_nfs_csi_share": "/exports/k8s"}
    assert role.evaluate("__k3s_nfs_csi_exports", nfs_hosts={}) is None
    assert problems(role, nfs_hosts={}, extra=extra) == []
    found = problems(role, nfs_hosts={})
    assert [p.split(":", 2)[1].strip() for p in found] == ["k3s_nfs_csi_server", "k3s_nfs_csi_share"], found


# --- role interface -------------------------------------------------------------------------------


def test_defaults_and_argument_specs_have_the_same_keys(role):
    specs = yaml.safe_load((role.role_dir / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    assert sorted(specs["argument_specs"]["main"]["options"]) == sorted(role.defaults)
