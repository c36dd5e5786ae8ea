"""Recreate ../shared, the upstream reference data the tests read, from GitHub at pinned refs.

    python -m tools.fetch_reference --dest ../shared [--kueue 0.19.2] [--device-plugin 0.20.0]

The project never copies this data into the repository (../shared/DESIGN.md), so anything that
runs the tests without ../shared (GitHub Actions, a fresh clone) fetches it with this tool. Each
file comes from raw.githubusercontent.com/<owner>/<repo>/<ref>/<path>, is checked against the git
blob id pinned below when there is one (a moved tag or a changed file then fails the run), and
lands in the layout of ../shared:

    kueue/v<version>/               CRDs, chart values.yaml + Chart.yaml, feature-gate lists,
                                    examples, config-fields.yaml (derived), SOURCE.md
    kueue/v<version>/chart/         kueue-<version>.tgz, the published chart as a file (e2e tier)
    nvidia-device-plugin/v<version>/ chart values.yaml + Chart.yaml, SOURCE.md, and
                                    chart/nvidia-device-plugin-<version>.tgz (e2e tier)
    pulumi/                         project.json (Pulumi.yaml's JSON schema), SOURCE.md
    pulumi/language-python/         Pulumi's Python language host as source (main.go, go.mod,
                                    go.sum, the pulumi-language-python-exec shim, kept
                                    executable), SOURCE.md: the e2e tier builds the host from it

config-fields.yaml is derived, not copied: the field tree of Kueue's manager Configuration,
parsed from the Go types at the same tag (no Go code is stored). The chart archives are built,
not downloaded (the published archives' digests cannot be checked where this was written): each
chart folder is fetched file by file at the tag, every file checked against its git blob id in
tools/chart_pins.py (Chart.yaml and Chart.lock after writing them as helm package does, Kueue's
values.yaml after its release edits), then packaged deterministically and the tar stream checked
against its pinned sha256; they are built for the pinned versions only. Each SOURCE.md written
here lists every file with its blob id and the sha256 it got; the language host's also says why
it is here and how it is built, as the hand-written note it replaces did. Pure stdlib + pyyaml, so
it runs before anything else is installed.
"""

from __future__ import annotations

import argparse
import copy
import functools
import gzip
import hashlib
import io
import re
import subprocess
import sys
import tarfile
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from tools.chart_pins import DEVICE_PLUGIN_CHART, KUEUE_CHART, PackagedChart, git_blob_id

Fetch = Callable[[str], bytes]


@dataclass(frozen=True)
class RefFile:
    local: str  # path under the source's directory in ../shared
    upstream: str  # path in the upstream repository
    blob: str | None  # git blob id at the pinned ref; None: not pinned, only its sha256 is recorded
    executable: bool = False  # written with mode 0755 (upstream's file mode 100755)


@dataclass(frozen=True)
class Source:
    title: str
    repo: str  # owner/name on GitHub
    ref: str  # tag or commit
    directory: str  # under --dest
    license: str
    files: tuple[RefFile, ...]


# --- file maps: the pinned upstream files, one table per source ---------------------------

# kubernetes-sigs/kueue at tag v0.19.2 (commit 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb); blob ids
# from ../shared/kueue/v0.19.2/SOURCE.md. Blob ids hold for this version only.
KUEUE_VERSION = "0.19.2"
KUEUE_FILES: tuple[RefFile, ...] = (
    RefFile(
        "crds/kueue.x-k8s.io_admissionchecks.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_admissionchecks.yaml",
        "317662baa1e7653915510c627ac91c020926c0ca",
    ),
    RefFile(
        "crds/kueue.x-k8s.io_clusterqueues.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml",
        "a605e10a33050f30a5a31a5240444216a2a4f553",
    ),
    RefFile(
        "crds/kueue.x-k8s.io_cohorts.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_cohorts.yaml",
        "0a66adc3e955bf3ab7717452f67269ce2e84fd9b",
    ),
    RefFile(
        "crds/kueue.x-k8s.io_localqueues.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml",
        "379c64452ad090fa12861c24aad7f102d0118a5f",
    ),
    RefFile(
        "crds/kueue.x-k8s.io_multikueueclusters.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_multikueueclusters.yaml",
        "f3c03c98e46045c2b161bd0064d7bb561e11d134",
    ),
    RefFile(
        "crds/kueue.x-k8s.io_multikueueconfigs.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_multikueueconfigs.yaml",
        "005fc751e55970a1061ff04ed3f8f417275eef2d",
    ),
    RefFile(
        "crds/kueue.x-k8s.io_provisioningrequestconfigs.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_provisioningrequestconfigs.yaml",
        "95ed0039d027647ac09b3bfd7f529cb1cacfca31",
    ),
    RefFile(
        "crds/kueue.x-k8s.io_resourceflavors.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_resourceflavors.yaml",
        "6c3216d8ce5f59a77dcee45e3697bc110a249df9",
    ),
    RefFile(
        "crds/kueue.x-k8s.io_topologies.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_topologies.yaml",
        "f5a2774bbc83a5aedbe4272ecb780c399da09532",
    ),
    RefFile(
        "crds/kueue.x-k8s.io_workloadpriorityclasses.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_workloadpriorityclasses.yaml",
        "75c01e1ac63cc3f885437334dccb168364c6ed94",
    ),
    RefFile(
        "crds/kueue.x-k8s.io_workloads.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_workloads.yaml",
        "fc1fd767332d555e72b6330017309d7d9f8ff79d",
    ),
    RefFile("values.yaml", "charts/kueue/values.yaml", "230a8370a6b753203dea2c01221f03fb3b754226"),
    RefFile("Chart.yaml", "charts/kueue/Chart.yaml", "425aea05c1d5f1df3ef551800402d8e6aa3a003d"),
    RefFile(
        "examples/concurrent-admission-setup.yaml",
        "site/static/examples/admin/concurrent-admission-setup.yaml",
        "6e072c90bca95755ff8a4e0e7cac9de6fdee1031",
    ),
    RefFile(
        "examples/minimal-cq.yaml",
        "site/static/examples/admin/minimal-cq.yaml",
        "b5cd26091f62b2c42ac495f93b25e456a402ddd2",
    ),
    RefFile(
        "examples/resource-flavor-empty.yaml",
        "site/static/examples/admin/resource-flavor-empty.yaml",
        "174636939f95a17c97a6768d0fda0d86fd957f48",
    ),
    RefFile(
        "examples/resource-flavor-taints.yaml",
        "site/static/examples/admin/resource-flavor-taints.yaml",
        "2247c7680e7af98ad8520f8e284bd35c94cf0b41",
    ),
    RefFile(
        "examples/resource-flavor-tolerations.yaml",
        "site/static/examples/admin/resource-flavor-tolerations.yaml",
        "9591ecd12c7ee44c8bc49320a2234add3926cd18",
    ),
    RefFile(
        "examples/shared-quota-sample-job.yaml",
        "site/static/examples/admin/shared-quota-sample-job.yaml",
        "c7c3610049bdd9cb6f1e744f64ee78705d314532",
    ),
    RefFile(
        "examples/shared-quota-setup.yaml",
        "site/static/examples/admin/shared-quota-setup.yaml",
        "ce8131723e0b0a8f21bee96217540b8fa496e9f7",
    ),
    RefFile(
        "examples/single-clusterqueue-setup.yaml",
        "site/static/examples/admin/single-clusterqueue-setup.yaml",
        "2ee6dd52daf5f3e7c20693d9545f58a8baba8b60",
    ),
    RefFile(
        "examples/quick-start-setup.yaml",
        "site/static/examples/getting-started/quick-start-setup.yaml",
        "886ba764d6c76083e9dcaaafcc726613908374d6",
    ),
    RefFile(
        "examples/tas-sample-queues.yaml",
        "site/static/examples/tas/sample-queues.yaml",
        "f3d31b8853e1a440c1e477f1998d948b86e0a5e0",
    ),
    RefFile(
        "examples/tas-sample-gpu-queues.yaml",
        "site/static/examples/tas/sample-gpu-queues.yaml",
        "2931662e37fef079a30095200f4512c9343aad34",
    ),
    RefFile(
        "examples/admission-fair-sharing-setup.yaml",
        "site/static/examples/admission-fs/admission-fair-sharing-setup.yaml",
        "27b63b730eac7805a48940460acc6af58543a342",
    ),
    RefFile(
        "featuregates/versioned_feature_list.yaml",
        "site/data/featuregates/versioned_feature_list.yaml",
        "06b11b320bb9e37165aa3b4167b9e672f7d8cd0d",
    ),
    RefFile(
        "featuregates/removed_feature_list.yaml",
        "site/data/featuregates/removed_feature_list.yaml",
        "2a7c5cdeff9365569d73e4dda4ecc5100d9f2ef8",
    ),
)
# The manager Configuration's Go types, parsed into config-fields.yaml (never stored). The same
# package's deprecated_types.go declares aliases the types use (from v0.19: `type
# ClusterProfileCredentialsProvider = ClusterProfileAccessProvider`); older tags have no such file.
KUEUE_CONFIG_TYPES = "apis/config/v1beta2/configuration_types.go"
KUEUE_DEPRECATED_TYPES = "apis/config/v1beta2/deprecated_types.go"
CONFIG_FIELDS = "config-fields.yaml"

# NVIDIA/k8s-device-plugin at tag v0.20.0 (commit 1b826acc6af3079d8923bac395c3124b8861a9a6).
# ../shared/nvidia-device-plugin/v0.20.0/SOURCE.md names no blob ids: only sha256 is recorded.
DEVICE_PLUGIN_VERSION = "0.20.0"
DEVICE_PLUGIN_FILES: tuple[RefFile, ...] = (
    RefFile("values.yaml", "deployments/helm/nvidia-device-plugin/values.yaml", None),
    RefFile("Chart.yaml", "deployments/helm/nvidia-device-plugin/Chart.yaml", None),
)

# pulumi/pulumi at a commit (2026-08-21), as ../shared/pulumi/SOURCE.md names it.
PULUMI_COMMIT = "1b5949891b3cefcb9974752b24a5ecef0acc86c8"
PULUMI_FILES: tuple[RefFile, ...] = (
    RefFile("project.json", "sdk/go/common/workspace/project.json", "71846eef618fe494532a833b344ec901053843f8"),
)

# The module github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3 at the same commit,
# which the Go module proxy does not serve; blob ids from ../shared/pulumi/language-python/SOURCE.md.
LANGUAGE_HOST_FILES: tuple[RefFile, ...] = (
    RefFile("main.go", "sdk/python/cmd/pulumi-language-python/main.go", "0e53e281c416e8c97894299e464adb4dbf0002db"),
    RefFile("go.mod", "sdk/python/cmd/pulumi-language-python/go.mod", "0020ecf8d7a5e076fd3cb223d7ac204013f68b9e"),
    RefFile("go.sum", "sdk/python/cmd/pulumi-language-python/go.sum", "9cbb885cb3c4ee10423b58b6ada3074daa443280"),
    RefFile(
        "pulumi-language-python-exec",
        "sdk/python/cmd/pulumi-language-python-exec",
        "cc161ccfa65000af2abbeab9be14a49e57198d63",
        executable=True,
    ),
)
# What the hand-written ../shared/pulumi/language-python/SOURCE.md says, line for line: the title,
# why the source is here ({files}: its file list), how it was built and used.
LANGUAGE_HOST_NOTE = """\
# Pulumi's Python language host, as source

The module `github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3` is not served by the
Go module proxy here (403 for every version tried, v3.252.0 to v3.274.1), while `pkg/v3` and
`sdk/v3` are. These files are that module's source, unchanged, from github.com/pulumi/pulumi at
commit `{ref}` (2026-08-21, tag v3.259.0 + 14), license {license}:

{files}

Its `go.mod` replaces `pkg/v3` and `sdk/v3` with paths in the pulumi repository. Built with those
two replace lines removed and `pkg/v3`/`sdk/v3` required at v3.260.0 from the module proxy
(`go mod tidy`, then `go build`), the binary drove this project's program through `pulumi up`,
`preview` and `destroy` on the local control plane together with a Pulumi CLI of the same
minor version. `pulumi-language-python-exec` is the small Python shim the host runs; it goes
beside the binary on PATH.
"""

GENERATED_MARK = "<!-- generated by tools/fetch_reference.py -->"


def kueue_source(version: str) -> Source:
    # The pinned blob ids say nothing about another release: its files are only hashed.
    files = KUEUE_FILES if version == KUEUE_VERSION else tuple(replace(f, blob=None) for f in KUEUE_FILES)
    return Source("Kueue", "kubernetes-sigs/kueue", f"v{version}", f"kueue/v{version}", "Apache-2.0", files)


def device_plugin_source(version: str) -> Source:
    return Source(
        "NVIDIA device plugin Helm chart",
        "NVIDIA/k8s-device-plugin",
        f"v{version}",
        f"nvidia-device-plugin/v{version}",
        "Apache-2.0",
        DEVICE_PLUGIN_FILES,
    )


def pulumi_source() -> Source:
    return Source("Pulumi project file schema", "pulumi/pulumi", PULUMI_COMMIT, "pulumi", "Apache-2.0", PULUMI_FILES)


def language_host_source() -> Source:
    return Source(
        "Pulumi's Python language host",
        "pulumi/pulumi",
        PULUMI_COMMIT,
        "pulumi/language-python",
        "Apache-2.0",
        LANGUAGE_HOST_FILES,
    )


# Every repository the sources and charts above come from.
REPOSITORIES = frozenset({"kubernetes-sigs/kueue", "NVIDIA/k8s-device-plugin", "pulumi/pulumi"})


# --- downloads -----------------------------------------------------------------------------


class FetchError(Exception):
    """A download failed or does not match its pinned blob id."""


class NotFound(FetchError):
    """The file is not there at that ref (HTTP 404)."""


def raw_url(repo: str, ref: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{ref}/{path}"


RAW_URL = re.compile(r"^https://raw\.githubusercontent\.com/([^/]+/[^/]+)/([^/]+)/(.+)$")


def git_fetch(clones: dict[str, Path], fallback: Fetch) -> Fetch:
    """A fetch that reads the files of the repositories in `clones` (owner/name -> a clone or a
    bare mirror) with `git show <ref>:<path>`, as the raw URL names them, and any other URL with
    `fallback`: for a machine that has the repositories but not GitHub's raw host."""

    def fetch(url: str) -> bytes:
        match = RAW_URL.match(url)
        if match is None or match.group(1) not in clones:
            return fallback(url)
        repo, ref, path = match.groups()
        clone = clones[repo]
        git_dir = clone / ".git" if (clone / ".git").exists() else clone
        done = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{ref}:{path}"], capture_output=True)
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace").strip()
            if "does not exist in" in error or "exists on disk, but not in" in error:
                raise NotFound(f"{url}: not in {git_dir} ({error})")
            raise FetchError(f"{url}: git show in {git_dir} failed: {error}")
        return done.stdout

    return fetch


def http_get(url: str, attempts: int = 3) -> bytes:
    """GET url; connection drops and 5xx are retried (GitHub's raw host has them), a 404 is not."""
    for attempt in range(1, attempts + 1):
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as error:
            if error.code == 404:
                raise NotFound(f"{url}: HTTP 404") from error
            if error.code < 500 or attempt == attempts:
                raise FetchError(f"{url}: HTTP {error.code}") from error
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            if attempt == attempts:
                raise FetchError(f"{url}: {error}") from error
        time.sleep(2**attempt)
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Fetched:
    file: RefFile
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def download(source: Source, fetch: Fetch) -> list[Fetched]:
    """Every file of a source, each checked against its pinned blob id."""
    fetched = []
    for file in source.files:
        url = raw_url(source.repo, source.ref, file.upstream)
        data = fetch(url)
        if file.blob is not None and git_blob_id(data) != file.blob:
            raise FetchError(
                f"{url}: git blob {git_blob_id(data)}, pinned {file.blob}: "
                "the tag moved or the table is wrong; not writing anything"
            )
        fetched.append(Fetched(file, data))
    return fetched


# --- Go struct types -> config-fields tree ---------------------------------------------------

# Types from other packages, keyed by the import names configuration_types.go uses, as
# config-fields.yaml spells them: durations and label selectors by their YAML form, embedded
# structs by their fields (TypeMeta: k8s.io/apimachinery meta/v1 types.go; LeaderElectionConfiguration:
# k8s.io/component-base config/v1alpha1 types.go). Other qualified types (corev1.ResourceName,
# clientcmdapi.ExecConfig, ...) keep their name.
EXTERNAL_TYPES: dict[str, Any] = {
    "time.Duration": "duration",
    "metav1.Duration": "duration",
    "metav1.LabelSelector": "labelSelector",
    "metav1.TypeMeta": {"apiVersion": "string", "kind": "string"},
    "configv1alpha1.LeaderElectionConfiguration": {
        "leaderElect": "bool",
        "leaseDuration": "duration",
        "renewDeadline": "duration",
        "retryPeriod": "duration",
        "resourceLock": "string",
        "resourceName": "string",
        "resourceNamespace": "string",
    },
}
GO_BUILTINS = frozenset(
    "bool string byte rune int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr "
    "float32 float64 complex64 complex128".split()
)

# A Go type expression: ("name", "pkg.T" | "T") | ("ptr", t) | ("slice", t) | ("map", k, v)
# | ("struct", fields).
GoType = tuple[Any, ...]


@dataclass(frozen=True)
class GoField:
    name: str | None  # None: an embedded type
    type: GoType
    tag: str


_TOKEN = re.compile(
    r"""(?P<space>[ \t\r]+)
      | (?P<newline>\n)
      | (?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<raw>`[^`]*`)
      | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      | (?P<ident>[A-Za-z_]\w*)
      | (?P<number>\d[\w.]*)
      | (?P<punct>[^\s\w])""",
    re.S | re.X,
)


def _tokens(source: str) -> list[tuple[str, str]]:
    tokens = []
    pos = 0
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if match is None:
            raise ValueError(f"cannot tokenize Go source at offset {pos}: {source[pos : pos + 20]!r}")
        kind, text = match.lastgroup or "", match.group()
        pos = match.end()
        if kind == "comment" and "\n" in text:
            tokens.append(("newline", "\n"))  # Go reads a multi-line comment as a line break
        elif kind not in ("space", "comment"):
            tokens.append((kind, text))
    tokens.append(("eof", ""))
    return tokens


class _GoParser:
    """Type declarations of one Go file; function bodies and everything else are skipped."""

    def __init__(self, source: str) -> None:
        self.tokens = _tokens(source)
        self.pos = 0

    def peek(self, ahead: int = 0) -> tuple[str, str]:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def next(self) -> tuple[str, str]:
        token = self.peek()
        self.pos += 1
        return token

    def expect(self, text: str) -> None:
        got = self.next()[1]
        if got != text:
            raise ValueError(f"Go source: expected {text!r}, got {got!r} (token {self.pos})")

    def skip_newlines(self) -> None:
        while self.peek()[1] in ("\n", ";"):
            self.pos += 1

    def declarations(self) -> dict[str, GoType]:
        decls: dict[str, GoType] = {}
        depth = 0
        while self.peek()[0] != "eof":
            kind, text = self.next()
            if text in "{([" and kind == "punct":
                depth += 1
            elif text in "})]" and kind == "punct":
                depth -= 1
            elif depth == 0 and kind == "ident" and text == "type":
                if self.peek()[1] == "(":
                    self.next()
                    self.skip_newlines()
                    while self.peek()[1] != ")":
                        decls.update([self.type_spec()])
                        self.skip_newlines()
                    self.next()
                else:
                    decls.update([self.type_spec()])
        return decls

    def type_spec(self) -> tuple[str, GoType]:
        kind, name = self.next()
        if kind != "ident":
            raise ValueError(f"Go source: type name expected, got {name!r}")
        if self.peek()[1] == "=":  # alias: kept by its own name like any non-struct type
            self.next()
        return name, self.type_expr()

    def type_expr(self) -> GoType:
        kind, text = self.next()
        if text == "*":
            return ("ptr", self.type_expr())
        if text == "[":
            while (token := self.next())[1] != "]":  # slice, or array of any length
                if token[0] == "eof":
                    raise ValueError("Go source: unclosed [")
            return ("slice", self.type_expr())
        if text == "map":
            self.expect("[")
            key = self.type_expr()
            self.expect("]")
            return ("map", key, self.type_expr())
        if text == "struct":
            return ("struct", self.fields())
        if kind == "ident" and text not in ("func", "chan", "interface"):
            if self.peek()[1] == ".":
                self.next()
                return ("name", f"{text}.{self.next()[1]}")
            return ("name", text)
        raise ValueError(f"Go source: unsupported type starting at {text!r}")

    def fields(self) -> tuple[GoField, ...]:
        self.expect("{")
        fields: list[GoField] = []
        self.skip_newlines()
        while self.peek()[1] != "}":
            first, after = self.peek(), self.peek(1)
            embedded = first[1] == "*" or after[1] in (".", "\n", ";", "}") or after[0] == "raw"
            names = [] if embedded else self.field_names()
            field_type = self.type_expr()
            tag = self.next()[1][1:-1] if self.peek()[0] == "raw" else ""
            fields += [GoField(n, field_type, tag) for n in names] or [GoField(None, field_type, tag)]
            self.skip_newlines()
        self.next()
        return tuple(fields)

    def field_names(self) -> list[str]:
        names = [self.next()[1]]
        while self.peek()[1] == ",":
            self.next()
            names.append(self.next()[1])
        return names


def parse_go_types(source: str) -> dict[str, GoType]:
    """The top-level type declarations of a Go file, by name."""
    return _GoParser(source).declarations()


_JSON_TAG = re.compile(r'(?:^|\s)json:"([^"]*)"')


def _type_name(go_type: GoType) -> str:
    while go_type[0] == "ptr":
        go_type = go_type[1]
    return str(go_type[1]) if go_type[0] == "name" else ""


def json_fields(fields: tuple[GoField, ...], decls: dict[str, GoType], seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """JSON name -> tree of a struct's fields, as encoding/json (and so Kueue's decoder) sees them."""
    tree: dict[str, Any] = {}
    for field in fields:
        match = _JSON_TAG.search(field.tag)
        json_name, *options = (match.group(1) if match else "").split(",")
        if json_name == "-" and not options:
            continue  # json:"-": never decoded
        if field.name is None and not json_name:  # embedded without a name: fields promoted
            inner = json_tree(field.type, decls, seen)
            if not isinstance(inner, dict):
                raise ValueError(f"embedded {_type_name(field.type)} is not a struct")
            tree.update(inner)
        elif field.name is not None and not json_name and not field.name[0].isupper():
            continue  # unexported and untagged: invisible to encoding/json
        else:
            tree[json_name or str(field.name)] = json_tree(field.type, decls, seen)
    return tree


def json_tree(go_type: GoType, decls: dict[str, GoType], seen: tuple[str, ...] = ()) -> Any:
    """A Go type as config-fields.yaml writes it: a scalar type name, [item], {"<key>": value} or fields."""
    kind = go_type[0]
    if kind == "ptr":
        return json_tree(go_type[1], decls, seen)
    if kind == "slice":
        return [json_tree(go_type[1], decls, seen)]
    if kind == "map":
        return {"<key>": json_tree(go_type[2], decls, seen)}
    if kind == "struct":
        return json_fields(go_type[1], decls, seen)
    name = go_type[1]
    if name in EXTERNAL_TYPES:
        return copy.deepcopy(EXTERNAL_TYPES[name])
    if "." in name or name in GO_BUILTINS:
        return name
    if name not in decls:
        raise ValueError(f"type {name} is not declared in the parsed Go source")
    if decls[name][0] != "struct":  # e.g. `type PreemptionStrategy string`: named, as the enum it is
        return name
    if name in seen:
        raise ValueError(f"recursive type {' -> '.join((*seen, name))}")
    return json_tree(decls[name], decls, (*seen, name))


def config_fields(go_source: str, root: str = "Configuration", *more_sources: str) -> dict[str, Any]:
    """The JSON field tree of Kueue's manager Configuration from configuration_types.go and the
    other files of its package that declare types it names (deprecated_types.go)."""
    decls = parse_go_types(go_source)
    for source in more_sources:
        decls.update(parse_go_types(source))
    tree = json_tree(("name", root), decls)
    assert isinstance(tree, dict)
    return tree


def config_fields_yaml(tree: dict[str, Any], ref: str) -> str:
    header = (
        "# Fields of config.kueue.x-k8s.io/v1beta2 Configuration (Kueue's manager config), as json\n"
        f"# names -> type or nested fields; generated by tools/fetch_reference.py from\n"
        f"# {KUEUE_CONFIG_TYPES} at {ref}. Kueue decodes this config strictly:\n"
        "# a field not listed here makes the manager exit at start-up.\n"
    )
    return header + yaml.safe_dump(tree, sort_keys=False, default_flow_style=False)


# --- packaged charts -------------------------------------------------------------------------


def _go_key_less(a: str, b: str) -> bool:
    """go-yaml v2's map key order (helm's YAML encoder): runes, a non-letter before a letter, digit
    runs by their number."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        if x.isalpha() and y.isalpha():
            return x < y
        if x.isalpha() or y.isalpha():
            return y.isalpha()
        digits_a = re.match(r"\d*", a[i:]).group()  # type: ignore[union-attr]
        digits_b = re.match(r"\d*", b[i:]).group()  # type: ignore[union-attr]
        if digits_a and digits_b and int(digits_a) != int(digits_b):
            return int(digits_a) < int(digits_b)
        if len(digits_a) != len(digits_b):
            return len(digits_a) < len(digits_b)
        return x < y
    return len(a) < len(b)


def _go_sorted(node: Any) -> Any:
    if isinstance(node, dict):
        order = functools.cmp_to_key(lambda x, y: -1 if _go_key_less(x, y) else int(_go_key_less(y, x)))
        return {key: _go_sorted(node[key]) for key in sorted(node, key=order)}
    if isinstance(node, list):
        return [_go_sorted(item) for item in node]
    return node


class _HelmEmitter(yaml.emitter.Emitter):
    def choose_scalar_style(self) -> str:
        # go-yaml double-quotes a string that would read back as another type (a timestamp, a
        # number); PyYAML would single-quote it. Otherwise both pick plain, then single quotes.
        event = self.event
        if not event.style and not event.implicit[0] and event.implicit[1]:
            return '"'
        return str(super().choose_scalar_style())


class _HelmDumper(_HelmEmitter, yaml.serializer.Serializer, yaml.representer.SafeRepresenter, yaml.resolver.Resolver):
    def __init__(self, stream: Any, **kwargs: Any) -> None:
        _HelmEmitter.__init__(self, stream, allow_unicode=True)
        yaml.serializer.Serializer.__init__(self)
        yaml.representer.SafeRepresenter.__init__(self, default_flow_style=False, sort_keys=False)
        yaml.resolver.Resolver.__init__(self)


def helm_yaml(data: bytes, **fields: str) -> bytes:
    """Chart.yaml or Chart.lock as `helm package` writes it into the archive (it parses the file and
    re-encodes it: sigs.k8s.io/yaml, keys sorted as go-yaml sorts them, comments dropped), with
    `fields` set as --version / --app-version set them. Scalars stay strings, as in helm's
    metadata; a field helm would drop or retype shows up as a blob mismatch, not silently."""
    parsed = yaml.load(data.decode(), Loader=yaml.BaseLoader)
    if not isinstance(parsed, dict):
        raise ValueError("chart metadata is not a mapping")
    return yaml.dump(_go_sorted({**parsed, **fields}), Dumper=_HelmDumper).encode()


KUEUE_STAGING_REGISTRY = "us-central1-docker.pkg.dev/k8s-staging-images/kueue"
KUEUE_REGISTRY = "registry.k8s.io/kueue"
# The images hack/helm-chart-package.sh points at the promoted registry, by their values.yaml path.
KUEUE_IMAGES = (
    ("controllerManager", "manager", "image"),
    ("kueueViz", "backend", "image"),
    ("kueueViz", "frontend", "image"),
)


def promote_kueue_values(data: bytes, version: str) -> bytes:
    """values.yaml with the edits upstream's hack/helm-chart-package.sh makes (by yq) for a promoted
    release: each image's repository moved from the staging to registry.k8s.io/kueue, its tag the
    release tag, pullPolicy IfNotPresent; the rest of the file byte for byte."""
    major, minor, _ = version.split(".")
    text = data.decode()
    for old, new in (
        (f"{KUEUE_STAGING_REGISTRY}/", f"{KUEUE_REGISTRY}/"),
        (f"tag: release-{major}.{minor}\n", f"tag: v{version}\n"),
        ("pullPolicy: Always\n", "pullPolicy: IfNotPresent\n"),
    ):
        if text.count(old) != len(KUEUE_IMAGES):
            raise ValueError(
                f"Kueue values.yaml: {old.strip()!r} occurs {text.count(old)} times, "
                f"expected once per image ({len(KUEUE_IMAGES)})"
            )
        text = text.replace(old, new)
    values = yaml.safe_load(text)
    for path in KUEUE_IMAGES:
        image = values
        for key in path:
            image = image[key]
        name = path[-1] if path[0] == "controllerManager" else f"kueueviz-{path[1]}"
        expected = {
            "repository": f"{KUEUE_REGISTRY}/{'kueue' if path[0] == 'controllerManager' else name}",
            "tag": f"v{version}",
            "pullPolicy": "IfNotPresent",
        }
        if {k: image.get(k) for k in expected} != expected:
            raise ValueError(f"Kueue values.yaml: {'.'.join(path)} is {image}, expected {expected}")
    return text.encode()


def _subchart_files(url: str, data: bytes, name: str) -> dict[str, bytes]:
    """The regular files of a vendored chart archive, by path inside its `<name>/` folder."""
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for info in tar.getmembers():
                top, _, path = info.name.partition("/")
                if info.isdir():
                    continue
                if not info.isfile() or top != name or not path:
                    raise FetchError(f"{url}: unexpected member {info.name!r}")
                files[path] = tar.extractfile(info).read()  # type: ignore[union-attr]
    except (tarfile.TarError, OSError, EOFError) as error:
        raise FetchError(f"{url}: not a chart archive: {error}") from error
    return files


def chart_files(chart: PackagedChart, fetch: Fetch) -> list[tuple[str, bytes]]:
    """Every member of the chart in archive order, each checked against its pinned blob id."""
    vendored: dict[str, tuple[str, dict[str, bytes]]] = {}
    members = []
    for member in chart.members:
        sub = next((s for s in chart.subcharts if member.path.startswith(s.path + "/")), None)
        if sub is None:
            url = raw_url(chart.repo, chart.ref, f"{chart.folder}/{member.path}")
            data = fetch(url)
        else:
            if sub.path not in vendored:
                archive_url = raw_url(chart.repo, chart.ref, f"{chart.folder}/{sub.archive}")
                vendored[sub.path] = (
                    archive_url,
                    _subchart_files(archive_url, fetch(archive_url), sub.path.rsplit("/", 1)[-1]),
                )
            archive_url, files = vendored[sub.path]
            inner = member.path[len(sub.path) + 1 :]
            url = f"{archive_url} ({inner})"
            if inner not in files:
                raise FetchError(f"{url}: not in the archive")
            data = files.pop(inner)
        try:
            if member.how == "metadata":
                data = helm_yaml(data, **(dict(chart.chart_yaml) if member.path == "Chart.yaml" else {}))
            elif member.how == "promote":
                data = promote_kueue_values(data, chart.version)
        except (ValueError, yaml.YAMLError) as error:
            raise FetchError(f"{url}: {error}") from error
        if git_blob_id(data) != member.blob:
            written = "" if member.how == "copy" else f" (as written into the archive: {member.how})"
            raise FetchError(
                f"{url}: git blob {git_blob_id(data)}{written}, pinned {member.blob}: "
                "the tag moved or the table is wrong; not writing anything"
            )
        members.append((member.path, data))
    for archive_url, files in vendored.values():
        if files:  # helm package would have packaged these too
            raise FetchError(f"{archive_url}: files not in tools/chart_pins.py: {sorted(files)}")
    return members


def chart_tar(chart: PackagedChart, members: list[tuple[str, bytes]]) -> bytes:
    """The chart's tar stream, the same bytes for the same members on any machine: helm package's
    layout (`<name>/<path>`, regular files only), mode 0644, owner 0:0, mtime 0, ustar headers."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, data in members:
            info = tarfile.TarInfo(f"{chart.name}/{path}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@dataclass(frozen=True)
class BuiltChart:
    chart: PackagedChart
    tar: bytes
    tgz: bytes


def build_chart(chart: PackagedChart, fetch: Fetch) -> BuiltChart:
    """Fetch, check and package a chart; the tar stream must have the pinned sha256."""
    tar = chart_tar(chart, chart_files(chart, fetch))
    digest = hashlib.sha256(tar).hexdigest()
    if digest != chart.tar_sha256:
        raise FetchError(
            f"{chart.name} {chart.version}: packaged tar sha256 {digest}, pinned {chart.tar_sha256}: "
            "the packaging changed or the table is wrong; not writing anything"
        )
    # gzip's header has no name and mtime 0; the deflate bytes depend on the zlib build, so
    # only the stream inside is pinned (tests check that it decompresses to it).
    return BuiltChart(chart, tar, gzip.compress(tar, compresslevel=9, mtime=0))


def chart_md(built: BuiltChart, edits: str) -> str:
    chart = built.chart
    subcharts = "".join(f", the vendored `{s.archive}` unpacked into `{s.path}/`" for s in chart.subcharts)
    text = (
        f"`{chart.folder}/` of https://github.com/{chart.repo} at `{chart.ref}`{edits}, laid out as "
        f"`helm package` lays it out ({len(chart.members)} files{subcharts}; Chart.yaml and Chart.lock written "
        "as helm writes them), so that tests can install it with no registry. Built by "
        "`python -m tools.fetch_reference`: every file checked against its git blob id in "
        "`tools/chart_pins.py`, then packaged deterministically (mode 0644, owner 0:0, mtime 0)."
    )
    return (
        f"\n## The packaged chart: {chart.local}\n\n{textwrap.fill(text, 100, break_on_hyphens=False)}\n\n"
        f"- sha256 of the tar stream (pinned): `{chart.tar_sha256}`\n"
        f"- sha256 of the .tgz (gzip, mtime 0; depends on the zlib build): `{hashlib.sha256(built.tgz).hexdigest()}`\n"
    )


KUEUE_CHART_EDITS = (
    " with the edits of upstream's `hack/helm-chart-package.sh` for a promoted release (image "
    f"repositories `{KUEUE_REGISTRY}/...`, tags = the release tag, `pullPolicy: IfNotPresent`)"
)


# --- writing ../shared -----------------------------------------------------------------------


def source_md(source: Source, fetched: list[Fetched], derived: str = "", note: str = "") -> str:
    """The provenance note: `note` (markdown, its own title) first when given, then the standard
    section and the file map, then `derived`."""
    rows = "\n".join(f"| {f.file.local} | {f.file.upstream} | {f.file.blob or '-'} | {f.sha256} |" for f in fetched)
    heading = f"{note}\n## Source of these files" if note else "# Source of these files"
    return (
        f"{GENERATED_MARK}\n{heading}\n\n"
        f"- Upstream repository: https://github.com/{source.repo}\n"
        f"- Ref: `{source.ref}`\n"
        f"- License: {source.license} (upstream `LICENSE` at the same ref)\n"
        "- Fetched by `python -m tools.fetch_reference` from raw.githubusercontent.com. Every file below\n"
        "  is an unmodified byte copy; a listed blob id was checked, `-` means none is pinned.\n\n"
        f"## File map (local path <- upstream path @ {source.ref}, git blob id, sha256)\n\n"
        "| local | upstream | blob | sha256 |\n|---|---|---|---|\n"
        f"{rows}\n{derived}"
    )


def language_host_note(source: Source) -> str:
    """LANGUAGE_HOST_NOTE for the source, its file list in the hand-written note's form."""
    files = "\n".join(f"- `{f.upstream}`: blob `{f.blob}`" for f in source.files)
    return LANGUAGE_HOST_NOTE.format(ref=source.ref, license=source.license, files=files)


def kueue_derived_md(ref: str, go_sha256: str, deprecated_sha256: str | None = None) -> str:
    also = f" and `{KUEUE_DEPRECATED_TYPES}`\n(sha256 `{deprecated_sha256}`)" if deprecated_sha256 else ""
    return (
        "\n## Derived data\n\n"
        f"`{CONFIG_FIELDS}` lists every field of the manager configuration\n"
        "(`config.kueue.x-k8s.io/v1beta2` `Configuration`) by its JSON name, with its type or nested fields.\n"
        f"It is parsed from `{KUEUE_CONFIG_TYPES}` at `{ref}`\n"
        f"(sha256 `{go_sha256}`){also}, with component-base's LeaderElectionConfiguration\n"
        "fields. Kueue decodes the manager config strictly: a field not in this tree makes the manager\n"
        "exit at start-up.\n"
    )


def _outputs(
    dest: Path, source: Source, fetched: list[Fetched], derived: dict[str, str | bytes]
) -> Iterator[tuple[Path, bytes, bool]]:
    """(path, bytes, executable) of every file a source writes."""
    base = dest / source.directory
    for item in fetched:
        yield base / item.file.local, item.data, item.file.executable
    for name, content in derived.items():
        yield base / name, content.encode() if isinstance(content, str) else content, False


def _check_not_hand_written(directory: Path, force: bool) -> None:
    # A hand-written SOURCE.md carries notes this tool cannot regenerate; keep it unless told.
    existing = directory / "SOURCE.md"
    if not force and existing.exists() and GENERATED_MARK not in existing.read_text():
        raise FetchError(f"{existing} was not written by this tool; pass --force to replace it")


def fetch_reference(
    dest: Path,
    kueue: str = KUEUE_VERSION,
    device_plugin: str = DEVICE_PLUGIN_VERSION,
    fetch: Fetch = http_get,
    force: bool = False,
) -> list[Path]:
    """Download and verify everything first, then write it under dest; returns the files written."""
    kueue_src, plugin_src, pulumi_src = kueue_source(kueue), device_plugin_source(device_plugin), pulumi_source()
    host_src = language_host_source()
    for source in (kueue_src, plugin_src, pulumi_src, host_src):
        _check_not_hand_written(dest / source.directory, force)

    kueue_files = download(kueue_src, fetch)
    go_source = fetch(raw_url(kueue_src.repo, kueue_src.ref, KUEUE_CONFIG_TYPES))
    try:
        deprecated: bytes | None = fetch(raw_url(kueue_src.repo, kueue_src.ref, KUEUE_DEPRECATED_TYPES))
    except NotFound:
        deprecated = None  # before v0.19 the package had no aliases
    # The charts are pinned for the default versions only (tools/chart_pins.py).
    kueue_chart = build_chart(KUEUE_CHART, fetch) if kueue == KUEUE_CHART.version else None
    kueue_derived: dict[str, str | bytes] = {
        CONFIG_FIELDS: config_fields_yaml(
            config_fields(go_source.decode(), "Configuration", *([deprecated.decode()] if deprecated else [])),
            kueue_src.ref,
        ),
        "SOURCE.md": source_md(
            kueue_src,
            kueue_files,
            kueue_derived_md(
                kueue_src.ref,
                hashlib.sha256(go_source).hexdigest(),
                hashlib.sha256(deprecated).hexdigest() if deprecated else None,
            )
            + (chart_md(kueue_chart, KUEUE_CHART_EDITS) if kueue_chart else ""),
        ),
    }
    plugin_files = download(plugin_src, fetch)
    plugin_chart = build_chart(DEVICE_PLUGIN_CHART, fetch) if device_plugin == DEVICE_PLUGIN_CHART.version else None
    plugin_md = chart_md(plugin_chart, ", unmodified") if plugin_chart else ""
    plugin_derived: dict[str, str | bytes] = {"SOURCE.md": source_md(plugin_src, plugin_files, plugin_md)}
    pulumi_files = download(pulumi_src, fetch)
    host_files = download(host_src, fetch)
    if kueue_chart is not None:
        kueue_derived[KUEUE_CHART.local] = kueue_chart.tgz
    if plugin_chart is not None:
        plugin_derived[DEVICE_PLUGIN_CHART.local] = plugin_chart.tgz

    outputs = [
        *_outputs(dest, kueue_src, kueue_files, kueue_derived),
        *_outputs(dest, plugin_src, plugin_files, plugin_derived),
        *_outputs(dest, pulumi_src, pulumi_files, {"SOURCE.md": source_md(pulumi_src, pulumi_files)}),
        *_outputs(
            dest,
            host_src,
            host_files,
            {"SOURCE.md": source_md(host_src, host_files, note=language_host_note(host_src))},
        ),
    ]
    for path, data, executable in outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if executable:
            path.chmod(0o755)  # the shim is run, not read: keep upstream's mode 100755
    return [path for path, _, _ in outputs]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tools.fetch_reference", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, required=True, help="where to write, normally ../shared")
    parser.add_argument(
        "--kueue",
        default=KUEUE_VERSION,
        metavar="X.Y.Z",
        help=f"Kueue release (default {KUEUE_VERSION}; blob ids are pinned for it only)",
    )
    parser.add_argument(
        "--device-plugin",
        default=DEVICE_PLUGIN_VERSION,
        metavar="X.Y.Z",
        help=f"NVIDIA k8s-device-plugin release (default {DEVICE_PLUGIN_VERSION})",
    )
    parser.add_argument("--force", action="store_true", help="replace a SOURCE.md this tool did not write")
    parser.add_argument(
        "--git",
        action="append",
        default=[],
        metavar="OWNER/NAME=DIR",
        type=_clone,
        help="read that repository's files from a local clone or mirror instead of GitHub "
        "(repeatable; the repositories: " + ", ".join(sorted(REPOSITORIES)) + ")",
    )
    return parser


def _clone(value: str) -> tuple[str, Path]:
    repo, sep, directory = value.partition("=")
    if not sep or repo not in REPOSITORIES or not Path(directory).is_dir():
        raise argparse.ArgumentTypeError(
            f"{value!r}: want OWNER/NAME=DIR with OWNER/NAME one of "
            f"{', '.join(sorted(REPOSITORIES))} and DIR an existing clone"
        )
    return repo, Path(directory)


def main(argv: list[str] | None = None, fetch: Fetch = http_get) -> int:
    args = build_parser().parse_args(argv)
    if args.kueue != KUEUE_VERSION:
        print(f"note: no blob ids pinned for Kueue {args.kueue}; recording sha256 only", file=sys.stderr)
    for chart, version in ((KUEUE_CHART, args.kueue), (DEVICE_PLUGIN_CHART, args.device_plugin)):
        if version != chart.version:
            print(f"note: no chart pins for {chart.name} {version}; {chart.local} is not built", file=sys.stderr)
    if args.git:
        fetch = git_fetch(dict(args.git), fetch)
    try:
        written = fetch_reference(args.dest, args.kueue, args.device_plugin, fetch, args.force)
    except (FetchError, ValueError) as error:
        print(f"fetch_reference: {error}", file=sys.stderr)
        return 1
    print(f"wrote {len(written)} files under {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
