"""Real programs nobody here wrote, run unchanged against the original library and on dualgpu.

Each file of tests/corpus/programs/ is a program of HIPS/autograd (an example program, or a
snippet of its README, tutorial or update guide made into a script: ``readme_``,
``tutorial_``, ``updateguide_``), a tutorial of pierreablin/autoptim (``autoptim_``, on its
module ``autoptim``, a library built on autograd, run too), a program of mcleonard/sampyl
(``sampyl_``, on its package ``sampyl``, MCMC samplers built on autograd), of pymanopt
(``pymanopt_``, slow), or an example notebook made into a script of rgiordan/paragami
(``paragami_``: parameter patterns, flattening, optimization), rgiordan/vittles
(``vittles_``: sensitivity of optima, on paragami) or wittawatj/kernel-gof (``kgof_``:
kernel goodness-of-fit tests), each on its package. Its header names the source and what was
changed: synthetic data for downloads, fewer iterations, plotting off, Python 2's print. A
test runs it twice in this process, from a fixed NumPy seed: once with the real ``autograd``
package imported, once with autograd's names on dualgpu (autograd_on_dualgpu: the table of
docs/coming_from.md as ``sys.modules`` entries). Plotting goes to a stand-in ``matplotlib``
that draws nothing. The two runs must print the same numbers and leave the same values in
the program's named globals (relative 1e-10). A program that fails on dualgpu for a known
cause is ``xfail(strict=True)``: it fails the run when it starts to pass."""
from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import runpy
import sys
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import autograd_on_dualgpu
import numpy as np
import pytest

PROGRAMS = Path(__file__).resolve().parent / "programs"
RTOL = 1e-10


@dataclass(frozen=True)
class Case:
    compare: tuple[str, ...]  # globals of the program compared between the two runs
    xfail: str = ""           # the dualgpu error that stops it, when it is expected to fail
    rtol: float = RTOL        # of every value compared, where the methods differ by design
    # plotted values' tolerance: posterior samples drawn through the SVD of a near-singular
    # covariance (rs.multivariate_normal) amplify 1e-16 differences of it to 1e-4
    plotted_rtol: float = RTOL
    # what the program prints while its function runs is printed once per trace on dualgpu
    # (as under JAX's jit), once per call by autograd: not compared for such a program
    prints_while_traced: bool = False
    # it prints how long its steps took: not compared
    prints_timings: bool = False
    # text of what it prints that is not compared (the times of pymanopt's optimizers)
    unprinted: str = ""
    slow: bool = False  # run only with DUALGPU_CORPUS_SLOW=1
    unkept: tuple[str, ...] = ()  # keys of the compared dicts that are not compared (times)


PYMANOPT_TIMES = r"[\d.]+ seconds"  # pymanopt's optimizers print how long they ran

CASES = {
    # pierreablin/autoptim's tutorials, on its minimize (programs/autoptim.py)
    "autoptim_preconditioning": Case(("beta_min",), prints_timings=True),
    "autoptim_ridge_regression": Case(("beta_min",)),
    "autoptim_rosenbrock": Case(("x_min",)),
    "autoptim_whitening": Case(("W",)),
    "bayesian_neural_net": Case(("variational_params",)),
    "black_box_svi": Case(("variational_params",)),
    "convnet": Case(("W",)),
    "deep_gaussian_process": Case(("cov_params",), plotted_rtol=1e-3),
    "define_gradient": Case(()),
    "fixed_points": Case(()),
    "fluidsim": Case(("result",)),
    "gaussian_process": Case(("cov_params",)),
    "generative_adversarial_net": Case(("optimized_params",)),
    "gmm": Case(()),
    "gplvm": Case(()),
    "hmm_em": Case(("pi", "A", "B")),
    "ica": Case(("init_params",)),
    # wittawatj/kernel-gof's notebooks, on its package (programs/kgof); the times its tests
    # report (time_secs) are not compared
    # (slow: an expected failure, 0.5 s)
    "kgof_demo_kgof": Case(("V_opt", "gw_opt", "test_result"), unkept=("time_secs",),
                           slow=True),
    "kgof_gof_linear_kernel_stein": Case(("lin_kstein_result",), unkept=("time_secs",)),
    "logistic_regression": Case(("weights",)),
    "lstm": Case(("trained_params",)),
    "mixture_variational_inference": Case(("variational_params",)),
    "natural_gradient_black_box_svi": Case(("standard_lls", "natural_lls")),
    "negative_binomial_maxlike": Case(("r", "p")),
    "neural_net": Case(("optimized_params",)),
    "neural_net_regression": Case(("optimized_params",)),
    # under a trace, odeint is fixed-step RK4 (docs: agrees with LSODA to the tolerance,
    # here rtol=0.01), and autograd's gradient is an adjoint LSODA solve: the losses agree to
    # 1e-5, and adam's steps of a gradient element near zero can differ by a whole step
    # (its sign), so the parameters are not compared
    "ode_net": Case(("true_y",), rtol=1e-3),
    # rgiordan/paragami's example notebooks as scripts, on its package (programs/paragami)
    "paragami_flattening_and_folding_free_default": Case(("a_freeflat",)),
    "paragami_flattening_and_folding_psd_matrix": Case(("a_freeflat", "a_freefold")),
    # the log of the gradient's norm at the optimum (1e-10, rounding: sums in another
    # order) that it plots agrees to 1e-4
    # (slow: 1.5 to 2.5 s, its four optimizations' Hessian-vector products by autograd)
    "paragami_optimization_class": Case(("opt_x",), plotted_rtol=1e-4, slow=True),
    "paragami_optimizing_psd_matrix": Case(("optimal_a", "fisher_info", "a_sd")),
    "paragami_parameter_containers": Case(("true_mix_free",), unprinted=r"time:\t[\d.e-]+"),
    # its tests as scripts (slow: 1 to 3 s each), check_grads of its patterns and primitives
    "paragami_tests_functions": Case((), slow=True),
    "paragami_tests_optimization_lib": Case((), slow=True),
    "paragami_tests_autograd_supplement_lib": Case((), slow=True, xfail=(
        "TracerControlFlowError: grouped_sum's forward rule calls grouped_sum on a tangent, whose "
        "output's shape follows the values of its integer operand (np.zeros(max(groups) + 1)),"
        " unknown where the rule is traced")),
    "paragami_tests_patterns": Case((), slow=True, xfail=(
        "np.linalg.cholesky's derivative, by design: dualgpu's is that of the function NumPy "
        "computes, which reads the lower triangle (zero for the upper one), autograd's that of "
        "the symmetric matrix (half to each triangle, as JAX's and PyTorch's): the freeing "
        "Jacobian of its PSD pattern (and of a PatternArray of them) has fewer non-zeros; and "
        "IntegerInputError: a Jacobian at an integer point (refused, as by JAX; autograd "
        "differentiates an integer array whose function returns floats)")),
    "readme_tanh": Case(()),
    # pymanopt's examples (programs/pymanopt: its package, BSD licence): 0.7 to 9 s each (a
    # dozen programs built per example: too slow for CI), run with DUALGPU_CORPUS_SLOW=1
    **{f"pymanopt_{name}": Case((), unprinted=PYMANOPT_TIMES, slow=True) for name in (
        "closest_unit_norm_column_approximation", "dominant_eigenvector",
        "dominant_invariant_subspace", "low_rank_matrix_approximation",
        "multiple_linear_regression", "optimal_rotations", "pca",
        "rank_k_correlation_matrix_approximation")},
    "pymanopt_packing_on_the_sphere": Case((), unprinted=PYMANOPT_TIMES, slow=True, xfail=(
        "rounding, by design: its cost agrees to 1e-16 (sums in another order), and conjugate "
        "gradients then stops after 194 iterations instead of 200 (printed: 584 numbers, "
        "autograd 602); the packing found agrees to 1e-9")),
    "rkhs": Case((), xfail=(
        "ImportError: autograd.extend's Box and VSpace: a gradient with respect to a function "
        "(an element of a user-defined vector space, autograd's VSpace protocol); dualgpu "
        "differentiates arrays and pytrees of arrays")),
    "rnn": Case(("trained_params",)),
    "rosenbrock": Case(("result",)),
    "sampyl_effective_sample_size": Case(("nuts_trace", "met_trace")),
    "sampyl_examples": Case(("chain", "start")),
    "sampyl_samplers": Case(("chain", "trace", "hmc_trace", "nuts_trace")),
    "sampyl_tutorial": Case(("start", "chain")),
    # its Taylor series stops on a test of a traced value: a branch per stopping point under
    # grad (the values plotted are compared), and it prints its loop counter as it runs
    "sinusoid": Case((), prints_while_traced=True),
    "tanh": Case(()),
    "tutorial_logistic_regression": Case(("weights",)),
    "tutorial_logsumexp": Case(()),
    "tutorial_taylor_sine": Case(()),
    "updateguide_defvjp": Case(()),
    "variational_autoencoder": Case(("optimized_params",)),
    # rgiordan/vittles' example notebook as a script, on its package (programs/vittles)
    "vittles_mle_weight_sensitivity_example": Case(("norm_param_flat1", "approx_loo_params"),
                                                   unprinted=r"[\d.]+ seconds"),
    "wing": Case(("result",)),
}


# ------------------------------------------------------------------ running a program
_REAL: dict[str, object] = {}


def _ours(name: str) -> bool:
    """A module the runs put in sys.modules: autograd's, matplotlib's, or a program's."""
    if name.split(".")[0] in ("autograd", "matplotlib"):
        return True
    path = getattr(sys.modules.get(name), "__file__", None) or ""
    return path.startswith(f"{PROGRAMS}{os.sep}")  # a program, a module or package beside them


def _real_autograd() -> dict[str, object]:
    """The modules of the installed autograd, imported once (and kept out of sys.modules)."""
    if not _REAL:
        for name in [n for n in sys.modules if n.split(".")[0] == "autograd"]:
            del sys.modules[name]
        for name in ("autograd", "autograd.numpy", "autograd.numpy.random",
                     "autograd.scipy.stats", "autograd.scipy.special", "autograd.misc",
                     "autograd.misc.optimizers", "autograd.test_util", "autograd.builtins"):
            importlib.import_module(name)
        _REAL.update({n: m for n, m in sys.modules.items() if n.split(".")[0] == "autograd"})
    return _REAL


@contextlib.contextmanager
def autograd_from(library: str):
    """``import autograd`` gives the installed autograd or autograd's names on dualgpu;
    matplotlib is a stand-in; the programs' folder is importable (they import each other)."""
    saved = {n: m for n, m in sys.modules.items() if _ours(n)}
    for name in saved:
        del sys.modules[name]
    entries = _real_autograd() if library == "autograd" else autograd_on_dualgpu.modules()
    for name in [n for n in sys.modules if _ours(n)]:
        del sys.modules[name]
    plt = mock.MagicMock(name="matplotlib")
    plt.pyplot.subplots.return_value = (mock.MagicMock(name="figure"), mock.MagicMock(name="axes"))
    sys.modules.update(entries)
    sys.modules.update({"matplotlib": plt, "matplotlib.pyplot": plt.pyplot,
                        "matplotlib.image": plt.image, "matplotlib.cm": plt.cm})
    sys.path.insert(0, str(PROGRAMS))
    extras = autograd_on_dualgpu.NUMPY_EXTRAS if library == "dualgpu" else {}
    for name, fn in extras.items():  # autograd.numpy's names NumPy lacks (make_diagonal)
        setattr(np, name, fn)
    try:
        yield plt
    finally:
        for name in extras:
            delattr(np, name)
        sys.path.remove(str(PROGRAMS))
        for name in [n for n in sys.modules if _ours(n)]:
            del sys.modules[name]
        sys.modules.update(saved)


def run(name: str, library: str) -> tuple[str, dict, list]:
    """``(printed text, globals, plotted arrays)`` of program ``name`` run as ``__main__``
    from NumPy's seed 0; the plotted arrays are the array arguments of the stand-in
    matplotlib's calls (the derivatives a plotting example draws)."""
    out = io.StringIO()
    with autograd_from(library) as plt, contextlib.redirect_stdout(out):
        np.random.seed(0)
        namespace = runpy.run_path(str(PROGRAMS / f"{name}.py"), run_name="__main__")
    plotted = [np.asarray(leaf, dtype=float) for call in plt.mock_calls
               for leaf in leaves(list(call.args)) if leaf.size > 1]
    return out.getvalue(), namespace, plotted


# ------------------------------------------------------------------ comparing the runs
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def leaves(value, unkept=()) -> list:
    """The numeric arrays in ``value`` (lists, tuples, dicts but their keys ``unkept``, an
    OptimizeResult's x and fun, a record array's fields)."""
    if hasattr(value, "x") and hasattr(value, "fun"):  # scipy.optimize's OptimizeResult
        return leaves([value.x, value.fun])
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in leaves(v, unkept)]
    if isinstance(value, dict):
        return [leaf for k in sorted(value) if k not in unkept
                for leaf in leaves(value[k], unkept)]
    try:
        array = np.asarray(value)
    except Exception:  # a mock's return value, a function, ...: not a number
        return []
    if array.dtype.names:  # a record array (MCMC samples): its fields
        return [leaf for field in array.dtype.names for leaf in leaves(array[field])]
    return [array] if array.dtype.kind in "fiucb" else []


def assert_same_numbers(ours, theirs, what: str, rtol: float) -> None:
    """Equal to ``rtol``, relative to each value and, for values near zero (a gradient at
    an optimum), to the largest of them."""
    assert len(ours) == len(theirs), f"{what}: {len(ours)} values, autograd {len(theirs)}"
    scale = max([1.0] + [float(np.max(np.abs(b), initial=0)) for b in theirs])
    for i, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale,
                                   err_msg=f"{what} (value {i})")


def resolution(token: str) -> float:
    """The unit of the last digit of a printed number: ``0.389`` -> 0.001, ``1.5e-3`` ->
    1e-4 (an array prints 8 digits, a float all of them)."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def assert_same_printed(ours: str, theirs: str, rtol: float) -> None:
    """The numbers of two printed texts agree to ``rtol`` (relative to each, or to the
    largest for those near zero), or to the last digit printed when that is coarser."""
    a, b = NUMBER.findall(ours), NUMBER.findall(theirs)
    assert len(a) == len(b), f"printed: {len(a)} numbers, autograd {len(b)}"
    scale = max([1.0] + [abs(float(t)) for t in b])
    for i, (x, y) in enumerate(zip(a, b)):
        tol = max(rtol * abs(float(y)), rtol * scale, resolution(x), resolution(y))
        assert abs(float(x) - float(y)) <= tol, f"printed number {i}: {x} (autograd {y})"


SLOW = pytest.mark.skipif(not os.environ.get("DUALGPU_CORPUS_SLOW"),
                          reason="a slow program: DUALGPU_CORPUS_SLOW=1 runs it")


def params():
    return [pytest.param(name, marks=([pytest.mark.xfail(strict=True, reason=case.xfail)]
                                      if case.xfail else []) + ([SLOW] if case.slow else []))
            for name, case in sorted(CASES.items())]


@pytest.mark.parametrize("name", params())
def test_program_agrees_with_autograd(name):
    case = CASES[name]
    printed, names, plotted = run(name, "autograd")
    ours_printed, ours, ours_plotted = run(name, "dualgpu")
    assert plotted or NUMBER.search(printed) or case.compare, "nothing to compare"
    assert_same_numbers(ours_plotted, plotted, "plotted", max(case.plotted_rtol, case.rtol))
    if not (case.prints_while_traced or case.prints_timings):
        assert_same_printed(re.sub(case.unprinted, "", ours_printed) if case.unprinted
                            else ours_printed,
                            re.sub(case.unprinted, "", printed) if case.unprinted else printed,
                            case.rtol)
    for key in case.compare:
        assert_same_numbers(leaves(ours[key], case.unkept), leaves(names[key], case.unkept),
                            key, case.rtol)


def test_every_program_has_a_case():
    assert {p.stem for p in PROGRAMS.glob("*.py")} - SUPPORT == set(CASES)


# modules the programs import, not programs (and the packages sampyl/, pymanopt/,
# paragami/, vittles/, kgof/, and future/ and past/ that stand in for the future package)
SUPPORT = {"data", "data_mnist", "autoptim", "example_utils", "test_utils"}


def test_a_different_number_fails_the_comparison():
    same = [np.array([1.0, 2.0]), np.array(3.0)]
    assert_same_numbers(same, [np.array([1.0, 2.0 + 1e-12]), np.array(3.0)], "x", RTOL)
    with pytest.raises(AssertionError, match="x"):
        assert_same_numbers(same, [np.array([1.0, 2.0 + 1e-8]), np.array(3.0)], "x", RTOL)
    with pytest.raises(AssertionError, match="values"):
        assert_same_numbers(same, same[:1], "x", RTOL)
    chain = np.zeros(2, dtype=[("b", "f8", (3,)), ("sig", "f8")]).view(np.recarray)
    assert [a.shape for a in leaves(chain)] == [(2, 3), (2,)]  # a record array's fields
    assert resolution("0.389") == pytest.approx(1e-3) and resolution("-2e-5") == 1e-5
    assert_same_printed("loss 0.38900754315581143 [1.2345678]", "loss 0.389007543155811 "
                        "[1.23456781]", RTOL)
    with pytest.raises(AssertionError, match="printed number 0"):
        assert_same_printed("loss 0.3890075431", "loss 0.3890075432", RTOL)


def test_the_dualgpu_run_imports_no_autograd_code():
    with autograd_from("dualgpu"):
        import autograd
        import autograd.numpy

        assert autograd.numpy is np and autograd.grad.__module__.startswith("dualgpu")
        assert np.make_diagonal.__module__.startswith("dualgpu")  # autograd.numpy's own
    assert "autograd.numpy" not in sys.modules or sys.modules["autograd.numpy"] is not np
    assert not hasattr(np, "make_diagonal")


def test_autograd_scipy_reached_through_its_module_is_traced():
    # `import autograd.scipy as sp; sp.special.polygamma(1, x)` (paragami's tests)
    import scipy.special
    import scipy.stats

    import dualgpu as dg

    x = np.array([1.5, 2.0])
    with autograd_from("dualgpu"):
        import autograd
        import autograd.scipy as sp

        ours = autograd.grad(lambda x: np.sum(sp.special.polygamma(1, x)
                                              + sp.stats.norm.logpdf(x, 0.5, 2.0)))(x)
    direct = dg.grad(lambda x: np.sum(scipy.special.polygamma(1, x)
                                      + scipy.stats.norm.logpdf(x, 0.5, 2.0)))(x)
    np.testing.assert_array_equal(ours, direct)
