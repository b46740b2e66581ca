"""The ``tpsbench`` command: thin click commands over tpsbench.commands, one line for
every error the user can fix.
"""
