"""Where the tests find the project and the reference data, with nothing heavy imported."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The reference data the tests read (../shared/DESIGN.md); KUEUE_AKS_SHARED points them at another
# copy, e.g. one made with `python -m tools.fetch_reference --dest DIR`.
SHARED_ENV = "KUEUE_AKS_SHARED"
DEFAULT_SHARED = ROOT.parent / "shared"
SHARED = Path(os.environ.get(SHARED_ENV) or DEFAULT_SHARED)


def recreate_command(shared: Path = SHARED) -> str:
    """The command that writes the reference data where the tests look for it (what GitHub's jobs
    run from the checkout root, ../shared beside it)."""
    dest = "../shared" if shared.resolve() == DEFAULT_SHARED.resolve() else str(shared.resolve())
    return f"cd {shlex.quote(str(ROOT))} && python -m tools.fetch_reference --dest {shlex.quote(dest)}"


def missing_shared(what: str, shared: Path = SHARED) -> str:
    """What a test says when a file of the reference data is missing: where it looked, and how to
    recreate the data (a fresh clone has no ../shared: it stays out of the repository)."""
    where = (
        f"{shared} (from {SHARED_ENV})"
        if shared.resolve() != DEFAULT_SHARED.resolve()
        else f"{DEFAULT_SHARED} (../shared beside the checkout; {SHARED_ENV} points elsewhere)"
    )
    return (
        f"{what} not found: the tests need the reference data in {where}. Recreate it with "
        f"`{recreate_command(shared)}` (docs/reference-data.md#recreating-it), or set {SHARED_ENV} to a copy made with it."
    )


CRDS_DIR = SHARED / "kueue" / "v0.19.2" / "crds"


# The published chart as a file (a repack whose CRD templates are byte copies; see its SOURCE.md).
CHART_TGZ = SHARED / "kueue" / "v0.19.2" / "chart" / "kueue-0.19.2.tgz"
