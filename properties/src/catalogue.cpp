#include "kda/properties/catalogue.hpp"

#include "kda/properties/property_bodies.hpp"

namespace kda::props {

const std::vector<Property>& catalogue() {
  static const std::vector<Property> all{
      {"matches-reference",
       "Outputs and final states (dense or in the pool), chunk and token states agree with the fp64 recurrent "
       "reference under the tolerance policy: rel-RMS <= alpha x the precision-matched model's rel-RMS + the output "
       "dtype's unit roundoff. NaN or Inf where the reference is finite always fails.",
       check_matches_reference},
      {"untouched",
       "Every byte outside the region the call may write is bit-identical afterwards: inputs, gaps of strided views, "
       "pool slots no active index names (padding rows included), gaps between pool slots, guard bands.",
       check_untouched},
      {"rejects-invalid",
       "A problem that breaks exactly one rule of the kernel's profile is rejected with that rule's code, and "
       "nothing at all is written.",
       check_rejects_invalid},
      {"padding-rows",
       "Sequences whose state index is -1 (filled with upstream's padding pattern: gate -1000, k = v = beta = 0) get "
       "zero output rows and leave their pool slot and every other byte untouched.",
       check_padding_rows},
      {"causality",
       "Changing any input at token t of a sequence changes no output before t, and nothing in other sequences, "
       "bit for bit: a tolerance would hide the small non-causal errors seen in real kernels (FLA issue 1240).",
       check_causality},
  };
  return all;
}

const Property* find_property(std::string_view name) {
  for (const auto& p : catalogue())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace kda::props
