"""The framework seam as a house: each framework one folder with one declaration, registered once,
and nothing outside its folder that imports it or lists its facts."""

import ast
import re

import yaml

from conftest import ROOT
from mnist_speedup.measure import frameworks as classes
from mnist_speedup.spec import frameworks, schema

PACKAGE = ROOT / "workflow" / "mnist_speedup"
FOLDER = PACKAGE / "measure" / "frameworks"


def test_every_declared_framework_is_registered_once_and_the_schema_enum_is_the_registry():
    """Planted once: a fourth framework.yaml with no class failed here; so did an enum written into the schema."""
    assert (
        sorted(classes.types()) == frameworks.names() == sorted(p.parent.name for p in FOLDER.glob("*/framework.yaml"))
    )
    devices = next(s for s in schema.load()["properties"]["devices"]["oneOf"] if s.get("type") == "object")
    assert devices["additionalProperties"]["properties"]["framework"]["enum"] == frameworks.names()
    raw = yaml.safe_load(schema.PATH.read_text())
    raw_devices = next(s for s in raw["properties"]["devices"]["oneOf"] if s.get("type") == "object")
    assert "enum" not in raw_devices["additionalProperties"]["properties"]["framework"]  # no copy to fall behind


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0]


def test_no_framework_is_imported_outside_its_own_folder():
    owner = {module: fw.name for fw in frameworks.declarations().values() for module in fw.modules}
    for path in [*PACKAGE.rglob("*.py"), *(ROOT / "workflow" / "scripts").glob("*.py")]:
        for module in set(_imports(path)) & owner.keys():
            assert path.is_relative_to(FOLDER / owner[module]), f"{path.relative_to(ROOT)} imports {module}"


def test_no_framework_software_or_module_is_listed_outside_its_folder():
    """A framework's software and module names appear in code only in its own folder (its declaration)."""
    names = {n for fw in frameworks.declarations().values() for n in (*fw.software, *fw.modules) if n != "keras"}
    pattern = re.compile(r"[\"'](" + "|".join(sorted(names)) + r")[\"']")
    for path in [*PACKAGE.rglob("*.py"), *(ROOT / "workflow" / "scripts").glob("*.py")]:
        if path.is_relative_to(FOLDER) and path.parent != FOLDER:
            continue
        hits = pattern.findall(path.read_text())
        assert not hits, f"{path.relative_to(ROOT)} lists {hits}"


def test_no_workload_type_is_branched_on_outside_the_spec_floor():
    pattern = re.compile(r"""(workload\.type|\.type)\s*==\s*["'](mlp|cnn)["']""")
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name != "spec":
            assert not pattern.search(path.read_text()), path


def test_a_declaration_is_refused_when_its_name_is_not_its_folder(tmp_path):
    folder = tmp_path / "mxnet"
    folder.mkdir()
    (folder / "framework.yaml").write_text(
        "name: other\nwords: X\nsoftware: []\nmodules: []\nextra: x\nenvironments: {}\n"
    )
    import pytest

    with pytest.raises(ValueError, match="declares name 'other' in folder 'mxnet'"):
        frameworks._declaration(folder / "framework.yaml")


def test_each_framework_opens_exactly_the_platforms_its_declaration_installs():
    """The (framework, platform) table: each framework's ``opens`` names a method for every platform its
    framework.yaml has an environment for, and no other. A platform without an opening is refused with the fix
    (planted once: JAX's cuda row left out failed the first assertion)."""
    import dataclasses
    import types

    import pytest

    from mnist_speedup.spec import platforms

    for name, cls in classes.types().items():
        assert set(cls.opens) == set(frameworks.declarations()[name].environments), name
        assert all(callable(getattr(cls, method)) for method in cls.opens.values()), name
    framework = classes.class_of("jax").__new__(classes.class_of("jax"))
    framework.declaration = frameworks.declarations()["jax"]
    rocm = dataclasses.replace(platforms.PLATFORMS["cuda"], name="rocm", words="ROCm")
    framework.device = types.SimpleNamespace(platform=rocm)
    with pytest.raises(classes.DeviceError, match=r"JAX cannot open a ROCm device here\. Fix: .*opens"):
        framework.open_platform("before_import")
