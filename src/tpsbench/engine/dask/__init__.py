"""The Dask transport (``--cluster``): a run's workers on the Dask workers of a Dask cluster.

cluster checks the cluster and connects to it, probe is what each Dask worker is asked
before a run, transport starts and talks to the worker processes, worker is the process a
Dask task starts. Nothing here is imported unless ``--cluster`` is given, and this package
imports none of its modules, so tpsbench without the ``distributed`` extra never imports Dask.
"""
