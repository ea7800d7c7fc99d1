"""The layout reads as the architecture: cores never import adapters, nothing imports the
project settings, and every default is documented."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from crawler.addon import default_names

PACKAGE = Path(__file__).resolve().parent.parent / "crawler"
DOCS = PACKAGE.parent / "docs" / "settings.md"
# Scrapy components and the project's wiring: cores must not depend on them.
ADAPTERS = ("crawler.middlewares", "crawler.pipelines", "crawler.spiders", "crawler.commands",
            "crawler.addon", "crawler.scheduling.scheduler", "crawler.net.resolver", "crawler.settings")
CORES = ("urls", "robots", "dedup", "extract", "store", "frontier", "net", "plan", "traps")


def imports_of(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name.startswith("crawler")}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def test_cores_never_import_scrapy_components_or_the_project_settings():
    wrong = []
    for core in CORES:
        for path in (PACKAGE / core).rglob("*.py"):
            name = module_name(path)
            if name in ADAPTERS:
                continue
            wrong += [f"{name} imports {imported}" for imported in imports_of(path)
                      if imported.startswith(ADAPTERS)]
    assert wrong == []


def test_no_module_imports_the_project_settings_module():
    importing = [module_name(p) for p in PACKAGE.rglob("*.py")
                 if any(i == "crawler.settings" or i.startswith("crawler.settings.") for i in imports_of(p))]
    assert importing == []


def test_defaults_module_imports_nothing():
    tree = ast.parse((PACKAGE / "defaults.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]


def test_every_default_is_documented_in_docs_settings():
    documented = set(re.findall(r"^\| `([A-Z0-9_]+)` \|", DOCS.read_text(encoding="utf-8"), re.M))
    assert sorted(set(default_names()) - documented) == []
