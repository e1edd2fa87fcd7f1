// Two kernels: the first begins with the prologue, the second does not.
template <typename T>
__global__ void __launch_bounds__(256) withPrologue(const T *in, T *out) {
  // A comment before it is allowed.
  MPCRT_KERNEL_PROLOGUE();
  out[0] = in[0];
}

__global__ void withoutPrologue(const float *in, float *out) {
  out[0] = in[0];
  MPCRT_KERNEL_PROLOGUE();
}

// A declaration has no body to check.
__global__ void declared(float *out);
