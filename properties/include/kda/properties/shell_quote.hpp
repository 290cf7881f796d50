#pragma once
// Quoting for the command lines the oracle prints (a failure's replay line), so that a user can
// paste them into a POSIX shell whatever the kernel's name holds (exec:python3 -c '...').
#include <string>
#include <string_view>

namespace kda::props {

// `word` as one shell word: left bare when it is non-empty and holds only characters no shell treats
// specially (letters, digits and @%+=:,./_-), else inside single quotes, each ' written '\''.
std::string shell_quote(std::string_view word);

}  // namespace kda::props
