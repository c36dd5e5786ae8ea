"""`kueue-aks:devicePlugin`: where the NVIDIA device plugin's chart and image come from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..facts.device_plugin import DEVICE_PLUGIN_VERSION
from ..k8s.charts import chart_source_problem, image_repository_problem
from .checks import PROJECT_ROOT, Problems, Reader, checked
from .keys import DEVICE_PLUGIN

DEFAULT_DEVICE_PLUGIN_CHART = "https://nvidia.github.io/k8s-device-plugin"


@dataclass(frozen=True)
class DevicePluginSettings:
    chart: str = DEFAULT_DEVICE_PLUGIN_CHART
    image_repository: str | None = None  # a mirror of nvcr.io/nvidia/k8s-device-plugin


def parse_device_plugin(problems: Problems, raw: Any) -> DevicePluginSettings:
    r = Reader(problems, DEVICE_PLUGIN.name, raw, DEVICE_PLUGIN)
    return DevicePluginSettings(
        chart=r.get(
            "chart",
            DEFAULT_DEVICE_PLUGIN_CHART,
            checked(problems, lambda v: chart_source_problem(v, DEVICE_PLUGIN_VERSION, PROJECT_ROOT)),
        ),
        image_repository=r.get("imageRepository", None, checked(problems, image_repository_problem)),
    )
