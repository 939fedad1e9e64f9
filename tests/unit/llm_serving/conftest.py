"""Render the llm_serving role's variables and templates offline, with Ansible's own Templar.

Variables are layered as a play would: role defaults, the host's inventory variables, the role's
vars/main.yml, then the task's loop variables. Registered results that vars/main.yml reads are absent,
as on a first run's templating.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROLE = Path(__file__).resolve().parents[3] / "roles" / "llm_serving"
FACTS = {"default_ipv4": {"address": "10.0.0.5"}, "all_ipv4_addresses": ["10.0.0.5", "127.0.0.1"],
         "all_ipv6_addresses": ["fd00::5"]}


class RoleRenderer:
    """The role's variables and templates, evaluated the way the template action does."""

    def __init__(self):
        self.defaults_path = str(ROLE / "defaults" / "main.yml")
        self._loader = DataLoader()
        self.defaults = self._loader.load_from_file(str(ROLE / "defaults" / "main.yml"), trusted_as_template=True)
        self.role_vars = self._loader.load_from_file(str(ROLE / "vars" / "main.yml"), trusted_as_template=True)

    def variables(self, host_vars=None, extra=None):
        variables = copy.deepcopy(dict(self.defaults))
        # The network facts the role's preflight reads when the play has not (a host's own, unless a test gives others).
        variables.update(ansible_facts=copy.deepcopy(FACTS))
        variables.update(host_vars or {})
        variables.update(copy.deepcopy(dict(self.role_vars)))
        variables.update(extra or {})
        variables.update(
            inventory_hostname="gpu1",
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

    def render_units(self, host_vars):
        """Every llm-NAME.service the role's configure task writes, by name, in start order."""
        served = self.evaluate("__llm_serving_served", host_vars=host_vars)
        return {
            model["name"]: self.render_text("llm-model.service.j2", host_vars=host_vars,
                                            extra={"item": model, "__llm_serving_index": index})
            for index, model in enumerate(served)
        }


@pytest.fixture(scope="session")
def role():
    return RoleRenderer()
