// gpugrad-kernel: relu_grad
// Gradient of relu from its output y: dx = dy where y > 0, else 0 (a NaN dy stays NaN, as in dy * (y > 0)).
// in_params:  T y, T dy
// out_params: T dx
// operation:  dx = relu_grad(y, dy)
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
__device__ __forceinline__ T relu_grad(T y_, T dy_) {
    typedef typename gpugrad_acc<T>::type A;
    const A y = y_, dy = dy_;
    return T(dy * A(y > A(0)));
}
