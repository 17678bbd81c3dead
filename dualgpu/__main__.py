"""``python -m dualgpu demo | inspect | bench`` (see :mod:`dualgpu.tools.cli`)."""
from dualgpu.tools.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
