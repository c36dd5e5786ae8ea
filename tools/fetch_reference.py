"""Recreate ../shared, the upstream reference data the tests read, from GitHub at pinned refs.

    python -m tools.fetch_reference --dest ../shared [--kueue 0.19.2] [--device-plugin 0.20.0]

The project never copies this data into the repository (../shared/DESIGN.md), so anything that
runs the tests without ../shared (GitHub Actions, a fresh clone) fetches it with this tool. Each
file comes from raw.githubusercontent.com/<owner>/<repo>/<ref>/<path>, is checked against the git
blob id pinned below when there is one (a moved tag or a changed file then fails the run), and
lands in the layout of ../shared:

    kueue/v<version>/               CRDs, chart values.yaml + Chart.yaml, feature-gate lists,
                                    examples, config-fields.yaml (derived), SOURCE.md
    nvidia-device-plugin/v<version>/ chart values.yaml + Chart.yaml, SOURCE.md
    pulumi/                         project.json (Pulumi.yaml's JSON schema), SOURCE.md

config-fields.yaml is derived, not copied: the field tree of Kueue's manager Configuration,
parsed from the Go types at the same tag (no Go code is stored). Each SOURCE.md written here lists
every file with its blob id and the sha256 it got. Pure stdlib + pyyaml, so it runs before
anything else is installed.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

Fetch = Callable[[str], bytes]


@dataclass(frozen=True)
class RefFile:
    local: str  # path under the source's directory in ../shared
    upstream: str  # path in the upstream repository
    blob: str | None  # git blob id at the pinned ref; None: not pinned, only its sha256 is recorded


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
    RefFile("crds/kueue.x-k8s.io_admissionchecks.yaml",
            "config/components/crd/bases/kueue.x-k8s.io_admissionchecks.yaml",
            "317662baa1e7653915510c627ac91c020926c0ca"),
    RefFile("crds/kueue.x-k8s.io_clusterqueues.yaml",
            "config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml",
            "a605e10a33050f30a5a31a5240444216a2a4f553"),
    RefFile("crds/kueue.x-k8s.io_cohorts.yaml",
            "config/components/crd/bases/kueue.x-k8s.io_cohorts.yaml",
            "0a66adc3e955bf3ab7717452f67269ce2e84fd9b"),
    RefFile("crds/kueue.x-k8s.io_localqueues.yaml",
            "config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml",
            "379c64452ad090fa12861c24aad7f102d0118a5f"),
    RefFile("crds/kueue.x-k8s.io_multikueueclusters.yaml",
            "config/components/crd/bases/kueue.x-k8s.io_multikueueclusters.yaml",
            "f3c03c98e46045c2b161bd0064d7bb561e11d134"),
    RefFile("crds/kueue.x-k8s.io_multikueueconfigs.yaml",
            "config/components/crd/bases/kueue.x-k8s.io_multikueueconfigs.yaml",
            "005fc751e55970a1061ff04ed3f8f417275eef2d"),
    RefFile("crds/kueue.x-k8s.io_provisioningrequestconfigs.yaml",
            "config/components/crd/bases/kueue.x-k8s.io_provisioningrequestconfigs.yaml",
            "95ed0039d027647ac09b3bfd7f529cb1cacfca31"),
    RefFile("crds/kueue.x-k8s.io_resourceflavors.yaml",
            "config/components/crd/bases/kueue.x-k8s.io_resourceflavors.yaml",
            "6c3216d8ce5f59a77dcee45e3697bc110a249df9"),
    RefFile("crds/kueue.x-k8s.io_topologies.yaml",
            "config/components/crd/bases/kueue.x-k8s.io_topologies.yaml",
            "f5a2774bbc83a5aedbe4272ecb780c399da09532"),
    RefFile("crds/kueue.x-k8s.io_workloadpriorityclasses.yaml",
            "config/components/crd/bases/kueue.x-k8s.io_workloadpriorityclasses.yaml",
            "75c01e1ac63cc3f885437334dccb168364c6ed94"),
    RefFile("crds/kueue.x-k8s.io_workloads.yaml",
            "config/components/crd/bases/kueue.x-k8s.io_workloads.yaml",
            "fc1fd767332d555e72b6330017309d7d9f8ff79d"),
    RefFile("values.yaml", "charts/kueue/values.yaml", "230a8370a6b753203dea2c01221f03fb3b754226"),
    RefFile("Chart.yaml", "charts/kueue/Chart.yaml", "425aea05c1d5f1df3ef551800402d8e6aa3a003d"),
    RefFile("examples/concurrent-admission-setup.yaml",
            "site/static/examples/admin/concurrent-admission-setup.yaml",
            "6e072c90bca95755ff8a4e0e7cac9de6fdee1031"),
    RefFile("examples/minimal-cq.yaml", "site/static/examples/admin/minimal-cq.yaml",
            "b5cd26091f62b2c42ac495f93b25e456a402ddd2"),
    RefFile("examples/resource-flavor-empty.yaml", "site/static/examples/admin/resource-flavor-empty.yaml",
            "174636939f95a17c97a6768d0fda0d86fd957f48"),
    RefFile("examples/resource-flavor-taints.yaml", "site/static/examples/admin/resource-flavor-taints.yaml",
            "2247c7680e7af98ad8520f8e284bd35c94cf0b41"),
    RefFile("examples/resource-flavor-tolerations.yaml",
            "site/static/examples/admin/resource-flavor-tolerations.yaml",
            "9591ecd12c7ee44c8bc49320a2234add3926cd18"),
    RefFile("examples/shared-quota-sample-job.yaml", "site/static/examples/admin/shared-quota-sample-job.yaml",
            "c7c3610049bdd9cb6f1e744f64ee78705d314532"),
    RefFile("examples/shared-quota-setup.yaml", "site/static/examples/admin/shared-quota-setup.yaml",
            "ce8131723e0b0a8f21bee96217540b8fa496e9f7"),
    RefFile("examples/single-clusterqueue-setup.yaml",
            "site/static/examples/admin/single-clusterqueue-setup.yaml",
            "2ee6dd52daf5f3e7c20693d9545f58a8baba8b60"),
    RefFile("examples/quick-start-setup.yaml", "site/static/examples/getting-started/quick-start-setup.yaml",
            "886ba764d6c76083e9dcaaafcc726613908374d6"),
    RefFile("examples/tas-sample-queues.yaml", "site/static/examples/tas/sample-queues.yaml",
            "f3d31b8853e1a440c1e477f1998d948b86e0a5e0"),
    RefFile("examples/tas-sample-gpu-queues.yaml", "site/static/examples/tas/sample-gpu-queues.yaml",
            "2931662e37fef079a30095200f4512c9343aad34"),
    RefFile("examples/admission-fair-sharing-setup.yaml",
            "site/static/examples/admission-fs/admission-fair-sharing-setup.yaml",
            "27b63b730eac7805a48940460acc6af58543a342"),
    RefFile("featuregates/versioned_feature_list.yaml", "site/data/featuregates/versioned_feature_list.yaml",
            "06b11b320bb9e37165aa3b4167b9e672f7d8cd0d"),
    RefFile("featuregates/removed_feature_list.yaml", "site/data/featuregates/removed_feature_list.yaml",
            "2a7c5cdeff9365569d73e4dda4ecc5100d9f2ef8"),
)
# The manager Configuration's Go types, parsed into config-fields.yaml (never stored).
KUEUE_CONFIG_TYPES = "apis/config/v1beta2/configuration_types.go"
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

GENERATED_MARK = "<!-- generated by tools/fetch_reference.py -->"


def kueue_source(version: str) -> Source:
    # The pinned blob ids say nothing about another release: its files are only hashed.
    files = KUEUE_FILES if version == KUEUE_VERSION else tuple(replace(f, blob=None) for f in KUEUE_FILES)
    return Source("Kueue", "kubernetes-sigs/kueue", f"v{version}", f"kueue/v{version}", "Apache-2.0", files)


def device_plugin_source(version: str) -> Source:
    return Source("NVIDIA device plugin Helm chart", "NVIDIA/k8s-device-plugin", f"v{version}",
                  f"nvidia-device-plugin/v{version}", "Apache-2.0", DEVICE_PLUGIN_FILES)


def pulumi_source() -> Source:
    return Source("Pulumi project file schema", "pulumi/pulumi", PULUMI_COMMIT, "pulumi", "Apache-2.0",
                  PULUMI_FILES)


# --- downloads -----------------------------------------------------------------------------


class FetchError(Exception):
    """A download failed or does not match its pinned blob id."""


def raw_url(repo: str, ref: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{ref}/{path}"


def git_blob_id(data: bytes) -> str:
    """The id git gives a file's content (`git hash-object`): sha1 of a "blob <size>\\0" header + data."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def http_get(url: str, attempts: int = 3) -> bytes:
    """GET url; connection drops and 5xx are retried (GitHub's raw host has them), a 404 is not."""
    for attempt in range(1, attempts + 1):
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as error:
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
            raise FetchError(f"{url}: git blob {git_blob_id(data)}, pinned {file.blob}: "
                             "the tag moved or the table is wrong; not writing anything")
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
            raise ValueError(f"cannot tokenize Go source at offset {pos}: {source[pos:pos + 20]!r}")
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


def config_fields(go_source: str, root: str = "Configuration") -> dict[str, Any]:
    """The JSON field tree of Kueue's manager Configuration from configuration_types.go."""
    tree = json_tree(("name", root), parse_go_types(go_source))
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


# --- writing ../shared -----------------------------------------------------------------------


def source_md(source: Source, fetched: list[Fetched], derived: str = "") -> str:
    rows = "\n".join(f"| {f.file.local} | {f.file.upstream} | {f.file.blob or '-'} | {f.sha256} |" for f in fetched)
    return (
        f"{GENERATED_MARK}\n# Source of these files\n\n"
        f"- Upstream repository: https://github.com/{source.repo}\n"
        f"- Ref: `{source.ref}`\n"
        f"- License: {source.license} (upstream `LICENSE` at the same ref)\n"
        "- Fetched by `python -m tools.fetch_reference` from raw.githubusercontent.com. Every file below\n"
        "  is an unmodified byte copy; a listed blob id was checked, `-` means none is pinned.\n\n"
        f"## File map (local path <- upstream path @ {source.ref}, git blob id, sha256)\n\n"
        "| local | upstream | blob | sha256 |\n|---|---|---|---|\n"
        f"{rows}\n{derived}"
    )


def kueue_derived_md(ref: str, go_sha256: str) -> str:
    return (
        "\n## Derived data\n\n"
        f"`{CONFIG_FIELDS}` lists every field of the manager configuration\n"
        "(`config.kueue.x-k8s.io/v1beta2` `Configuration`) by its JSON name, with its type or nested fields.\n"
        f"It is parsed from `{KUEUE_CONFIG_TYPES}` at `{ref}`\n"
        f"(sha256 `{go_sha256}`), with component-base's LeaderElectionConfiguration\n"
        "fields. Kueue decodes the manager config strictly: a field not in this tree makes the manager\n"
        "exit at start-up.\n"
    )


def _outputs(dest: Path, source: Source, fetched: list[Fetched],
             derived: dict[str, str]) -> Iterator[tuple[Path, bytes]]:
    base = dest / source.directory
    for item in fetched:
        yield base / item.file.local, item.data
    for name, text in derived.items():
        yield base / name, text.encode()


def _check_not_hand_written(directory: Path, force: bool) -> None:
    # A hand-written SOURCE.md carries notes this tool cannot regenerate; keep it unless told.
    existing = directory / "SOURCE.md"
    if not force and existing.exists() and GENERATED_MARK not in existing.read_text():
        raise FetchError(f"{existing} was not written by this tool; pass --force to replace it")


def fetch_reference(dest: Path, kueue: str = KUEUE_VERSION, device_plugin: str = DEVICE_PLUGIN_VERSION,
                    fetch: Fetch = http_get, force: bool = False) -> list[Path]:
    """Download and verify everything first, then write it under dest; returns the files written."""
    kueue_src, plugin_src, pulumi_src = kueue_source(kueue), device_plugin_source(device_plugin), pulumi_source()
    for source in (kueue_src, plugin_src, pulumi_src):
        _check_not_hand_written(dest / source.directory, force)

    kueue_files = download(kueue_src, fetch)
    go_source = fetch(raw_url(kueue_src.repo, kueue_src.ref, KUEUE_CONFIG_TYPES))
    kueue_derived = {
        CONFIG_FIELDS: config_fields_yaml(config_fields(go_source.decode()), kueue_src.ref),
        "SOURCE.md": source_md(kueue_src, kueue_files,
                               kueue_derived_md(kueue_src.ref, hashlib.sha256(go_source).hexdigest())),
    }
    plugin_files = download(plugin_src, fetch)
    pulumi_files = download(pulumi_src, fetch)

    outputs = [
        *_outputs(dest, kueue_src, kueue_files, kueue_derived),
        *_outputs(dest, plugin_src, plugin_files, {"SOURCE.md": source_md(plugin_src, plugin_files)}),
        *_outputs(dest, pulumi_src, pulumi_files, {"SOURCE.md": source_md(pulumi_src, pulumi_files)}),
    ]
    for path, data in outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return [path for path, _ in outputs]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tools.fetch_reference", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, required=True, help="where to write, normally ../shared")
    parser.add_argument("--kueue", default=KUEUE_VERSION, metavar="X.Y.Z",
                        help=f"Kueue release (default {KUEUE_VERSION}; blob ids are pinned for it only)")
    parser.add_argument("--device-plugin", default=DEVICE_PLUGIN_VERSION, metavar="X.Y.Z",
                        help=f"NVIDIA k8s-device-plugin release (default {DEVICE_PLUGIN_VERSION})")
    parser.add_argument("--force", action="store_true", help="replace a SOURCE.md this tool did not write")
    return parser


def main(argv: list[str] | None = None, fetch: Fetch = http_get) -> int:
    args = build_parser().parse_args(argv)
    if args.kueue != KUEUE_VERSION:
        print(f"note: no blob ids pinned for Kueue {args.kueue}; recording sha256 only", file=sys.stderr)
    try:
        written = fetch_reference(args.dest, args.kueue, args.device_plugin, fetch, args.force)
    except (FetchError, ValueError) as error:
        print(f"fetch_reference: {error}", file=sys.stderr)
        return 1
    print(f"wrote {len(written)} files under {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
