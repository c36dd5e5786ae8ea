"""Azure's built-in roles a team's jobs may hold on their data, by name (pure facts).

Each value is the role definition's name, a GUID that is the same in every subscription, as
Microsoft's list of built-in roles gives it (learn.microsoft.com/azure/role-based-access-control/
built-in-roles; MicrosoftDocs/azure-docs `articles/role-based-access-control/built-in-roles.md` at
00a58329, its tables by category, named in the comments). Any other role, a custom one among
them, is given by its ID (kueue-aks:teams[].identity.roles[].role).
"""

from __future__ import annotations

from collections.abc import Mapping

# The roles that data planes check (a job reads and writes data with them), and the few
# control-plane reads a batch team needs beside them.
BUILT_IN_ROLES: Mapping[str, str] = {
    # General
    "Reader": "acdd72a7-3385-48ef-bd42-f606fba81ae7",
    # Storage
    "Storage Blob Data Reader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
    "Storage Blob Data Contributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
    "Storage Blob Data Owner": "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",
    "Storage Blob Delegator": "db58b8e5-c6ad-4a2a-8342-4190687cbf4a",
    "Storage Queue Data Reader": "19e7f393-937e-4f77-808e-94535e297925",
    "Storage Queue Data Contributor": "974c5e8b-45b9-4653-ba55-5f855dd0fb88",
    "Storage Queue Data Message Processor": "8a0f0c08-91a1-4084-bc3d-661d67233fed",
    "Storage Queue Data Message Sender": "c6a89b2d-59bc-44d0-9896-0f6e12d7b80a",
    "Storage Table Data Reader": "76199698-9eea-4c19-bc75-cec21354c6b6",
    "Storage Table Data Contributor": "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3",
    "Storage File Data SMB Share Reader": "aba4ae5f-2193-4029-9191-0cb91df5e314",
    "Storage File Data SMB Share Contributor": "0c867c2a-1d8c-454a-a3db-ab2ea1bdc8bb",
    "Storage File Data SMB Share Elevated Contributor": "a7264617-510b-434b-a828-9731dc254ea7",
    "Storage File Data Privileged Reader": "b8eda974-7b85-4f76-af95-65846b26df6d",
    "Storage File Data Privileged Contributor": "69566ab7-960f-475b-8e7c-b3118f30c6bd",
    # Containers
    "AcrPull": "7f951dda-4ed3-4680-a7ca-43fe172d538d",
    "AcrPush": "8311e382-0749-4cb8-b61a-304f252e45ec",
    "Container Registry Repository Reader": "b93aa761-3e63-49ed-ac28-beffa264f7ac",
    "Container Registry Repository Writer": "2a1e307c-b015-4ebd-883e-5b7698a07328",
    # Security
    "Key Vault Secrets User": "4633458b-17de-408a-b874-0445c86b69e6",
    "Key Vault Reader": "21090545-7ca7-4776-b22c-e363652d74d2",
    "Key Vault Certificate User": "db79e9a7-68ee-4b58-9aeb-b90e7c24fcba",
    "Key Vault Crypto User": "12338af0-0e69-4776-bea7-57ae8d297424",
    # AI + machine learning
    "AzureML Data Scientist": "f6c7c914-8db3-469d-8ca1-694a8f32e121",
    "AzureML Registry User": "1823dd4f-9b8c-4ab6-ab4e-7397a3684615",
    "Cognitive Services User": "a97b65f3-24c7-4388-baec-2e87135dc908",
    "Cognitive Services OpenAI User": "5e0bd9bd-7b93-4f28-af87-19fc36ad61bd",
    "Search Index Data Reader": "1407120a-92aa-4202-b7e9-c0e197c71c8f",
    "Search Index Data Contributor": "8ebe5a00-799e-43f5-93ac-243d3dce84a7",
    # Analytics
    "Azure Event Hubs Data Receiver": "a638d3c7-ab3a-418d-83e6-5f17a39d4fde",
    "Azure Event Hubs Data Sender": "2b629674-e913-4c01-ae53-ef4638d8f975",
    # Integration
    "Azure Service Bus Data Receiver": "4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0",
    "Azure Service Bus Data Sender": "69a216fc-b8fb-44d8-bc22-1f3c2cd27a39",
    "App Configuration Data Reader": "516239f1-63e1-4d78-a4de-a74fb236a071",
    # Monitor
    "Monitoring Metrics Publisher": "3913510d-42f4-4e42-8a64-420c390055eb",
    "Monitoring Reader": "43d0d8ad-25c7-4714-9337-8ba259a9fe05",
}

# The "Privileged" category: each lets its holder take over whatever it is held on (every
# resource, or who may do what), which no team's jobs should. Refused by ID too.
PRIVILEGED_ROLES: Mapping[str, str] = {
    "Owner": "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
    "Contributor": "b24988ac-6180-42a0-ab88-20f7382dd24c",
    "User Access Administrator": "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
    "Role Based Access Control Administrator": "f58310d9-a9f6-439a-9e8d-f62e7b41a168",
}

# The roles the stack itself assigns (components/access/azure_roles.py lists where), from the same
# list: "Containers" (the two AKS roles), "Networking", "Monitor" (Monitoring Data Reader, Grafana Admin).
STACK_ROLES: Mapping[str, str] = {
    "Azure Kubernetes Service RBAC Cluster Admin": "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b",
    "Azure Kubernetes Service Cluster User Role": "4abbcc35-e782-43d8-92c5-2d3f1bd2253f",
    "Network Contributor": "4d97b98b-1d4f-4787-a291-c67834d212e7",
    "Monitoring Data Reader": "b0d8363b-8ddd-447d-831f-62ca05bff136",
    "Grafana Admin": "22926164-76b3-42b3-bc55-97df8dab3e41",
}

_NAMES = {guid: name for name, guid in {**BUILT_IN_ROLES, **PRIVILEGED_ROLES, **STACK_ROLES}.items()}


def role_name(definition: str) -> str:
    """A role as people read it: its built-in name, or its definition ID when it has none here."""
    return _NAMES.get(definition.lower(), definition)
