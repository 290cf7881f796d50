#pragma once
// One case to and from its group under /cases (the layout is golden/SCHEMA.md).
#include <string>
#include <string_view>

#include "hdf5_read.hpp"
#include "hdf5_write.hpp"
#include "kda/golden/case_io.hpp"

namespace kda::golden::detail {

void write_case(const Out& cases, const std::string& name, const Case& c);
Case read_case(const In& cases, const std::string& name, ViewCheck check);

// The optional tolerance group (tolerance_codec.cpp); check_tolerance throws std::invalid_argument
// for a tolerance the writer refuses.
void check_tolerance(const Tolerance& t);
void write_tolerance(const Out& kase, const Tolerance& t);
Tolerance read_tolerance(const In& group);

// Whether a case's expected outputs hold token_states: the problem has that tensor, or it is a verify
// call (whose per-token states the kernel stores in pool slots or scratch rows).
inline bool expects_token_states(const Problem& p) { return p.token_states || p.mode == Mode::verify; }

// The `dtype` attribute of a dataset or tensor group, one of the dtype names.
DType dtype_attribute(const In& object);

// 'text', for messages. Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "'" + std::string.
inline std::string in_quotes(std::string_view text) {
  std::string quoted(1, '\'');
  quoted += text;
  quoted += '\'';
  return quoted;
}

// A name usable as an HDF5 link: not empty, no '/', not "." (throws std::invalid_argument).
void check_case_name(const std::string& name);

}  // namespace kda::golden::detail
