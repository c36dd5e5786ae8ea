"""The GPU device plugin: `values` decides NVIDIA's k8s-device-plugin chart and values for the
stack's GPU pools (pure); `component` creates its release (NvidiaDevicePlugin)."""
