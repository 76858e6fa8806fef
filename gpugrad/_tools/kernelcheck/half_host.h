// Host definitions of CuPy's 16-bit float classes, for building the fused kernels with g++.
//
// float16 and bfloat16 store their 16 bits; widening to float is exact (as __half2float and
// __bfloat162float are), and narrowing rounds to nearest, ties to even, as __float2half_rn and
// __float2bfloat16_rn do: subnormals kept, overflow to infinity. CuPy's float16(double) rounds
// the double once (cuda_fp16's __half(double)); its bfloat16(double) goes through float first.
//
// NaN payloads are the one thing CUDA leaves open (sm_90's cvt writes a canonical NaN); here a
// NaN keeps what NumPy's float16 and ml_dtypes' bfloat16 keep, so that the host check compares
// bit for bit with them: float16 the sign and the top 10 payload bits (never turning into an
// infinity), bfloat16 the sign and the quiet NaN 0x7fc0.
// tests/test_kernels.py checks both directions against NumPy and ml_dtypes over all 65536
// patterns, the ties between them and a million random floats.
#ifndef GPUGRAD_HALF_HOST_H
#define GPUGRAD_HALF_HOST_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpugrad_host {

inline std::uint64_t bits_of(double d) { std::uint64_t u; std::memcpy(&u, &d, 8); return u; }
inline std::uint32_t bits_of(float f) { std::uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float float_of(std::uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// |x| rounded to nearest even in a format of EB exponent bits and MB stored mantissa bits
// (bias 2^(EB-1) - 1, gradual underflow); finite x only; returns the bits without the sign.
template <int EB, int MB> inline std::uint16_t round_magnitude(double x) {
    const std::uint64_t u = bits_of(x) & 0x7fffffffffffffffULL;
    const int biased = static_cast<int>(u >> 52);
    if (biased == 0) return 0;  // a double subnormal is below half of either format's least subnormal
    const int bias = (1 << (EB - 1)) - 1, emin = 1 - bias, inf = ((1 << EB) - 1) << MB;
    const int e = biased - 1023;  // |x| = s 2^(e - 52), s a 53-bit integer
    if (e > bias) return static_cast<std::uint16_t>(inf);
    const std::uint64_t s = (u & 0xfffffffffffffULL) | (1ULL << 52);
    const int quantum = (e > emin ? e : emin) - MB;  // the spacing of the format at |x|
    int shift = 52 + quantum - e;  // >= 52 - MB > 0
    if (shift > 63) shift = 63;    // s < 2^53 < half of 2^63: rounds to 0 either way
    std::uint64_t n = s >> shift;
    const std::uint64_t rest = s & ((1ULL << shift) - 1), half = 1ULL << (shift - 1);
    if (rest > half || (rest == half && (n & 1))) ++n;
    // normal: exponent field e + bias, then n - 2^MB (a carry from rounding moves into the exponent);
    // subnormal: n itself (n == 2^MB is the least normal number, which the same encoding gives)
    const std::uint64_t out = e >= emin ? (static_cast<std::uint64_t>(e + bias) << MB) + (n - (1ULL << MB)) : n;
    return static_cast<std::uint16_t>(out >= static_cast<std::uint64_t>(inf) ? inf : out);
}

inline std::uint16_t half_nan(std::uint16_t sign, std::uint16_t payload) {  // never an infinity
    return static_cast<std::uint16_t>(sign | 0x7c00 | (payload ? payload : 1));
}

inline std::uint16_t half_bits(double x) {  // __double2half
    const std::uint64_t u = bits_of(x);
    const std::uint16_t sign = static_cast<std::uint16_t>((u >> 48) & 0x8000);
    if ((u & 0x7fffffffffffffffULL) > 0x7ff0000000000000ULL)
        return half_nan(sign, static_cast<std::uint16_t>((u >> 42) & 0x3ff));
    return static_cast<std::uint16_t>(sign | round_magnitude<5, 10>(x));
}

inline std::uint16_t half_bits(float x) {  // __float2half_rn (a NaN read from its own bits: widening quiets it)
    const std::uint32_t u = bits_of(x);
    const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000);
    if ((u & 0x7fffffffU) > 0x7f800000U) return half_nan(sign, static_cast<std::uint16_t>((u >> 13) & 0x3ff));
    return static_cast<std::uint16_t>(sign | round_magnitude<5, 10>(static_cast<double>(x)));
}

inline std::uint16_t bfloat16_bits(float x) {  // __float2bfloat16_rn
    const std::uint32_t u = bits_of(x);
    const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000);
    if ((u & 0x7fffffffU) > 0x7f800000U) return static_cast<std::uint16_t>(sign | 0x7fc0);
    return static_cast<std::uint16_t>(sign | round_magnitude<8, 7>(static_cast<double>(x)));
}

inline float half_to_float(std::uint16_t h) {  // __half2float: exact
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    if (exponent == 0x1f) return float_of(sign | 0x7f800000U | (mantissa << 13));
    if (exponent == 0) {  // zero or subnormal: mantissa 2^-24, exact in float
        const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
        return sign ? -magnitude : magnitude;
    }
    return float_of(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline float bfloat16_to_float(std::uint16_t b) {  // __bfloat162float: the top half of a float
    return float_of(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace gpugrad_host

// CuPy's float16: implicit from float, explicit from double, implicit widening to float.
struct float16 {
    std::uint16_t bits;
    float16() = default;
    float16(float f) : bits(gpugrad_host::half_bits(f)) {}
    explicit float16(double d) : bits(gpugrad_host::half_bits(d)) {}
    operator float() const { return gpugrad_host::half_to_float(bits); }
};

// CuPy's bfloat16 (over cuda_bf16's __nv_bfloat16): the same shape; from double through float.
struct bfloat16 {
    std::uint16_t bits;
    bfloat16() = default;
    bfloat16(float f) : bits(gpugrad_host::bfloat16_bits(f)) {}
    explicit bfloat16(double d) : bits(gpugrad_host::bfloat16_bits(static_cast<float>(d))) {}
    operator float() const { return gpugrad_host::bfloat16_to_float(bits); }
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2, "16-bit floats are stored in 2 bytes");

// For the conversion test: n values each way, in the layout NumPy gives (uint16 bits, float32).
extern "C" void gpugrad_host_to_float(int bfloat, std::ptrdiff_t n, const std::uint16_t* in, float* out) {
    for (std::ptrdiff_t i = 0; i < n; ++i)
        out[i] = bfloat ? gpugrad_host::bfloat16_to_float(in[i]) : gpugrad_host::half_to_float(in[i]);
}

extern "C" void gpugrad_host_from_float(int bfloat, std::ptrdiff_t n, const float* in, std::uint16_t* out) {
    for (std::ptrdiff_t i = 0; i < n; ++i)
        out[i] = bfloat ? bfloat16(in[i]).bits : float16(in[i]).bits;
}

extern "C" void gpugrad_host_from_double(int bfloat, std::ptrdiff_t n, const double* in, std::uint16_t* out) {
    for (std::ptrdiff_t i = 0; i < n; ++i)
        out[i] = bfloat ? bfloat16(in[i]).bits : float16(in[i]).bits;
}

#endif  // GPUGRAD_HALF_HOST_H
