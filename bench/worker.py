"""One cold evaluation of the program in a fresh process, as `pulumi preview` starts it.

    python -m bench.worker Pulumi.<stack>.yaml <stack>

Prints one JSON line: seconds spent importing (Pulumi, the providers, the program's modules),
seconds evaluating the program under mocks (first run in the process), registrations,
and the process's peak resident memory. The caller times the whole process, interpreter start
included.
"""

from __future__ import annotations

import time

START = time.perf_counter()

import json
import logging
import resource
import sys
from pathlib import Path

import pulumi  # noqa: F401
import pulumi_azure_native.containerservice
import pulumi_azure_native.resources  # noqa: F401
import pulumi_kubernetes
import yaml

from testbed.harness import run_program

LIBRARIES = time.perf_counter()
# What __main__.py loads on top: the components and the provider modules they reach lazily.
import pulumi_kubernetes.apiextensions
import pulumi_kubernetes.core.v1
import pulumi_kubernetes.helm.v3  # noqa: F401

import components.cluster.component
import components.gpu.component
import components.kueue.install
import components.kueue.queues  # noqa: F401


SDK_PACKAGES = ("pulumi", "pulumi_kubernetes", "pulumi_azure_native")


def main(argv: list[str]) -> int:
    stack_file, stack = Path(argv[0]), argv[1]
    logging.getLogger().addHandler(logging.NullHandler())  # the mock engine logs warnings to the root logger
    imported = time.perf_counter()
    config = yaml.safe_load(stack_file.read_text())["config"]
    run = run_program(config, stack=stack)
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "import_s": imported - START,
                "import_libraries_s": LIBRARIES - START,
                "import_program_s": imported - LIBRARIES,
                "eval_s": done - imported,
                "in_process_s": done - START,
                "registrations": len(run.registrations),
                "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # Linux: KiB
                # The Pulumi SDK's modules the run loaded: what any program with these resources imports.
                "sdk_modules": sorted(m for m in sys.modules if m.split(".")[0] in SDK_PACKAGES),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
