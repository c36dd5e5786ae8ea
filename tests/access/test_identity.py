"""Team identities (kueue-aks:teams[].identity): the config, the table of built-in roles, what the
program registers under mocks in each cluster mode, and what the plan and its comparison say.

That a job runs as the team's ServiceAccount and that other teams cannot is shown on a real API
server in tests/e2e/access/test_identity.py; the ARM bodies are checked against the REST specs by
tests/arm/test_specs.py (testbed/stacks.py runs the shapes below).
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime import MockResourceArgs

from components.access.identity import (
    CLIENT_ID_ANNOTATION,
    CLIENT_ID_PLACEHOLDER,
    READER_ROLE,
    SERVICE_ACCOUNT,
    identity_objects,
    role_changes,
)
from components.assembly import IDENTITIES as IDENTITIES_PART
from components.cluster.component import ExistingClusterMismatch, workload_identity_issuer
from components.config.cluster import ExistingCluster
from components.config.keys import GUID
from components.config.parse import parse_config
from components.facts.azure_names import federated_credential_name, team_identity_name
from components.facts.built_in_roles import BUILT_IN_ROLES, PRIVILEGED_ROLES, role_name
from components.kueue.compare import DETAILS, NO_CHANGE
from components.plan import identities_markdown
from components.plan import main as plan_main
from testbed.config_errors import refused
from testbed.harness import (
    ROOT,
    SUBSCRIPTION,
    ProgramMocks,
    ProgramRun,
    identity_ids,
    matching_agent_pools,
    run_program,
)
from testbed.stacks import (
    ACCOUNT,
    DATA_SUBSCRIPTION,
    MEMBERS,
    READER,
    SECRETS_USER,
    VAULT,
    load_stack,
    stack_file_config,
    with_identities,
)

IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
CREDENTIAL = "azure-native:managedidentity:FederatedIdentityCredential"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
SERVICE_ACCOUNT_TYPE = "kubernetes:core/v1:ServiceAccount"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"


def identity_config(roles: list[dict[str, Any]], **keys: Any) -> dict[str, Any]:
    return {
        "nodePools": [{"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2}],
        "teams": [{"name": "research", "share": 100, "identity": {"roles": roles}}],
        **keys,
    }


ROLES = "kueue-aks:teams[0].identity.roles"


# --- the config ------------------------------------------------------------------------------


def test_a_role_is_a_built_in_name_in_any_case_or_a_definition_id() -> None:
    given = [
        {"role": "storage blob data READER", "scope": ACCOUNT},
        {"role": SECRETS_USER.upper(), "scope": VAULT},
        {
            "role": f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{READER}",
            "scope": f"/subscriptions/{SUBSCRIPTION}",
        },
        {
            "role": f"/providers/microsoft.authorization/roledefinitions/{SECRETS_USER}",
            "scope": f"/subscriptions/{SUBSCRIPTION}/resourceGroups/secrets",
        },
    ]
    config = parse_config(identity_config(given), stack="test", location="eastus2")
    identity = config.teams[0].identity
    assert identity is not None
    assert [(r.definition, r.scope, r.subscription) for r in identity.roles] == [
        (READER, ACCOUNT, DATA_SUBSCRIPTION),
        (SECRETS_USER, VAULT, SUBSCRIPTION),
        (READER, f"/subscriptions/{SUBSCRIPTION}", SUBSCRIPTION),
        (SECRETS_USER, f"/subscriptions/{SUBSCRIPTION}/resourceGroups/secrets", SUBSCRIPTION),
    ]
    assert parse_config(identity_config(given[:1]), stack="t", location="eastus2").teams[0].members == ()


def test_an_unknown_role_name_is_refused_with_the_nearest_names() -> None:
    found = refused(
        parse_config,
        identity_config([{"role": "Storage Blob Data Readr", "scope": ACCOUNT}]),
        stack="test",
        location="eastus2",
    ).by_path
    message = found[f"{ROLES}[0].role"]
    assert message.startswith(
        "'Storage Blob Data Readr' is not a built-in role this program knows (did you mean 'Storage Blob Data Reader', "
    )
    assert "any other role is given by its definition ID" in message


@pytest.mark.parametrize(
    "role",
    [
        "Owner",
        "contributor",
        PRIVILEGED_ROLES["User Access Administrator"],
        f"/providers/Microsoft.Authorization/roleDefinitions/{PRIVILEGED_ROLES['Owner']}",
    ],
)
def test_a_privileged_role_is_refused_by_name_or_id(role: str) -> None:
    message = refused(
        parse_config, identity_config([{"role": role, "scope": ACCOUNT}]), stack="test", location="eastus2"
    ).by_path[f"{ROLES}[0].role"]
    assert "would let every job of the team take over what it is held on" in message


@pytest.mark.parametrize(
    "scope",
    [
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/data/",  # a trailing slash
        f"{ACCOUNT}\n",  # a trailing line break
        "/providers/Microsoft.Management/managementGroups/research",  # no team's data
        "/subscriptions/my-subscription",
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/data/providers/Microsoft.Storage/storageAccounts",  # no name
        "researchdata",
        f"subscriptions/{SUBSCRIPTION}",
    ],
)
def test_a_scope_that_is_not_an_azure_resource_id_is_refused(scope: str) -> None:
    message = refused(
        parse_config,
        identity_config([{"role": "Storage Blob Data Reader", "scope": scope}]),
        stack="test",
        location="eastus2",
    ).by_path[f"{ROLES}[0].scope"]
    assert "is not allowed (an Azure resource ID: /subscriptions/<id>" in message or "line break" in message


def test_one_role_at_one_scope_twice_is_refused_however_spelt() -> None:
    twice = [
        {"role": "Storage Blob Data Reader", "scope": ACCOUNT},
        {"role": READER, "scope": ACCOUNT.replace("/resourceGroups/data/", "/RESOURCEGROUPS/DATA/")},
        {"role": "Storage Blob Data Contributor", "scope": ACCOUNT},
    ]
    found = refused(parse_config, identity_config(twice), stack="test", location="eastus2").by_path
    assert list(found) == [f"{ROLES}[1]"]
    assert "as [0] does (scopes compare without case)" in found[f"{ROLES}[1]"]


@pytest.mark.parametrize(
    ("identity", "path", "says"),
    [
        ({"roles": []}, ROLES, "is an empty list; allowed: 1 or more roles {role, scope}"),
        ({}, ROLES, "is required: a list of at least one {role, scope}"),
        ({"roles": [{"role": "Reader"}]}, f"{ROLES}[0].scope", "is required"),
        ({"roles": [None]}, f"{ROLES}[0]", "must be an object with role and scope"),
        ({"role": "Reader"}, "kueue-aks:teams[0].identity.role", "unknown key"),
    ],
)
def test_an_identity_without_roles_says_so(identity: dict[str, Any], path: str, says: str) -> None:
    raw = {**identity_config([]), "teams": [{"name": "research", "share": 100, "identity": identity}]}
    assert refused(parse_config, raw, stack="test", location="eastus2").by_path[path].startswith(says)


def test_an_identity_needs_aks_and_is_for_a_managers_workers() -> None:
    role = [{"role": "Reader", "scope": ACCOUNT}]
    kubeconfig = refused(
        parse_config,
        identity_config(role, cluster={"kubeconfig": {"secure": "v1:x"}}),
        stack="test",
        location="eastus2",
    ).by_path
    assert kubeconfig["kueue-aks:teams[0].identity"].startswith("needs AKS: with cluster.kubeconfig")
    manager = refused(
        parse_config, identity_config(role, multiKueue={"role": "manager"}), stack="test", location="eastus2"
    ).by_path
    assert manager["kueue-aks:teams[0].identity"].startswith("is for the workers")


# --- the built-in roles ------------------------------------------------------------------------


def test_the_table_of_roles_holds_guids_once_each_and_the_data_roles_a_team_needs() -> None:
    table = {**BUILT_IN_ROLES, **PRIVILEGED_ROLES}
    assert all(re.fullmatch(GUID, guid) and guid == guid.lower() for guid in table.values())
    assert len(set(table.values())) == len(table)
    assert {
        "Storage Blob Data Reader",
        "Storage Blob Data Contributor",
        "Storage Blob Data Owner",
        "Storage Queue Data Reader",
        "Storage Queue Data Contributor",
        "Storage File Data SMB Share Reader",
        "Storage File Data SMB Share Contributor",
        "Key Vault Secrets User",
        "Key Vault Reader",
        "AcrPull",
        "Reader",
        "AzureML Data Scientist",
        "Cognitive Services User",
        "Monitoring Metrics Publisher",
    } <= set(BUILT_IN_ROLES)
    assert role_name(READER.upper()) == "Storage Blob Data Reader" and role_name("0" * 32) == "0" * 32


def test_the_configuration_reference_lists_every_role_by_name() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text()
    assert [name for name in BUILT_IN_ROLES if f"`{name}`" not in text] == []


# --- what the program registers ---------------------------------------------------------------


@pytest.fixture(scope="module")
def create_run() -> ProgramRun:
    return run_program(with_identities(stack_file_config()))


def accounts(run: ProgramRun) -> list[Any]:
    """The team identities' ServiceAccounts (monitoring has one of its own)."""
    return [a for a in run.of_type(SERVICE_ACCOUNT_TYPE) if a.inputs["metadata"]["name"] == SERVICE_ACCOUNT]


def mock_state(registration: Any) -> dict[str, Any]:
    """What the mocks answered for a registered resource (a resource group's name)."""
    return ProgramMocks().new_resource(MockResourceArgs(registration.type, registration.name, registration.inputs))[1]


def test_a_team_with_an_identity_gets_it_its_trust_of_the_cluster_and_its_roles(create_run: ProgramRun) -> None:
    [identity] = create_run.of_type(IDENTITY)
    group = create_run.one("azure-native:resources:ResourceGroup")
    assert identity.inputs == {
        "resourceName": "kueue-dev-research",
        "resourceGroupName": mock_state(group)["name"],
        "location": "eastus2",
    }
    [credential] = create_run.of_type(CREDENTIAL)
    assert credential.inputs == {
        "resourceName": "kueue-dev-research",
        "resourceGroupName": mock_state(group)["name"],
        "federatedIdentityCredentialResourceName": "aks-kueue-dev",
        "issuer": "https://oidc.example.invalid/issuer/",  # the new cluster's, as the mocks answer it
        "subject": f"system:serviceaccount:research:{SERVICE_ACCOUNT}",
        "audiences": ["api://AzureADTokenExchange"],
    }
    assert identity.urn in credential.dependencies
    principal = identity_ids(identity.name)[0]
    assigned = {
        (a.inputs["scope"], a.inputs["roleDefinitionId"]): a.inputs
        for a in create_run.of_type(ROLE_ASSIGNMENT)
        if a.inputs["principalId"] == principal
    }
    # Each role definition is named in its scope's subscription.
    assert set(assigned) == {
        (ACCOUNT, f"/subscriptions/{DATA_SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{READER}"),
        (VAULT, f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{SECRETS_USER}"),
    }
    assert {a["principalType"] for a in assigned.values()} == {"ServicePrincipal"}


def test_the_teams_service_account_carries_its_identitys_client_id(create_run: ProgramRun) -> None:
    [account] = accounts(create_run)
    principal, client_id = identity_ids(create_run.one(IDENTITY).name)
    assert (account.inputs["metadata"]["namespace"], account.inputs["metadata"]["name"]) == (
        "research",
        SERVICE_ACCOUNT,
    )
    assert account.inputs["metadata"]["annotations"] == {CLIENT_ID_ANNOTATION: client_id}
    assert uuid.UUID(client_id)
    assert create_run.exports["teamIdentities"] == {
        "research": {
            "clientId": client_id,
            "principalId": principal,
            "namespace": "research",
            "serviceAccount": SERVICE_ACCOUNT,
        }
    }
    assert "teamIdentities" not in create_run.secret_exports


def test_only_the_teams_members_may_read_its_service_account_and_nobody_mints_its_token(create_run: ProgramRun) -> None:
    [role] = [r for r in create_run.of_type(CLUSTER_ROLE) if r.inputs["metadata"]["name"] == READER_ROLE]
    assert role.inputs["rules"] == [
        {"apiGroups": [""], "resources": ["serviceaccounts"], "resourceNames": [SERVICE_ACCOUNT], "verbs": ["get"]}
    ]
    [binding] = [b for b in create_run.of_type(ROLE_BINDING) if b.inputs["roleRef"]["name"] == READER_ROLE]
    assert binding.inputs["metadata"]["namespace"] == "research"
    assert [s["name"] for s in binding.inputs["subjects"]] == MEMBERS
    for r in create_run.of_type(CLUSTER_ROLE):
        for rule in r.inputs.get("rules", []):
            assert "serviceaccounts/token" not in rule.get("resources", []) and "impersonate" not in rule["verbs"], (
                r.name
            )


def test_a_team_without_an_identity_gets_none() -> None:
    run = run_program(stack_file_config())
    assert not run.of_type(IDENTITY) and not run.of_type(CREDENTIAL) and not accounts(run)
    assert not [a.name for a in run.of_type(ROLE_ASSIGNMENT) if a.name.startswith(f"{IDENTITIES_PART}-")]
    assert "teamIdentities" not in run.exports
    both = with_identities(stack_file_config(), {"platform": {"roles": [{"role": "AcrPull", "scope": ACCOUNT}]}})
    assert [a.inputs["metadata"]["namespace"] for a in accounts(run_program(both))] == ["platform"]


def existing_config(**cluster: Any) -> tuple[dict[str, Any], ProgramMocks]:
    config = {
        **with_identities(stack_file_config()),
        "kueue-aks:cluster": {"existing": {"resourceGroup": "rg", "name": "aks1"}},
    }
    config.pop("kueue-aks:monitoring")
    return config, ProgramMocks(
        agent_pools=matching_agent_pools(config), managed_cluster={"aadProfile": {"managed": True}, **cluster}
    )


def test_on_an_existing_cluster_the_identity_goes_to_its_group_and_trusts_its_issuer() -> None:
    config, mocks = existing_config()
    run = run_program(config, mocks=mocks)
    identity, credential = run.one(IDENTITY), run.one(CREDENTIAL)
    assert (identity.inputs["resourceName"], identity.inputs["resourceGroupName"]) == ("aks1-research", "rg")
    assert credential.inputs["issuer"] == "https://oidc.example.invalid/existing/"
    assert credential.inputs["federatedIdentityCredentialResourceName"] == "aks-aks1"


@pytest.mark.parametrize(
    ("cluster", "off"),
    [
        ({"securityProfile": {}}, "and workload identity is off"),
        (
            {"oidcIssuerProfile": {"enabled": False}, "securityProfile": {"workloadIdentity": {"enabled": False}}},
            "and the OIDC issuer and workload identity are off",
        ),
    ],
)
def test_an_existing_cluster_without_workload_identity_stops_the_program(cluster: dict[str, Any], off: str) -> None:
    config, mocks = existing_config(**cluster)
    with pytest.raises(pulumi.RunError) as err:
        run_program(config, mocks=mocks)
    assert (
        "kueue-aks:teams[].identity needs the OIDC issuer and workload identity on the existing AKS cluster aks1"
        in str(err.value)
        and off in str(err.value)
    )
    assert "az aks update --resource-group rg --name aks1 --enable-oidc-issuer --enable-workload-identity" in str(
        err.value
    )


def test_the_issuer_check_reads_the_clusters_profiles() -> None:
    on = SimpleNamespace(
        oidc_issuer_profile=SimpleNamespace(issuer_url="https://issuer/"),
        security_profile=SimpleNamespace(workload_identity=SimpleNamespace(enabled=True)),
    )
    assert workload_identity_issuer(ExistingCluster("g", "c"), on) == "https://issuer/"
    with pytest.raises(ExistingClusterMismatch, match="and the OIDC issuer is off"):
        workload_identity_issuer(
            ExistingCluster("g", "c"), SimpleNamespace(oidc_issuer_profile=None, security_profile=on.security_profile)
        )


# --- the part, the plan and the comparison ------------------------------------------------------


def test_the_part_leaves_the_client_id_to_pulumi_up() -> None:
    objects = identity_objects(load_stack(with_identities(stack_file_config())))
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", SERVICE_ACCOUNT),
        ("ClusterRole", READER_ROLE),
        ("RoleBinding", READER_ROLE),
    ]
    assert objects[0]["metadata"]["annotations"] == {CLIENT_ID_ANNOTATION: CLIENT_ID_PLACEHOLDER}
    assert identity_objects(load_stack(stack_file_config())) == []


def test_the_plan_shows_each_identity_and_its_roles() -> None:
    text = identities_markdown(load_stack(with_identities(stack_file_config())))
    [row] = [line for line in text.splitlines() if line.startswith("| research")]
    assert row == (
        f"| research | `kueue-dev-research` | ServiceAccount `research/{SERVICE_ACCOUNT}`, pods labelled "
        f'`azure.workload.identity/use: "true"` | Storage Blob Data Reader on `{ACCOUNT}`; Key Vault Secrets '
        f"User on `{VAULT}` |"
    )
    assert identities_markdown(load_stack(stack_file_config())) == ""


def test_the_comparison_names_each_role_gained_or_lost_and_each_identity() -> None:
    before = load_stack(with_identities(stack_file_config()))
    changed = with_identities(
        stack_file_config(),
        {
            "research": {
                "roles": [
                    {"role": READER.upper(), "scope": ACCOUNT.upper().replace("/SUBSCRIPTIONS/", "/subscriptions/")},
                    {"role": "Storage Blob Data Contributor", "scope": ACCOUNT},
                ]
            },
            "platform": {"roles": [{"role": "AcrPull", "scope": VAULT}]},
        },
    )
    after = load_stack(changed)
    assert role_changes(before, after) == [
        f"**research gains Storage Blob Data Contributor on `{ACCOUNT}`**",
        f"**research loses Key Vault Secrets User on `{VAULT}`**",
        f"**Team `platform` gets an Azure identity** for its jobs (ServiceAccount `{SERVICE_ACCOUNT}`)",
        f"**platform gains AcrPull on `{VAULT}`**",
    ]
    assert role_changes(after, load_stack(stack_file_config()))[:2] == [
        "**Team `research`'s Azure identity is removed**: jobs that run as it lose its roles",
        f"**research loses Storage Blob Data Reader on `{ACCOUNT.upper().replace('/SUBSCRIPTIONS/', '/subscriptions/')}`**",
    ]
    assert role_changes(before, before) == []


def test_the_plan_shows_the_identities_and_where_up_must_assign_roles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    doc["config"] = with_identities(doc["config"])
    (tmp_path / "Pulumi.ids.yaml").write_text(yaml.safe_dump(doc))
    assert plan_main(["--stack", "ids", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| team | Azure identity (managed) | its jobs run as | roles |" in out
    roles = next(line for line in out.splitlines() if line.startswith("**Azure roles:**"))
    assert f"Storage Blob Data Reader for team research's identity on `{ACCOUNT}`" in roles
    assert f"and on each scope of a team identity's roles (`{VAULT}`, `{ACCOUNT}`)" in roles


def test_the_comparison_with_a_base_puts_the_role_changes_in_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(doc))
    doc["config"] = with_identities(doc["config"])
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(doc))
    assert plan_main(["--stack", "dev", "--root", str(tmp_path), "--base", str(tmp_path / "base.yaml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    summary = lines[2 : lines.index(DETAILS)]
    assert summary[:4] == [
        "- No GPU or share change.",
        f"- **Team `research` gets an Azure identity** for its jobs (ServiceAccount `{SERVICE_ACCOUNT}`)",
        f"- **research gains Storage Blob Data Reader on `{ACCOUNT}`**",
        f"- **research gains Key Vault Secrets User on `{VAULT}`**",
    ]
    assert NO_CHANGE in lines  # before the waiting-time forecast, which comes last


@pytest.mark.parametrize("cluster", ["a", "k", "a_b-C9", "c" * 63])
@pytest.mark.parametrize("team", ["a", "t" * 63])
def test_every_cluster_and_team_name_make_valid_azure_names(cluster: str, team: str) -> None:
    """Azure's rules (docs/azure-rules.md): an identity 3-128 letters, digits, '-' and '_' from a
    letter or digit; a federated credential as the spec's pattern says."""
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{2,127}", team_identity_name(cluster, team))
    assert re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9-_]{2,119}", federated_credential_name(cluster))
