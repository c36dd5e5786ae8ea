"""Kueue itself. Decides, as plain data: which releases and gates exist (`versions`), what its
controller requests (`resources`), which CRDs the pinned chart serves (`crds`), the Helm values and
manager config (`values`), every Kueue object and team quota and the QueueSet a stack applies
(`objects`), whether those objects are valid for that Kueue (`validate`), how two versions of a
stack's quotas differ (`compare`), and the aggregated-role guard its uninstall needs (`policies`).
Creates: the namespace, guard and Helm release (`install`: KueueInstallation) and the team
namespaces and queue objects (`queues`: KueueQueues, after `validated_objects` checked them)."""
