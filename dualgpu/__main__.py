"""``python -m dualgpu demo | inspect | bench`` (see :mod:`dualgpu.cli`)."""
from dualgpu.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
