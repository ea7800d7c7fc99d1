"""The layout reads as the architecture (docs/architecture.md): pure cores import no Scrapy,
Twisted or redis, cores never import adapters, nothing imports the project settings, every
module is on the map, and every default is documented."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from crawler.addon import default_names

PACKAGE = Path(__file__).resolve().parent.parent / "crawler"
DOCS = PACKAGE.parent / "docs" / "settings.md"
MAP = PACKAGE.parent / "docs" / "architecture.md"
# Scrapy components and the project's wiring: cores must not depend on them.
ADAPTERS = ("crawler.middlewares", "crawler.pipelines", "crawler.spiders", "crawler.commands",
            "crawler.extensions", "crawler.addon", "crawler.scheduling.scheduler", "crawler.net.resolver",
            "crawler.settings")
CORES = ("urls", "robots", "dedup", "extract", "store", "frontier", "freshness", "net", "plan", "traps",
         "bound", "context")
# Packages of pure rules and contracts: none of their modules imports these.
PURE = ("crawler.frontier", "crawler.frontier.backends.embedded", "crawler.freshness", "crawler.plan",
        "crawler.bound")
FRAMEWORKS = ("scrapy", "twisted", "redis", "scrapy_redis")


def imports_of(path: Path, prefix: str = "crawler") -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name == prefix or name.startswith(prefix + ".")}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def test_cores_never_import_scrapy_components_or_the_project_settings():
    wrong = []
    for core in CORES:
        for path in (PACKAGE / core).rglob("*.py"):
            wrong += [f"{module_name(path)} imports {imported}" for imported in imports_of(path)
                      if imported.startswith(ADAPTERS)]
    assert wrong == []


def test_pure_cores_import_no_scrapy_twisted_or_redis():
    wrong = []
    for package in PURE:
        for path in (PACKAGE.parent / package.replace(".", "/")).glob("*.py"):
            wrong += [f"{module_name(path)} imports {imported}" for framework in FRAMEWORKS
                      for imported in imports_of(path, framework)]
    assert wrong == []


def mapped_modules() -> set[str]:
    """The modules the map in docs/architecture.md names: its first code block's tree, each
    entry indented two spaces a level, descriptions after it (and on lines of their own)."""
    block = MAP.read_text(encoding="utf-8").split("```\n")[1]
    folders: list[str] = []
    named = set()
    for line in block.splitlines():
        match = re.match(r"( *)([\w.]+(?:\.py|/))(?: |$)", line)
        if not match or len(match.group(1)) >= 20:
            continue  # a description's next line
        depth = len(match.group(1)) // 2
        folders = folders[:depth]
        entry = match.group(2)
        if entry.endswith("/"):
            folders.append(entry.rstrip("/"))
        else:
            named.add(".".join([*folders, entry[:-3]]))
    return named


def test_the_map_names_every_module_and_no_other():
    modules = {module_name(p) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    assert sorted(mapped_modules() ^ modules) == []


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
