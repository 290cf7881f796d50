#include "plugin_descriptor.hpp"

#include <iterator>
#include <stdexcept>
#include <vector>

#include "kda/adapters/plugin_kernel.hpp"

namespace kda::adapters {

namespace {

// The enum values whose bit is set in mask, given every value of the enum in order.
template <class Enum, std::size_t N>
std::vector<Enum> from_bits(std::uint32_t mask, const Enum (&values)[N], const char* field, const std::string& where) {
  std::vector<Enum> out;
  for (std::size_t i = 0; i < N; ++i)
    if (mask & (1u << i)) out.push_back(values[i]);
  if (mask >> N) throw PluginError(where + ": descriptor field '" + field + "' has bits set beyond its enum");
  return out;
}

template <class T>
std::vector<T> from_array(const T* values, std::size_t count, const char* field, const std::string& where) {
  if (count > 0 && !values) throw PluginError(where + ": descriptor field '" + field + "' is NULL with a count");
  return std::vector<T>(values, values + count);
}

constexpr DType kDTypes[] = {DType::bf16, DType::f16, DType::f32, DType::f64, DType::i32, DType::i64};
constexpr Mode kModes[] = {Mode::prefill, Mode::decode, Mode::verify};
constexpr StateLayout kLayouts[] = {StateLayout::vk, StateLayout::kv};
constexpr Arithmetic kArithmetics[] = {Arithmetic::fp32, Arithmetic::tf32, Arithmetic::bf16_operands,
                                       Arithmetic::f16_operands};
constexpr StateSource kSources[] = {StateSource::none, StateSource::dense, StateSource::pool, StateSource::table,
                                    StateSource::scratch};
constexpr std::uint32_t kAllFlags = 0xFFu;

constexpr std::uint32_t kOldestAbiVersion = 1;
constexpr std::uint32_t kVerifySources = KDA_BIT(KDA_STATE_TABLE) | KDA_BIT(KDA_STATE_SCRATCH);

// "1 and 2", "1, 2 and 3": the ABI versions this kda-oracle loads.
std::string spoken_versions() {
  std::string out;
  for (std::uint32_t v = kOldestAbiVersion; v <= KDA_PLUGIN_ABI_VERSION; ++v)
    out += (v == kOldestAbiVersion ? "" : v == KDA_PLUGIN_ABI_VERSION ? " and " : ", ") + std::to_string(v);
  return out;
}

}  // namespace

Declaration read_descriptor(const kda_plugin& d, const std::string& library) {
  const std::string where = "plugin " + library;
  if (d.abi_version < kOldestAbiVersion || d.abi_version > KDA_PLUGIN_ABI_VERSION)
    throw PluginError(where + " was built against kda_plugin.h ABI version " + std::to_string(d.abi_version) +
                      "; this kda-oracle speaks versions " + spoken_versions() +
                      " (rebuild the plugin against adapters/include/kda/adapters/kda_plugin.h)");
  if (!d.name || !*d.name) throw PluginError(where + ": the descriptor has no name");
  if (!d.run) throw PluginError(where + ": the descriptor has no run function");
  if (!d.profile) throw PluginError(where + ": the descriptor names no profile");
  if (d.memory != KDA_MEMORY_HOST && d.memory != KDA_MEMORY_CUDA)
    throw PluginError(where + ": descriptor field 'memory' is " + std::to_string(d.memory) +
                      ", neither KDA_MEMORY_HOST (0) nor KDA_MEMORY_CUDA (1)");
  if (d.flags & ~kAllFlags) throw PluginError(where + ": descriptor field 'flags' has unknown bits set");

  Declaration out;
  out.name = d.name;
  try {
    out.profile = &profile_named(d.profile);
  } catch (const std::invalid_argument& e) {
    throw PluginError(where + ": " + e.what());
  }
  // ABI 1 had no verify: bits a version-1 plugin sets there are not a declaration of verify.
  const bool v1 = d.abi_version == 1;
  const std::uint32_t modes = v1 ? d.modes & ~KDA_BIT(KDA_MODE_VERIFY) : d.modes;
  const std::uint32_t sources = v1 ? d.state_sources & ~kVerifySources : d.state_sources;
  if (!v1 && bool(modes & KDA_BIT(KDA_MODE_VERIFY)) != bool(sources & kVerifySources))
    throw PluginError(where + (modes & KDA_BIT(KDA_MODE_VERIFY)
                                   ? " declares KDA_MODE_VERIFY but neither KDA_STATE_TABLE nor KDA_STATE_SCRATCH"
                                   : " declares a verify state source (KDA_STATE_TABLE or KDA_STATE_SCRATCH) "
                                     "without KDA_MODE_VERIFY") +
                      ": a verify call needs both");
  Capabilities& c = out.capabilities;
  c.modes = from_bits(modes, kModes, "modes", where);
  c.input_dtypes = from_bits(d.input_dtypes, kDTypes, "input_dtypes", where);
  c.output_dtypes = from_bits(d.output_dtypes, kDTypes, "output_dtypes", where);
  c.state_dtypes = from_bits(d.state_dtypes, kDTypes, "state_dtypes", where);
  c.layouts = from_bits(d.layouts, kLayouts, "layouts", where);
  c.state_sources = from_bits(sources, kSources, "state_sources", where);
  c.key_head_dims = from_array(d.key_head_dims, d.key_head_dim_count, "key_head_dims", where);
  c.value_head_dims = from_array(d.value_head_dims, d.value_head_dim_count, "value_head_dims", where);
  c.max_head_dim = d.max_head_dim;
  if (d.chunk_size_count > 0) c.chunk_sizes = from_array(d.chunk_sizes, d.chunk_size_count, "chunk_sizes", where);
  c.varlen = d.flags & KDA_CAP_VARLEN;
  c.gate_in_kernel = d.flags & KDA_CAP_GATE_IN_KERNEL;
  c.l2norm_in_kernel = d.flags & KDA_CAP_L2NORM_IN_KERNEL;
  c.beta_from_logits = d.flags & KDA_CAP_BETA_FROM_LOGITS;
  c.chunk_states = d.flags & KDA_CAP_CHUNK_STATES;
  c.token_states = d.flags & KDA_CAP_TOKEN_STATES;
  c.strided_inputs = d.flags & KDA_CAP_STRIDED_INPUTS;
  out.checks_contract = d.flags & KDA_CAP_CHECKS_CONTRACT;
  // Only a version-3 descriptor has the member: reading it from an older one would read past its end.
  if (d.abi_version >= 3) {
    if (d.arithmetic < 0 || d.arithmetic >= static_cast<int>(std::size(kArithmetics)))
      throw PluginError(where + ": descriptor field 'arithmetic' is " + std::to_string(d.arithmetic) +
                        ", not a kda_arithmetic");
    c.arithmetic = kArithmetics[d.arithmetic];
  }
  return out;
}

}  // namespace kda::adapters
