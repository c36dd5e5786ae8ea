"""Azure's region names, to check `azure-native:location` offline (pure facts).

The public cloud's regions are the "Programmatic name" column of Microsoft's region list
(MicrosoftDocs/reliability-docs articles/reliability/regions-list.md, ms.date 09/23/2025, read on
2026-12-05 at commit 01021ab8), coming-soon and restricted-access regions included. The sovereign
clouds' are from their own pages (learn.microsoft.com/azure/azure-government/documentation-government-
developer-guide, learn.microsoft.com/azure/china/resources-developer-guide), and the two early update
access (EUAP) regions are where AKS ships first. A region newer than this list is not refused: only
a name close to a known one (a typo) or a display name is, and the preflight asks Azure itself.
"""

from __future__ import annotations

import difflib

PUBLIC_REGIONS = frozenset(
    {
        "australiacentral",
        "australiacentral2",
        "australiaeast",
        "australiasoutheast",
        "austriaeast",
        "belgiumcentral",
        "brazilsouth",
        "brazilsoutheast",
        "canadacentral",
        "canadaeast",
        "centralindia",
        "centralus",
        "chilecentral",
        "denmarkeast",
        "eastasia",
        "eastus",
        "eastus2",
        "francecentral",
        "francesouth",
        "germanynorth",
        "germanywestcentral",
        "indonesiacentral",
        "israelcentral",
        "italynorth",
        "japaneast",
        "japanwest",
        "koreacentral",
        "koreasouth",
        "malaysiawest",
        "mexicocentral",
        "newzealandnorth",
        "northcentralus",
        "northeurope",
        "norwayeast",
        "norwaywest",
        "polandcentral",
        "qatarcentral",
        "southafricanorth",
        "southafricawest",
        "southcentralus",
        "southindia",
        "southeastasia",
        "spaincentral",
        "swedencentral",
        "switzerlandnorth",
        "switzerlandwest",
        "uaecentral",
        "uaenorth",
        "uksouth",
        "ukwest",
        "westcentralus",
        "westeurope",
        "westindia",
        "westus",
        "westus2",
        "westus3",
    }
)
SOVEREIGN_REGIONS = frozenset(
    {
        "usgovvirginia",
        "usgovtexas",
        "usgovarizona",
        "usdodeast",
        "usdodcentral",
        "chinaeast",
        "chinaeast2",
        "chinaeast3",
        "chinanorth",
        "chinanorth2",
        "chinanorth3",
    }
)
EARLY_ACCESS_REGIONS = frozenset({"eastus2euap", "centraluseuap"})
REGIONS = PUBLIC_REGIONS | SOVEREIGN_REGIONS | EARLY_ACCESS_REGIONS


def region_problem(location: str) -> str | None:
    """What is wrong with a region name, or None: a display name or a near miss of a known name."""
    if location in REGIONS:
        return None
    short = location.replace(" ", "").lower()
    if short in REGIONS:
        return (
            f"{location!r} is a display name; write the region's programmatic name, {short!r} (the names "
            "`az account list-locations -o table` lists in its Name column)"
        )
    close = difflib.get_close_matches(short, sorted(REGIONS), n=3, cutoff=0.8)
    if close:
        return (
            f"{location!r} is not an Azure region; did you mean {' or '.join(repr(c) for c in close)}? "
            "(`az account list-locations -o table` lists them)"
        )
    return None
