"""Sparse functions reachable from traced code (``scipy.sparse``/``cupyx.scipy.sparse``)."""
