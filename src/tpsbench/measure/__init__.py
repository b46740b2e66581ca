"""Measurement: latency histograms, what users record, interval reports and step
summaries, the step observers that read beside every step (host CPU), and the statistics
of interval series (SNIA steady state, batch-means confidence intervals).
"""
