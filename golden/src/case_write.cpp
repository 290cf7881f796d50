// Writing one case: everything is checked before the first HDF5 object is created, so a refused
// case (std::invalid_argument) leaves the file untouched.
#include <stdexcept>

#include "case_codec.hpp"
#include "case_layout.hpp"
#include "checksum.hpp"
#include "hdf5_types.hpp"
#include "view_reach.hpp"

namespace kda::golden::detail {

namespace {

using i64 = std::int64_t;
using Dims = std::vector<hsize_t>;

// Every view well-formed; outside its buffer only in a contract case.
void check_views(const Case& c, const std::vector<NamedBuffer>& buffers) {
  for (const auto& field : tensor_fields()) {
    const Tensor* t = field.in(c.problem);
    if (!t) continue;
    const ViewReach reach = reach_of(t->view);
    const std::string what = "tensor " + in_quotes(field.name) + " view " + t->view.describe();
    if (!reach.error.empty()) throw std::invalid_argument(what + " " + reach.error);
    if (!c.violation && !fits(reach, t->buffer->size()))
      throw std::invalid_argument(what + " leaves its " + std::to_string(t->buffer->size()) + "-byte buffer " +
                                  in_quotes(buffer_entry(buffers, t->buffer.get()).name) +
                                  "; only a contract case (one with a violation) may hold such a view");
  }
}

// Shapes of the expected outputs, from the problem's sizes (chunk count from the data).
struct ExpectedDims {
  Dims o, final_state, written, chunk_states, token_states;
};

// `what` names the set in messages: "expected" (the fp64 reference's) or "kernel" (a saved failure's).
ExpectedDims expected_dims(const Problem& p, const ReferenceOutputs& e, const std::string& what) {
  for (i64 n : {p.B, p.T, p.N, p.HV, p.K, p.V})
    if (n < 0) throw std::invalid_argument(what + " outputs need non-negative problem sizes");
  const Shape head = p.state_head_shape();
  auto u = [](i64 n) { return static_cast<hsize_t>(n); };
  const hsize_t head_values = u(p.HV) * u(p.K) * u(p.V);
  const hsize_t chunks = head_values ? e.chunk_states.size() / head_values : 0;
  ExpectedDims d{{u(p.B), u(p.T), u(p.HV), u(p.V)},
                 {u(p.N), u(p.HV), u(head[0]), u(head[1])},
                 {u(p.N)},
                 {chunks, u(p.HV), u(head[0]), u(head[1])},
                 {u(p.B), u(p.T), u(p.HV), u(head[0]), u(head[1])}};
  auto check = [&what](const char* name, std::size_t size, const Dims& dims) {
    hsize_t n = 1;
    for (auto x : dims)
      if (__builtin_mul_overflow(n, x, &n)) throw std::invalid_argument(what + " output sizes overflow");
    if (size != n)
      throw std::invalid_argument(what + " output '" + std::string(name) + "' holds " + std::to_string(size) +
                                  " values, its shape needs " + std::to_string(n));
  };
  check("o", e.o.size(), d.o);
  check("final_state", e.final_state.size(), d.final_state);
  check("written", e.written.size(), d.written);
  if (p.chunk_states) check("chunk_states", e.chunk_states.size(), d.chunk_states);
  if (expects_token_states(p)) check("token_states", e.token_states.size(), d.token_states);
  if (!p.chunk_states && !e.chunk_states.empty())
    throw std::invalid_argument(what + " chunk_states given for a problem without a chunk_states tensor");
  if (!expects_token_states(p) && !e.token_states.empty())
    throw std::invalid_argument(what + " token_states given for a problem without a token_states tensor "
                                "that is not a verify call");
  return d;
}

void write_problem_attributes(const Out& kase, const Problem& p, std::uint64_t checksum) {
  const Options& op = p.options;
  kase.text("describe", p.describe());
  kase.text("mode", name_of(p.mode));
  const std::pair<const char*, i64> sizes[] = {{"B", p.B},   {"T", p.T}, {"N", p.N}, {"H", p.H},
                                               {"HV", p.HV}, {"K", p.K}, {"V", p.V}};
  for (const auto& [name, value] : sizes) kase.int64(name, value);
  if (p.mode == Mode::verify) kase.int64("L", p.L);
  if (op.scale) kase.real("scale", *op.scale);
  kase.flag("l2norm_qk", op.l2norm_qk);
  kase.flag("beta_from_logits", op.beta_from_logits);
  kase.flag("allow_neg_eigval", op.allow_neg_eigval);
  kase.flag("gate_in_kernel", op.gate_in_kernel);
  if (op.lower_bound) kase.real("lower_bound", *op.lower_bound);
  kase.flag("safe_gate", op.safe_gate);
  kase.int64("chunk_size", op.chunk_size);
  kase.text("state_layout", name_of(op.state_layout));
  kase.uint64("input_checksum", checksum);
}

void write_buffers(const Out& kase, const std::vector<NamedBuffer>& buffers) {
  const Out group = kase.group("buffers");
  for (const auto& b : buffers) {
    const StoredType type = stored_type(b.dtype);
    const Dims dims{b.buffer->size() / size_of(b.dtype)};
    group.dataset(b.name, type.file, type.memory, dims, b.buffer->data()).text("dtype", name_of(b.dtype));
  }
}

void write_tensors(const Out& kase, const Problem& p, const std::vector<NamedBuffer>& buffers) {
  const Out group = kase.group("tensors");
  for (const auto& field : tensor_fields()) {
    const Tensor* t = field.in(p);
    if (!t) continue;
    const Out g = group.group(std::string(field.name));
    g.text("buffer", buffer_entry(buffers, t->buffer.get()).name);
    g.text("dtype", name_of(t->dtype()));
    g.int64s("shape", t->view.shape);
    g.int64s("strides", t->view.strides);
    g.int64("offset", t->view.offset);
  }
}

// One set of outputs in the reference's dense layout: `expected` (the fp64 reference's) or
// `kernel_outputs` (what the kernel under test wrote, in a saved failure).
void write_output_set(const Out& kase, const char* set, const Problem& p, const ReferenceOutputs& e,
                      const ExpectedDims& d) {
  const Out group = kase.group(set);
  auto real = [&](const char* name, const std::vector<double>& values, const Dims& dims) {
    group.dataset(name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, values.data());
  };
  real("o", e.o, d.o);
  real("final_state", e.final_state, d.final_state);
  group.dataset("written", H5T_STD_I8LE, H5T_NATIVE_CHAR, d.written, e.written.data());
  if (p.chunk_states) real("chunk_states", e.chunk_states, d.chunk_states);
  if (expects_token_states(p)) real("token_states", e.token_states, d.token_states);
}

}  // namespace

void check_case_name(const std::string& name) {
  if (name.empty() || name == "." || name.find('/') != std::string::npos)
    throw std::invalid_argument("case name " + in_quotes(name) +
                                " is not usable: it must be non-empty, not '.', "
                                "and hold no '/'");
}

void write_case(const Out& cases, const std::string& name, const Case& c) {
  check_case_name(name);
  if (H5Lexists(cases.id(), name.c_str(), H5P_DEFAULT) > 0)
    throw std::invalid_argument("case " + in_quotes(name) + " already exists");
  const Problem& p = c.problem;
  const auto buffers = name_buffers(p);
  check_views(c, buffers);
  if (c.violation && c.expected) throw std::invalid_argument("a contract case has no expected outputs");
  for (const auto& [key, value] : c.metadata)
    if (key.empty()) throw std::invalid_argument("metadata keys must be non-empty");
  if (c.tolerance) check_tolerance(*c.tolerance);
  if (c.violation && c.kernel_outputs) throw std::invalid_argument("a contract case has no kernel outputs");
  const auto dims = c.expected ? std::optional(expected_dims(p, *c.expected, "expected")) : std::nullopt;
  const auto kernel_dims =
      c.kernel_outputs ? std::optional(expected_dims(p, *c.kernel_outputs, "kernel")) : std::nullopt;

  const Out kase = cases.group(name);
  write_problem_attributes(kase, p, input_checksum(p, buffers));
  write_buffers(kase, buffers);
  write_tensors(kase, p, buffers);
  const Out metadata = kase.group("metadata");
  for (const auto& [key, value] : c.metadata) metadata.text(key.c_str(), value);
  if (c.tolerance) write_tolerance(kase, *c.tolerance);
  if (c.violation) {
    const Out contract = kase.group("contract");
    contract.text("rule", name_of(c.violation->rule));
    contract.text("message", c.violation->message);
  }
  if (c.expected) write_output_set(kase, "expected", p, *c.expected, *dims);
  if (c.kernel_outputs) write_output_set(kase, "kernel_outputs", p, *c.kernel_outputs, *kernel_dims);
}

}  // namespace kda::golden::detail
