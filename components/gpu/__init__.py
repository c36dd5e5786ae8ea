"""The GPU device plugin: its Helm values for the stack's GPU pools, decided as plain data, and the
release that makes `nvidia.com/gpu` schedulable there (NvidiaDevicePlugin)."""
