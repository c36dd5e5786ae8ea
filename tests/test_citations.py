"""What the code and the docs cite is in the repository or upstream, never a private note.

The notes the project was first built from (`../shared/reference/*.md`, cited as `kueue.md §3`)
are not in the repository, so a reader cannot follow such a citation. A fact from upstream is
cited where it came from (`owner/repo path@tag`, or a URL); a decision of ours is a section of
docs/design-notes.md. This fails on a citation of a note: a path into ../shared/reference, a
section sign (no page of docs/ numbers its sections), or, in a comment or docstring, a bare
`name.md` that is no page here (strings in code name the files a program writes).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("components", "bench", "tests", "tools", "testbed")
# Files a program writes or data folders carry, named bare: the plan's ORDER.md, each ../shared
# folder's SOURCE.md, the e2e tier's measurements.md, the workplace's DESIGN.md.
WRITTEN = {"ORDER.md", "SOURCE.md", "measurements.md", "DESIGN.md", "README.md"}
# Files another change owns this session; their citations are mended there.
LEFT: set[str] = set()

_NOTE_PATH = re.compile(r"shared/reference/[\w.-]+")
_SECTION = re.compile(r"[\w.-]+\.md\s*§|§\s*\d")
_BARE = re.compile(r"(?<![\w/.-])([\w-]+(?:\.[\w-]+)*\.md)\b")


def files(root: Path) -> list[Path]:
    found = [root / "__main__.py", root / "README.md", *sorted((root / "docs").glob("*.md"))]
    found += [p for d in SOURCES for p in sorted((root / d).rglob("*.py"))]
    return [p for p in found if p.is_file() and p.resolve() != Path(__file__).resolve()]


def prose(path: Path) -> dict[int, str]:
    """A Python file's comments and docstrings by line; every line of a Markdown page."""
    text = path.read_text()
    if path.suffix != ".py":
        return dict(enumerate(text.splitlines(), 1))
    lines = text.splitlines()
    found = {
        t.start[0]: t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT
    }
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            found |= {n: lines[n - 1] for n in range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1)}
    return found


def citations(path: Path, root: Path) -> list[str]:
    """The note citations in a file, as `path:line: what`."""
    pages = {p.name for p in (root / "docs").glob("*.md")} | {p.name for p in root.glob("*.md")}
    comments = prose(path)
    found = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        what = _NOTE_PATH.findall(line) + _SECTION.findall(line)
        what += [m for m in _BARE.findall(comments.get(n, "")) if m not in pages and m not in WRITTEN]
        found += [f"{path.relative_to(root)}:{n}: {w}" for w in what]
    return found


def test_no_comment_cites_a_note_outside_the_repository() -> None:
    found = [c for p in files(ROOT) if str(p.relative_to(ROOT)) not in LEFT for c in citations(p, ROOT)]
    assert not found, "cite the upstream source or docs/design-notes.md instead:\n" + "\n".join(found)


def test_the_files_left_still_cite_notes() -> None:
    """So that LEFT shrinks as they are mended."""
    mended = [f for f in sorted(LEFT) if (ROOT / f).is_file() and not citations(ROOT / f, ROOT)]
    assert not mended, f"no note cited any more, take them out of LEFT: {mended}"


def test_a_note_citation_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "kueue.md").write_text("# Kueue\n")
    code = tmp_path / "m.py"
    code.write_text(
        "# kueue.md and docs/kueue.md and ORDER.md and kubernetes-sigs/kueue site/x.md@v0.19.2\n"
        '# (kueue.md §4.1) (../shared/reference/peers.md) peers.md "DOC" (§2.2)\n'
        'def f():\n    """As benchmark.md says."""\n    return \'summary.md\'\n'
    )
    assert citations(code, tmp_path) == [
        "m.py:2: shared/reference/peers.md",
        "m.py:2: kueue.md §",
        "m.py:2: §2",
        "m.py:2: peers.md",
        "m.py:4: benchmark.md",
    ]
