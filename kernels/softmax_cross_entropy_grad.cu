// gpugrad-kernel: softmax_cross_entropy_grad
// Gradient of softmax_cross_entropy with respect to the logits, from the softmax
// probabilities: dx[r, c] = probs[r, c] dy[r] - [c == labels[r]] dy[r], for rows r of C classes.
// probs is C-contiguous (..., C), i its flat index; labels and dy are (...), read raw by
// row i / C. The division runs in 32 bits whenever i and C fit (64-bit division is a slow
// software routine on the GPU and would make this kernel compute-bound).
// in_params:  T probs, raw L labels, raw T dy, int64 C
// out_params: T dx
// operation:  dx = softmax_cross_entropy_grad(probs, labels, dy, i, C)
// params:     C
// dtypes:     T=float16,bfloat16,float32,float64 L=int32,int64

template <typename T, typename Labels, typename Dy>
__device__ __forceinline__ T softmax_cross_entropy_grad(T probs_, const Labels& labels, const Dy& dy_,
                                                        long long i, long long C) {
    typedef typename gpugrad_acc<T>::type A;
    long long row, col;
    if (i <= 0x7fffffffLL && C <= 0x7fffffffLL) {
        const unsigned int r = static_cast<unsigned int>(i) / static_cast<unsigned int>(C);
        row = r;
        col = static_cast<unsigned int>(i) - r * static_cast<unsigned int>(C);
    } else {
        row = i / C;
        col = i - row * C;
    }
    const A p = probs_, dy = dy_[row];
    return T(p * dy - (col == labels[row] ? dy : A(0)));  // as the CPU path: probs dy, minus dy at the label
}
