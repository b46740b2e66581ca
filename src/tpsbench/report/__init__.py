"""What users see of their runs: the storage-review table in every format, and the
progress of long work.
"""
