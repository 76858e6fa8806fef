// gpugrad-kernel: div_grad
// Gradient of x / y, both parts in one pass: gx = dy / y, gy = -gx (x / y) = -dy x / y^2.
// in_params:  T x, T y, T dy
// out_params: T gx, T gy
// operation:  div_grad(x, y, dy, gx, gy)
// dtypes:     T=float16,bfloat16,float32,float64

template <typename T>
__device__ __forceinline__ void div_grad(T x_, T y_, T dy_, T& gx, T& gy) {
    typedef typename gpugrad_acc<T>::type A;
    const A x = x_, y = y_, dy = dy_;
    const A g = dy / y;
    gx = T(g);
    gy = T(-g * (x / y));
}
