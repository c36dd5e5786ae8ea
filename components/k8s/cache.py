"""The user's cache folder, where the program and its tools keep what they fetched or built between runs
(the Kueue charts, the operators' module zips, the e2e tier's binaries), each in a folder of its own.

platformdirs decides where it is, as it does for pip and other tools (``appname`` kueue-aks, no author folder):

- Linux: ``$XDG_CACHE_HOME/kueue-aks`` when that is an absolute path, else ``~/.cache/kueue-aks``; an empty,
  blank or relative value is ignored, as the XDG base directory specification says (platformdirs 4.12 and later);
- macOS: ``$XDG_CACHE_HOME/kueue-aks`` likewise, else ``~/Library/Caches/kueue-aks``;
- Windows: ``%LOCALAPPDATA%\\kueue-aks\\Cache``.

Nothing is created here: each user of a folder makes it when it first writes there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path

import platformdirs

APP_NAME = "kueue-aks"

# platformdirs reads only os.environ: another process's folder is worked out with os.environ swapped for that
# process's environment, one caller at a time.
_SWAP = threading.Lock()


def user_cache(environ: Mapping[str, str] | None = None) -> Path:
    """The kueue-aks folder of the user's cache (see the module docstring).

    `environ`: the whole environment of another process (e.g. a child's, given its own XDG_CACHE_HOME), for
    the folder that process will use; default this process's."""
    if environ is None or environ is os.environ:
        return platformdirs.user_cache_path(APP_NAME, appauthor=False)
    with _SWAP:
        saved = dict(os.environ)
        try:
            os.environ.clear()
            os.environ.update(environ)
            return platformdirs.user_cache_path(APP_NAME, appauthor=False)
        finally:
            os.environ.clear()
            os.environ.update(saved)
