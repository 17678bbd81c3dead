"""Per-particle value, gradient and H·v over a Dask array: the design's scenario 2
(``f(x, mu) = exp(-sum((x - mu)**2))``, one value per particle), chunked along particle axes.

On a machine with CuPy and a GPU the chunks are CuPy arrays (and, when dask_cuda imports, the
work runs on a ``LocalCUDACluster``: one worker per GPU); elsewhere they are NumPy arrays and
Dask's threads scheduler runs them. Either way each chunk's results are exactly the
single-array call on that chunk, and the value is a Dask reduction.

    python examples/dask_particles.py            # GPU when there is one, else CPU
    python examples/dask_particles.py --cpu      # NumPy chunks
    python examples/dask_particles.py --cluster  # a LocalCUDACluster (GPU) / LocalCluster
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import dualgpu as dg
from dualgpu.backends.cupy import cupy_available


def f(x, mu):  # x: (3, n1, n2, n3) particle positions; one value per particle
    return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cpu", action="store_true", help="NumPy chunks even with a GPU")
    p.add_argument("--cluster", action="store_true", help="a local dask.distributed cluster")
    p.add_argument("--n", type=int, default=32, help="particles per side")
    args = p.parse_args()
    try:
        import dask.array as da
    except ImportError:
        print("dask is not installed (in a clone of dualgpu: pip install '.[dask]'); nothing to do")
        return 0
    gpu = cupy_available() and not args.cpu
    if gpu:
        import cupy as xp
    else:
        xp = np
    n = args.n
    rng = np.random.default_rng(0)
    x = xp.asarray(rng.standard_normal((3, n, n, n)).astype(np.float32) * 0.5)
    v = xp.asarray(rng.standard_normal((3, n, n, n)).astype(np.float32))
    mu = rng.standard_normal((3, n)).astype(np.float32) * 0.5   # NumPy: sent to the GPU once

    # chunks split particle axes only (axis 0, the coordinates, stays whole); mu follows
    # batch axis 3, so chunking that axis chunks mu along with it
    chunks = (3, n // 4, n, n // 2)
    xd = da.from_array(x, chunks=chunks, asarray=False)
    vd = da.from_array(v, chunks=chunks, asarray=False)
    gh = dg.grad_and_hvp(f, batch_axes=(1, 2, 3), return_value=True)
    total, g, hv = gh(xd, mu, vd)                # lazy: Dask arrays with xd's chunks
    print(f"{'CuPy' if gpu else 'NumPy'} chunks {xd.chunksize}, {xd.npartitions} of them; "
          f"results: {type(hv._meta).__module__.split('.')[0]} chunks {hv.chunksize}")

    client = cluster = None
    if args.cluster:
        import distributed

        if gpu:
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster()         # one worker per visible GPU
        else:
            cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1)
        client = distributed.Client(cluster)
        print(f"cluster: {len(client.scheduler_info()['workers'])} workers")
    try:
        total, g, hv = da.compute(total, g, hv)  # the scheduler of the client, else threads
    finally:
        if client is not None:
            client.close()
            cluster.close()

    want = gh(x, xp.asarray(mu), v)               # the same, as one call on whole arrays
    ok = (bool(xp.allclose(g, want[1], rtol=1e-5, atol=1e-6))
          and bool(xp.allclose(hv, want[2], rtol=1e-5, atol=1e-6))
          and abs(float(total) - float(want[0])) <= 1e-5 * abs(float(want[0])))
    print(f"value {float(total):.6g}; gradient and H·v match the single call: {ok}")
    if not ok:
        print("FAILED")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
