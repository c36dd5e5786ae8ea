"""The device plugin's chart pin, a plain fact the config (its chart source check) and the values
read."""

DEVICE_PLUGIN_CHART = "nvidia-device-plugin"  # its name in an https chart repository
# Chart version (= appVersion, so image nvcr.io/nvidia/k8s-device-plugin of that version);
# tests check it against ../shared/nvidia-device-plugin/v0.20.0/Chart.yaml.
DEVICE_PLUGIN_VERSION = "0.20.0"
DEVICE_PLUGIN_NAMESPACE = "nvidia-device-plugin"
DEVICE_PLUGIN_RELEASE_NAME = "nvidia-device-plugin"
