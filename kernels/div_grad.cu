// gpugrad-kernel: div_grad
// Gradient of x / y, both parts in one pass: gx = dy / y, gy = -gx (x / y) = -dy x / y^2.
// in_params:  T x, T y, T dy
// out_params: T gx, T gy
// operation:  div_grad(x, y, dy, gx, gy)
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
__device__ __forceinline__ void div_grad(T x_, T y_, T dy_, T& gx, T& gy) {
    typedef typename gpugrad_acc<T>::type A;
    const A x = x_, y = y_, dy = dy_;
    const A g = dy / y;
    gx = T(g);
    gy = T(-g * (x / y));
}
