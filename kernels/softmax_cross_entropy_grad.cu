// gpugrad-kernel: softmax_cross_entropy_grad
// Gradient of softmax_cross_entropy with respect to the logits, from the softmax
// probabilities: dx[r, c] = probs[r, c] dy[r] - [c == labels[r]] dy[r], for rows r of C classes.
// probs is C-contiguous (..., C); labels and dy are (...) and read raw by row i / C.
// in_params:  T probs, raw L labels, raw T dy, int64 C
// out_params: T dx
// operation:  dx = softmax_cross_entropy_grad(probs, i % C == labels[i / C], dy[i / C])
// params:     C
// dtypes:     T=float16,float32,float64 L=int32,int64
#ifndef GPUGRAD_ACC
#define GPUGRAD_ACC
// gpugrad_acc<T>::type is the type a kernel computes in: float for float16 and
// float32 storage (float16 is converted once on load and rounded once on store),
// double for float64.
template <typename T> struct gpugrad_acc { typedef float type; };
template <> struct gpugrad_acc<double> { typedef double type; };
#endif

template <typename T>
__device__ __forceinline__ T softmax_cross_entropy_grad(T probs_, bool is_label, T dy_) {
    typedef typename gpugrad_acc<T>::type A;
    const A p = probs_, dy = dy_;
    return T(p * dy - (is_label ? dy : A(0)));  // as the CPU path: probs dy, minus dy at the label
}
