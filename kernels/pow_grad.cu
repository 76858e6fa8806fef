// gpugrad-kernel: pow_grad
// Gradient of x ** y, both parts in one pass: gx = (dy y) x^(y-1), but 0 where that is inf or
// NaN at x <= 0 and y or dy is 0 (x^0 is constant; a zero dy contributes nothing, as TF's
// mul_no_nan: the value only, PowGrad's own gradient never reads dy); gy = (dy x^y) log(x)
// where x > 0, else 0 (x^y is not differentiable in y there), and 0 when want_gy is 0 (a
// constant exponent: no power or log spent). Products in TF's order.
// in_params:  T x, T y, T dy, float64 want_gy
// out_params: T gx, T gy
// operation:  pow_grad(x, y, dy, want_gy, gx, gy)
// params:     want_gy
// dtypes:     T=float16,bfloat16,float32,float64

template <typename T>
__device__ __forceinline__ void pow_grad(T x_, T y_, T dy_, double want_gy, T& gx, T& gy) {
    typedef typename gpugrad_acc<T>::type A;
    const A x = x_, y = y_, dy = dy_;
    const A g = (dy * y) * pow(x, y - A(1));
    const bool finite = g - g == A(0);  // false for inf and NaN; a NaN x stays NaN, as on the CPU
    gx = T(finite || !(x <= A(0)) || (y != A(0) && dy != A(0)) ? g : A(0));
    gy = T(want_gy != 0.0 && x > A(0) ? (dy * pow(x, y)) * log(x) : A(0));
}
