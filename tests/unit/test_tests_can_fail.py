"""Every test can fail: each `test_*` function under tests/ and molecule/ asserts, raises, or calls a helper that does.

A test that only prints or only runs something passes whatever happens (molecule's test_zz_print_measured_times
once did that in three scenarios). This reads the sources (ast, nothing is imported or run) and flags each test
function whose body has none of:

- an `assert` statement, or a `raise` with an exception (a bare `raise` only passes one on);
- a call that raises on failure: pytest.fail / raises / warns / deprecated_call, `check_output` / `check_call` of
  any object (subprocess, testinfra's host: a non-zero exit raises), `validate` (jsonschema, kubernetes_validate,
  a validator), a mock's or unittest's `assert*` method, and `subprocess.run(..., check=True)`;
- a call of (or a reference to, e.g. a predicate handed to wait_for) a function or method of our own sources
  that does, transitively: one of the same module (nested functions included), one imported by name or through its
  module from a module of tests/ or molecule/ (molecule/_shared/helpers.py, monitoring_checks.py, slurm_checks.py,
  tests/unit/role_render.py, ...), a method of a class of those modules (obj.method(...), or a property read);
- a call of a validator of the collection (plugins/, imported as ansible_collections.hpclab.cluster...): a function
  that raises (a `raise` of its own) and returns no value, such as _slurm.check_hostlist_syntax, whose whole answer
  is raising or not. Any other function of the collection is not followed: a test that only calls one checks
  nothing but that it does not raise, and must say what it expects of its answer.

pytest.skip is not a check.
"""

from __future__ import annotations

import ast
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("tests", "molecule", "plugins")
COLLECTION = "ansible_collections.hpclab.cluster."
SKIPPED_PARTS = {"output", "__pycache__", ".cache", ".venv"}
# Where a plain `from NAME import ...` of a test is looked for after its own folder (sys.path of the verifiers and
# of the unit tests).
SHARED = ("molecule/_shared", "tests/unit")
PYTEST_RAISING = {"fail", "raises", "warns", "deprecated_call"}
RAISING_METHODS = {"check_output", "check_call", "validate"}


def _dotted(node: ast.AST) -> str:
    """`a.b.c` of a Name/Attribute chain; "" for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _walk_own(body):
    """The nodes of a function's body, with the functions and classes defined in it but not their bodies (lambdas'
    bodies included: they run there)."""
    todo = list(body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def _is_validator(node) -> bool:
    """A function that raises (itself) and returns no value: its only answer is whether it raises."""
    own = list(_walk_own(node.body))
    raises = any(isinstance(n, ast.Raise) and n.exc is not None for n in own)
    returns = any(isinstance(n, ast.Return) and n.value is not None and not (isinstance(n.value, ast.Constant) and n.value.value is None) for n in own)
    yields = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own)
    return raises and not returns and not yields


class _Module:
    """One source file: its functions (by qualified name), classes, and the names it imports."""

    def __init__(self, path: str, source: str):
        self.path = path
        self.tree = ast.parse(source, filename=path)
        self.functions = {}  # qualname -> FunctionDef
        self.classes = {}  # name -> {method name: qualname}
        self.properties = set()  # qualnames of @property methods
        self.from_imports = {}  # local name -> (module, name)
        self.module_imports = {}  # local name -> module
        for node in self.tree.body:
            self._collect(node, "")
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.from_imports[alias.asname or alias.name] = (node.module, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self.module_imports[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]

    def _collect(self, node, prefix):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qualname = prefix + node.name
            self.functions[qualname] = node
            if any(_dotted(d).endswith("property") for d in node.decorator_list):
                self.properties.add(qualname)
            for child in _walk_own(node.body):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self._collect(child, qualname + ".<locals>.")
        elif isinstance(node, ast.ClassDef):
            methods = self.classes.setdefault(prefix + node.name, {})
            for child in node.body:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    methods[child.name] = prefix + node.name + "." + child.name
                self._collect(child, prefix + node.name + ".")
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for child in ast.iter_child_nodes(node):
                self._collect(child, prefix)


class Checker:
    """The test functions of a set of sources ({posix path relative to the root: text}) that cannot fail."""

    def __init__(self, sources: dict[str, str], shared=SHARED):
        self.modules = {path: _Module(path, text) for path, text in sources.items()}
        self.shared = shared
        self.by_stem = {}
        for path in self.modules:
            if path.startswith("plugins/"):
                continue
            pure = PurePosixPath(path)
            stem = pure.parent.as_posix() if pure.name == "__init__.py" else pure.with_suffix("").as_posix()
            self.by_stem.setdefault(stem.rsplit("/", 1)[-1], []).append(path)
        self.raises = {}  # (path, qualname) -> bool
        self.edges = {}  # (path, qualname) -> set of (path, qualname)
        for path, module in self.modules.items():
            for qualname, node in module.functions.items():
                key = (path, qualname)
                if path.startswith("plugins/"):  # the collection's own code: its validators only, not followed
                    self.raises[key], self.edges[key] = _is_validator(node), set()
                else:
                    self.raises[key], self.edges[key] = self._direct(module, qualname, node)
        changed = True
        while changed:  # a helper that calls a helper that raises, raises
            changed = False
            for key, targets in self.edges.items():
                if not self.raises[key] and any(self.raises.get(t) for t in targets):
                    self.raises[key] = changed = True

    def _module_named(self, name: str, near: str):
        """The path of our module NAME (dotted: its last part) as imported from file NEAR; None if not ours."""
        if name.startswith(COLLECTION):
            base = name.removeprefix(COLLECTION).replace(".", "/")
            for path in (base + ".py", base + "/__init__.py"):
                if path in self.modules:
                    return path
            return None
        candidates = self.by_stem.get(name.rsplit(".", 1)[-1], [])
        if not candidates:
            return None
        folder = PurePosixPath(near).parent.as_posix()
        for place in (folder, *self.shared):
            for path in candidates:
                if PurePosixPath(path).parent.as_posix() == place:
                    return path
        return candidates[0] if len(candidates) == 1 else None

    def _resolve_in(self, path, name):
        """Function NAME of module PATH (a class: its __init__), followed through its imports."""
        module = self.modules[path]
        if name in module.functions:
            return {(path, name)}
        if name in module.classes:
            init = module.classes[name].get("__init__")
            return {(path, init)} if init else set()
        if name in module.from_imports:
            source, original = module.from_imports[name]
            target = self._module_named(source, path)
            if target and target != path:
                return self._resolve_in(target, original)
        return set()

    def _module_path(self, module, name):
        """The path of our module that the local NAME of MODULE stands for (`import x`, `from pkg import x`)."""
        if name in module.module_imports:
            return self._module_named(module.module_imports[name], module.path)
        if name in module.from_imports:
            source, original = module.from_imports[name]
            return self._module_named(f"{source}.{original}", module.path) if source.startswith(COLLECTION) else None
        return None

    def _classes_seen(self, module):
        """(path, class name) of the classes of MODULE and of those it imports from our modules."""
        seen = {(module.path, name) for name in module.classes}
        for source, original in module.from_imports.values():
            target = self._module_named(source, module.path)
            if target and original in self.modules[target].classes:
                seen.add((target, original))
        return seen

    def _direct(self, module, qualname, node):
        """Whether the function raises by itself, and the functions of ours it calls or hands on."""
        raises, targets = False, set()
        scope = qualname + ".<locals>."
        owner = qualname.rsplit(".", 1)[0] if "." in qualname and ".<locals>." not in qualname else None
        methods = {}
        for path, name in self._classes_seen(module):
            for method, target in self.modules[path].classes[name].items():
                methods.setdefault(method, set()).add((path, target))
        for child in _walk_own(node.body):
            if isinstance(child, ast.Assert) or (isinstance(child, ast.Raise) and child.exc is not None):
                raises = True
            elif isinstance(child, ast.Call):
                raises = raises or self._raising_call(module, child)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                if scope + child.id in module.functions:
                    targets.add((module.path, scope + child.id))
                else:
                    targets |= self._resolve_in(module.path, child.id)
            elif isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Load):
                base = _dotted(child.value)
                if base in ("self", "cls") and owner and child.attr in module.classes.get(owner, {}):
                    targets.add((module.path, module.classes[owner][child.attr]))
                elif self._module_path(module, base):
                    targets |= self._resolve_in(self._module_path(module, base), child.attr)
                else:  # obj.method(...) or obj.prop: a method of that name of a class we know
                    targets |= methods.get(child.attr, set())
        return raises, targets

    @staticmethod
    def _raising_call(module, call: ast.Call) -> bool:
        name = _dotted(call.func)
        last = name.rsplit(".", 1)[-1]
        if name.startswith("pytest.") and last in PYTEST_RAISING:
            return True
        if "." not in name and module.from_imports.get(name, ("",))[0] == "pytest" and module.from_imports[name][1] in PYTEST_RAISING:
            return True
        if last in RAISING_METHODS or (("." in name) and last.startswith("assert")):
            return True
        if last == "run" and any(k.arg == "check" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords):
            return True
        return False

    def cannot_fail(self) -> list[str]:
        """`path:line name` of each test function (test_* at module level, or a method of a Test* class, in a
        test_*.py file) that neither asserts, raises nor calls what does."""
        found = []
        for path, module in sorted(self.modules.items()):
            if not PurePosixPath(path).name.startswith("test_"):
                continue
            for qualname, node in module.functions.items():
                parts = qualname.split(".")
                is_test = parts[-1].startswith("test") and (len(parts) == 1 or (len(parts) == 2 and parts[0].startswith("Test")))
                if is_test and not self.raises[(path, qualname)]:
                    found.append(f"{path}:{node.lineno} {qualname}")
        return found


def scan(root: Path = ROOT) -> list[str]:
    """The test functions under ROOT's tests/ and molecule/ that cannot fail."""
    sources = {}
    for top in SCANNED:
        for path in sorted((root / top).rglob("*.py")):
            relative = path.relative_to(root)
            if not SKIPPED_PARTS.intersection(relative.parts):
                sources[relative.as_posix()] = path.read_text(encoding="utf-8")
    return Checker(sources).cannot_fail()


def test_every_test_can_fail():
    found = scan()
    assert not found, "these tests neither assert, raise nor call a helper that does:\n" + "\n".join(found)


# The check itself, on small sources.

HELPERS = """
import pytest

def check_up(host):
    assert host.up

def via(host):
    check_up(host)

def deeper(host):
    via(host)

def raiser():
    raise ValueError("no")

def calls_raiser():
    raiser()

def only_prints():
    print("x")

def rethrows():
    try:
        pass
    except Exception:
        raise

def wait_for(predicate):
    if not predicate():
        pytest.fail("never")

class Run:
    @property
    def total(self):
        assert self.recap
        return 0
"""


def _flagged(test_source: str, helpers: str = HELPERS) -> list[str]:
    found = Checker({"molecule/_shared/helpers.py": helpers, "molecule/s/tests/test_x.py": test_source}).cannot_fail()
    return [line.split(" ", 1)[1] for line in found]


def test_a_test_that_only_prints_is_flagged():
    assert _flagged("def test_a():\n    print(1)\n") == ["test_a"]


def test_a_test_that_asserts_or_raises_is_not():
    assert not _flagged("def test_a():\n    assert 1\n\ndef test_b():\n    raise AssertionError\n")
    assert not _flagged("import pytest\n\ndef test_a():\n    with pytest.raises(ValueError):\n        int('x')\n")
    assert not _flagged("import pytest\n\ndef test_a():\n    pytest.fail('no')\n")
    assert not _flagged("from pytest import raises\n\ndef test_a():\n    with raises(ValueError):\n        int('x')\n")


def test_pytest_skip_and_a_bare_reraise_are_not_checks():
    assert _flagged("import pytest\n\ndef test_a():\n    pytest.skip('later')\n") == ["test_a"]
    assert _flagged("def test_a():\n    try:\n        pass\n    except Exception:\n        raise\n") == ["test_a"]
    assert _flagged("from helpers import rethrows\n\ndef test_a():\n    rethrows()\n") == ["test_a"]


def test_known_raising_calls_count():
    assert not _flagged("def test_a(host):\n    host.check_output('true')\n")
    assert not _flagged("import subprocess\n\ndef test_a():\n    subprocess.run(['true'], check=True)\n")
    assert _flagged("import subprocess\n\ndef test_a():\n    subprocess.run(['true'], check=False)\n") == ["test_a"]
    assert not _flagged("import jsonschema\n\ndef test_a():\n    jsonschema.validate({}, {})\n")
    assert not _flagged("def test_a(mock):\n    mock.assert_called_once_with(1)\n")


def test_a_local_helper_that_asserts_counts():
    assert not _flagged("def helper(x):\n    assert x\n\ndef test_a():\n    helper(1)\n")
    assert _flagged("def helper(x):\n    print(x)\n\ndef test_a():\n    helper(1)\n") == ["test_a"]
    assert not _flagged("def test_a():\n    def inner():\n        assert 1\n    inner()\n")
    assert _flagged("def test_a():\n    def inner():\n        assert 1\n") == ["test_a"]


def test_helpers_are_followed_through_imports_and_other_helpers():
    assert not _flagged("from helpers import deeper\n\ndef test_a(host):\n    deeper(host)\n")
    assert not _flagged("from helpers import calls_raiser as c\n\ndef test_a():\n    c()\n")
    assert not _flagged("import helpers\n\ndef test_a(host):\n    helpers.via(host)\n")
    assert _flagged("from helpers import only_prints\n\ndef test_a():\n    only_prints()\n") == ["test_a"]
    # A test's own predicate handed to a helper that calls it, and a property of an imported class that asserts.
    assert not _flagged("from helpers import wait_for\n\ndef test_a():\n    wait_for(lambda: True)\n")
    assert not _flagged("from helpers import Run\n\ndef test_a(run):\n    run.total\n")
    # Making an object is not a check because one of its methods would be one.
    assert _flagged("from helpers import Run\n\ndef test_a():\n    Run()\n") == ["test_a"]


PLUGIN = """
def check_syntax(x):
    if "[" in x:
        raise ValueError(x)

def expand(x):
    if not x:
        raise ValueError(x)
    return [x]
"""


def test_validators_of_the_collection_count_and_nothing_else_of_it():
    sources = {"plugins/module_utils/_p.py": PLUGIN}
    for test, flagged in [
        ("from ansible_collections.hpclab.cluster.plugins.module_utils import _p as p\n\ndef test_a():\n    p.check_syntax('n1')\n", []),
        ("from ansible_collections.hpclab.cluster.plugins.module_utils._p import check_syntax\n\ndef test_a():\n    check_syntax('n1')\n", []),
        ("from ansible_collections.hpclab.cluster.plugins.module_utils._p import expand\n\ndef test_a():\n    expand('n1')\n", ["test_a"]),
    ]:
        found = Checker({**sources, "tests/unit/test_p.py": test}).cannot_fail()
        assert [line.split(" ", 1)[1] for line in found] == flagged, test


def test_methods_of_test_classes():
    source = "class TestA:\n    def check(self):\n        assert 1\n\n    def test_b(self):\n        self.check()\n\n    def test_c(self):\n        print(2)\n"
    assert _flagged(source) == ["TestA.test_c"]


def test_only_test_files_and_test_functions_are_checked():
    found = Checker({"tests/unit/helper.py": "def test_like():\n    pass\n", "tests/unit/test_y.py": "def helper():\n    pass\n"}).cannot_fail()
    assert not found
