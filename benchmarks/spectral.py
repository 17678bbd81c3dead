"""numpy.fft programs against their peers: the Hessian-vector product of the spectral
deconvolution objective of examples/spectral_deconvolution.py (a Gaussian blur and a spectral
derivative through ``rfft``/``irfft``, and a log-cosh penalty), N samples, in float64 and
float32: dualgpu's ``dg.hvp``, JAX's ``jvp`` of ``grad`` under ``jit``, PyTorch's
``torch.func.jvp`` of ``torch.func.grad``, and a hand-written HVP (the objective is
quadratic plus a diagonal term, so ``H v`` is two transforms each way and an elementwise
product: the limit). One JSON line per implementation: synced microseconds per call (the
median), the first call's seconds, and the largest difference from the hand-written HVP
relative to its largest entry.

    PYTHONPATH=. python3 -m benchmarks.spectral            # GPU: N = 2**20
    PYTHONPATH=. python3 -m benchmarks.spectral --cpu      # NumPy, N = 2**12 (a smoke run)
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

LAM, MU = 1e-3, 1e-3


def objective(xp):
    def f(u, y, blur, k):
        s = xp.fft.rfft(u)
        misfit = xp.fft.irfft(blur * s, u.shape[-1]) - y
        du = xp.fft.irfft(1j * k * s, u.shape[-1])
        return (xp.sum(misfit ** 2) + LAM * xp.sum(du ** 2)) / 2 \
            + MU * xp.sum(xp.log(xp.cosh(u)))
    return f


def by_hand(xp):
    """``H v`` written out: the blur and the derivative are diagonal in Fourier space."""
    def hvp(u, y, blur, k, v):
        n = u.shape[-1]
        k2 = k * k
        if n % 2 == 0:  # irfft drops the derivative's (imaginary) Nyquist coefficient
            k2 = xp.concatenate([k2[:-1], k2[-1:] * 0])
        quad = xp.fft.irfft((blur * blur + LAM * k2) * xp.fft.rfft(v), n)
        return quad + MU * v / xp.cosh(u) ** 2
    return hvp


def make_inputs(xp, n, dtype):
    rng = np.random.default_rng(0)
    u, y, v = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    k = (np.fft.rfftfreq(n, 1.0 / n) * 2 * np.pi).astype(dtype)
    blur = np.exp(-0.5 * (1e-4 * k) ** 2).astype(dtype)
    return [xp.asarray(a) for a in (u, y, blur, k)], xp.asarray(v)


def _timed(call, sync, repeat):
    t0 = time.perf_counter()
    out = call()
    sync()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
    return out, float(np.median(times) * 1e6), round(first, 3)


def implementations(xp, on_gpu):
    import dualgpu as dg

    yield "dualgpu", lambda args, v: (lambda h: lambda: h(*args, v))(dg.hvp(objective(np))), \
        (lambda out: out)
    yield "by hand", lambda args, v: (lambda: by_hand(xp)(*args, v)), (lambda out: out)
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        pass
    else:
        def jax_call(args, v):
            jax.config.update("jax_enable_x64", True)
            f = objective(jnp)
            h = jax.jit(lambda u, y, blur, k, v: jax.jvp(
                lambda u: jax.grad(f)(u, y, blur, k), (u,), (v,))[1])
            host = [np.asarray(a.get() if hasattr(a, "get") else a) for a in (*args, v)]
            dev = [jnp.asarray(a) for a in host]
            return lambda: h(*dev).block_until_ready()
        yield "jax", jax_call, np.asarray
    try:
        import torch
    except ImportError:
        pass
    else:
        def torch_call(args, v):
            device = "cuda" if on_gpu else "cpu"
            host = [np.asarray(a.get() if hasattr(a, "get") else a) for a in (*args, v)]
            t = [torch.as_tensor(a, device=device) for a in host]
            f = objective(_TorchNamespace(torch))

            def run():
                out = torch.func.jvp(lambda u: torch.func.grad(f)(u, *t[1:4]), (t[0],),
                                     (t[4],))[1]
                if on_gpu:
                    torch.cuda.synchronize()
                return out
            return run
        yield "pytorch", torch_call, lambda out: out.cpu().numpy()


class _TorchNamespace:
    """The few NumPy names the objective uses, on PyTorch."""

    def __init__(self, torch):
        self.fft = type("fft", (), {"rfft": staticmethod(torch.fft.rfft),
                                    "irfft": staticmethod(lambda a, n: torch.fft.irfft(a, n))})
        self.sum, self.log, self.cosh = torch.sum, torch.log, torch.cosh


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", action="store_true", help="NumPy, a small N (a smoke run)")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=50)
    opts = parser.parse_args(argv)
    if opts.cpu:
        xp, sync, on_gpu = np, (lambda: None), False
    else:
        import cupy as xp
        sync, on_gpu = xp.cuda.Device().synchronize, True
    n = opts.n or (2 ** 12 if opts.cpu else 2 ** 20)
    for dtype in (np.float64, np.float32):
        args, v = make_inputs(xp, n, dtype)
        reference = None
        for name, make, to_host in implementations(xp, on_gpu):
            try:
                out, us, first = _timed(make(args, v), sync, opts.repeat)
            except Exception as e:  # noqa: BLE001 - a failing peer is a line, not a stop
                print(json.dumps(dict(impl=name, dtype=np.dtype(dtype).name, n=n,
                                      error=f"{type(e).__name__}: {e}"[:200])), flush=True)
                continue
            out = np.asarray(to_host(out.get() if hasattr(out, "get") else out))
            if reference is None:
                reference = np.asarray(by_hand(np)(*[np.asarray(
                    a.get() if hasattr(a, "get") else a).astype(np.float64) for a in args],
                    np.asarray(v.get() if hasattr(v, "get") else v).astype(np.float64)))
            err = float(np.max(np.abs(out - reference)) / np.max(np.abs(reference)))
            print(json.dumps(dict(impl=name, dtype=np.dtype(dtype).name, n=n, us=round(us, 1),
                                  first_s=first, rel_err=float(f"{err:.2e}"))), flush=True)


if __name__ == "__main__":
    main()
