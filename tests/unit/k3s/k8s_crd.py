"""Validate an object offline against a real CustomResourceDefinition, as far as that can be done without an API server.

What is checked, from the CRD itself (tests/unit/fixtures/k8s/README.md names where each CRD comes from):

- apiVersion is the CRD's group and one of its served versions, kind is the CRD's names.kind, metadata.name is set;
- the object against that version's schema.openAPIV3Schema (jsonschema, draft 4: types, enums, required, patterns);
- every field of the object is declared in that schema. A CRD's structural schema does not set
  additionalProperties: false; the API server prunes undeclared fields silently instead, so a misspelt field
  (spec.valuesContnet) is valid JSON Schema but never reaches the controller. The walk follows properties,
  additionalProperties and items, and stops below x-kubernetes-preserve-unknown-fields: true.

What is not: x-kubernetes-validations (CEL rules), metadata beyond its name (the API server checks ObjectMeta
itself), defaulting, and anything the controller decides at run time.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml


def load_crd(path: Path) -> dict:
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    assert len(docs) == 1 and docs[0]["kind"] == "CustomResourceDefinition", path
    return docs[0]


def undeclared_fields(value, schema: dict, path: str = "") -> list[str]:
    """Paths below value that schema (an openAPIV3Schema node) does not declare: what the API server would prune."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    found = []
    if isinstance(value, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            where = "%s.%s" % (path, key) if path else key
            if properties is not None and key in properties:
                found += undeclared_fields(item, properties[key], where)
            elif isinstance(additional, dict):
                found += undeclared_fields(item, additional, where)
            elif additional is not True:
                found.append(where)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            found += undeclared_fields(item, schema["items"], "%s[%d]" % (path, index))
    return found


def leaf_paths(values: dict, prefix: str = ""):
    """Dotted paths of a Helm values tree; an empty map or a list ends a path."""
    for key, value in values.items():
        path = prefix + str(key)
        if isinstance(value, dict) and value:
            yield from leaf_paths(value, path + ".")
        else:
            yield path


def unknown_values(values: dict, keys) -> list[str]:
    """Paths set in values that are no key of the chart (keys: leaf_paths of its values.yaml) nor below one.
    Helm passes a misspelt value to the templates, which never read it: nothing fails, nothing is set."""
    return [p for p in leaf_paths(values) if not any(p == k or p.startswith(k + ".") for k in keys)]


class CrdValidator:
    """An object of the CRD's kind, checked as described in this module's docstring."""

    def __init__(self, crd: dict):
        self.crd = crd
        self.group = crd["spec"]["group"]
        self.kind = crd["spec"]["names"]["kind"]
        self.versions = {v["name"]: v for v in crd["spec"]["versions"] if v.get("served")}

    def schema(self, version: str) -> dict:
        return self.versions[version]["schema"]["openAPIV3Schema"]

    def validate(self, obj: dict) -> None:
        """Raise jsonschema.ValidationError where obj would be refused or pruned by an API server with this CRD."""
        group, _slash, version = str(obj.get("apiVersion", "")).rpartition("/")
        if group != self.group or version not in self.versions:
            raise jsonschema.ValidationError(
                "apiVersion %r is not one of %s" % (obj.get("apiVersion"), ["%s/%s" % (self.group, v) for v in self.versions]))
        if obj.get("kind") != self.kind:
            raise jsonschema.ValidationError("kind %r is not %r" % (obj.get("kind"), self.kind))
        name = (obj.get("metadata") or {}).get("name")
        if not isinstance(name, str) or not name:
            raise jsonschema.ValidationError("metadata.name is required")
        schema = self.schema(version)
        jsonschema.Draft4Validator(schema).validate(obj)
        # metadata is 'type: object' in every CRD: the API server validates ObjectMeta itself, not through the CRD.
        rest = {k: v for k, v in obj.items() if k != "metadata"}
        unknown = undeclared_fields(rest, schema)
        if unknown:
            raise jsonschema.ValidationError(
                "fields not declared in the %s.%s %s schema (the API server would prune them): %s"
                % (self.crd["spec"]["names"]["plural"], self.group, version, ", ".join(unknown)))
