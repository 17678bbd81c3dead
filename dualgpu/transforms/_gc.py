"""Building a derivative graph allocates millions of small, long-lived objects (vars,
equations, tracers) and frees almost none: CPython's cyclic collector would walk them
repeatedly, about a third of the build time of a deep program, to find nothing."""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def collector_paused():
    """Pause the cyclic garbage collector for the block (reference counting still frees
    memory); nested uses and already-paused collectors are left as they are."""
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
