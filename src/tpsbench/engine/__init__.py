"""The engine: the coordinator, its workers and their virtual users, the shared thread
that multiplexes users, and the transport between coordinator and workers.
"""
