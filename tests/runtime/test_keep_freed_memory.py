"""dg.config["keep_freed_memory"]: the NumPy backend sets glibc's malloc thresholds once,
when the first program is built, unless the switch is off or the process has its own."""
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import ctypes, platform, sys
    import numpy as np
    import dualgpu as dg
    from dualgpu.backends import numpy as backend
    if sys.argv[1] == "off":
        dg.config["keep_freed_memory"] = False
    assert not backend._kept                  # importing dualgpu changes nothing
    dg.grad(lambda x: np.sum(np.sin(x)))(np.ones(3))
    print(backend._kept)
""")


def _run(mode, **env):
    import os

    environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    environ.update(env)
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True,
                          env=environ, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_the_first_build_keeps_freed_memory_unless_asked_not_to_or_set_by_the_process():
    import platform

    glibc = platform.libc_ver()[0] == "glibc"
    assert _run("on") == ("[True]" if glibc else "[False]")
    assert _run("off") == "[]"                                  # never applied
    assert _run("on", MALLOC_ARENA_MAX="2") == "[False]"        # the process's own settings
