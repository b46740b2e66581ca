"""The live web view (``tpsbench serve``): lists the runs and campaigns of a results
store, opens their HTML reports and comparisons, and draws running runs as their
intervals are stored. It only reads the store (tpsbench.results.live.ReadOnlyStore).
"""
