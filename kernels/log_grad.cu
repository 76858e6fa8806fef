// gpugrad-kernel: log_grad
// Gradient of log(x): dx = dy / x.
// in_params:  T x, T dy
// out_params: T dx
// operation:  dx = log_grad(x, dy)
// dtypes:     T=float16,float32,float64
#ifndef GPUGRAD_ACC
#define GPUGRAD_ACC
// gpugrad_acc<T>::type is the type a kernel computes in: float for float16 and
// float32 storage (float16 is converted once on load and rounded once on store),
// double for float64.
template <typename T> struct gpugrad_acc { typedef float type; };
template <> struct gpugrad_acc<double> { typedef double type; };
#endif

template <typename T>
__device__ __forceinline__ T log_grad(T x_, T dy_) {
    typedef typename gpugrad_acc<T>::type A;
    const A x = x_, dy = dy_;
    return T(dy / x);
}
