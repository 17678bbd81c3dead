"""What every layer stands on: pytrees (``tree``), the one cache of the package (``cache``)
and the names generated source may use (``names``)."""
