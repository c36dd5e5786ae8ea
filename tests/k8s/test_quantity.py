"""Quantities in the API server's canonical form, so what the program sends is what it reads back."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.utils.quantity import parse_quantity as client_parse_quantity

from components.k8s.quantity import (
    MIB,
    QUANTITY_PATTERN,
    QuantityError,
    canonical,
    format_count,
    format_cpu,
    format_memory,
    parse_quantity,
)


# (what a user or the program writes, what Quantity.String() returns for it): Kubernetes'
# canonicalisation rules (k8s.io/apimachinery pkg/api/resource/quantity.go, CanonicalizeBytes).
@pytest.mark.parametrize(
    ("written", "binary", "returned"),
    [
        ("0.6", False, "600m"),  # a ClusterQueue's fairSharing weight for a 60 % share
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
        ("512", True, "512"),  # below 1024 binary SI prints as decimal
        ("1.5", True, "1500m"),  # not whole: decimal SI
    ],
)
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


# The official client's parser (kubernetes.utils.quantity) against this one. The program keeps its
# own: importing the client's loads the whole `kubernetes` package (0.26 s on this machine, which
# every preview would pay: the validator parses quotas), and it accepts strings the API server
# refuses, which this one must reject before anything is applied. Where Kubernetes accepts a
# quantity, the two agree on its value.
@given(st.from_regex(QUANTITY_PATTERN, fullmatch=True))
def test_the_official_clients_parser_gives_the_same_value_for_every_quantity(text: str) -> None:
    try:
        ours = parse_quantity(text)
    except QuantityError:  # a fractional exponent (1e2.5): the CRD pattern lets it through, Kubernetes does not
        with pytest.raises(ValueError):
            client_parse_quantity(text)
        return
    assert client_parse_quantity(text) == ours


def test_a_fractional_exponent_is_refused() -> None:
    with pytest.raises(QuantityError):
        parse_quantity("1e2.5")


@pytest.mark.parametrize("text", ["1K", "1.5e3Mi", "1e3k", "1_000", "NaN", "Infinity"])
def test_what_the_official_client_accepts_but_kubernetes_refuses_is_refused_here(text: str) -> None:
    """Upper-case K is no suffix in Kubernetes (k8s.io/apimachinery pkg/api/resource/quantity.go),
    nor an exponent with a suffix; Python's Decimal reads the rest."""
    client_parse_quantity(text)
    assert not QUANTITY_PATTERN.match(text)
    with pytest.raises(QuantityError):
        parse_quantity(text)
