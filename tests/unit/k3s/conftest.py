"""Render the k3s_nfs_csi role's templates and variables offline, with Ansible's own Templar.

Variables are layered as a play would: role defaults, then the K3s server's inventory variables, then
the role's vars/main.yml, then extra vars. `groups` and `hostvars` come from a small fake inventory: one
K3s server and one NFS-Ganesha host whose nfs_ganesha_exports is the nfs_ganesha role's variable.
"""

from __future__ import annotations

import copy
import json
import os
import tarfile
from pathlib import Path

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from k8s_crd import CrdValidator, load_crd

ROLE = Path(__file__).resolve().parents[3] / "roles" / "k3s_nfs_csi"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s"

NFS_HOST_VARS = {
    "ansible_host": "192.168.1.101",
    "nfs_ganesha_exports": [
        {"export_id": 1, "volume": "gv0", "pseudo": "/gv0", "access_type": "RW", "squash": "no_root_squash"},
    ],
}


def fake_inventory(nfs_hosts=None, server_vars=None):
    """groups and hostvars of one K3s server 'k3s1' and the given NFS-Ganesha hosts (name -> vars)."""
    nfs_hosts = {"pi1": NFS_HOST_VARS} if nfs_hosts is None else nfs_hosts
    groups = {"all": ["k3s1", *nfs_hosts], "ungrouped": [], "k3s_server": ["k3s1"]}
    if nfs_hosts:
        groups["nfs_ganesha"] = list(nfs_hosts)
    hostvars = {"k3s1": dict(server_vars or {}), **{h: dict(v) for h, v in nfs_hosts.items()}}
    return groups, hostvars


class RoleRenderer:
    """The role's variables and templates, evaluated the way the template action does."""

    def __init__(self):
        self.role_dir = ROLE
        self._loader = DataLoader()
        self.defaults = self._loader.load_from_file(str(ROLE / "defaults" / "main.yml"), trusted_as_template=True)
        self.role_vars = self._loader.load_from_file(str(ROLE / "vars" / "main.yml"), trusted_as_template=True)

    def variables(self, extra=None, nfs_hosts=None, server_vars=None):
        groups, hostvars = fake_inventory(nfs_hosts, server_vars)
        variables = copy.deepcopy(dict(self.defaults))
        variables.update(hostvars["k3s1"])
        variables.update(copy.deepcopy(dict(self.role_vars)))
        variables.update(extra or {})
        variables.update(
            inventory_hostname="k3s1",
            groups=groups,
            hostvars=hostvars,
            ansible_check_mode=False,
            ansible_managed="Ansible managed",
            role_path=str(ROLE),
        )
        return variables

    def templar(self, **kwargs):
        return Templar(loader=self._loader, variables=self.variables(**kwargs))

    def evaluate(self, expression, **kwargs):
        """Value of a Jinja expression (e.g. a role variable's name) in the role's context."""
        return self.templar(**kwargs).template(trust_as_template("{{ %s }}" % expression))

    def render_text(self, template, **kwargs):
        source = (ROLE / "templates" / template).read_text(encoding="utf-8")
        return self.templar(**kwargs).template(trust_as_template(source), escape_backslashes=False)

    def render(self, template, **kwargs):
        """The template rendered and parsed: the one Kubernetes object it holds."""
        docs = [d for d in yaml.safe_load_all(self.render_text(template, **kwargs)) if d is not None]
        assert len(docs) == 1, "%s should hold one object, got %d" % (template, len(docs))
        return docs[0]


@pytest.fixture(scope="session")
def role():
    return RoleRenderer()


@pytest.fixture(scope="session")
def helmchart_schema():
    """Hand-written JSON Schema of the HelmChart CRD, not the CRD itself (its $comment and the README say how it was made)."""
    return json.loads((FIXTURES / "helmchart-helm.cattle.io-v1.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def chart_value_keys():
    """Hand-written key paths of the csi-driver-nfs 4.13.4 chart's values.yaml, not read from the chart."""
    return json.loads((FIXTURES / "csi-driver-nfs-4.13.4-values-keys.json").read_text(encoding="utf-8"))["keys"]


# The real upstream files are not kept in this repository; these fixtures read them where a variable names them, or
# from the project's shared folder beside the checkout (../shared/upstream/, where CI finds it too)
# (tests/unit/fixtures/k8s/README.md says where to get them), and skip the tests that need them otherwise.

REAL_CRD = "HPCLAB_HELM_CONTROLLER_CRD"
REAL_VALUES = "HPCLAB_CSI_DRIVER_NFS_VALUES"
SHARED_UPSTREAM = Path(__file__).resolve().parents[3].parent / "shared" / "upstream"
SHARED_FILES = {
    REAL_CRD: SHARED_UPSTREAM / "helm-controller" / "helm.cattle.io_helmcharts.yaml",
    REAL_VALUES: SHARED_UPSTREAM / "csi-driver-nfs" / "csi-driver-nfs-4.13.4.tgz",
}


def _upstream_file(variable, what):
    path = os.environ.get(variable) or (str(SHARED_FILES[variable]) if SHARED_FILES[variable].is_file() else "")
    if not path:
        pytest.skip("%s is not set and %s does not exist: no real %s to check against (tests/unit/fixtures/k8s/README.md)"
                    % (variable, SHARED_FILES[variable], what))
    return Path(path)


@pytest.fixture(scope="session")
def real_helmchart_crd():
    """K3s's real HelmChart CRD: helm-controller's pkg/crds/yaml/generated/helm.cattle.io_helmcharts.yaml."""
    return CrdValidator(load_crd(_upstream_file(REAL_CRD, "HelmChart CRD")))


@pytest.fixture(scope="session")
def real_chart_values():
    """The csi-driver-nfs 4.13.4 chart's real values.yaml, or the chart's .tgz holding it."""
    path = _upstream_file(REAL_VALUES, "csi-driver-nfs values.yaml")
    if path.name.endswith((".tgz", ".tar.gz")):
        with tarfile.open(path) as tar:
            text = tar.extractfile("csi-driver-nfs/values.yaml").read().decode("utf-8")
    else:
        text = path.read_text(encoding="utf-8")
    return yaml.safe_load(text)
