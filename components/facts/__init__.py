"""Plain facts the config and the builders read: Azure's VM sizes and what a node of each can run,
its regions, names and roles, Kueue's releases and its controller's requests, the device plugin's
and the job operators' pins, and the system pool's sizing rule. Data and pure functions only: no
Pulumi, no I/O, and no import of anything but other facts."""
