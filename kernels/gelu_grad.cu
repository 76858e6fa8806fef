// gpugrad-kernel: gelu_grad
// Gradient of the exact gelu(x) = x Phi(x): dx = dy (Phi(x) + x phi(x)), Phi the normal CDF, phi its density.
// in_params:  T x, T dy
// out_params: T dx
// operation:  dx = gelu_grad(x, dy)
// dtypes:     T=float16,bfloat16,float32,float64

template <typename T>
__device__ __forceinline__ T gelu_grad(T x_, T dy_) {
    typedef typename gpugrad_acc<T>::type A;
    const A x = x_, dy = dy_;
    const A cdf = A(0.5) * erfc(-x * A(0.70710678118654752440));  // Phi(x) = erfc(-x / sqrt 2) / 2
    const A pdf = A(0.39894228040143267794) * exp(A(-0.5) * x * x);  // phi(x) = e^(-x^2/2) / sqrt(2 pi)
    return T(dy * (cdf + x * pdf));
}
