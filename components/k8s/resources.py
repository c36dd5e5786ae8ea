"""The resources the stack counts, once: their Kubernetes names, the display units the quotas are
computed in (CPU in millicores, memory in MiB, GPUs whole), those units as the API server writes
them, and as people read them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import ROUND_CEILING, Decimal

from .quantity import MIB, format_count, format_cpu, format_memory

RESOURCE_CPU = "cpu"
RESOURCE_MEMORY = "memory"
RESOURCE_GPU = "nvidia.com/gpu"  # the NVIDIA device plugin's extended resource

# From the display units to quantities in the API server's canonical form, so a preview after `up`
# shows no change.
_FORMAT: Mapping[str, Callable[[int], str]] = {
    RESOURCE_CPU: format_cpu,
    RESOURCE_MEMORY: format_memory,
    RESOURCE_GPU: format_count,
}

# One display unit as a quantity: a millicore, a MiB; other resources count whole.
_DISPLAY_UNIT: Mapping[str, Decimal] = {RESOURCE_CPU: Decimal("0.001"), RESOURCE_MEMORY: Decimal(MIB)}

# Display units to what people read: cores, GiB, GPUs; (unit, display units per unit).
UNITS = {RESOURCE_CPU: ("vCPU", 1000), RESOURCE_MEMORY: ("GiB", 1024), RESOURCE_GPU: ("GPU", 1)}


def format_quantity(resource: str, amount: int) -> str:
    """An amount in display units as the API server writes it: 4, 16Gi, 2."""
    return _FORMAT[resource](amount)


def held(resource: str, quantity: Decimal) -> int:
    """A quantity in display units, rounded up: what a request holds of a quota (a quota written
    in these units comes out exact)."""
    unit = _DISPLAY_UNIT.get(resource, Decimal(1))
    return int((quantity / unit).to_integral_value(rounding=ROUND_CEILING))


def human(resource: str, amount: int) -> str:
    """An amount in display units as people read it, without the unit: 14, 55.50."""
    unit, per = UNITS[resource]
    value = amount / per
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"


def human_amount(resource: str, amount: int) -> str:
    """The same with its unit: 14 vCPU, 55.50 GiB, 1 GPU, 2 GPUs (GPUs are whole)."""
    plural = "s" if resource == RESOURCE_GPU and amount != 1 else ""
    return f"{human(resource, amount)} {UNITS[resource][0]}{plural}"
