"""Scenario 2 (per-particle value + gradient + H·v, float32) on one GPU and on several, through
Dask arrays of CuPy chunks: ``python -m benchmarks.multigpu [--n N] [--quick] [--cpu]``.

    f(x, mu) = exp(-sum((x - mu[:, None, None, :])**2, axis=0)),   x: (3, n, n, n)

Rows: the plain CuPy call on GPU 0; Dask with one worker (GPU 0); Dask with one worker per
visible GPU (``dask_cuda.LocalCUDACluster`` when it imports, else ``distributed`` workers
started with ``CUDA_VISIBLE_DEVICES`` each). With a single GPU the last row is two workers
sharing GPU 0, and says so: it is not a two-GPU measurement.

Timing: ``--reps`` calls (each with its own mu, so no two share a task) are submitted together,
their results kept on the workers' devices, then every worker's device is synchronised; the
time per call is the total over the calls. The inputs are made on the workers' devices (each
chunk from its own seed; the plain call concatenates the same chunks), so no input crosses
PCIe except mu. Measured movement: bytes the workers sent (``transfer_outgoing_bytes_total``:
to each other during the timed calls, and to the client when the results are gathered once
at the end), and the bytes of host (NumPy) arrays the workers hold next to the CuPy results.
The gathered results are compared with the plain call's (max relative difference).

Writes ``benchmarks/results/multigpu.json`` (``--out``). ``--cpu`` runs the same steps with
NumPy chunks and two CPU workers at a tiny size (a harness check, not a measurement).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import time

import numpy as np

import dualgpu as dg

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
AXES = (1, 2, 3)
SEED_X, SEED_V = 1, 2


def scenario2(x, mu):
    return np.exp(-np.sum((x - mu[:, None, None, :]) ** 2, axis=0))


def make_block(seed: int, i: int, shape: tuple, gpu: bool):
    """Chunk ``i`` of an input, made where it is called (on the device for the GPU)."""
    if gpu:
        import cupy

        rs = cupy.random.RandomState(seed * 100003 + i)
        return rs.standard_normal(shape, dtype=np.float32) * np.float32(0.5)
    rs = np.random.RandomState(seed * 100003 + i)
    return rs.standard_normal(shape).astype(np.float32) * np.float32(0.5)


def mus(n: int, reps: int) -> list:
    base = np.random.default_rng(0).standard_normal((3, n)).astype(np.float32) * 0.5
    return [base + np.float32(1e-3 * r) for r in range(reps + 1)]  # mus[0]: the warm-up


def chunk_widths(n: int, nchunks: int) -> tuple:
    q, r = divmod(n, nchunks)
    return tuple(q + (i < r) for i in range(nchunks))


def _sync(gpu: bool) -> None:
    if gpu:
        import cupy

        cupy.cuda.Device().synchronize()


def _sync_worker(gpu: bool) -> None:  # run on each worker
    _sync(gpu)


def _held(dask_worker) -> dict:
    """What a worker holds: bytes of CuPy and of NumPy arrays (results, inputs)."""
    out = {"cupy": 0, "numpy": 0, "other": 0}
    for value in dask_worker.data.values():
        for leaf in value if isinstance(value, tuple) else (value,):
            if hasattr(leaf, "nbytes"):
                kind = type(leaf).__module__.split(".")[0]
                out[kind if kind in out else "other"] += int(leaf.nbytes)
    return out


def _sent(dask_worker) -> int:
    return int(dask_worker.transfer_outgoing_bytes_total)


def _max_rel(a, b, xp) -> float:
    scale = float(xp.max(xp.abs(b)))
    return float(xp.max(xp.abs(a - b))) / scale if scale else float(xp.max(xp.abs(a - b)))


# ----------------------------------------------------------------------------- one GPU
def plain(n: int, widths: tuple, reps: int, gpu: bool, xp) -> tuple[dict, tuple]:
    """The plain call on the whole array (GPU 0): time per call and the last results."""
    shapes = [(3, w, n, n) for w in widths]
    x = xp.concatenate([make_block(SEED_X, i, s, gpu) for i, s in enumerate(shapes)], axis=1)
    v = xp.concatenate([make_block(SEED_V, i, s, gpu) for i, s in enumerate(shapes)], axis=1)
    ms = [xp.asarray(m) for m in mus(n, reps)]
    gh = dg.grad_and_hvp(scenario2, batch_axes=AXES, return_value=True)
    out = gh(x, ms[0], v)  # builds and compiles
    _sync(gpu)
    t0 = time.perf_counter()
    for r in range(1, reps + 1):
        out = gh(x, ms[r], v)
    _sync(gpu)
    dt = (time.perf_counter() - t0) / reps
    del x, v
    return {"setup": "plain CuPy call" if gpu else "plain NumPy call", "workers": 1,
            "gpus": 1, "ms_per_call": dt * 1e3}, out


# ----------------------------------------------------------------------------- Dask
def start_cluster(devices: list[int], gpu: bool):
    """A cluster with one single-threaded worker per entry of ``devices`` (a GPU index):
    LocalCUDACluster for distinct GPUs when dask_cuda imports, else distributed workers
    (Nanny) with their own CUDA_VISIBLE_DEVICES."""
    import distributed

    if gpu and len(set(devices)) == len(devices):
        try:
            from dask_cuda import LocalCUDACluster
        except Exception as exc:  # noqa: BLE001  (dask_cuda needs cuda-core, pynvml, ...)
            why = f"dask_cuda not usable ({type(exc).__name__}: {exc})"
        else:
            cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(map(str, devices)),
                                       dashboard_address=None, silence_logs=logging.ERROR)
            return cluster, "dask_cuda.LocalCUDACluster"
    else:
        why = "workers share a GPU" if gpu else "CPU harness check"
    workers = {}
    for i, d in enumerate(devices):
        env = {"CUDA_VISIBLE_DEVICES": str(d)} if gpu else {}
        workers[f"w{i}"] = {"cls": distributed.Nanny,
                            "options": {"nthreads": 1, "env": env, "memory_limit": 0}}
    cluster = distributed.SpecCluster(
        workers=workers, scheduler={"cls": distributed.Scheduler,
                                    "options": {"dashboard_address": None}},
        silence_logs=logging.ERROR)
    return cluster, f"distributed workers with CUDA_VISIBLE_DEVICES each ({why})"


def on_dask(n: int, widths: tuple, reps: int, devices: list[int], gpu: bool, xp,
            want: tuple) -> dict:

    import dask.array as da
    import distributed

    cluster, kind = start_cluster(devices, gpu)
    with cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(len(devices))
        addrs = sorted(client.scheduler_info()["workers"])
        meta = xp.empty((0, 0, 0, 0), np.float32)

        def placed(seed):  # chunk i made on worker i % k: balanced, and never moved
            parts = [client.submit(make_block, seed, i, (3, w, n, n), gpu, pure=False,
                                   workers=[addrs[i % len(addrs)]])
                     for i, w in enumerate(widths)]
            return da.concatenate([da.from_delayed(p, (3, w, n, n), dtype=np.float32,
                                                   meta=meta)
                                   for p, w in zip(parts, widths)], axis=1), parts

        (x, xparts), (v, vparts) = placed(SEED_X), placed(SEED_V)
        distributed.wait(xparts + vparts)
        gh = dg.grad_and_hvp(scenario2, batch_axes=AXES, return_value=True)
        ms = mus(n, reps)
        distributed.wait(client.persist(list(gh(x, ms[0], v))))  # compiles on every worker
        client.run(_sync_worker, gpu)
        sent0 = sum(client.run(_sent).values())
        t0 = time.perf_counter()
        held = [client.persist(list(gh(x, ms[r], v))) for r in range(1, reps + 1)]
        distributed.wait([f for h in held for f in h])
        client.run(_sync_worker, gpu)
        dt = (time.perf_counter() - t0) / reps
        sent1 = sum(client.run(_sent).values())
        holdings = client.run(_held)
        total, g, hv = client.gather(client.compute(held[-1]))
        sent2 = sum(client.run(_sent).values())
        on_client = all(type(a).__module__.split(".")[0] == xp.__name__ for a in (g, hv))
        row = {
            "setup": f"Dask, {len(devices)} worker{'s' * (len(devices) > 1)}",
            "workers": len(devices), "gpus": len(set(devices)) if gpu else 0,
            "devices": devices, "cluster": kind, "chunks_per_worker":
                len(widths) / len(devices), "ms_per_call": dt * 1e3,
            "max_rel_diff_vs_plain": max(_max_rel(g, want[1], xp), _max_rel(hv, want[2], xp)),
            "value_rel_diff_vs_plain": abs(float(total) - float(want[0]))
                / max(abs(float(want[0])), 1e-30),
            "bytes_between_workers_per_call": (sent1 - sent0) / reps,
            "bytes_gathered_once": sent2 - sent1,
            "result_bytes": int(g.nbytes + hv.nbytes) + 4,
            "worker_device_bytes_held": sum(h["cupy"] for h in holdings.values()),
            "worker_host_bytes_held": sum(h["numpy"] for h in holdings.values()),
            "results_arrive_as": type(g).__module__.split(".")[0],
            "results_are_arrays_of_the_chunks_library": on_client,
        }
        del held, g, hv, total
    return row


# ----------------------------------------------------------------------------- report
def table(rows: list[dict]) -> str:
    head = (f"{'setup':<22} {'GPUs':>4} {'ms/call':>9} {'Mparticles/s':>12} {'speed-up':>8} "
            f"{'max rel diff':>12} {'B between workers/call':>22} {'B gathered':>12} "
            f"{'B on host':>10}")
    lines = [head, "-" * len(head)]
    for r in rows:
        diff = r.get("max_rel_diff_vs_plain")
        lines.append(
            f"{r['setup']:<22} {r['gpus']:>4} {r['ms_per_call']:>9.2f} "
            f"{r['particles_per_s'] / 1e6:>12.1f} {r.get('speed_up', float('nan')):>7.2f}x "
            f"{'-' if diff is None else f'{diff:.1e}':>12} "
            f"{r.get('bytes_between_workers_per_call', 0):>22.0f} "
            f"{r.get('bytes_gathered_once', 0):>12.0f} {r.get('worker_host_bytes_held', 0):>10}")
        if r.get("note"):
            lines.append(f"    note: {r['note']}")
    return "\n".join(lines)


def environment(gpu: bool) -> dict:
    env = {"python": platform.python_version(), "numpy": np.__version__,
           "dualgpu": dg.__version__}
    for name in ("dask", "distributed", "dask_cuda"):
        try:
            env[name] = __import__(name).__version__
        except Exception as exc:  # noqa: BLE001
            env[name] = f"not usable ({type(exc).__name__})"
    if gpu:
        import cupy

        env["cupy"] = cupy.__version__
        env["gpus"] = [cupy.cuda.runtime.getDeviceProperties(i)["name"].decode()
                       for i in range(cupy.cuda.runtime.getDeviceCount())]
    return env


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.multigpu", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=None,
                   help="particles per side: x is (3, n, n, n) float32 (default 800: 5.1e8 "
                        "particles, 6.1 GB per array; --quick 256; --cpu 12)")
    p.add_argument("--reps", type=int, default=None, help="calls timed (default 4, quick 2)")
    p.add_argument("--quick", action="store_true", help="a small n and fewer calls")
    p.add_argument("--cpu", action="store_true", help="NumPy chunks, CPU workers, tiny n")
    p.add_argument("--chunks-per-worker", type=int, default=2)
    p.add_argument("--out", default=os.path.join(RESULTS, "multigpu.json"))
    args = p.parse_args(argv)
    gpu = not args.cpu
    if gpu:
        import cupy as xp

        ngpu = xp.cuda.runtime.getDeviceCount()
    else:
        xp, ngpu = np, 1
    n = args.n or (12 if args.cpu else 256 if args.quick else 800)
    reps = args.reps or (2 if (args.quick or args.cpu) else 4)
    many = list(range(ngpu)) if ngpu > 1 else [0, 0]
    widths = chunk_widths(n, args.chunks_per_worker * len(many))
    particles = n ** 3
    print(f"scenario 2, x (3, {n}, {n}, {n}) float32 = {particles:.3g} particles, "
          f"{12 * particles / 1e9:.2f} GB per array; {len(widths)} chunks along axis 1; "
          f"{reps} calls timed; {ngpu} GPU(s) visible" if gpu else "CPU harness check")
    base, want = plain(n, widths, reps, gpu, xp)
    rows = [base]
    print(f"  {base['setup']}: {base['ms_per_call']:.2f} ms per call", flush=True)
    for devices in ([0], many):
        row = on_dask(n, widths, reps, devices, gpu, xp, want)
        print(f"  {row['setup']} on {row['devices']}: {row['ms_per_call']:.2f} ms per call "
              f"({row['cluster']})", flush=True)
        rows.append(row)
    one = rows[1]["ms_per_call"]
    for r in rows:
        r["particles_per_s"] = particles / (r["ms_per_call"] / 1e3)
        r["speed_up"] = one / r["ms_per_call"]  # against Dask with one worker (one GPU)
        r["n"] = n
    if gpu and ngpu == 1:
        rows[2]["note"] = ("ONE GPU VISIBLE: two workers share GPU 0. This speed-up is NOT a "
                           "two-GPU measurement; it shows Dask's overhead with two workers")
    if not gpu:
        rows[2]["note"] = "CPU harness check: NumPy chunks, not a measurement"
    report = table(rows)
    print(report)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"env": environment(gpu), "args": vars(args), "rows": rows}, fh, indent=2,
                  default=str)
    print(f"wrote {args.out}")
    return rows


if __name__ == "__main__":
    main()
