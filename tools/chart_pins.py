"""The packaged charts that tools/fetch_reference.py builds for the e2e tier, file by file.

Each chart is its upstream folder at the pinned tag, laid out as `helm package` lays it out. Every
member is pinned by the git blob id of the bytes that go into the archive:

- how="copy": the upstream file, unchanged (helm copies templates, values, READMEs as they are);
- how="metadata": Chart.yaml / Chart.lock, which helm re-serializes (keys sorted, comments gone):
  the upstream file parsed and written the same way (fetch_reference.helm_yaml), then checked;
- how="promote": Kueue's values.yaml with the edits its hack/helm-chart-package.sh makes for a
  promoted release (fetch_reference.promote_kueue_values), then checked.

Members under a subchart's path come from that subchart's archive, vendored upstream as a .tgz
(helm package unpacks it into charts/<name>/). The whole archive is pinned too: `tar_sha256` is
the sha256 of the deterministic tar stream (fixed order, mode 0644, uid/gid 0, mtime 0); the
.tgz is that stream gzip-compressed with mtime 0, whose exact bytes depend on the zlib build, so
only the stream inside is pinned.

The blob ids were computed from the archives that `helm package` (Helm v3.22.0) made of these
folders (../shared/<source>/chart/*.tgz, see their SOURCE.md), whose members other than
Chart.yaml and Chart.lock are byte copies of the upstream files; Kueue's also match
sigs.k8s.io/kueue@v0.19.2 in the Go module cache (checksummed by sum.golang.org). To pin a new
release: package it with helm as its SOURCE.md says, then
`python -m tools.chart_pins <chart.tgz> [--promote values.yaml] [--subchart charts/<name>=<upstream .tgz>]`
prints the member table, and `python -m tools.fetch_reference` against the new table prints the
tar digest to pin when it mismatches.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ChartMember:
    path: str  # path inside the chart folder (the archive member is "<chart name>/<path>")
    blob: str  # git blob id of the member's bytes in the archive
    how: str = "copy"  # "copy" | "metadata" | "promote"


@dataclass(frozen=True)
class Subchart:
    path: str  # where helm package unpacks it, e.g. "charts/node-feature-discovery"
    archive: str  # the vendored .tgz upstream, relative to the chart folder


@dataclass(frozen=True)
class PackagedChart:
    name: str
    version: str
    repo: str  # owner/name on GitHub
    ref: str  # tag
    folder: str  # the chart folder in the repository
    members: tuple[ChartMember, ...]
    tar_sha256: str
    subcharts: tuple[Subchart, ...] = ()
    chart_yaml: tuple[tuple[str, str], ...] = ()  # Chart.yaml fields set as `helm package --version/--app-version`

    @property
    def local(self) -> str:  # under the source's directory in ../shared
        return f"chart/{self.name}-{self.version}.tgz"


METADATA = frozenset({"Chart.yaml", "Chart.lock"})

# kubernetes-sigs/kueue charts/kueue at v0.19.2 with the promotion edits, as `helm package --version
# 0.19.2 --app-version v0.19.2` lays it out (charts/kueue/tests/ is in its .helmignore).
KUEUE_CHART = PackagedChart(
    name="kueue",
    version="0.19.2",
    repo="kubernetes-sigs/kueue",
    ref="v0.19.2",
    folder="charts/kueue",
    chart_yaml=(("version", "0.19.2"), ("appVersion", "v0.19.2")),
    tar_sha256="70f1b9e38d504d2111ee4272f669f2a74994b76b27c00fa728e9e4ef50d25a4f",
    members=(
        ChartMember("Chart.yaml", "b7100c1b0e7db53e68f43347ce6160a12e9bc677", how="metadata"),
        ChartMember("values.yaml", "0158d780940d5b8208b3773082ceba829f2beabb", how="promote"),
        ChartMember("templates/_helpers.tpl", "4c4ea4a2257531cbeb835578dc432a68953d6fbf"),
        ChartMember("templates/certmanager/certificate-metrics.yaml", "d9b8627e5e8041333384895e32d1d7b9e49add43"),
        ChartMember(
            "templates/certmanager/certificate-visibility-server.yaml", "29f7dad366e50d461ef5a6f1bddd8bd55871edc8"
        ),
        ChartMember("templates/certmanager/certificate.yaml", "b6e85a37cc6d70be807479e2ae729e85eacd2575"),
        ChartMember("templates/certmanager/issuer.yaml", "cc8546681cc0bc18367e705859b048f0291e7b5b"),
        ChartMember("templates/crd/kueue.x-k8s.io_admissionchecks.yaml", "ab8be2d61bed6a79a70a66a09625e44d70fe6694"),
        ChartMember("templates/crd/kueue.x-k8s.io_clusterqueues.yaml", "852612e9a5bffdd0d32679f41402ba69ff36c8a1"),
        ChartMember("templates/crd/kueue.x-k8s.io_cohorts.yaml", "011694248cd4d6e54c762d1136c12dd18c28eaf6"),
        ChartMember("templates/crd/kueue.x-k8s.io_localqueues.yaml", "e02a96630c37ea701c004bac5ffe096dc56c2736"),
        ChartMember("templates/crd/kueue.x-k8s.io_multikueueclusters.yaml", "860bdc51c0451942e234d678904fe285961f0632"),
        ChartMember("templates/crd/kueue.x-k8s.io_multikueueconfigs.yaml", "d750c7155641e253bf106191afb934cd8be4c9dc"),
        ChartMember(
            "templates/crd/kueue.x-k8s.io_provisioningrequestconfigs.yaml", "a186edd1ddee377be61eb73b2a22b18e4ad45275"
        ),
        ChartMember("templates/crd/kueue.x-k8s.io_resourceflavors.yaml", "a54b008ee6a0b5dc84c3683e5c0db6c0ebe4220c"),
        ChartMember("templates/crd/kueue.x-k8s.io_topologies.yaml", "af02eaa3c58e8548deea79221e0cbea5fe48eaaa"),
        ChartMember(
            "templates/crd/kueue.x-k8s.io_workloadpriorityclasses.yaml", "e79e8977d1bbbb140d6a9a61bae399d66417bb8e"
        ),
        ChartMember("templates/crd/kueue.x-k8s.io_workloads.yaml", "4eeb895636b154ce9a4e3e0fe13c3769810df7a9"),
        ChartMember("templates/internalcert/secret.yaml", "f1080ad58a45bf7c66e9aa067bc1bd7ae0b11d7a"),
        ChartMember("templates/kueueviz/backend-deployment.yaml", "52cb167fac6d4957713c3df7dc50051356654b64"),
        ChartMember("templates/kueueviz/backend-ingress.yaml", "c43ec2ae39399ea46899b7a75b92201084e0ec52"),
        ChartMember("templates/kueueviz/backend-service.yaml", "1fc2e632edda7f168f7ee3886030ce307849e782"),
        ChartMember("templates/kueueviz/cluster-role-binding.yaml", "2ca4e143ab622d423b892dc49485bae84c1320f1"),
        ChartMember("templates/kueueviz/clusterrole.yaml", "ae4447632ef98a3d4aff0a3d5ca33a1492d39e5c"),
        ChartMember("templates/kueueviz/frontend-configmap.yaml", "9c04d4e3da34efcc9f5860cd6dea39a5a4d1b733"),
        ChartMember("templates/kueueviz/frontend-deployment.yaml", "b1172da5e09be8a5626e6b31b2eb1bf299dcb621"),
        ChartMember("templates/kueueviz/frontend-ingress.yaml", "f8b5c17d01db9a220256d0e2665934680d99a6d5"),
        ChartMember("templates/kueueviz/frontend-service.yaml", "f87ff080141d0656450b9d064c76433b0bfdc2e7"),
        ChartMember("templates/manager/auth_proxy_service.yaml", "85cedb6dfee160249b970b7e02b71e3812b3e829"),
        ChartMember("templates/manager/manager-config.yaml", "e910ec6318eb5bd493316f1e5760fd4e0e13d531"),
        ChartMember("templates/manager/manager-pdb.yaml", "26def36b6f72f8f2e609ea77edfa3948524f8469"),
        ChartMember("templates/manager/manager.yaml", "e6f27467486259bbcb3248be1d855ee428c181a7"),
        ChartMember("templates/map/manifests.yaml", "1caa5c8c8a2247f63294e8c21e74439670c13350"),
        ChartMember("templates/prometheus/monitor.yaml", "e8b21dba639a246fba4b96f37838459c8f66ca66"),
        ChartMember("templates/prometheus/role.yaml", "ddd0646aeada16adf6237d07e7cd21211d19e82e"),
        ChartMember("templates/rbac/batch_admin_role.yaml", "c5b68bab5f015119ef41291144f5f35a72064542"),
        ChartMember("templates/rbac/batch_user_role.yaml", "530cfd7f0d97f8beddaa9c275d51f080d3e4e832"),
        ChartMember("templates/rbac/clusterqueue_editor_role.yaml", "d3948700d2380836b0c7d05e689da80558a48790"),
        ChartMember("templates/rbac/clusterqueue_viewer_role.yaml", "ab33841b097f7f5ec73e3f3a3fd298f31d1e3d07"),
        ChartMember("templates/rbac/cohort_editor_role.yaml", "b6d649609f62f893b355fd59359d05912f1ba174"),
        ChartMember("templates/rbac/cohort_viewer_role.yaml", "c6867ab7f5ee5456af298595c014d30a39abfb20"),
        ChartMember("templates/rbac/jaxjob_editor_role.yaml", "9c6642bba595e3716dec69d2987f77adc470bd05"),
        ChartMember("templates/rbac/jaxjob_viewer_role.yaml", "95d16e7b6fb6aeb4e9ff69fb63c2ff4215621440"),
        ChartMember("templates/rbac/job_editor_role.yaml", "7e30512ac18498b32f86b82d8a5d6e95c8bb3335"),
        ChartMember("templates/rbac/job_viewer_role.yaml", "962710a3841639d63433c07fc2fe9ce2396d4192"),
        ChartMember("templates/rbac/jobset_editor_role.yaml", "f2dbaa70a9df02c1e7b27b268951812a8f0d6a78"),
        ChartMember("templates/rbac/jobset_viewer_role.yaml", "744f6c8c41a78f40eea24c94656aa19fe31b7c97"),
        ChartMember("templates/rbac/leader_election_role.yaml", "c5212500ca98bbc14b12030b8461988eab1a7d6f"),
        ChartMember("templates/rbac/leader_election_role_binding.yaml", "b6cfb45562c37cca28c7ad301e815131aec08bc0"),
        ChartMember("templates/rbac/leaderworkerset_editor_role.yaml", "e0b177bb3d5ce746349a57fdf5d67d8eb55cb1f7"),
        ChartMember("templates/rbac/leaderworkerset_viewer_role.yaml", "c37f104d6c1d167316e0103d293e15d9f7b27aa4"),
        ChartMember("templates/rbac/localqueue_editor_role.yaml", "98096f4b8404f0978046470477c92c38d41d388a"),
        ChartMember("templates/rbac/localqueue_viewer_role.yaml", "8f1d1ab8d0f8907ad58f73a1734134b893028419"),
        ChartMember("templates/rbac/manager_clusterprofiles_role.yaml", "6c23e0929b071faf414f292463d3cbbffa2b0456"),
        ChartMember(
            "templates/rbac/manager_clusterprofiles_role_binding.yaml", "15efceab5780500638348f2f9ed1d80a9b844b15"
        ),
        ChartMember("templates/rbac/manager_secrets_role.yaml", "72173328d2959fc2826c428c399942b1d7c4cb10"),
        ChartMember("templates/rbac/manager_secrets_role_binding.yaml", "9ec5c67e85e74690d258fed01d0c99fa854c401d"),
        ChartMember("templates/rbac/metrics_auth_role.yaml", "f7bbefb14a40573be90b46891e9c5e61b3c25e7f"),
        ChartMember("templates/rbac/metrics_auth_role_binding.yaml", "82cd7e5bd866c0038d184771a9e2adb9a8617b4a"),
        ChartMember("templates/rbac/metrics_reader_role.yaml", "8272e545d1f7e33a3a462b37ad8fc879df5495a6"),
        ChartMember("templates/rbac/mpijob_editor_role.yaml", "300a02b90cea5542bed77e3249f326eef4b316ba"),
        ChartMember("templates/rbac/mpijob_viewer_role.yaml", "b5f3be94b38e62b4954b21aafd3b0103775df8b4"),
        ChartMember("templates/rbac/paddlejob_editor_role.yaml", "bd96b834c62c40a0153d5d65dd7c6397daf272c8"),
        ChartMember("templates/rbac/paddlejob_viewer_role.yaml", "b5d9edd9c1146ca4fd38829c6bb49f58368a9bd3"),
        ChartMember("templates/rbac/pending_workloads_cq_viewer_role.yaml", "9595e1f95f0cebc82415b34f94339e62d6d5a8ef"),
        ChartMember("templates/rbac/pending_workloads_lq_viewer_role.yaml", "4b612e6062ef6f8f6e3b73c48051a161499f6fcc"),
        ChartMember("templates/rbac/pytorchjob_editor_role.yaml", "f17aeb4f83cfe13d275a25aef9802b79d623c458"),
        ChartMember("templates/rbac/pytorchjob_viewer_role.yaml", "f6aa50f802f994cb4f81d139eb1d1ae77343162c"),
        ChartMember("templates/rbac/raycluster_editor_role.yaml", "666b5a6c457c83dbdeb4f3743313db2a62282c6a"),
        ChartMember("templates/rbac/raycluster_viewer_role.yaml", "1cadbdd783323ff5a9875312e94bbfe76bad3987"),
        ChartMember("templates/rbac/rayjob_editor_role.yaml", "13ef95af5ebbdd0258d060301704efe216fe0fbd"),
        ChartMember("templates/rbac/rayjob_viewer_role.yaml", "2a717ab029b68f2b574e935f774041633299018a"),
        ChartMember("templates/rbac/rayservice_editor_role.yaml", "1738316a88c46912005ea567379b64890ff57db6"),
        ChartMember("templates/rbac/rayservice_viewer_role.yaml", "5cf6d311d35babccca13b332586924c9f9689df7"),
        ChartMember("templates/rbac/resourceflavor_editor_role.yaml", "c2bacb6e847cf80557f6443657bcf45a1124bb78"),
        ChartMember("templates/rbac/resourceflavor_viewer_role.yaml", "05358b6376af608789a92909b70e0796204ff500"),
        ChartMember("templates/rbac/role.yaml", "48a802ab3b65309d72255950900fa7dfa7e10556"),
        ChartMember("templates/rbac/role_binding.yaml", "9fba729e80c96dc0e5ef9cc315fa19d16f48985c"),
        ChartMember("templates/rbac/service_account.yaml", "e28686a14202be8214a6318dc119868efd8be509"),
        ChartMember("templates/rbac/sparkapplication_editor_role.yaml", "58bf05dad19e9a7e4e7c92a8c83fbd5d1bd93628"),
        ChartMember("templates/rbac/sparkapplication_viewer_role.yaml", "dc65f507b117b06352adcaf5621c829ea716e2df"),
        ChartMember("templates/rbac/tfjob_editor_role.yaml", "f711d0c9240a1ca87344cd8a869d6aca8e383227"),
        ChartMember("templates/rbac/tfjob_viewer_role.yaml", "f72a549d49f834c84336972ac4c2221e5d9eb9ff"),
        ChartMember("templates/rbac/topology_editor_role.yaml", "75f48aab679845b8cdd9009f33d357e09aa33e49"),
        ChartMember("templates/rbac/topology_viewer_role.yaml", "9adbbddda846bd85405e46736386b987a19b2933"),
        ChartMember("templates/rbac/trainjob_editor_role.yaml", "bcbf4cae5d4356e37ea1c38c68fd1db23fa88cd3"),
        ChartMember("templates/rbac/trainjob_viewer_role.yaml", "1b6bebc611c849312c979dfaa104a4b7fe6babb4"),
        ChartMember("templates/rbac/workload_editor_role.yaml", "7cc845ae4518e2abf710bd1453f1c20e010bc245"),
        ChartMember("templates/rbac/workload_viewer_role.yaml", "1be952cc95e969765088ab58b3a89eefceae92a7"),
        ChartMember("templates/rbac/xgboostjob_editor_role.yaml", "d8f1d6cbdb1dc4281fc442be5b93380fc0e60234"),
        ChartMember("templates/rbac/xgboostjob_viewer_role.yaml", "8c54f863ad9b8de63ddc93c00347c945875fcfed"),
        ChartMember("templates/visibility/apiservice_v1beta1.yaml", "d823e119ad4743f1ec4aa95fbec8e636300ba5ef"),
        ChartMember("templates/visibility/apiservice_v1beta2.yaml", "93eb8639ad1ebeb4c24c7f1ec7c988a547f2e175"),
        ChartMember("templates/visibility/role_binding.yaml", "c543a151744b14439ea04d7c924de84f7aecfa71"),
        ChartMember("templates/visibility/service.yaml", "4fd7f80541d514514804265ee7d6360c6ac25a6d"),
        ChartMember("templates/visibility-apf/flowschema.yaml", "532718baa5d9fd999a99a4183247987dd8d1c3e6"),
        ChartMember(
            "templates/visibility-apf/prioritylevelconfigurations.yaml", "d60f6f378cd64416c8281b0c0b5c422a99172a95"
        ),
        ChartMember("templates/webhook/manifests.yaml", "a78cb5cc3160b94a1b421737d7c18840f620b44d"),
        ChartMember("templates/webhook/service.yaml", "024ed6021a7909aa0c479034e7101ac0c999052e"),
        ChartMember(".helmignore", "29935710749cfa52dc181616f429d32c8e9c1513"),
        ChartMember("README.md", "d99a0a4b385fa6235734431199df3dc74f6810ba"),
        ChartMember("README.md.gotmpl", "ea1e6cae0300227327550ee4288589f4e56edb86"),
    ),
)

# NVIDIA/k8s-device-plugin deployments/helm/nvidia-device-plugin at v0.20.0, unmodified, as `helm
# package` lays it out: its vendored node-feature-discovery 0.19.0 archive unpacked under charts/.
DEVICE_PLUGIN_CHART = PackagedChart(
    name="nvidia-device-plugin",
    version="0.20.0",
    repo="NVIDIA/k8s-device-plugin",
    ref="v0.20.0",
    folder="deployments/helm/nvidia-device-plugin",
    subcharts=(Subchart("charts/node-feature-discovery", "charts/node-feature-discovery-0.19.0.tgz"),),
    tar_sha256="d6cf5e47c79e1eaf824f852310a280adb803911a3351ec980b86f212c73fb1e9",
    members=(
        ChartMember("Chart.yaml", "4d146409b50430d8426baa2f8a0d7908b12494ef", how="metadata"),
        ChartMember("Chart.lock", "467560a6fc6903e979588c9657753c03d5c4fcd2", how="metadata"),
        ChartMember("values.yaml", "12d30964aee14962b0ea6b438faadffd53d82e27"),
        ChartMember("templates/_helpers.tpl", "a2dfca250924fc5d4d7e36bd801611ffcf3a48fc"),
        ChartMember("templates/configmap.yml", "057a58f0858951a33a7bfffe055e5c5ba55f69a0"),
        ChartMember("templates/daemonset-device-plugin.yml", "c80b5112c6e95dd03f3c9e32c363c0639586835f"),
        ChartMember("templates/daemonset-gfd.yml", "1a9928564451a2bbeeb60a7b08ba4a3bd99db41a"),
        ChartMember("templates/daemonset-mps-control-daemon.yml", "aa1615af82d4c9235f13378ee0897573ea452181"),
        ChartMember("templates/role-binding.yml", "667e8b57c3bc8f316edffa1b18dcc0f553af4f2c"),
        ChartMember("templates/role.yml", "07157779d7d1f3374f91059b7bba6f1aa1412d2b"),
        ChartMember("templates/service-account.yml", "51435433951245baacf24f3dfa8cc4235d4a4493"),
        ChartMember("templates/validation.yml", "20761ae8c4c52fc5010905b2d92334a276429c1b"),
        ChartMember(".helmignore", "0e8a0eb36f4ca2c939201c0d54b5d82a1ea34778"),
        ChartMember(
            "charts/node-feature-discovery/Chart.yaml", "5330a00aed9283513a9d6a5c937c6a1842d6dc17", how="metadata"
        ),
        ChartMember("charts/node-feature-discovery/values.yaml", "12a895d22f79b3c6a3a5f5fbc007509ad494f9a6"),
        ChartMember("charts/node-feature-discovery/values.schema.json", "65ccc2d888dce7009f507ae2cc9dbad9ba7612d0"),
        ChartMember("charts/node-feature-discovery/templates/_helpers.tpl", "b540e3bbf2b0e41872f9e7bb884c1f374777da26"),
        ChartMember(
            "charts/node-feature-discovery/templates/clusterrole.yaml", "848a062239e3ee0d0ebc77f9d796bd7735df0458"
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/clusterrolebinding.yaml",
            "16902cef733ba9a174d88b5d681bfb4337597cb3",
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/master-networkpolicy.yaml",
            "3081f3ff8a17d93eaf8a0f504be12b47e73a04dc",
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/master-pdb.yaml", "532b0e6d9e0c6cd243aa304cfa6a8ce987533d83"
        ),
        ChartMember("charts/node-feature-discovery/templates/master.yaml", "8fa8e2f132dd0a119aea05237535700dc3626410"),
        ChartMember(
            "charts/node-feature-discovery/templates/nfd-gc-networkpolicy.yaml",
            "1772de841d618f46ee5ad9e93ea4fe583059f757",
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/nfd-gc-pdb.yaml", "373ed92ccf4867c7d2f9de033b8073c2fb15ac46"
        ),
        ChartMember("charts/node-feature-discovery/templates/nfd-gc.yaml", "8b0b7ca663fa2dd3dd3511d31401eae8a7e64668"),
        ChartMember(
            "charts/node-feature-discovery/templates/nfd-master-conf.yaml", "9c6e01cde4b61aae72df3f6650edc84f36475717"
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/nfd-topologyupdater-conf.yaml",
            "8d03aa2d83ae6963eaaeb575246b0fe538b7fccb",
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/nfd-worker-conf.yaml", "a2299dea13152d7dbfe5cf0a2ee1eb998dd85c2e"
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/post-delete-job.yaml", "fb5518b6d8f8b2ad224c8080bf948cc66d7e5112"
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/prometheus.yaml", "bed37f4c11a94176b4971d6fc59ebabfc70bc6d7"
        ),
        ChartMember("charts/node-feature-discovery/templates/role.yaml", "ed12ef2c031220047ef06daf2d7815f47161017f"),
        ChartMember(
            "charts/node-feature-discovery/templates/rolebinding.yaml", "a640d5f8bc6c40a936e20e81b9ada6c88e78bf5a"
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/serviceaccount.yaml", "47c75a7e59eb54fb4a151150147d45014361fdf6"
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/topologyupdater-crds.yaml",
            "b6b919689ce57c0c0a0f386aef721e6a0c7d5229",
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/topologyupdater-networkpolicy.yaml",
            "2cd6cc25b706dae1d11ed0ea817d9270d76f93b0",
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/topologyupdater.yaml", "0d25a5031d7abcd4f6d3f003c95eb00e777abc97"
        ),
        ChartMember(
            "charts/node-feature-discovery/templates/worker-networkpolicy.yaml",
            "85e1ffcd4228964d4c748e9959d223cb67fa42bd",
        ),
        ChartMember("charts/node-feature-discovery/templates/worker.yaml", "ab321294ddb88a98bb4fd69fc20167e27fe0fefe"),
        ChartMember("charts/node-feature-discovery/.helmignore", "32783164e9518d179f635f20952d925cc83c7023"),
        ChartMember("charts/node-feature-discovery/.schema.yaml", "8d7a8f493e4b0810a4ed1123da139dce1ebfd14f"),
        ChartMember("charts/node-feature-discovery/README.md", "e5e7dd6e268790ea1ecd1e82cc4e63d17d061d43"),
        ChartMember("charts/node-feature-discovery/crds/nfd-api-crds.yaml", "69e306c3b8a58ce9e86f1ea8cfc907484ed69186"),
    ),
)


def git_blob_id(data: bytes) -> str:
    """The id git gives a file's content (`git hash-object`): sha1 of a "blob <size>\\0" header + data."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def member_rows(archive: Path, promote: frozenset[str] = frozenset(), subcharts: tuple[str, ...] = ()) -> list[str]:
    """The ChartMember rows of a helm-packaged archive, in its order (how a table above was made)."""
    rows = []
    with tarfile.open(archive) as tar:
        for info in tar.getmembers():
            if not info.isfile():
                continue
            path = info.name.split("/", 1)[1]
            data = tar.extractfile(info).read()  # type: ignore[union-attr]
            root = next((s for s in subcharts if path.startswith(s + "/")), "")
            rel = path[len(root) + 1 :] if root else path
            how = "metadata" if rel in METADATA else "promote" if path in promote else "copy"
            rows.append(
                f'    ChartMember("{path}", "{git_blob_id(data)}"{"" if how == "copy" else f", how={how!r}".replace(chr(39), chr(34))}),'
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.chart_pins", description="print a chart's member table")
    parser.add_argument("archive", type=Path, help="the chart as `helm package` made it")
    parser.add_argument("--promote", action="append", default=[], help="a member edited by a release script")
    parser.add_argument("--subchart", action="append", default=[], help="the path of a subchart, e.g. charts/x")
    args = parser.parse_args(argv)
    print("\n".join(member_rows(args.archive, frozenset(args.promote), tuple(args.subchart))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
