"""Where the cached sparse Hessian's microseconds go on the GPU (probe, not a benchmark)."""
import sys, time
import numpy as np
import cupy as cp
from cupyx.profiler import benchmark
import dualgpu as dg
sys.path.insert(0, ".")
from benchmarks.sparse_derivatives import rosenbrock, poisson, make_point, hand_seeds

def t(name, fn, args=(), n=200):
    r = benchmark(fn, args, n_repeat=n, n_warmup=20)
    cpu = np.median(r.cpu_times) * 1e6
    gpu = np.median(r.gpu_times[0]) * 1e6
    print(f"  {name:<34} cpu {cpu:8.1f} us   gpu {gpu:8.1f} us", flush=True)

def probe(label, f, n, jf, seeds_host):
    print(label, flush=True)
    x = cp.asarray(make_point(n))
    H = dg.sparse_hessian(f)
    H(x); cp.cuda.runtime.deviceSynchronize()
    t("sparse_hessian (cached, total)", H, (x,))
    plan = H._plan((x,))
    k, xx, others, backend = H._split((x,))
    prog = plan.programs["cupy"]
    t("program (products, gather, copies)", prog, (x,))
    out = prog(x)
    from benchmarks.profile_steps import profile
    profile(label + " compressed program", prog, (x,), 12)
    t("csr wrap", plan.csr, (backend,) + tuple(out))
    v = cp.asarray(seeds_host[0])
    t("dg.hvp one", dg.hvp(f), (x, v))
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    g = jf(jnp)
    xj = jax.device_put(np.asarray(x.get())); sj = jax.device_put(seeds_host); vj = jax.device_put(seeds_host[0])
    one = jax.jit(lambda x, d: jax.jvp(jax.grad(g), (x,), (d,))[1])
    floor = jax.jit(lambda x, s: jax.vmap(lambda d: jax.jvp(jax.grad(g), (x,), (d,))[1])(s))
    for name, fn, a in (("jax one hvp", one, (xj, vj)), ("jax floor", floor, (xj, sj))):
        fn(*a).block_until_ready()
        ts = []
        for _ in range(200):
            t0 = time.perf_counter(); fn(*a).block_until_ready(); ts.append(time.perf_counter() - t0)
        print(f"  {name:<34} wall {np.median(ts)*1e6:8.1f} us", flush=True)

for n in (10**6, 10**4):
    probe(f"rosenbrock n={n}", rosenbrock(np), n, rosenbrock, hand_seeds("rosenbrock", n))
probe("poisson 1000", poisson(np, 1000), 10**6, lambda xp: poisson(xp, 1000), hand_seeds("poisson", 10**6, 1000))
