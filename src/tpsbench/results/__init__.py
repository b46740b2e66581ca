"""The results store and its schema: every run, step, interval, histogram, error sample
and observer reading, kept in any SQLAlchemy database, with a layout version.
"""
