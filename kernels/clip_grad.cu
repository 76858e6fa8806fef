// gpugrad-kernel: clip_grad
// Gradient of clip(x, lo, hi): dx = dy where lo <= x <= hi, else 0. The bounds are
// scalars or arrays of x's dtype, compared in that dtype as the forward clip does.
// in_params:  T x, T dy, T lo, T hi
// out_params: T dx
// operation:  dx = clip_grad(x, dy, lo, hi)
// params:     lo hi
// dtypes:     T=float16,bfloat16,float32,float64

template <typename T>
__device__ __forceinline__ T clip_grad(T x_, T dy_, T lo_, T hi_) {
    typedef typename gpugrad_acc<T>::type A;
    const A x = x_, lo = lo_, hi = hi_;
    return (x >= lo && x <= hi) ? dy_ : T(A(0));
}
