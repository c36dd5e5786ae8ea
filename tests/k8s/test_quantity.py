"""Quantities in the API server's canonical form, so what the program sends is what it reads back."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.k8s.quantity import (MIB, QuantityError, canonical, format_count, format_cpu, format_memory,
                                     parse_quantity)


# (what a user or the program writes, what Quantity.String() returns for it): Kubernetes'
# canonicalisation rules (k8s.io/apimachinery pkg/api/resource/quantity.go, CanonicalizeBytes).
@pytest.mark.parametrize(("written", "binary", "returned"), [
    ("0.6", False, "600m"),   # a ClusterQueue's fairSharing weight for a 60 % share
    ("0", False, "0"),
    ("1000m", False, "1"),
    ("1500m", False, "1500m"),
    ("2000", False, "2k"),
    ("1500", False, "1500"),
    ("0.25", False, "250m"),
    ("1e3", False, "1k"),
    ("1024Mi", True, "1Gi"),
    ("1536Mi", True, "1536Mi"),
    ("1.5Gi", True, "1536Mi"),
    ("1048576Mi", True, "1Ti"),
    ("512", True, "512"),      # below 1024 binary SI prints as decimal
    ("1.5", True, "1500m"),    # not whole: decimal SI
])
def test_canonical_matches_kubernetes(written: str, binary: bool, returned: str) -> None:
    assert canonical(parse_quantity(written), binary=binary) == returned


def test_formatters_give_strings_the_api_server_keeps() -> None:
    assert (format_cpu(15740), format_cpu(16000), format_cpu(1_000_000)) == ("15740m", "16", "1k")
    assert (format_memory(1024), format_memory(1536), format_memory(1024 * 1024)) == ("1Gi", "1536Mi", "1Ti")
    assert (format_count(0), format_count(8)) == ("0", "8")


def test_more_precision_than_a_nano_is_refused() -> None:
    with pytest.raises(QuantityError, match="precision"):
        canonical(Decimal("1e-10"))


@given(st.integers(min_value=-(10**15), max_value=10**15), st.sampled_from([-9, -6, -3, 0, 3]), st.booleans())
def test_canonical_keeps_the_value(mantissa: int, exponent: int, binary: bool) -> None:
    value = Decimal(mantissa).scaleb(exponent)
    assert parse_quantity(canonical(value, binary=binary)) == value


@given(st.integers(min_value=1, max_value=2**40))
def test_memory_in_mib_round_trips(mib: int) -> None:
    assert parse_quantity(format_memory(mib)) == mib * MIB
