"""Where the tests find the project and the reference data, with nothing heavy imported."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The reference data the tests read (../shared/DESIGN.md); KUEUE_AKS_SHARED points them at another
# copy, e.g. one made with `python -m tools.fetch_reference --dest DIR`.
SHARED_ENV = "KUEUE_AKS_SHARED"
DEFAULT_SHARED = ROOT.parent / "shared"
SHARED = Path(os.environ.get(SHARED_ENV) or DEFAULT_SHARED)
