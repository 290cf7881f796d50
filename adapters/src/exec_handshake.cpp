#include "exec_handshake.hpp"

#include <charconv>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace kda::adapters {

namespace {

std::vector<std::string> split(const std::string& s, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, separator))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

std::int64_t integer(const std::string& key, const std::string& text) {
  std::int64_t x = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (error != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument("'" + key + "' takes integers, got '" + text + "'");
  return x;
}

// A comma-separated list of names, each mapped through `lookup` (which returns nullopt for a bad name).
template <class T, class Lookup>
std::vector<T> names(const std::string& key, const std::string& value, Lookup lookup) {
  std::vector<T> out;
  for (const auto& name : split(value, ',')) {
    const std::optional<T> x = lookup(name);
    if (!x) throw std::invalid_argument("'" + key + "' does not know '" + name + "'");
    out.push_back(*x);
  }
  return out;
}

template <class T, std::size_t N>
std::optional<T> by_name(const std::string& name, const std::pair<const char*, T> (&table)[N]) {
  for (const auto& [text, value] : table)
    if (name == text) return value;
  return std::nullopt;
}

constexpr std::pair<const char*, Mode> kModes[] = {
    {"prefill", Mode::prefill}, {"decode", Mode::decode}, {"verify", Mode::verify}};
constexpr std::pair<const char*, StateLayout> kLayouts[] = {{"VK", StateLayout::vk}, {"KV", StateLayout::kv}};
constexpr std::pair<const char*, StateSource> kSources[] = {
    {"none", StateSource::none},   {"dense", StateSource::dense},    {"pool", StateSource::pool},
    {"table", StateSource::table}, {"scratch", StateSource::scratch}};

void set(Declaration& d, const std::string& key, const std::string& value) {
  Capabilities& c = d.capabilities;
  auto dtypes = [&] { return names<DType>(key, value, [](const std::string& n) { return dtype_from_name(n); }); };
  auto integers = [&] {
    std::vector<std::int64_t> out;
    for (const auto& x : split(value, ',')) out.push_back(integer(key, x));
    return out;
  };
  auto flag = [&] {
    if (value != "0" && value != "1") throw std::invalid_argument("'" + key + "' takes 0 or 1, got '" + value + "'");
    return value == "1";
  };
  if (key == "modes") c.modes = names<Mode>(key, value, [](const std::string& n) { return by_name(n, kModes); });
  else if (key == "input_dtypes") c.input_dtypes = dtypes();
  else if (key == "output_dtypes") c.output_dtypes = dtypes();
  else if (key == "state_dtypes") c.state_dtypes = dtypes();
  else if (key == "layouts")
    c.layouts = names<StateLayout>(key, value, [](const std::string& n) { return by_name(n, kLayouts); });
  else if (key == "state_sources")
    c.state_sources = names<StateSource>(key, value, [](const std::string& n) { return by_name(n, kSources); });
  else if (key == "key_head_dims") c.key_head_dims = integers();
  else if (key == "value_head_dims") c.value_head_dims = integers();
  else if (key == "max_head_dim") c.max_head_dim = integer(key, value);
  else if (key == "chunk_sizes") {
    c.chunk_sizes.clear();
    for (auto x : integers()) c.chunk_sizes.push_back(static_cast<int>(x));
  } else if (key == "varlen") c.varlen = flag();
  else if (key == "gate_in_kernel") c.gate_in_kernel = flag();
  else if (key == "l2norm_in_kernel") c.l2norm_in_kernel = flag();
  else if (key == "explicit_scale") c.explicit_scale = flag();
  else if (key == "beta_from_logits") c.beta_from_logits = flag();
  else if (key == "neg_eigval") c.neg_eigval = flag();
  else if (key == "always")
    for (const auto& option : split(value, ',')) {
      if (option == "gate_in_kernel") c.always_gate_in_kernel = true;
      else if (option == "l2norm_in_kernel") c.always_l2norm = true;
      else if (option == "beta_from_logits") c.always_beta_from_logits = true;
      else
        throw std::invalid_argument("'always' takes gate_in_kernel, l2norm_in_kernel and beta_from_logits, got '" +
                                    option + "'");
    }
  else if (key == "chunk_states") c.chunk_states = flag();
  else if (key == "token_states") c.token_states = flag();
  else if (key == "strided_inputs") c.strided_inputs = flag();
  else if (key == "checks_contract") d.checks_contract = flag();
  else if (key == "arithmetic") {
    const std::optional<Arithmetic> a = arithmetic_from_name(value);
    if (!a) throw std::invalid_argument("'arithmetic' takes fp32, tf32, bf16-operands or f16-operands, got '" + value + "'");
    c.arithmetic = *a;
  }
  else throw std::invalid_argument("unknown capability '" + key + "'");
}

}  // namespace

Declaration parse_handshake(const std::string& line) {
  const std::vector<std::string> words = split(line, ' ');
  if (words.size() < 4 || words[0] != "kda-adapter")
    throw std::invalid_argument("expected 'kda-adapter <version> <name> <profile> [key=value ...]', got '" + line + "'");
  if (words[1] != std::to_string(kExecProtocolVersion))
    throw std::invalid_argument("the adapter speaks protocol version " + words[1] + "; this kda-oracle speaks version " +
                                std::to_string(kExecProtocolVersion));
  Declaration d;
  d.name = words[2];
  d.profile = &profile_named(words[3]);
  for (std::size_t i = 4; i < words.size(); ++i) {
    const auto equals = words[i].find('=');
    if (equals == std::string::npos) throw std::invalid_argument("expected key=value, got '" + words[i] + "'");
    set(d, words[i].substr(0, equals), words[i].substr(equals + 1));
  }
  return d;
}

}  // namespace kda::adapters
