"""Developer and CI tools that are not part of the Pulumi program."""
