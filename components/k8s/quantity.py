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
    if not QUANTITY_PATTERN.fullmatch(text):
        raise QuantityError(f"{value!r} is not a Kubernetes quantity (e.g. 500m, 4, 16Gi)")
    match = _SPLIT.match(text)
    assert match is not None  # the pattern above guarantees a leading number
    number, suffix = match.groups()
    try:
        if not suffix:
            return Decimal(number)  # exact, however many digits (a product would round to the context's 28)
        if suffix in _BINARY:
            return Decimal(number) * _BINARY[suffix]
        if suffix in _DECIMAL:
            return Decimal(number) * _DECIMAL[suffix]
        return Decimal(number + suffix)  # exponent form, e.g. 1e3
    except InvalidOperation as exc:
        # The CRDs' pattern lets an exponent have a fraction (1e2.5); Kubernetes' own parser reads
        # the exponent as an integer and refuses it (quantity.go, ParseSuffix), and so does this.
        raise QuantityError(f"{value!r} is not a Kubernetes quantity") from exc


def cpu_millicores(value: str | int | float | Decimal) -> int:
    """CPU quantity in whole millicores, rounded down (quota must never exceed capacity)."""
    return int(parse_quantity(value) * 1000)


def memory_mib(value: str | int | float | Decimal) -> int:
    """Memory quantity in whole MiB, rounded down."""
    return int(parse_quantity(value) / MIB)


def canonical(value: Decimal | int, *, binary: bool = False) -> str:
    """A quantity as the API server writes it back (resource.Quantity.String() in
    k8s.io/apimachinery pkg/api/resource/quantity.go, CanonicalizeBytes), so that what the program
    sends equals what a later read returns and previews stay empty.

    Decimal SI: the largest exponent that is a multiple of 3 and keeps the mantissa whole
    (0.6 -> "600m", 2000 -> "2k"). Binary SI (memory written with Ki/Mi/Gi...): the largest power
    of 1024 that keeps it whole (1536Mi stays "1536Mi", 1048576Mi -> "1Ti"); below 1024, or not
    whole, it falls back to decimal SI as Kubernetes does. Kubernetes rounds to nano units first.
    """
    amount = Decimal(value)
    if amount * 10**9 != (amount * 10**9).to_integral_value():
        raise QuantityError(f"{value!r} has more precision than a Kubernetes quantity (1n)")
    if amount == 0:
        return "0"
    sign, magnitude = ("-" if amount < 0 else ""), abs(amount)
    if binary and magnitude >= 1024 and magnitude == magnitude.to_integral_value():
        whole, power = int(magnitude), 0
        while whole % 1024 == 0 and power < len(_BINARY_ORDER):
            whole //= 1024
            power += 1
        return f"{sign}{whole}{_BINARY_ORDER[power - 1] if power else ''}"
    nanos = int(magnitude * 10**9)  # whole, checked above
    exponent = -9
    while nanos % 1000 == 0 and exponent < 18:
        nanos //= 1000
        exponent += 3
    return f"{sign}{nanos}{_DECIMAL_SUFFIX[exponent]}"


_BINARY_ORDER = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def format_cpu(millicores: int) -> str:
    """Canonical, as the API server returns it: whole cores print as plain numbers ("16"), the
    rest as millicores ("15740m")."""
    return canonical(Decimal(millicores) / 1000)


def format_memory(mib: int) -> str:
    """Canonical binary SI, as the API server returns it: "64Gi", "1536Mi", "1Ti"."""
    return canonical(mib * MIB, binary=True)


def format_count(count: int) -> str:
    """A whole count (GPUs) as a canonical quantity string: the API server returns "0", not 0."""
    return canonical(count)
