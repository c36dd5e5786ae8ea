"""A stack's Pulumi state, read and written through Pulumi's Automation API with secrets left
encrypted, for the command-line tools that edit it; the program itself never imports it."""
