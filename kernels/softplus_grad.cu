// gpugrad-kernel: softplus_grad
// Gradient of softplus(x) = log(1 + e^x): dx = dy sigmoid(x), without overflow for large |x|.
// in_params:  T x, T dy
// out_params: T dx
// operation:  dx = softplus_grad(x, dy)
// dtypes:     T=float16,bfloat16,float32,float64

template <typename T>
__device__ __forceinline__ T softplus_grad(T x_, T dy_) {
    typedef typename gpugrad_acc<T>::type A;
    const A x = x_, dy = dy_;
    const A e = exp(-fabs(x));  // never overflows
    const A s = (x >= A(0) ? A(1) : e) / (A(1) + e);
    return T(dy * s);
}
