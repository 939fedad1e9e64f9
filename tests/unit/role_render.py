"""A role's variables and templates rendered offline with Ansible's own Templar, layered as a play does: the
role's defaults, the host's (inventory) variables, vars/main.yml, facts the role's tasks set before, a test's
extra variables, then the fixed names of the play (inventory_hostname, groups, ansible_managed)."""

from __future__ import annotations

import copy
from pathlib import Path

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template


class RoleRender:
    def __init__(self, role: Path, host_vars: dict, facts: dict | None = None, play: dict | None = None):
        self.role, self.host_vars, self.facts = role, host_vars, facts or {}
        self.play = {"ansible_check_mode": False, "ansible_managed": "Ansible managed", **(play or {})}
        self.loader = DataLoader()
        self.defaults = self.loader.load_from_file(str(role / "defaults" / "main.yml"), trusted_as_template=True)
        self.role_vars = self.loader.load_from_file(str(role / "vars" / "main.yml"), trusted_as_template=True)

    def templar(self, host_vars=None, extra=None):
        variables = copy.deepcopy(dict(self.defaults))
        variables.update(copy.deepcopy(self.host_vars if host_vars is None else host_vars))
        variables.update(copy.deepcopy(dict(self.role_vars)))
        variables.update(copy.deepcopy(self.facts))
        variables.update(extra or {})
        variables.update(self.play)
        return Templar(loader=self.loader, variables=variables)

    def evaluate(self, expression, **kwargs):
        return self.templar(**kwargs).template(trust_as_template("{{ %s }}" % expression))

    def render(self, template, **kwargs):
        source = (self.role / "templates" / template).read_text(encoding="utf-8")
        return self.templar(**kwargs).template(trust_as_template(source), escape_backslashes=False)
