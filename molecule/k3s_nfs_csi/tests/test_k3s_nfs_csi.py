"""k3s_nfs_csi on a node standing in for a K3s server, and the NFS provisioning contract of
csi-driver-nfs exercised for real against the Ganesha export of the storage layer.

K3s itself is not run here: no K3s or kube-apiserver can be installed on these machines. The role's
manifests are validated offline against the Kubernetes OpenAPI schemas (kubernetes-validate) and the
K3s HelmChart CRD's fields (tests/unit/fixtures/k8s)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from helpers import get_host, inventory_hosts, run_playbook

testinfra_hosts = inventory_hosts("k3s_server")
K3S = testinfra_hosts[0]
NFS_SERVER = inventory_hosts("nfs_ganesha")[0]
OTHER_GLUSTER = [h for h in inventory_hosts("glusterfs") if h != NFS_SERVER][0]
MANIFESTS = "/var/lib/rancher/k3s/server/manifests"
BRICK = "/bricks/gv0/brick1"
CLIENT_SCRIPT = Path(__file__).resolve().parents[2] / "_shared" / "nfs_client.py"
HELMCHART_SCHEMA = Path(__file__).resolve().parents[3] / "tests" / "unit" / "fixtures" / "k8s" / "helmchart-helm.cattle.io-v1.json"
K8S_VERSIONS = ["1.31.0", "1.37.0"]


def manifest(host, name: str) -> dict:
    return yaml.safe_load(host.file(f"{MANIFESTS}/{name}").content_string)


@pytest.fixture(scope="module")
def k3s():
    return get_host(K3S)


@pytest.fixture(scope="module")
def storage_class(k3s):
    return manifest(k3s, "storageclass-nfs-csi.yaml")


@pytest.fixture(scope="module")
def nfs(k3s, storage_class):
    """Run the libnfs client on the K3s node against the StorageClass's server and share."""
    k3s.check_output("install -d -m 0755 /opt/hpclab-test")
    k3s.run("cat > /opt/hpclab-test/nfs_client.py <<'PYEOF'\n%s\nPYEOF" % CLIENT_SCRIPT.read_text())
    params = storage_class["parameters"]

    def call(version: int, *args: str) -> str:
        return k3s.check_output("python3 /opt/hpclab-test/nfs_client.py %s %s %s " + " ".join(["%s"] * len(args)),
                                params["server"], params["share"], str(version), *args)

    return call


def test_manifests_written_0600(host):
    for name in ("csi-driver-nfs.yaml", "storageclass-nfs-csi.yaml"):
        f = host.file(f"{MANIFESTS}/{name}")
        assert (f.exists, f.mode, f.user) == (True, 0o600, "root")


def test_storage_class_points_at_the_ganesha_export(storage_class):
    assert storage_class["provisioner"] == "nfs.csi.k8s.io"
    assert storage_class["parameters"]["server"] == NFS_SERVER
    assert storage_class["parameters"]["share"] == "/gv0"


def test_storage_class_reference_settings(storage_class):
    assert (storage_class["metadata"]["name"], storage_class["reclaimPolicy"], storage_class["volumeBindingMode"]) == (
        "nfs-csi", "Delete", "Immediate")
    assert storage_class["mountOptions"] == ["nfsvers=4.1"]


def test_helmchart_pins_the_chart(k3s):
    chart = manifest(k3s, "csi-driver-nfs.yaml")
    assert (chart["apiVersion"], chart["kind"]) == ("helm.cattle.io/v1", "HelmChart")
    assert (chart["spec"]["chart"], chart["spec"]["version"], chart["spec"]["targetNamespace"]) == (
        "csi-driver-nfs", "4.13.4", "kube-system")


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_storage_class_valid_against_kubernetes_schema(storage_class, version):
    kubernetes_validate.validate(storage_class, version, strict=True)


def test_helmchart_valid_against_k3s_crd_fields(k3s):
    jsonschema.validate(manifest(k3s, "csi-driver-nfs.yaml"), json.loads(HELMCHART_SCHEMA.read_text()))


def test_check_mode_changes_nothing():
    run = run_playbook(check=True)
    assert run.rc == 0, run
    assert run.total_changed == 0, run


# Each message names the host and the variable; the filter k3s_nfs_csi_problems adds the fix.
BAD_INPUT = [
    pytest.param({"k3s_nfs_csi_share": "/nope"}, f"{K3S}: k3s_nfs_csi_share: '/nope' is not the Pseudo path of any NFS-Ganesha export",
                 id="share-not-exported"),
    pytest.param({"k3s_nfs_csi_extra_parameters": {"fsType": "nfs"}}, f"{K3S}: k3s_nfs_csi_extra_parameters[fsType]: unknown parameter",
                 id="unknown-parameter"),
    pytest.param({"k3s_nfs_csi_storage_class_name": "NFS_CSI"}, f"{K3S}: k3s_nfs_csi_storage_class_name: 'NFS_CSI' is not a DNS-1123",
                 id="invalid-name"),
    pytest.param({"k3s_nfs_csi_server": "nfs://csi-gluster1"},
                 f"{K3S}: k3s_nfs_csi_server 'nfs://csi-gluster1' is neither an IP address nor a host name", id="server-url"),
    pytest.param({"k3s_nfs_csi_mount_options": ["nfsvers=5"]}, f"{K3S}: k3s_nfs_csi_mount_options entry 'nfsvers=5' is not an NFS version",
                 id="nfs-version"),
    pytest.param({"k3s_nfs_csi_kubelet_dir": "/var/lib/kubelet/"}, f"{K3S}: k3s_nfs_csi_kubelet_dir '/var/lib/kubelet/' is not canonical",
                 id="kubelet-dir"),
    pytest.param({"k3s_nfs_csi_chart_values": {"driver": {"name": "nfs2.csi.k8s.io"}}},
                 f"{K3S}: k3s_nfs_csi_chart_values.driver.name 'nfs2.csi.k8s.io' renames the driver", id="driver-renamed"),
    pytest.param({"k3s_nfs_csi_chart_version": "v4.13.4"}, f"{K3S}: k3s_nfs_csi_chart_version 'v4.13.4' is not a pinned chart version",
                 id="chart-version"),
]


@pytest.mark.parametrize("extra_vars,message", BAD_INPUT)
def test_bad_input_fails_before_any_change_and_the_share_still_answers(k3s, nfs, extra_vars, message):
    manifests = ("csi-driver-nfs.yaml", "storageclass-nfs-csi.yaml")
    before = {name: k3s.file(f"{MANIFESTS}/{name}").sha256sum for name in manifests}
    run = run_playbook("../../playbooks/k3s.yml", extra_vars=extra_vars)
    assert run.rc != 0, run
    assert message in run.output and "Fix:" in run.output, run
    assert "preflight |" in run.output and "storageclass | " not in run.output, run
    assert run.total_changed == 0, run
    assert {name: k3s.file(f"{MANIFESTS}/{name}").sha256sum for name in manifests} == before
    # What the StorageClass points at still answers: its share, read over NFSv4.
    assert json.loads(nfs(4, "stat", "/"))["is_dir"]


# A run limited by --tags to one step checks the whole input first too: before, under --tags k3s_nfs_csi_storageclass
# the checks were skipped and a StorageClass pointing at a share no export has was written (changed=1).
@pytest.mark.parametrize("tag", ["k3s_nfs_csi_storageclass", "k3s_nfs_csi_install"])
def test_bad_input_in_a_run_limited_by_tags_fails_before_any_change(k3s, nfs, tag):
    manifests = ("csi-driver-nfs.yaml", "storageclass-nfs-csi.yaml")
    before = {name: k3s.file(f"{MANIFESTS}/{name}").sha256sum for name in manifests}
    run = run_playbook("../../playbooks/k3s.yml", "--tags", tag, extra_vars={"k3s_nfs_csi_share": "/nope"})
    assert run.rc != 0, run
    assert f"{K3S}: k3s_nfs_csi_share: '/nope' is not the Pseudo path of any NFS-Ganesha export" in run.output, run
    assert "Fix:" in run.output and "storageclass | " not in run.output and "install | " not in run.output, run
    assert run.total_changed == 0, run
    assert {name: k3s.file(f"{MANIFESTS}/{name}").sha256sum for name in manifests} == before
    assert json.loads(nfs(4, "stat", "/"))["is_dir"]


def test_each_step_alone_by_its_tag_changes_nothing():
    for tag in ("k3s_nfs_csi_install", "k3s_nfs_csi_storageclass", "k3s_nfs_csi_applied"):
        run = run_playbook("../../playbooks/k3s.yml", "--tags", tag)
        assert run.rc == 0 and run.total_changed == 0, (tag, run)
        assert "preflight | Check the host" in run.output, (tag, run)


# A run limited to the step that writes a manifest also asks K3s whether it applied the change (Kubernetes refuses to
# change an existing StorageClass's parameters): before, the applied step ran only under its own tag, so such a run
# succeeded while K3s kept the old class. K3s is not run here, so the step says why it does not ask; then the same
# run without the change writes the manifest back.
@pytest.mark.parametrize("tag,extra_vars,name", [
    pytest.param("k3s_nfs_csi_storageclass", {"k3s_nfs_csi_on_delete": "retain"}, "storageclass-nfs-csi.yaml", id="storageclass"),
    pytest.param("k3s_nfs_csi_install", {"k3s_nfs_csi_controller_replicas": 2}, "csi-driver-nfs.yaml", id="install"),
])
def test_a_run_limited_by_tags_that_changes_a_manifest_runs_the_applied_step(k3s, tag, extra_vars, name):
    before = k3s.file(f"{MANIFESTS}/{name}").sha256sum
    runs = {}
    try:
        runs["changed"] = run_playbook("../../playbooks/k3s.yml", "--tags", tag, extra_vars=extra_vars)
        changed = k3s.file(f"{MANIFESTS}/{name}").sha256sum
    finally:
        runs["written back"] = run_playbook("../../playbooks/k3s.yml", "--tags", tag)
    assert changed != before and k3s.file(f"{MANIFESTS}/{name}").sha256sum == before
    for what, run in runs.items():
        assert run.rc == 0 and run.total_changed == 1, (what, run)
        assert "applied | Say why K3s is not asked" in run.output, (what, run)
        assert f"{K3S}: not asking K3s whether it applied the changed manifests: no /" in run.output, (what, run)


# The provisioning contract: what csi-driver-nfs does for a PVC, done with a real NFS client.


def sub_dir(storage_class: dict, namespace: str, pvc: str, pv: str) -> str:
    template = storage_class["parameters"].get("subDir") or pv
    return (template.replace("${pvc.metadata.namespace}", namespace)
            .replace("${pvc.metadata.name}", pvc).replace("${pv.metadata.name}", pv))


@pytest.mark.parametrize("policy", ["delete", "retain", "archive"])
def test_provisioning_contract(nfs, storage_class, policy):
    gluster = get_host(OTHER_GLUSTER)
    mode = storage_class["parameters"].get("mountPermissions", "0")
    path = sub_dir(storage_class, "default", f"data-{policy}", f"pvc-{uuid.uuid4()}")
    assert path.startswith("default/data-")

    # CreateVolume: MkdirAll(subDir) then chmod(mountPermissions) on the share
    parts = path.split("/")
    for depth in range(1, len(parts) + 1):
        partial = "/" + "/".join(parts[:depth])
        if nfs(4, "exists", partial) == "no":
            nfs(4, "mkdir", partial, "0777")
    if int(mode, 8):
        nfs(3, "chmod", "/" + path, mode)

    # the pod writes and reads through the volume
    content = f"pvc data {policy} {uuid.uuid4()}"
    k3s = get_host(K3S)
    k3s.check_output(f"echo '{content}' > /tmp/pvc-data.txt")
    k3s.check_output("nfs-cp /tmp/pvc-data.txt %s", f"nfs://{NFS_SERVER}/gv0/{path}/data.txt?version=4")
    assert k3s.check_output("nfs-cat %s", f"nfs://{NFS_SERVER}/gv0/{path}/data.txt?version=4") == content

    # ...and the data is on another node's Gluster brick, in a directory with mountPermissions
    assert gluster.check_output(f"cat {BRICK}/{path}/data.txt") == content
    assert gluster.file(f"{BRICK}/{path}").mode == int(mode, 8)

    # DeleteVolume with the policy
    if policy == "delete":
        nfs(4, "rmtree", "/" + path)
    elif policy == "archive":
        archived = "archived-" + path
        parent = "/" + archived.rsplit("/", 1)[0]
        if "/" in archived and nfs(4, "exists", parent) == "no":
            nfs(4, "mkdir", parent, "0777")
        nfs(4, "rename", "/" + path, "/" + archived)

    mounted = f"/gfsv/{path}"
    if policy == "delete":
        assert not gluster.file(mounted).exists
    elif policy == "retain":
        assert gluster.check_output(f"cat {mounted}/data.txt") == content
    else:
        assert not gluster.file(mounted).exists
        assert gluster.check_output(f"cat /gfsv/archived-{path}/data.txt") == content
