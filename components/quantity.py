"""Kubernetes resource quantities: parse to exact decimals, format in the units Kueue shows."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# Suffixes as Kubernetes' resource.Quantity defines them (k8s.io/apimachinery
# pkg/api/resource/quantity.go): binary SI, decimal SI, and decimal exponents.
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}
# The CRDs' own pattern for quantities (int-or-string fields such as nominalQuota).
QUANTITY_PATTERN = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_SPLIT = re.compile(r"^([+-]?[0-9.]+)(.*)$")

MIB = 2**20


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float | Decimal) -> Decimal:
    """Return a quantity's value in base units (cores, bytes, devices) as an exact Decimal."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, (int, Decimal)):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(str(value))
    text = str(value).strip()
    if not QUANTITY_PATTERN.match(text):
        raise QuantityError(f"{value!r} is not a Kubernetes quantity (e.g. 500m, 4, 16Gi)")
    match = _SPLIT.match(text)
    assert match is not None  # the pattern above guarantees a leading number
    number, suffix = match.groups()
    try:
        if suffix in _BINARY:
            return Decimal(number) * _BINARY[suffix]
        if suffix in _DECIMAL:
            return Decimal(number) * _DECIMAL[suffix]
        return Decimal(number + suffix)  # exponent form, e.g. 1e3
    except InvalidOperation as exc:  # pragma: no cover - the pattern rules this out
        raise QuantityError(f"{value!r} is not a Kubernetes quantity") from exc


def cpu_millicores(value: str | int | float | Decimal) -> int:
    """CPU quantity in whole millicores, rounded down (quota must never exceed capacity)."""
    return int(parse_quantity(value) * 1000)


def memory_mib(value: str | int | float | Decimal) -> int:
    """Memory quantity in whole MiB, rounded down."""
    return int(parse_quantity(value) / MIB)


def format_cpu(millicores: int) -> str:
    """Whole cores print as plain numbers ("16"), the rest as millicores ("15740m")."""
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def format_memory(mib: int) -> str:
    """Whole GiB print as "Gi", the rest as "Mi"."""
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"
