// gpugrad-kernel: masked_softmax_grad
// Gradient of masked_softmax (and of softmax over the last axis) from its output y: one fused row pass,
// dx[r, c] = y[r, c] dy[r, c] - y[r, c] s[r], s[r] = sum_k y[r, k] dy[r, k], for rows r of C entries.
// y and dy are C-contiguous (..., C) of one shape, read as elements and again raw (y_rows, dy_rows: the same
// arrays) for the row sum each element makes; i is the flat index. The division runs in 32 bits whenever i
// and C fit (64-bit division is a slow software routine on the GPU).
// in_params:  T y, T dy, raw T y_rows, raw T dy_rows, int64 C
// out_params: T dx
// operation:  dx = masked_softmax_grad(y, dy, y_rows, dy_rows, i, C)
// params:     C
// dtypes:     T=float16,bfloat16,float32,float64

template <typename T, typename Rows>
__device__ __forceinline__ T masked_softmax_grad(T y_, T dy_, const Rows& y_rows, const Rows& dy_rows,
                                                 long long i, long long C) {
    typedef typename gpugrad_acc<T>::type A;
    long long row;
    if (i <= 0x7fffffffLL && C <= 0x7fffffffLL) {
        row = static_cast<unsigned int>(i) / static_cast<unsigned int>(C);
    } else {
        row = i / C;
    }
    A s = A(0);
    const long long start = row * C;
    for (long long k = 0; k < C; ++k) {
        s += A(y_rows[start + k]) * A(dy_rows[start + k]);
    }
    const A y = y_, dy = dy_;
    return T(y * dy - y * s);  // as the CPU path: y dy, minus y times the row's sum of y dy
}
