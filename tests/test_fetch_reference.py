"""tools/fetch_reference.py, offline: blob ids, file maps against ../shared, the Go parser, downloads,
the packaged charts, Pulumi's Python language host as source.

The file tables must name exactly what the SOURCE.md files in ../shared map (same local and
upstream paths, same blob ids) and lay it out as ../shared is laid out, so a fetched ../shared
is the one the other tests were written against. Downloads go through an injected fetch function
that serves ../shared's own bytes (or tampered ones), never the network; only http_get talks to
a server, one on the loopback interface. The chart sources it serves are the members of the chart
archives in ../shared (helm's, where ../shared was made by hand), with the upstream Chart.yaml and
Kueue values.yaml from ../shared's byte copies, and the vendored subchart archive made from its
members: the tool must rebuild the same members from them.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import http.server
import io
import os
import re
import stat
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.facts.device_plugin import DEVICE_PLUGIN_VERSION as PROGRAM_DEVICE_PLUGIN_VERSION
from components.facts.kueue_versions import DEFAULT_VERSION
from testbed.git import git
from testbed.paths import SHARED
from tools import chart_pins
from tools import fetch_reference as fr

PINNED_SOURCES = [
    fr.kueue_source(fr.KUEUE_VERSION),
    fr.device_plugin_source(fr.DEVICE_PLUGIN_VERSION),
    fr.pulumi_source(),
    fr.language_host_source(),
]
LANGUAGE_HOST_SOURCE = PINNED_SOURCES[3]
SOURCE_IDS = [s.directory for s in PINNED_SOURCES]
BLOB_PINNED = [s for s in PINNED_SOURCES if any(f.blob for f in s.files)]
# Files of a source's directory in ../shared that are not one of its fetched files, by directory:
# the provenance note, the derived tree, the published charts as files (for the e2e tier),
# packaged from the tag's sources, and under pulumi/ the language host's own directory (a source
# of its own: Pulumi's Python language host, which the module proxy does not serve, as source).
LANGUAGE_HOST = {
    f"language-python/{n}" for n in ("SOURCE.md", "go.mod", "go.sum", "main.go", "pulumi-language-python-exec")
}
CHARTS = {"kueue": chart_pins.KUEUE_CHART, "nvidia-device-plugin": chart_pins.DEVICE_PLUGIN_CHART}
CHART_SOURCES = {"kueue": PINNED_SOURCES[0], "nvidia-device-plugin": PINNED_SOURCES[1]}
EXTRA_FILES = {
    PINNED_SOURCES[0].directory: {"SOURCE.md", fr.CONFIG_FIELDS, CHARTS["kueue"].local},
    PINNED_SOURCES[1].directory: {"SOURCE.md", CHARTS["nvidia-device-plugin"].local},
    PINNED_SOURCES[2].directory: {"SOURCE.md"} | LANGUAGE_HOST,
    LANGUAGE_HOST_SOURCE.directory: {"SOURCE.md"},
}

GO_FIXTURE = """package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Root: braces and tags in comments must not count: {TempDir}/x, `json:"commented"`.
type Root struct {
	metav1.TypeMeta `json:",inline"`

	Common `json:",inline"`

	/* a block comment
		Hidden string `json:"hidden"` */
	Name *string `json:"name,omitempty"`
	Items []Item `json:"items"`
	Weights map[corev1.ResourceName]float64 `json:"weights,omitempty"`
	Mode Mode `json:"mode"`
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	Skipped string `json:"-"`
	Dash string `json:"-,"`
	NoTag int
	internal bool
	Selector *metav1.LabelSelector `json:"selector,omitempty" yaml:"ignored"`
	Grid [][]int32 `json:"grid"`
	Inner struct {
		Deep bool `json:"deep"`
	} `json:"inner"`
	Alias Alias `json:"alias"`
	Outputs corev1.ResourceList `json:"outputs"`
}

type Common struct {
	Port *int `json:"port,omitempty"`
}

type Item struct {
	Key   string `json:"key"`
	Value *int32 `json:"value,omitempty"`
}

type Mode string

const (
	ModeA Mode = "A{"
)

// An alias keeps its own name, as config-fields.yaml shows ClusterProfileCredentialsProvider.
type Alias = Item

type (
	Grouped struct {
		Items []*Item `json:"items"`
	}
)

func (r *Root) Default() {
	if r.Name == nil {
		brace := "}"
		_ = brace
	}
}
"""

GO_FIXTURE_TREE = {
    "apiVersion": "string",
    "kind": "string",
    "port": "int",
    "name": "string",
    "items": [{"key": "string", "value": "int32"}],
    "weights": {"<key>": "float64"},
    "mode": "Mode",
    "timeout": "duration",
    "-": "string",
    "NoTag": "int",
    "selector": "labelSelector",
    "grid": [["int32"]],
    "inner": {"deep": "bool"},
    "alias": "Alias",
    "outputs": "corev1.ResourceList",
}


# The fixture as Kueue's file would serve it: the tool starts from `Configuration`.
KUEUE_GO_FIXTURE = GO_FIXTURE.replace("type Root struct", "type Configuration struct")


def source_dir(source: fr.Source) -> Path:
    directory = SHARED / source.directory
    if not directory.is_dir():
        pytest.fail(f"{directory} not found: create it with `python -m tools.fetch_reference --dest ../shared`")
    return directory


def documented_files(text: str) -> set[tuple[str, str, str | None]]:
    """(local, upstream, blob) of every file a SOURCE.md maps: its table, else its prose.

    Tables (Kueue's, and every SOURCE.md the tool writes) have `local | upstream | blob` columns;
    the hand-written language host note lists "- `upstream`: blob `...`" (the local name is the
    upstream one's last part); the hand-written device-plugin and Pulumi notes name the files,
    then "path `...`" (a directory ending in / for several files) and maybe "blob `...`".
    """
    lines = text.splitlines()
    for i, line in enumerate(lines):
        header = [c.strip() for c in line.strip().strip("|").split("|")]
        if header[:2] == ["local", "upstream"]:
            rows = set()
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                cells = dict(zip(header, (c.strip() for c in row.strip().strip("|").split("|")), strict=True))
                blob = cells.get("blob")
                rows.add((cells["local"], cells["upstream"], None if blob in (None, "-") else blob))
            return rows
    listed = re.findall(r"^- `([^`]+)`: blob `([0-9a-f]{40})`$", text, re.M)
    if listed:
        return {(upstream.rsplit("/", 1)[-1], upstream, blob) for upstream, blob in listed}
    path_match = re.search(r"path `([^`]+)`", text)
    assert path_match, "SOURCE.md has neither a file table nor a path"
    path = path_match.group(1)
    names = re.findall(r"`([\w.-]+\.(?:ya?ml|json))`", text[: path_match.start()])
    blob_match = re.search(r"blob `([0-9a-f]{40})`", text)
    blob = blob_match.group(1) if blob_match else None
    if path.endswith("/"):
        return {(name, path + name, blob) for name in names}
    return {(names[0], path, blob)}


def table_files(source: fr.Source) -> set[tuple[str, str, str | None]]:
    return {(f.local, f.upstream, f.blob) for f in source.files}


def tree_files(directory: Path) -> set[str]:
    return {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}


def archive_files(path: Path) -> dict[str, bytes]:
    """The regular files of a chart archive by path inside its chart folder, in archive order."""
    with tarfile.open(path) as tar:
        return {
            i.name.split("/", 1)[1]: tar.extractfile(i).read()  # type: ignore[union-attr]
            for i in tar.getmembers()
            if i.isfile()
        }


def shared_chart(key: str) -> Path:
    return source_dir(CHART_SOURCES[key]) / CHARTS[key].local


def make_archive(name: str, files: dict[str, bytes]) -> bytes:
    """A .tgz as `helm dependency update` vendors a chart: files under `<name>/`, a directory entry."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        folder = tarfile.TarInfo(name)
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for path, data in files.items():
            info = tarfile.TarInfo(f"{name}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


Edit = Callable[[bytes], bytes]


def chart_pages(edits: dict[str, Edit]) -> dict[str, bytes]:
    """The upstream files of both pinned charts by URL, recreated from ../shared (see the docstring);
    edits change members by their path in the chart, before the subchart archive is made."""
    pages = {}
    for key, chart in CHARTS.items():
        files = archive_files(shared_chart(key))
        upstream = source_dir(CHART_SOURCES[key])
        files["Chart.yaml"] = (upstream / "Chart.yaml").read_bytes()  # as upstream has it, comments and all
        if any(m.how == "promote" for m in chart.members):
            files["values.yaml"] = (upstream / "values.yaml").read_bytes()  # before the release edits
        for path, edit in edits.items():
            if path in files:
                files[path] = edit(files[path])
        for sub in chart.subcharts:
            inside = {p[len(sub.path) + 1 :]: files.pop(p) for p in list(files) if p.startswith(sub.path + "/")}
            files[sub.archive] = make_archive(sub.path.rsplit("/", 1)[-1], inside)
        for path, data in files.items():
            pages[fr.raw_url(chart.repo, chart.ref, f"{chart.folder}/{path}")] = data
    return pages


def serve_shared(
    go_source: str = KUEUE_GO_FIXTURE, tamper: str | None = None, edits: dict[str, Edit] | None = None
) -> fr.Fetch:
    """A fetch function serving ../shared's bytes by upstream URL, without the network: `tamper`
    appends a line to the page of that URL, `edits` change chart members (see chart_pages)."""
    pages: dict[str, bytes] = {}
    for source in PINNED_SOURCES:
        for file in source.files:
            pages[fr.raw_url(source.repo, source.ref, file.upstream)] = (source_dir(source) / file.local).read_bytes()
    pages.update(chart_pages(edits or {}))  # the same bytes where a chart file is also a reference file
    kueue = PINNED_SOURCES[0]
    pages[fr.raw_url(kueue.repo, kueue.ref, fr.KUEUE_CONFIG_TYPES)] = go_source.encode()
    if tamper is not None:
        pages[tamper] += b"# changed\n"

    def fetch(url: str) -> bytes:
        if url not in pages:
            raise fr.NotFound(f"{url}: HTTP 404")
        return pages[url]

    return fetch


# --- blob ids ---------------------------------------------------------------------------------


def test_git_blob_id_matches_git_hash_object() -> None:
    # Values of `git hash-object` for an empty file and for "hello world\n".
    assert fr.git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert fr.git_blob_id(b"hello world\n") == "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
    assert fr.git_blob_id(b"hello world") != fr.git_blob_id(b"hello world\n")


@pytest.mark.parametrize("source", PINNED_SOURCES, ids=SOURCE_IDS)
def test_pinned_blob_ids_are_those_of_the_byte_copies_in_shared(source: fr.Source) -> None:
    directory = source_dir(source)
    for file in source.files:
        if file.blob is not None:
            assert fr.git_blob_id((directory / file.local).read_bytes()) == file.blob, file.local


# --- the file maps against ../shared ----------------------------------------------------------


@pytest.mark.parametrize("source", PINNED_SOURCES, ids=SOURCE_IDS)
def test_file_table_is_the_source_md_map(source: fr.Source) -> None:
    text = (source_dir(source) / "SOURCE.md").read_text()
    assert table_files(source) == documented_files(text)
    assert f"github.com/{source.repo}" in text
    assert f"`{source.ref}`" in text


@pytest.mark.parametrize("source", PINNED_SOURCES, ids=SOURCE_IDS)
def test_layout_is_that_of_shared(source: fr.Source) -> None:
    expected = {f.local for f in source.files} | EXTRA_FILES[source.directory]
    assert tree_files(source_dir(source)) == expected
    for file in source.files:  # the shim is run: only it is executable, in ../shared as in the table
        assert os.access(source_dir(source) / file.local, os.X_OK) == file.executable, file.local


def test_the_map_parser_reads_both_forms_and_can_disagree() -> None:
    prose = "`a.yaml` and `b.yaml` of the chart, path `charts/x/`, tag `v1`."
    assert documented_files(prose) == {("a.yaml", "charts/x/a.yaml", None), ("b.yaml", "charts/x/b.yaml", None)}
    single = "`p.json` is the schema of (`Pulumi.yaml`), path `sdk/p.json`, blob `" + "a" * 40 + "`."
    assert documented_files(single) == {("p.json", "sdk/p.json", "a" * 40)}
    table = "| local | upstream | blob |\n|---|---|---|\n| x.yaml | up/x.yaml | " + "b" * 40 + " |\n\nmore"
    assert documented_files(table) == {("x.yaml", "up/x.yaml", "b" * 40)}
    listed = (
        "source, license X:\n\n- `sdk/cmd/main.go`: blob `" + "c" * 40 + "`\n- `sdk/x-exec`: blob `" + "d" * 40 + "`\n"
    )
    assert documented_files(listed) == {("main.go", "sdk/cmd/main.go", "c" * 40), ("x-exec", "sdk/x-exec", "d" * 40)}
    assert documented_files(table) != table_files(PINNED_SOURCES[0])


def test_pinned_versions_are_the_programs() -> None:
    assert fr.KUEUE_VERSION == DEFAULT_VERSION
    assert fr.DEVICE_PLUGIN_VERSION == PROGRAM_DEVICE_PLUGIN_VERSION


def test_other_kueue_versions_are_fetched_at_their_tag_without_pinned_blobs() -> None:
    source = fr.kueue_source("0.20.0")
    assert (source.ref, source.directory) == ("v0.20.0", "kueue/v0.20.0")
    assert [f.upstream for f in source.files] == [f.upstream for f in fr.KUEUE_FILES]
    assert all(f.blob is None for f in source.files)


# --- the Go struct parser -----------------------------------------------------------------------


def test_go_parser_on_a_fixture() -> None:
    assert fr.config_fields(GO_FIXTURE, root="Root") == GO_FIXTURE_TREE


def test_go_parser_keeps_declaration_order_and_grouped_declarations() -> None:
    decls = fr.parse_go_types(GO_FIXTURE)
    assert list(decls) == ["Root", "Common", "Item", "Mode", "Alias", "Grouped"]
    assert list(fr.config_fields(GO_FIXTURE, root="Root")) == list(GO_FIXTURE_TREE)
    assert fr.config_fields(GO_FIXTURE, root="Grouped") == {"items": [{"key": "string", "value": "int32"}]}


@pytest.mark.parametrize(
    "source, error",
    [
        ('type A struct {\n\tB Missing `json:"b"`\n}\n', "Missing is not declared"),
        ('type A struct {\n\tB *A `json:"b"`\n}\n', "recursive type A -> A"),
        ('type A struct {\n\tF func() `json:"f"`\n}\n', "unsupported type"),
        ('type A struct {\n\tMode `json:",inline"`\n}\ntype Mode string\n', "not a struct"),
    ],
)
def test_go_parser_fails_loudly(source: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        fr.config_fields(source, root="A")


def test_external_tables_match_the_shared_config_fields() -> None:
    shared = yaml.safe_load((source_dir(PINNED_SOURCES[0]) / fr.CONFIG_FIELDS).read_text())
    assert shared["leaderElection"] == fr.EXTERNAL_TYPES["configv1alpha1.LeaderElectionConfiguration"]
    assert {k: shared[k] for k in ("apiVersion", "kind")} == fr.EXTERNAL_TYPES["metav1.TypeMeta"]
    assert shared["controller"]["cacheSyncTimeout"] == fr.EXTERNAL_TYPES["time.Duration"]
    assert shared["managedJobsNamespaceSelector"] == fr.EXTERNAL_TYPES["metav1.LabelSelector"]


# --- downloads, with an injected fetch ------------------------------------------------------


def test_fetch_recreates_the_shared_layout_and_bytes(tmp_path: Path) -> None:
    written = fr.fetch_reference(tmp_path, fetch=serve_shared())
    assert {p.relative_to(tmp_path).as_posix() for p in written} == tree_files(tmp_path)
    for source in PINNED_SOURCES:
        out, shared = tmp_path / source.directory, source_dir(source)
        assert tree_files(out) == tree_files(shared)
        for file in source.files:
            assert (out / file.local).read_bytes() == (shared / file.local).read_bytes()
            mode = stat.S_IMODE((out / file.local).stat().st_mode)
            assert (mode == 0o755) if file.executable else not mode & 0o111, (file.local, oct(mode))
        # The written SOURCE.md maps the same files, so these tests pass on a fetched ../shared.
        text = (out / "SOURCE.md").read_text()
        assert documented_files(text) == table_files(source)
        assert f"github.com/{source.repo}" in text and f"`{source.ref}`" in text
        for file in source.files:
            assert hashlib.sha256((shared / file.local).read_bytes()).hexdigest() in text
    fields = (tmp_path / PINNED_SOURCES[0].directory / fr.CONFIG_FIELDS).read_text()
    assert fields.startswith("# Fields of config.kueue.x-k8s.io/v1beta2 Configuration")
    assert fr.KUEUE_CONFIG_TYPES in (tmp_path / PINNED_SOURCES[0].directory / "SOURCE.md").read_text()


def test_config_fields_are_generated_from_the_fetched_go_types(tmp_path: Path) -> None:
    fr.fetch_reference(tmp_path, fetch=serve_shared())
    fields = yaml.safe_load((tmp_path / "kueue" / f"v{fr.KUEUE_VERSION}" / fr.CONFIG_FIELDS).read_text())
    assert fields == GO_FIXTURE_TREE


@pytest.mark.parametrize("source", BLOB_PINNED, ids=[s.directory for s in BLOB_PINNED])
def test_a_blob_mismatch_fails_and_writes_nothing(source: fr.Source, tmp_path: Path) -> None:
    pinned = next(f for f in source.files if f.blob is not None)
    url = fr.raw_url(source.repo, source.ref, pinned.upstream)
    with pytest.raises(fr.FetchError, match=f"{re.escape(url)}: git blob [0-9a-f]{{40}}, pinned {pinned.blob}"):
        fr.fetch_reference(tmp_path, fetch=serve_shared(tamper=url))
    assert tree_files(tmp_path) == set()


# --- Pulumi's Python language host, as source ---------------------------------------------------


def note_of(text: str) -> str:
    """A language host SOURCE.md without what only the tool writes: its mark, and the standard
    section and file map after the note (a hand-written one is all note)."""
    text = text.removeprefix(fr.GENERATED_MARK + "\n")
    return text.split("\n## Source of these files\n", 1)[0]


def test_the_language_host_is_the_module_at_the_pulumi_commit() -> None:
    assert (LANGUAGE_HOST_SOURCE.repo, LANGUAGE_HOST_SOURCE.ref) == (PINNED_SOURCES[2].repo, fr.PULUMI_COMMIT)
    assert LANGUAGE_HOST_SOURCE.directory == "pulumi/language-python"
    assert all(f.blob for f in LANGUAGE_HOST_SOURCE.files)
    assert [f.local for f in LANGUAGE_HOST_SOURCE.files if f.executable] == ["pulumi-language-python-exec"]


def test_the_written_language_host_note_says_what_shared_says(tmp_path: Path) -> None:
    fr.fetch_reference(tmp_path, fetch=serve_shared())
    written = (tmp_path / LANGUAGE_HOST_SOURCE.directory / "SOURCE.md").read_text()
    shared = (source_dir(LANGUAGE_HOST_SOURCE) / "SOURCE.md").read_text()
    assert note_of(written) == note_of(shared)
    assert "go mod tidy" in note_of(written) and "403" in note_of(written)  # the note is not empty
    assert written.startswith(fr.GENERATED_MARK + "\n# Pulumi's Python language host, as source\n")
    for file in LANGUAGE_HOST_SOURCE.files:  # listed in the note's form and in the file map
        assert f"- `{file.upstream}`: blob `{file.blob}`\n" in written
        assert f"| {file.local} | {file.upstream} | {file.blob} |" in written


@pytest.mark.parametrize("file", LANGUAGE_HOST_SOURCE.files, ids=[f.local for f in LANGUAGE_HOST_SOURCE.files])
def test_a_changed_byte_in_the_language_host_fails_and_writes_nothing(file: fr.RefFile, tmp_path: Path) -> None:
    fetch = serve_shared()
    url = fr.raw_url(LANGUAGE_HOST_SOURCE.repo, LANGUAGE_HOST_SOURCE.ref, file.upstream)

    def one_byte_changed(asked: str) -> bytes:
        data = fetch(asked)
        if asked == url:
            middle = len(data) // 2
            data = data[:middle] + bytes([data[middle] ^ 1]) + data[middle + 1 :]
        return data

    with pytest.raises(fr.FetchError, match=f"{re.escape(url)}: git blob [0-9a-f]{{40}}, pinned {file.blob}"):
        fr.fetch_reference(tmp_path, fetch=one_byte_changed)
    assert tree_files(tmp_path) == set()


def test_the_shim_is_made_executable_again_over_a_copy_that_lost_it(tmp_path: Path) -> None:
    fr.fetch_reference(tmp_path, fetch=serve_shared())
    shim = tmp_path / LANGUAGE_HOST_SOURCE.directory / "pulumi-language-python-exec"
    shim.chmod(0o644)
    fr.fetch_reference(tmp_path, fetch=serve_shared())
    assert stat.S_IMODE(shim.stat().st_mode) == 0o755


def test_unpinned_files_are_recorded_by_sha256(tmp_path: Path) -> None:
    # The device plugin's Chart.yaml: no blob pinned, and a comment is not in the chart's pin
    # (helm drops comments); its values.yaml is pinned through the chart's member table.
    source = PINNED_SOURCES[1]
    [file] = [f for f in source.files if f.local == "Chart.yaml"]
    url = fr.raw_url(source.repo, source.ref, file.upstream)
    fr.fetch_reference(tmp_path, fetch=serve_shared(tamper=url))  # nothing pinned: accepted
    got = (tmp_path / source.directory / file.local).read_bytes()
    assert got.endswith(b"# changed\n")
    row = next(
        line
        for line in (tmp_path / source.directory / "SOURCE.md").read_text().splitlines()
        if line.startswith(f"| {file.local} |")
    )
    assert row.split("|")[3:5] == [" - ", f" {hashlib.sha256(got).hexdigest()} "]


def test_a_missing_file_fails(tmp_path: Path) -> None:
    with pytest.raises(fr.FetchError, match="HTTP 404"):
        fr.fetch_reference(tmp_path, kueue="0.99.0", fetch=serve_shared())
    assert tree_files(tmp_path) == set()


def test_a_hand_written_source_md_is_kept_unless_forced(tmp_path: Path) -> None:
    note = tmp_path / "pulumi" / "SOURCE.md"
    note.parent.mkdir()
    note.write_text("# Source\nhand-written notes\n")
    with pytest.raises(fr.FetchError, match="--force"):
        fr.fetch_reference(tmp_path, fetch=serve_shared())
    assert note.read_text() == "# Source\nhand-written notes\n"
    fr.fetch_reference(tmp_path, fetch=serve_shared(), force=True)
    assert fr.GENERATED_MARK in note.read_text()
    fr.fetch_reference(tmp_path, fetch=serve_shared())  # its own output it may replace


def test_main_reports_a_mismatch_and_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kueue = PINNED_SOURCES[0]
    url = fr.raw_url(kueue.repo, kueue.ref, kueue.files[0].upstream)
    assert fr.main(["--dest", str(tmp_path)], fetch=serve_shared(tamper=url)) == 1
    assert "pinned" in capsys.readouterr().err
    assert fr.main(["--dest", str(tmp_path)], fetch=serve_shared()) == 0


# --- the packaged charts ------------------------------------------------------------------------


@pytest.mark.parametrize("key", CHARTS)
def test_chart_pins_are_the_members_of_the_shared_archive(key: str) -> None:
    # Where ../shared was made by hand these are helm package's archives, so the tables say what
    # helm put in, in its order; on a fetched ../shared the tool's own output (same members).
    chart = CHARTS[key]
    files = archive_files(shared_chart(key))
    assert [m.path for m in chart.members] == list(files)
    assert [m.blob for m in chart.members] == [fr.git_blob_id(data) for data in files.values()]
    assert {m.how for m in chart.members} <= {"copy", "metadata", "promote"}
    assert {m.path.rsplit("/", 1)[-1] for m in chart.members if m.how == "metadata"} <= chart_pins.METADATA
    assert (chart.name, chart.version, chart.ref) == (key, CHART_SOURCES[key].ref[1:], CHART_SOURCES[key].ref)


def test_the_kueue_chart_is_the_folder_the_reference_files_come_from() -> None:
    by_local = {f.local: f.upstream for f in PINNED_SOURCES[0].files}
    chart = CHARTS["kueue"]
    assert by_local["values.yaml"] == f"{chart.folder}/values.yaml"
    assert by_local["Chart.yaml"] == f"{chart.folder}/Chart.yaml"
    plugin = CHARTS["nvidia-device-plugin"]
    assert {f.upstream for f in PINNED_SOURCES[1].files} == {
        f"{plugin.folder}/{n}" for n in ("values.yaml", "Chart.yaml")
    }


def test_fetch_builds_the_charts_with_the_shared_archives_members(tmp_path: Path) -> None:
    fr.fetch_reference(tmp_path, fetch=serve_shared())
    for key, chart in CHARTS.items():
        built = tmp_path / CHART_SOURCES[key].directory / chart.local
        assert archive_files(built) == archive_files(shared_chart(key))  # byte for byte, same order
        tar = gzip.decompress(built.read_bytes())
        assert hashlib.sha256(tar).hexdigest() == chart.tar_sha256
        with tarfile.open(built) as archive:
            infos = archive.getmembers()
        assert {(i.mode, i.uid, i.gid, i.mtime, i.uname, i.gname, i.type) for i in infos} == {
            (0o644, 0, 0, 0, "", "", tarfile.REGTYPE)
        }
        assert all(i.name.startswith(f"{chart.name}/") for i in infos)
        text = (tmp_path / CHART_SOURCES[key].directory / "SOURCE.md").read_text()
        assert f"## The packaged chart: {chart.local}" in text and chart.tar_sha256 in text
        assert hashlib.sha256(built.read_bytes()).hexdigest() in text


def test_the_archive_is_the_same_bytes_every_time() -> None:
    chart = CHARTS["nvidia-device-plugin"]
    fetch = serve_shared()
    first = fr.build_chart(chart, fetch)
    assert fr.build_chart(chart, fetch).tgz == first.tgz
    assert gzip.decompress(first.tgz) == first.tar
    assert first.tgz[4:8] == b"\0\0\0\0"  # gzip mtime 0


def _append(data: bytes) -> bytes:
    return data + b"# changed\n"


# One member of each kind: a copied template, a copied file inside the vendored subchart, Kueue's
# values.yaml before its edits, and metadata (helm rewrites it, so a value must change, a comment
# would not: see test_unpinned_files_are_recorded_by_sha256).
CHANGED_MEMBERS = {
    "kueue template": ("kueue", "templates/manager/manager.yaml", _append),
    "kueue values.yaml": ("kueue", "values.yaml", _append),
    "kueue Chart.yaml": ("kueue", "Chart.yaml", lambda d: d.replace(b"type: application", b"type: library")),
    "device plugin template": (
        "nvidia-device-plugin",
        "templates/daemonset-device-plugin.yml",
        lambda d: d[:-1] + bytes([d[-1] ^ 1]),
    ),
    "device plugin Chart.lock": ("nvidia-device-plugin", "Chart.lock", lambda d: d.replace(b"0.19.0", b"0.19.1")),
    "subchart file": ("nvidia-device-plugin", "charts/node-feature-discovery/templates/master.yaml", _append),
    "subchart Chart.yaml": (
        "nvidia-device-plugin",
        "charts/node-feature-discovery/Chart.yaml",
        lambda d: d.replace(b"v0.19.0", b"v0.19.1"),
    ),
}


@pytest.mark.parametrize("key, member, edit", CHANGED_MEMBERS.values(), ids=list(CHANGED_MEMBERS))
def test_a_changed_chart_file_fails_and_writes_nothing(key: str, member: str, edit: Edit, tmp_path: Path) -> None:
    fetch = serve_shared(edits={member: edit})
    with pytest.raises(
        fr.FetchError,
        match=rf"{re.escape(member.rsplit('/', 1)[-1])}\)?: git blob [0-9a-f]{{40}}"
        rf"( \(as written into the archive: \w+\))?, pinned [0-9a-f]{{40}}",
    ):
        fr.build_chart(CHARTS[key], fetch)
    with pytest.raises(fr.FetchError):
        fr.fetch_reference(tmp_path, fetch=fetch)
    assert tree_files(tmp_path) == set()


def test_a_file_the_pins_do_not_name_fails() -> None:
    fetch = serve_shared()

    def with_extra(url: str) -> bytes:
        data = fetch(url)
        if url.endswith(".tgz"):
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                files = {
                    i.name.split("/", 1)[1]: tar.extractfile(i).read()  # type: ignore[union-attr]
                    for i in tar.getmembers()
                    if i.isfile()
                }
            data = make_archive("node-feature-discovery", {**files, "templates/extra.yaml": b"x: 1\n"})
        return data

    with pytest.raises(fr.FetchError, match=r"files not in tools/chart_pins.py: \['templates/extra.yaml'\]"):
        fr.build_chart(CHARTS["nvidia-device-plugin"], with_extra)
    with pytest.raises(fr.FetchError, match="not a chart archive"):
        fr.build_chart(CHARTS["nvidia-device-plugin"], lambda url: b"<html>" if url.endswith(".tgz") else fetch(url))


def test_the_tar_pin_is_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    chart = CHARTS["kueue"]
    monkeypatch.setattr(fr, "KUEUE_CHART", dataclasses.replace(chart, tar_sha256="0" * 64))
    with pytest.raises(fr.FetchError, match=f"packaged tar sha256 {chart.tar_sha256}, pinned {'0' * 64}"):
        fr.fetch_reference(tmp_path, fetch=serve_shared())
    assert tree_files(tmp_path) == set()


def test_the_tar_pin_covers_the_packaging() -> None:
    chart = CHARTS["nvidia-device-plugin"]
    members = fr.chart_files(chart, serve_shared())
    assert hashlib.sha256(fr.chart_tar(chart, members)).hexdigest() == chart.tar_sha256
    reordered = [members[1], members[0], *members[2:]]
    assert hashlib.sha256(fr.chart_tar(chart, reordered)).hexdigest() != chart.tar_sha256


def test_other_versions_get_no_chart(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert fr.main(["--dest", str(tmp_path), "--kueue", "0.99.0"], fetch=serve_shared()) == 1  # its files 404
    assert "no chart pins for kueue 0.99.0" in capsys.readouterr().err


@pytest.mark.parametrize("key", CHARTS)
def test_helm_yaml_writes_chart_yaml_as_helm_package_does(key: str) -> None:
    # From the upstream file (comments, quotes, its own key order) to what helm put in the archive.
    chart = CHARTS[key]
    upstream = (source_dir(CHART_SOURCES[key]) / "Chart.yaml").read_bytes()
    assert fr.helm_yaml(upstream, **dict(chart.chart_yaml)) == archive_files(shared_chart(key))["Chart.yaml"]


@pytest.mark.parametrize("member", [m.path for c in CHARTS.values() for m in c.members if m.how == "metadata"])
def test_helm_yaml_leaves_what_helm_wrote_as_it_is(member: str) -> None:
    key = next(k for k, c in CHARTS.items() if member in {m.path for m in c.members})
    written = archive_files(shared_chart(key))[member]
    assert fr.helm_yaml(written) == written


def test_helm_yaml_quotes_and_orders_as_go_yaml() -> None:
    data = b"b: 1.0\na10: x\na9: '>= 1'\nA: \"2026-07-13T11:53:56Z\"\nz: true\n# a comment\n"
    assert fr.helm_yaml(data, version="0.1.0") == (
        b'A: "2026-07-13T11:53:56Z"\na9: \'>= 1\'\na10: x\nb: "1.0"\nversion: 0.1.0\nz: "true"\n'
    )


def test_promote_kueue_values_makes_the_published_values() -> None:
    upstream = (source_dir(PINNED_SOURCES[0]) / "values.yaml").read_bytes()
    assert fr.promote_kueue_values(upstream, fr.KUEUE_VERSION) == archive_files(shared_chart("kueue"))["values.yaml"]
    with pytest.raises(ValueError, match="occurs 2 times"):
        fr.promote_kueue_values(upstream.replace(b"pullPolicy: Always", b"pullPolicy: Never", 1), fr.KUEUE_VERSION)


# --- http_get, against a server on the loopback interface ------------------------------------


@pytest.fixture
def loopback_server() -> Iterator[tuple[str, list[str]]]:
    """Serves /ok, /missing (404) and /flaky (503 once, then 200); records the paths asked for."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (BaseHTTPRequestHandler's name)
            asked.append(self.path)
            if self.path == "/ok" or (self.path == "/flaky" and asked.count("/flaky") > 1):
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"data")
            else:
                self.send_error(503 if self.path == "/flaky" else 404)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


def test_http_get(loopback_server: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    base, asked = loopback_server
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # the retry back-off
    assert fr.http_get(f"{base}/ok") == b"data"
    with pytest.raises(fr.FetchError, match="HTTP 404"):
        fr.http_get(f"{base}/missing")
    assert fr.http_get(f"{base}/flaky") == b"data"
    assert asked == ["/ok", "/missing", "/flaky", "/flaky"]  # a 404 is not retried, a 503 is


# --- the manager config's types across files, and the tool on real clones ----------------------

# At Kueue v0.19 configuration_types.go names an alias that deprecated_types.go declares.
SPLIT_CONFIGURATION = """package v1beta2

type Configuration struct {
	Providers []ClusterProfileCredentialsProvider `json:"credentialsProviders"`
}

type ClusterProfileAccessProvider struct {
	Name string `json:"name"`
}
"""
SPLIT_DEPRECATED = """package v1beta2

// ClusterProfileAccessProvider defines an access provider in the ClusterProfile API.
type ClusterProfileCredentialsProvider = ClusterProfileAccessProvider
"""


def test_config_fields_read_the_aliases_of_deprecated_types_go(tmp_path: Path) -> None:
    kueue = PINNED_SOURCES[0]
    with pytest.raises(ValueError, match="type ClusterProfileCredentialsProvider is not declared"):
        fr.fetch_reference(tmp_path / "without", fetch=serve_shared(SPLIT_CONFIGURATION))
    served = serve_shared(SPLIT_CONFIGURATION)
    deprecated_url = fr.raw_url(kueue.repo, kueue.ref, fr.KUEUE_DEPRECATED_TYPES)

    def with_deprecated(url: str) -> bytes:
        return SPLIT_DEPRECATED.encode() if url == deprecated_url else served(url)

    fr.fetch_reference(tmp_path / "with", fetch=with_deprecated)
    fields = yaml.safe_load((tmp_path / "with" / kueue.directory / fr.CONFIG_FIELDS).read_text())
    assert fields == {"credentialsProviders": ["ClusterProfileCredentialsProvider"]}  # as ../shared spells it
    assert fr.KUEUE_DEPRECATED_TYPES in (tmp_path / "with" / kueue.directory / "SOURCE.md").read_text()


def test_only_a_missing_file_is_taken_as_absent(tmp_path: Path) -> None:
    kueue = PINNED_SOURCES[0]
    served = serve_shared()
    deprecated_url = fr.raw_url(kueue.repo, kueue.ref, fr.KUEUE_DEPRECATED_TYPES)

    def failing(url: str) -> bytes:
        if url == deprecated_url:
            raise fr.FetchError(f"{url}: HTTP 500")
        return served(url)

    with pytest.raises(fr.FetchError, match="HTTP 500"):
        fr.fetch_reference(tmp_path, fetch=failing)
    assert tree_files(tmp_path) == set()


def test_git_fetch_reads_a_clone_at_the_ref_of_the_url(tmp_path: Path) -> None:
    clone = tmp_path / "kueue"
    (clone / "apis").mkdir(parents=True)
    git(clone, "init", "-q")
    (clone / "apis" / "a.go").write_text("first\n")
    git(clone, "add", ".")
    git(clone, "commit", "-q", "-m", "one")
    git(clone, "tag", "v1.0.0")
    (clone / "apis" / "a.go").write_text("second\n")
    git(clone, "commit", "-q", "-am", "two")
    elsewhere: list[str] = []
    fetch = fr.git_fetch({"kubernetes-sigs/kueue": clone}, lambda url: elsewhere.append(url) or b"web")
    assert fetch(fr.raw_url("kubernetes-sigs/kueue", "v1.0.0", "apis/a.go")) == b"first\n"
    with pytest.raises(fr.NotFound, match="apis/b.go"):
        fetch(fr.raw_url("kubernetes-sigs/kueue", "v1.0.0", "apis/b.go"))
    with pytest.raises(fr.FetchError, match="v9.9.9") as err:
        fetch(fr.raw_url("kubernetes-sigs/kueue", "v9.9.9", "apis/a.go"))
    assert not isinstance(err.value, fr.NotFound)
    assert fetch(fr.raw_url("pulumi/pulumi", "abc", "x")) == b"web" and elsewhere == [
        fr.raw_url("pulumi/pulumi", "abc", "x")
    ]


def test_the_git_option_names_the_repositories_it_takes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        fr.build_parser().parse_args(["--dest", str(tmp_path), "--git", f"someone/else={tmp_path}"])
    assert "kubernetes-sigs/kueue" in capsys.readouterr().err
    args = fr.build_parser().parse_args(["--dest", str(tmp_path), "--git", f"pulumi/pulumi={tmp_path}"])
    assert args.git == [("pulumi/pulumi", tmp_path)]
