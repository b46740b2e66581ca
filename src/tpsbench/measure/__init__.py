"""Measurement: latency histograms, what users record, interval reports and step
summaries, and the step observers that read beside every step (host CPU).
"""
