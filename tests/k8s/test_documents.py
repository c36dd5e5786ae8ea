"""YAML through libyaml: the same objects as PyYAML's own safe reader and writer, only faster."""

from __future__ import annotations

import pytest
import yaml

from components.k8s import documents
from testbed.paths import CRDS_DIR


def test_libyaml_serves_the_stack_where_pyyaml_has_it() -> None:
    # The wheels PyYAML publishes for Linux are built with libyaml; without it the speed is lost, not the data.
    assert yaml.__with_libyaml__
    assert documents.LOADER is yaml.CSafeLoader and documents.DUMPER is yaml.CSafeDumper


# Two of Kueue's CRDs, a large one and a small one (the pure-Python reader takes 6 s for Workload's).
@pytest.mark.parametrize("crd", ["kueue.x-k8s.io_clusterqueues.yaml", "kueue.x-k8s.io_topologies.yaml"])
def test_kueues_crds_read_as_pyyamls_own_reader_reads_them(crd: str) -> None:
    text = (CRDS_DIR / crd).read_text()
    assert documents.load_all(text) == list(yaml.safe_load_all(text))


def test_a_document_written_reads_back_the_same_in_its_key_order() -> None:
    crd = next(d for d in documents.load_all((CRDS_DIR / "kueue.x-k8s.io_clusterqueues.yaml").read_text()) if d)
    obj = {"kind": "ConfigMap", "data": {"b": "zwei\nlines", "a": "ünïcode", "empty": "", "on": "yes"}, "spec": crd}
    text = documents.dump(obj)
    assert yaml.safe_load(text) == obj == documents.load(text)
    assert list(documents.load(text)) == ["kind", "data", "spec"] and list(documents.load(text)["data"]) == list(
        obj["data"]
    )


def test_only_plain_data_is_read() -> None:
    with pytest.raises(yaml.constructor.ConstructorError):
        documents.load("!!python/object/apply:os.system ['true']")
