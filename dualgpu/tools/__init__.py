"""The command line (``cli``: ``python -m dualgpu``), the demo (``demo``) and the op ×
interpreter matrix of docs/op_matrix.md (``op_matrix``)."""
