"""The user's cache folder (components/k8s/cache.py), and the three caches kept in it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from components.k8s.cache import user_cache
from components.kueue import crds
from components.operators import sources
from testbed import binaries

linux = pytest.mark.skipif(sys.platform != "linux", reason="the XDG rule of Linux (macOS and Windows differ)")


@linux
@pytest.mark.parametrize("value", [None, "", "   ", "relative/cache"])
def test_without_an_absolute_xdg_cache_home_it_is_under_home(
    value: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Unset, empty, blank or relative: XDG_CACHE_HOME is ignored, as the XDG specification says."""
    monkeypatch.setenv("HOME", str(tmp_path))
    if value is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", value)
    assert user_cache() == tmp_path / ".cache" / "kueue-aks"


@linux
def test_an_absolute_xdg_cache_home_holds_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache() == tmp_path / "xdg" / "kueue-aks"
    assert not (tmp_path / "xdg").exists(), "looking it up creates nothing"


@linux
def test_another_processs_folder_comes_from_its_environment_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "mine"))
    before = dict(os.environ)
    assert user_cache({"XDG_CACHE_HOME": str(tmp_path / "child")}) == tmp_path / "child" / "kueue-aks"
    # Not this process's XDG_CACHE_HOME: the child's environment has none.
    assert user_cache({"HOME": str(tmp_path / "home")}) == tmp_path / "home" / ".cache" / "kueue-aks"
    assert dict(os.environ) == before, "this process's environment is left as it was"
    assert user_cache(os.environ) == user_cache() == tmp_path / "mine" / "kueue-aks"


def test_the_charts_modules_and_binaries_share_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(binaries.CACHE_ENV, raising=False)
    assert crds.cache_root() == user_cache() / "charts"
    assert (
        crds.cache_root({"XDG_CACHE_HOME": str(tmp_path / "child")})
        == user_cache({"XDG_CACHE_HOME": str(tmp_path / "child")}) / "charts"
    )
    assert sources._cache_dir() == user_cache() / "modules"
    assert binaries.cache_root() == user_cache() / "e2e"
    # The e2e tier's own variable wins (.ci/run and the workflows set it).
    monkeypatch.setenv(binaries.CACHE_ENV, str(tmp_path / "e2e-binaries"))
    assert binaries.cache_root() == tmp_path / "e2e-binaries"
