"""A stack's Pulumi state, read and written through Pulumi's Automation API for the command-line tools
that edit it (components/recovery, components/operators/migrate); the program itself never imports it."""
