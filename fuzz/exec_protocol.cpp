// libFuzzer target: the text an external kernel sends. The input's first line is an exec adapter's
// handshake, every further line an answer to a request, and the whole input a plugin's rejection
// message. parse_handshake and parse_rejection return or throw std::invalid_argument saying what is
// wrong; parse_answer always returns, and a rejection it reads names the rule it found. Any other
// exception, a crash or undefined behaviour is a bug.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "exec_answer.hpp"
#include "exec_handshake.hpp"
#include "rule_names.hpp"

namespace {

template <class Parse>
void parse_or_refuse(Parse&& parse) {
  try {
    parse();
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kda::adapters;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string_view rest = text;
  for (bool first = true; !rest.empty(); first = false) {
    const auto end = rest.find('\n');
    const std::string line(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    if (first) {
      parse_or_refuse([&] { (void)parse_handshake(line); });
      continue;
    }
    const Answer answer = parse_answer(line);
    if (answer.kind == Answer::Kind::rejected && answer.rule && kda::name_of(*answer.rule) != answer.rule_name)
      __builtin_trap();
  }
  parse_or_refuse([&] { (void)parse_rejection(text); });
  return 0;
}
