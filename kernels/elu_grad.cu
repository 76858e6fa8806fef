// gpugrad-kernel: elu_grad
// Gradient of elu(x, alpha): dx = dy where x > 0, else dy alpha e^x.
// in_params:  T x, T dy, float64 alpha
// out_params: T dx
// operation:  dx = elu_grad(x, dy, alpha)
// params:     alpha
// dtypes:     T=float16,bfloat16,float32,float64

template <typename T>
__device__ __forceinline__ T elu_grad(T x_, T dy_, double alpha_) {
    typedef typename gpugrad_acc<T>::type A;
    const A x = x_, dy = dy_, alpha = A(alpha_);
    return T(dy * (x > A(0) ? A(1) : exp(x) * alpha));
}
