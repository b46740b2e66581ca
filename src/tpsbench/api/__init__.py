"""The framework: what workloads and targets plug into, and the Python API.

Workloads (``tpsbench.workloads.*``) and targets (``tpsbench.targets.*``) depend on this
package, never the other way round.
"""
