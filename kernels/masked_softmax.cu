// gpugrad-kernel: masked_softmax
// Softmax over the last axis of the entries a bool mask keeps (and that are not -inf), 0 elsewhere and in a
// row that keeps nothing: one fused row pass per element, y[r, c] = exp(x[r, c] - m[r]) / s[r] where kept,
// m[r] the row's kept max, s[r] = sum over kept k of exp(x[r, k] - m[r]), for rows r of C entries. x is
// read as an element and again raw (x_rows: the same array); keep is the mask broadcast to x's shape,
// C-contiguous, read raw by flat index. i is the flat index; the division runs in 32 bits when i and C fit.
// in_params:  T x, raw bool keep, raw T x_rows, int64 C
// out_params: T y
// operation:  y = masked_softmax(x, keep, x_rows, i, C)
// params:     C
// dtypes:     T=float16,bfloat16,float32,float64

// the lowest finite value of the compute type: an entry below it is -inf, dropped as a masked one
template <typename A> struct masked_softmax_lowest { static __device__ __forceinline__ A get() { return A(-3.402823466e38f); } };
template <> struct masked_softmax_lowest<double> {
    static __device__ __forceinline__ double get() { return -1.7976931348623157e308; }
};

template <typename T, typename Keep, typename Rows>
__device__ __forceinline__ T masked_softmax(T x_, const Keep& keep, const Rows& x_rows, long long i, long long C) {
    typedef typename gpugrad_acc<T>::type A;
    long long row;
    if (i <= 0x7fffffffLL && C <= 0x7fffffffLL) {
        row = static_cast<unsigned int>(i) / static_cast<unsigned int>(C);
    } else {
        row = i / C;
    }
    const A x = x_, lowest = masked_softmax_lowest<A>::get();
    const long long start = row * C;
    bool any = false;
    A m = A(0);
    for (long long k = 0; k < C; ++k) {  // the row's max over its kept entries (-inf counts as dropped)
        const A v = x_rows[start + k];
        if (keep[start + k] && !(v < lowest) && (!any || v > m)) {
            m = v;
            any = true;
        }
    }
    if (!keep[i] || x < lowest || !any) {
        return T(A(0));
    }
    A s = A(0);
    for (long long k = 0; k < C; ++k) {
        const A v = x_rows[start + k];
        if (keep[start + k] && !(v < lowest)) {
            s += exp(v - m);
        }
    }
    return T(exp(x - m) / s);
}
