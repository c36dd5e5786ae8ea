"""Kubernetes helpers every concern shares, and nothing above them: resource quantities
(`quantity`), name and label rules (`names`), chart sources and their problems (`charts`), a
namespaced Helm release (`helm`) and a plain manifest as a Pulumi resource (`manifest`). They
decide no policy and import nothing else from components."""
