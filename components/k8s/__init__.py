"""Kubernetes helpers every concern shares, and nothing above them: resource quantities
(`quantity`), name and label rules (`names`), chart sources and their problems (`charts`), the
shape of a ValidatingAdmissionPolicy and its binding (`admission`, pure), a namespaced Helm
release (`helm`), and any object, or an admission policy with its binding, as Pulumi resources
(`manifest`), a read-only client built from a kubeconfig, for looking inside a cluster before
any resource (`reader`), what Helm's own records of a release say (`helm_records`, pure), what
one component creates as plain data (`part`) and the user's cache folder (`cache`).
They decide no policy and import nothing else from components."""
