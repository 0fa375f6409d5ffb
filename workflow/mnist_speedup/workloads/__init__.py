"""The workload types, one file each (found by spec/workloads.py's registry): a module here defines a
:class:`~mnist_speedup.spec.workloads.Workload` subclass and lists it in ``WORKLOADS = {type: class}``. A new
type is one file here (its network, products and FLOPs), its keys in workflow/schemas/config.schema.yaml, and
the layer kinds it adds, one file per framework (measure/frameworks/<name>/layers/)."""
