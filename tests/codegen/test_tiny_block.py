"""The tiny-program tests of tests/codegen/test_tiny_kernel.py with each kernel run as a block of
many threads taking turns between barriers (tests/helpers/tiny_block_harness.py), in both orders:
a barrier missing between a stage and the stores it reads shows as a wrong value."""
from __future__ import annotations

import os

import fuzz_programs as fp
import numpy as np
import pytest
import test_tiny_kernel as tiny_tests
from hypothesis import HealthCheck, given, settings
from tiny_block_harness import run_tiny_block
from tiny_harness import needs_gxx

pytestmark = needs_gxx
TESTS = ["test_dense_tiny_hvp_and_grad", "test_small_mlps", "test_a_long_sum_is_a_block_tree",
         "test_views_reshapes_and_literal_outputs", "test_strided_and_transposed_inputs",
         "test_integer_and_bool_values", "test_einsum",
         "test_fuzzed_programs_and_their_derivatives"]


ORDERS = [(4, False), (4, True), (256, False), (256, True)]
# the fuzzed programs (~30 s an order on CI's 2 cores) run in one order in CI, many threads
# (the other tests run all four); DUALGPU_TINY_BLOCK_ALL=1 for all four
FUZZ_ORDERS = ORDERS if os.environ.get("DUALGPU_TINY_BLOCK_ALL") else [(256, False)]
# fuzzed programs per order in CI (tests/codegen/test_tiny_kernel.py runs 16 on the one-thread
# harness); DUALGPU_TINY_BLOCK_EXAMPLES for more
FUZZ_EXAMPLES = int(os.environ.get("DUALGPU_TINY_BLOCK_EXAMPLES", 6))
CASES = [(name, *order) for name in TESTS for order in
         (FUZZ_ORDERS if name == "test_fuzzed_programs_and_their_derivatives" else ORDERS)]


@pytest.mark.parametrize("name, threads, reverse", CASES)
def test_tiny_kernels_as_blocks_of_threads(monkeypatch, name, threads, reverse):
    monkeypatch.setattr(tiny_tests, "run_tiny",
                        lambda tk, arrays: run_tiny_block(tk, arrays, threads, reverse))
    test = getattr(tiny_tests, name)
    if name == "test_fuzzed_programs_and_their_derivatives":   # the same test, fewer draws
        test = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                        suppress_health_check=list(HealthCheck))(
            given(fp.programs(max_nodes=7, sparse=False))(test.hypothesis.inner_test))
    if name in ("test_dense_tiny_hvp_and_grad", "test_small_mlps",
                "test_integer_and_bool_values"):
        for dtype in (np.float64, np.float32):
            test(dtype)
    else:
        test()
