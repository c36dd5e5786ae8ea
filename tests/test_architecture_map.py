"""docs/architecture.md's Layout names every module of components/ and the program's __main__.py,
and only modules that exist: a module added, moved or removed fails here until the map says so.

The Layout lists each package as a bold `components/<package>/` line followed by one bullet per
module, "- `module`: what it holds" (several modules may share a bullet: "- `a`, `b`: …").
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"

_PACKAGE = re.compile(r"^\*\*`components/([a-z0-9_]+/)?`\*\*")
_BULLET = re.compile(r"^- ((?:`\w+`(?:,\s*)?)+):")


def layout(text: str) -> str:
    """The Layout section: from its heading to the next heading of its level."""
    start = text.index("\n## Layout\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def mapped(text: str) -> set[str]:
    """The modules the Layout names, as dotted names (`components.kueue.values`); the program's
    `__main__` when the file tree has its line."""
    names: set[str] = set()
    package = None
    items: list[str] = []
    for line in layout(text).splitlines():
        if line.startswith("  ") and items:  # a bullet's continuation line
            items[-1] += " " + line.strip()
            continue
        if m := _PACKAGE.match(line):
            package = "components" + ("." + m.group(1).rstrip("/") if m.group(1) else "")
        elif line.startswith("- ") and package:
            items.append(f"{package} {line}")
        elif not line.strip() or not line.startswith("- "):
            items.append("")  # a list ends
        if line.startswith("__main__.py "):
            names.add("__main__")
    for item in filter(None, items):
        package, _, bullet = item.partition(" ")
        if m := _BULLET.match(bullet):
            names |= {f"{package}.{module}" for module in re.findall(r"`(\w+)`", m.group(1))}
    return names


def modules(root: Path) -> set[str]:
    """Every module of components/ (packages' `__init__` aside) and the program's __main__.py."""
    found = {
        ".".join(p.relative_to(root).with_suffix("").parts)
        for p in (root / "components").rglob("*.py")
        if p.name != "__init__.py"
    }
    return found | ({"__main__"} if (root / "__main__.py").is_file() else set())


def test_the_layout_names_every_module_and_only_those() -> None:
    named, existing = mapped(ARCHITECTURE.read_text()), modules(ROOT)
    assert not existing - named, f"modules docs/architecture.md's Layout does not name: {sorted(existing - named)}"
    assert not named - existing, f"the Layout names modules that do not exist: {sorted(named - existing)}"


def test_a_module_missing_from_the_map_or_gone_from_the_code_is_found(tmp_path: Path) -> None:
    (tmp_path / "components" / "kueue").mkdir(parents=True)
    for path in (
        "__main__.py",
        "components/plan.py",
        "components/kueue/__init__.py",
        "components/kueue/values.py",
        "components/kueue/objects.py",
        "components/kueue/crds.py",
    ):
        (tmp_path / path).write_text("")
    text = (
        "# A\n\n## Layout\n\n```\n__main__.py   the program\n```\n\n**`components/`**\n- `plan`: the plan\n\n"
        "**`components/kueue/`**: Kueue\n- `values`, `install`: the values\n  and the release\n"
        "- `objects`: the objects\n\nA `crds` named in prose is no entry.\n\n## Next\n- `crds`: too late\n"
    )
    assert modules(tmp_path) - mapped(text) == {"components.kueue.crds"}
    assert mapped(text) - modules(tmp_path) == {"components.kueue.install"}
