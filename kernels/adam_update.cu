// gpugrad-kernel: adam_update
// One in-place Adam step, L2 weight decay folded into the gradient:
//   g = grad + weight_decay param;  m += (1 - beta1) (g - m);  v += (1 - beta2) (g^2 - v);
//   param -= step_size m / (sqrt(v) / bias_correction2_sqrt + eps),
// the host computing for step t, with bc_i = 1 - beta_i^t: the Keras form (eps beside sqrt(v))
// step_size = lr sqrt(bc2) / bc1 and bias_correction2_sqrt = 1 (an exact division); PyTorch's form
// (eps beside sqrt(v_hat)) step_size = lr / bc1 and bias_correction2_sqrt = sqrt(bc2).
// in_params:  T grad, float64 step_size, float64 beta1, float64 beta2, float64 eps, float64 weight_decay, float64 bias_correction2_sqrt
// out_params: T param, T m, T v
// operation:  adam_update(param, m, v, grad, step_size, beta1, beta2, eps, weight_decay, bias_correction2_sqrt)
// params:     step_size beta1 beta2 eps weight_decay bias_correction2_sqrt
// dtypes:     T=float16,bfloat16,float32,float64

template <typename T>
__device__ __forceinline__ void adam_update(T& param, T& m, T& v, T grad, double step_size_,
                                            double beta1_, double beta2_, double eps_,
                                            double weight_decay_, double bias_correction2_sqrt_) {
    typedef typename gpugrad_acc<T>::type A;
    const A step_size = A(step_size_), eps = A(eps_), weight_decay = A(weight_decay_);
    const A bias_correction2_sqrt = A(bias_correction2_sqrt_);
    const A one_minus_beta1 = A(1.0 - beta1_), one_minus_beta2 = A(1.0 - beta2_);
    const A p = param;
    const A g = A(grad) + weight_decay * p;
    A m_ = m, v_ = v;
    m_ += one_minus_beta1 * (g - m_);
    v_ += one_minus_beta2 * (g * g - v_);
    m = T(m_);
    v = T(v_);
    param = T(p - step_size * m_ / (sqrt(v_) / bias_correction2_sqrt + eps));
}
