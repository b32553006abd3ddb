"""The gates' workloads, one module each; each registers itself
(``registry.register_workload``) when imported, and ``registry`` imports
every module of this package (a leading underscore: shared code, no
workload).  docs/writing-gates.md says what a workload provides."""
