// gpugrad-kernel: maximum_grad
// Gradient of maximum(x, y): the larger input takes dy, the other 0; at a tie x takes it.
// in_params:  T x, T y, T dy
// out_params: T gx, T gy
// operation:  maximum_grad(x, y, dy, gx, gy)
// dtypes:     T=float16,bfloat16,float32,float64

template <typename T>
__device__ __forceinline__ void maximum_grad(T x_, T y_, T dy, T& gx, T& gy) {
    typedef typename gpugrad_acc<T>::type A;
    const bool x_wins = A(x_) >= A(y_);
    const T zero = T(A(0));
    gx = x_wins ? dy : zero;
    gy = x_wins ? zero : dy;
}
