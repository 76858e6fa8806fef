// gpugrad-kernel: sgd_momentum_update
// One in-place step of SGD with momentum (the Keras form), L2 weight decay folded
// into the gradient:  g = grad + weight_decay param;  velocity = momentum velocity - lr g;
// param += velocity, or with Nesterov  param += momentum velocity - lr g.
// in_params:  T grad, float64 lr, float64 momentum, float64 weight_decay, bool nesterov
// out_params: T param, T velocity
// operation:  sgd_momentum_update(param, velocity, grad, lr, momentum, weight_decay, nesterov)
// params:     lr momentum weight_decay nesterov
// dtypes:     T=float16,bfloat16,float32,float64

template <typename T>
__device__ __forceinline__ void sgd_momentum_update(T& param, T& velocity, T grad, double lr_,
                                                    double momentum_, double weight_decay_,
                                                    bool nesterov) {
    typedef typename gpugrad_acc<T>::type A;
    const A lr = A(lr_), momentum = A(momentum_), weight_decay = A(weight_decay_);
    const A p = param;
    const A g = A(grad) + weight_decay * p;
    const A v = momentum * A(velocity) - lr * g;
    velocity = T(v);
    param = T(nesterov ? p + (momentum * v - lr * g) : p + v);
}
