"""The job operators that run the kinds Kueue queues (KubeRay, JobSet, Kubeflow Trainer, the MPI
Operator, the Training Operator): what is installed for each enabled framework, from modules
pinned by checksum, with each operator's CRDs in a chart of their own, and the RayService guard;
the component installs them on the system pool, and a tool hands an older stack's CRDs to
those charts."""
