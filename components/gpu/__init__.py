"""The GPU device plugin: `chart` pins its chart (a fact the config reads), `values` decides its
values for the stack's GPU pools (pure); `component` creates its release (NvidiaDevicePlugin)."""
