"""Kueue itself. Decides, as plain data: which releases and gates exist (`versions`), which CRDs
the pinned chart serves (`crds`), the Helm values and manager config (`values`), every Kueue object
and team quota (`objects`), and whether those objects are valid for that Kueue (`validate`).
Creates: the namespace and Helm release (`install`: KueueInstallation) and the team namespaces and
queue objects (`queues`: KueueQueues, with `validated_objects`, the objects the program applies)."""
