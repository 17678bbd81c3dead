extern "C" __global__ void __launch_bounds__(256) dg_fused_b6be86e09027f297(
    const float* __restrict__ in0,
    const float* __restrict__ in1,
    const float* __restrict__ in2,
    float* __restrict__ out1,
    float* __restrict__ out2,
    float* __restrict__ part_g0) {
  const int tid = (int)blockIdx.x * 256 + (int)threadIdx.x;
  float g0 = 0.0f;
  if (tid < 1000000) {
    int q = tid;
    const int i3 = q % 100; q /= 100;
    const int i2 = q % 100; q /= 100;
    const int i1 = q;
    float acc7 = 0.0f;
    float acc8 = 0.0f;
    float c2[3];
    float c4[3];
    #pragma unroll
    for (int r = 0; r < 3; ++r) {
      const int i0 = r % 3;
      const float v0 = in0[i0 * 1000000 + i1 * 10000 + i2 * 100 + i3];  // load
      const float v1 = in1[i0 * 100 + i3];  // load
      const float v2 = (v0 - v1);  // subtract
      const float v3 = (v2 * v2);  // multiply
      const float v4 = in2[i0 * 1000000 + i1 * 10000 + i2 * 100 + i3];  // load
      const float v5 = (v2 * v4);  // multiply
      const float v6 = (v5 + v5);  // add
      acc7 = (acc7 + v3);
      acc8 = (acc8 + v6);
      c2[r] = v2;
      c4[r] = v4;
    }
    const float v7 = acc7;  // reduce_sum
    const float v8 = acc8;  // reduce_sum
    const float v9 = (-v7);  // negative
    const float v10 = (-v8);  // negative
    const float v11 = exp(v9);  // exp
    const float v12 = (v11 * v10);  // multiply
    g0 = (g0 + v11);
    const float v14 = (-v11);  // negative
    const float v15 = (-v12);  // negative
    const float v16 = v14;  // reshape
    const float v17 = v15;  // reshape
    #pragma unroll
    for (int r = 0; r < 3; ++r) {
      const int i0 = r % 3;
      const float v2 = c2[r];  // from loop 0
      const float v4 = c4[r];  // from loop 0
      const float v18 = v16;  // broadcast_to
      const float v19 = v17;  // broadcast_to
      const float v20 = (v2 * v18);  // multiply
      const float v21 = (v18 * v4);  // multiply
      const float v22 = (v2 * v19);  // multiply
      const float v23 = (v21 + v22);  // add
      const float v24 = (v20 + v20);  // add
      out1[i0 * 1000000 + i1 * 10000 + i2 * 100 + i3] = v24;
      const float v25 = (v23 + v23);  // add
      out2[i0 * 1000000 + i1 * 10000 + i2 * 100 + i3] = v25;
    }
  }
  __shared__ float sh_g0[256];
  sh_g0[threadIdx.x] = g0;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh_g0[threadIdx.x] = (sh_g0[threadIdx.x] + sh_g0[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) part_g0[blockIdx.x] = sh_g0[0];
}

extern "C" __global__ void __launch_bounds__(256) dg_finish_56d9064ef547c4bf(
    const float* __restrict__ part_g0,
    float* __restrict__ out0) {
  if (blockIdx.x == 0) {
    __shared__ float sh_g0[256];
    float acc = 0.0f;
    for (int k = threadIdx.x; k < 3907; k += 256) acc = (acc + part_g0[k]);
    sh_g0[threadIdx.x] = acc;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
      if (threadIdx.x < s) sh_g0[threadIdx.x] = (sh_g0[threadIdx.x] + sh_g0[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out0[0] = sh_g0[0];
  }
}
