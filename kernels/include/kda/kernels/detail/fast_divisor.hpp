#pragma once
// Division by a divisor fixed at launch as a multiply-high, an add and a shift (Granlund and Montgomery,
// "Division by invariant integers using multiplication", 1994, section 4, N = 32): exact for every
// numerator below 2^31, where the add cannot overflow. The host makes the divisor once (make_chunked_params);
// the kernels split a slot c * HV + hv into its chunk and value head, and a value head into its key head,
// with it: `/` and `%` by a runtime 64-bit HV were a division routine of about twenty instructions each,
// run by every thread at every slot.
#include <cstdint>
#include <stdexcept>

#include "kda/kernels/detail/decode_math.hpp"  // KDA_HD

namespace kda::kernels {

class FastDivisor {
 public:
  FastDivisor() = default;  // divides by 1
  // d in [1, 2^31].
  explicit FastDivisor(std::int64_t d) : divisor_(static_cast<std::uint32_t>(d)) {
    if (d < 1 || d > (std::int64_t{1} << 31)) throw std::invalid_argument("FastDivisor: divisor outside [1, 2^31]");
    while ((std::uint64_t{1} << shift_) < static_cast<std::uint64_t>(d)) ++shift_;  // ceil(log2 d)
    // m = floor(2^32 (2^shift - d) / d) + 1, below 2^32 since 2^shift < 2 d.
    multiplier_ = static_cast<std::uint32_t>((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift_) - divisor_) /
                                                 divisor_ +
                                             1);
  }
  KDA_HD std::uint32_t divisor() const { return divisor_; }
  // n / d for n < 2^31.
  KDA_HD std::uint32_t quotient(std::uint32_t n) const { return (high_product(n, multiplier_) + n) >> shift_; }

 private:
  KDA_HD static std::uint32_t high_product(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __umulhi(a, b);
#else
    return static_cast<std::uint32_t>(std::uint64_t{a} * b >> 32);
#endif
  }
  std::uint32_t divisor_ = 1, multiplier_ = 1, shift_ = 0;
};

}  // namespace kda::kernels
