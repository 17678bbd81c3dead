extern "C" __global__ void __launch_bounds__(256) dg_fused_4752603e884453ce(
    const float* __restrict__ in0,
    float* __restrict__ out0) {
  const int tid = (int)blockIdx.x * 256 + (int)threadIdx.x;
  if (tid < 37) {
    int q = tid;
    const int i0 = q;
    const float v0 = in0[i0];  // load
    const float v1 = (-v0);  // negative
    const float v2 = (v1 * v0);  // multiply
    const float v3 = exp(v2);  // exp
    const float v4 = sin(v0);  // sin
    const float v5 = (v3 * v4);  // multiply
    const float v6 = (v5 + 1.5f);  // add
    out0[i0] = v6;
  }
}
