// The HDF5 case format (golden/SCHEMA.md): bit-exact round trips of problems (buffers whole, gaps
// and poison included, sharing kept), expected outputs and case metadata; byte-identical files
// from identical writes; and hostile files, each refused with a FormatError that says what is wrong.
#include <gtest/gtest.h>

#include <hdf5.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "../support/scoped_env.hpp"
#include "kda/contract.hpp"
#include "kda/contract_cases.hpp"
#include "kda/golden/case_io.hpp"
#include "kda/memory.hpp"
#include "kda/problem_factory.hpp"
#include "kda/reference.hpp"

namespace kda::golden {
namespace {

namespace fs = std::filesystem;
using i64 = std::int64_t;

// ---- helpers ----

class CaseIo : public testing::Test {
 protected:
  void SetUp() override {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    std::replace(name.begin(), name.end(), '/', '_');  // parameterised tests have '/' in their names
    dir_ = fs::temp_directory_path() / ("kda_case_io_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path path(const std::string& name) const { return dir_ / name; }

 private:
  fs::path dir_;
};

std::vector<char> bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Tolerance plain_tolerance(double bound) {
  Tolerance t;
  t.metric = "rel_rms";
  t.bound = bound;
  return t;
}

void write_bytes(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Every tensor of a problem by name, present or not.
std::vector<std::pair<std::string, const Tensor*>> tensors(const Problem& p) {
  std::vector<std::pair<std::string, const Tensor*>> all;
  for (const auto& field : tensor_fields()) all.emplace_back(field.name, field.in(p));
  return all;
}

bool same_bytes(const GuardedBuffer& a, const GuardedBuffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

// Both empty, or the same bits (a contract case may hold a NaN).
bool same_bits(std::optional<double> a, std::optional<double> b) {
  return a.has_value() == b.has_value() && (!a || std::memcmp(&*a, &*b, sizeof(double)) == 0);
}

// Sizes, options and every tensor equal; payloads byte-identical; the same buffer sharing.
void expect_same_problem(const Problem& a, const Problem& b) {
  EXPECT_EQ(a.describe(), b.describe());
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ((std::vector<i64>{a.B, a.T, a.N, a.H, a.HV, a.K, a.V, a.L}),
            (std::vector<i64>{b.B, b.T, b.N, b.H, b.HV, b.K, b.V, b.L}));
  const Options &x = a.options, &y = b.options;
  EXPECT_TRUE(same_bits(x.scale, y.scale));
  EXPECT_TRUE(same_bits(x.lower_bound, y.lower_bound));
  EXPECT_EQ((std::vector<bool>{x.l2norm_qk, x.beta_from_logits, x.allow_neg_eigval, x.gate_in_kernel, x.safe_gate}),
            (std::vector<bool>{y.l2norm_qk, y.beta_from_logits, y.allow_neg_eigval, y.gate_in_kernel, y.safe_gate}));
  EXPECT_EQ(x.chunk_size, y.chunk_size);
  EXPECT_EQ(x.state_layout, y.state_layout);
  const auto ta = tensors(a), tb = tensors(b);
  for (std::size_t i = 0; i < ta.size(); ++i) {
    const auto& [name, t] = ta[i];
    const Tensor* u = tb[i].second;
    ASSERT_EQ(t == nullptr, u == nullptr) << name;
    if (!t) continue;
    EXPECT_EQ(t->view.dtype, u->view.dtype) << name;
    EXPECT_EQ(t->view.shape, u->view.shape) << name;
    EXPECT_EQ(t->view.strides, u->view.strides) << name;
    EXPECT_EQ(t->view.offset, u->view.offset) << name;
    EXPECT_TRUE(same_bytes(*t->buffer, *u->buffer)) << name << ": payload differs";
    for (std::size_t j = 0; j < ta.size(); ++j) {
      if (!ta[j].second || !tb[j].second) continue;
      EXPECT_EQ(t->buffer == ta[j].second->buffer, u->buffer == tb[j].second->buffer)
          << name << " and " << ta[j].first << ": buffer sharing differs";
    }
  }
}

// Fills a whole payload with poison: NaN with a payload and 1e30, as bf16/f16 or wider patterns.
void poison(GuardedBuffer& b) {
  const std::uint8_t pattern[] = {0xa5, 0x7f, 0xc1, 0xff, 0x1e, 0x71, 0x53, 0x7e};
  for (std::size_t i = 0; i < b.size(); ++i) b.data()[i] = static_cast<std::byte>(pattern[i % 8]);
}

Problem random_problem(const ProblemSpec& spec, std::uint64_t seed = 11) {
  Problem p = make_problem(spec);
  for (Tensor* t : p.outputs()) poison(*t->buffer);  // outputs hold poison until a kernel writes them
  fill_random(p, seed);
  return p;
}

Case round_trip(const fs::path& path, const Case& c, ViewCheck check = ViewCheck::inside_buffers) {
  {
    File file = File::create(path);
    file.write_case("case", c);
    file.close();
  }
  return File::open(path).read_case("case", check);
}

// Runs f, expecting a FormatError whose message holds every fragment; HDF5 must print nothing.
void expect_format_error(const std::function<void()>& f, std::initializer_list<std::string> fragments) {
  testing::internal::CaptureStderr();
  std::string message, other;
  try {
    f();
  } catch (const FormatError& e) {
    message = e.what();
  } catch (const std::exception& e) {
    other = e.what();
  }
  const std::string printed = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(other.empty()) << "another exception than FormatError: " << other;
  ASSERT_FALSE(message.empty()) << "no FormatError";
  for (const auto& fragment : fragments) EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_EQ(printed, "") << "printed on stderr";
}

// Opens a written file read-write with HDF5 itself, to damage it.
void edit(const fs::path& path, const std::function<void(hid_t)>& change) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  change(file);
  ASSERT_GE(H5Fclose(file), 0);
}

void set_int_attribute(hid_t object, const char* name, i64 value) {
  const hid_t a = H5Aopen(object, name, H5P_DEFAULT);
  ASSERT_GE(a, 0) << name;
  ASSERT_GE(H5Awrite(a, H5T_NATIVE_INT64, &value), 0);
  H5Aclose(a);
}

void set_int_array_attribute(hid_t object, const char* name, std::vector<i64> values) {
  const hid_t a = H5Aopen(object, name, H5P_DEFAULT);
  ASSERT_GE(a, 0) << name;
  ASSERT_GE(H5Awrite(a, H5T_NATIVE_INT64, values.data()), 0);
  H5Aclose(a);
}

i64 points(hid_t location, const char* dataset) {
  const hid_t d = H5Dopen2(location, dataset, H5P_DEFAULT);
  const hid_t space = H5Dget_space(d);
  const i64 n = H5Sget_simple_extent_npoints(space);
  H5Sclose(space), H5Dclose(d);
  return n;
}

// ---- round trips of factory problems ----

struct NamedSpec {
  std::string name;
  ProblemSpec spec;
};

void PrintTo(const NamedSpec& s, std::ostream* os) { *os << s.name; }  // short CTest names

std::vector<NamedSpec> specs() {
  std::vector<NamedSpec> all;
  {
    ProblemSpec s;  // varlen with zero-length sequences, bf16 inputs, chunk and token states
    s.lengths = {0, 70, 0, 5};
    s.cu_seqlens_dtype = DType::i64;
    s.H = 2, s.HV = 4, s.K = 16, s.V = 8;
    s.input_dtype = s.output_dtype = DType::bf16;
    s.chunk_states = s.token_states = true;
    all.push_back({"VarlenZeroLengthBf16States", s});
  }
  {
    ProblemSpec s;  // fixed-length batch, f16 inputs, [K,V] states
    s.varlen = false;
    s.lengths = {6, 6, 6};
    s.input_dtype = DType::f16;
    s.options.state_layout = StateLayout::kv;
    s.K = 8, s.V = 24;
    all.push_back({"BatchF16KvLayout", s});
  }
  {
    ProblemSpec s;  // a pool with a padded slot stride, a base offset and a -1 row
    s.lengths = {3, 0, 4};
    s.HV = 2, s.K = 16, s.V = 8;
    s.state = StateSource::pool;
    s.pool_slots = 5;
    s.pool_slot_stride = 2 * 16 * 8 + 48;
    s.pool_offset = 8;
    s.indices = {4, -1, 1};
    all.push_back({"PoolPaddedStrideOffsetPadding", s});
  }
  {
    ProblemSpec s;  // decode with every preprocessing flag and the gate in the kernel
    s.mode = Mode::decode;
    s.lengths = {1, 1};
    s.HV = 2;
    s.with_A_log = s.with_dt_bias = true;
    s.options.gate_in_kernel = true;
    s.options.lower_bound = -5.0;
    s.options.safe_gate = true;
    s.options.l2norm_qk = s.options.beta_from_logits = s.options.allow_neg_eigval = true;
    s.options.scale = 0.3;
    s.options.chunk_size = 32;
    s.options.state_layout = StateLayout::kv;
    all.push_back({"DecodeGateInKernelScale", s});
  }
  {
    ProblemSpec s;  // verify, index-table form: ragged requests, -1 entries, a padding row, int64 counts
    s.mode = Mode::verify;
    s.lengths = {3, 2, 3};
    s.HV = 2, s.K = 8, s.V = 16;
    s.state = StateSource::table;
    s.L = 3;
    s.indices = {4, -1, 2, -1, -1, -1, 0, 1, 5};
    s.accepted = {3, 2, 1};
    s.accepted_dtype = DType::i64;
    s.pool_slots = 7;
    all.push_back({"VerifyTableInt64Counts", s});
  }
  {
    ProblemSpec s;  // verify, scratch form: a permuted row map, more scratch steps than L, [K,V] states
    s.mode = Mode::verify;
    s.lengths = {2, 2};
    s.state = StateSource::scratch;
    s.L = 2;
    s.indices = {1, 0};
    s.scratch_indices = {2, 0};
    s.scratch_rows = 3, s.scratch_steps = 4;
    s.options.state_layout = StateLayout::kv;
    all.push_back({"VerifyScratchRowMap", s});
  }
  {
    ProblemSpec s;  // nothing but empty sequences: zero-byte buffers, zero chunks
    s.lengths = {0, 0};
    s.chunk_states = s.token_states = true;
    all.push_back({"OnlyEmptySequences", s});
  }
  {
    ProblemSpec s;  // no state at all, f32 in, bf16 out; big enough for chunked, deflated datasets
    s.lengths = {300};
    s.H = 2, s.HV = 2, s.K = 32, s.V = 32;
    s.state = StateSource::none;
    s.final_state = false;
    s.output_dtype = DType::bf16;
    all.push_back({"NoStateLargeF32", s});
  }
  return all;
}

class FactoryRoundTrip : public CaseIo, public testing::WithParamInterface<NamedSpec> {};

TEST_P(FactoryRoundTrip, IsBitExact) {
  Case c;
  c.problem = random_problem(GetParam().spec);
  c.metadata = {{"seed", "11"}, {"profile", "strict"}};
  const Case back = round_trip(path("f.h5"), c);
  expect_same_problem(c.problem, back.problem);
  EXPECT_EQ(back.metadata, c.metadata);
  EXPECT_FALSE(back.tolerance);
  EXPECT_FALSE(back.violation);
  EXPECT_FALSE(back.expected);
}

INSTANTIATE_TEST_SUITE_P(CaseIo, FactoryRoundTrip, testing::ValuesIn(specs()),
                         [](const testing::TestParamInfo<NamedSpec>& param) { return param.param.name; });

// ---- a hand-built fused buffer ----

// q, k and v as slices of one bf16 projection buffer, tokens padded, poison in every gap.
Problem fused_problem() {
  ProblemSpec s;
  s.lengths = {5, 3};
  s.H = 2, s.HV = 2, s.K = 8, s.V = 8;
  s.input_dtype = DType::bf16;
  Problem p = make_problem(s);
  const i64 qk = s.H * s.K, row = 2 * qk + s.HV * s.V + 8, base = 4;
  auto fused = std::make_shared<GuardedBuffer>("qkv", static_cast<std::size_t>((base + p.T * row) * 2));
  poison(*fused);
  auto slice = [&](i64 heads, i64 dim, i64 offset) {
    return Tensor{fused, View{DType::bf16, {1, p.T, heads, dim}, {p.T * row, row, dim, 1}, base + offset}};
  };
  p.q = slice(s.H, s.K, 0);
  p.k = slice(s.H, s.K, qk);
  p.v = slice(s.HV, s.V, 2 * qk);
  fill_random(p, 5);
  return p;
}

TEST_F(CaseIo, FusedStridedBufferKeepsItsGapsAndSharing) {
  Case c;
  c.problem = fused_problem();
  const Case back = round_trip(path("fused.h5"), c);
  expect_same_problem(c.problem, back.problem);
  const Problem& p = back.problem;
  EXPECT_EQ(p.q.buffer, p.k.buffer);
  EXPECT_EQ(p.q.buffer, p.v.buffer);
  EXPECT_NE(p.q.buffer, p.g.buffer);
  EXPECT_EQ(p.q.name(), "qkv");
  // The first bytes precede every view: poison that only a whole-payload copy keeps.
  EXPECT_EQ(std::memcmp(p.q.buffer->data(), c.problem.q.buffer->data(), 8), 0);
  EXPECT_EQ(static_cast<std::uint8_t>(p.q.buffer->data()[0]), 0xa5);
}

TEST_F(CaseIo, DistinctBuffersWithOneNameStayDistinct) {
  Case c;
  c.problem = random_problem(ProblemSpec{});
  const Tensor g = c.problem.g;
  c.problem.g = Tensor{std::make_shared<GuardedBuffer>("q", g.buffer->size()), g.view};
  std::memcpy(c.problem.g.buffer->data(), g.buffer->data(), g.buffer->size());
  const Case back = round_trip(path("names.h5"), c);
  expect_same_problem(c.problem, back.problem);
  EXPECT_EQ(back.problem.q.name(), "q");
  EXPECT_EQ(back.problem.g.name(), "q~2");
}

TEST_F(CaseIo, RankZeroAndEmptyViewsRoundTrip) {
  ProblemSpec s;
  s.with_A_log = s.with_dt_bias = true;
  Case c;
  c.problem = random_problem(s);
  c.problem.A_log->view = View{DType::f32, {}, {}, 0};            // one element, no dims
  c.problem.dt_bias->view = View{DType::f32, {0, 4}, {4, 1}, 3};  // no elements
  const Case back = round_trip(path("ranks.h5"), c);
  expect_same_problem(c.problem, back.problem);
  EXPECT_EQ(back.problem.A_log->view.rank(), 0);
}

// ---- expected outputs, tolerance, contract cases ----

TEST_F(CaseIo, ExpectedOutputsRoundTripBitExact) {
  ProblemSpec s;
  s.lengths = {9, 0, 66};
  s.HV = 2;
  s.state = StateSource::pool;
  s.indices = {2, -1, 3};
  s.chunk_states = s.token_states = true;
  s.options.state_layout = StateLayout::kv;
  Case c;
  c.problem = random_problem(s);
  c.expected = run_reference<double>(c.problem, Algorithm::recurrent);
  c.tolerance = plain_tolerance(7e-3);
  c.tolerance->alpha = 2.0;
  c.tolerance->model = "ref-fp32";
  c.tolerance->outputs = {{"o", 1e-3, 0x1p-8, 7e-3}, {"final_state", 1e-7, 0x1p-24, 3e-7},
                          {"token_states", 2e-7, 0x1p-24, 5e-7}};
  ASSERT_FALSE(c.expected->chunk_states.empty());
  ASSERT_EQ(c.expected->written, (std::vector<char>{1, 0, 1}));
  const Case back = round_trip(path("expected.h5"), c);
  ASSERT_TRUE(back.expected);
  const ReferenceOutputs &e = *c.expected, &r = *back.expected;
  auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
  };
  EXPECT_TRUE(same(e.o, r.o));
  EXPECT_TRUE(same(e.final_state, r.final_state));
  EXPECT_TRUE(same(e.chunk_states, r.chunk_states));
  EXPECT_TRUE(same(e.token_states, r.token_states));
  EXPECT_EQ(e.written, r.written);
  EXPECT_EQ(back.tolerance, c.tolerance);
  EXPECT_EQ(back.tolerance->bound_for("final_state"), 3e-7);
  EXPECT_EQ(back.tolerance->bound_for("chunk_states"), 7e-3) << "no entry: the group's bound";
}

// A saved failure's kernel outputs: a second set in the layout of `expected`, read back as written, and
// absent from a case that has none.
TEST_F(CaseIo, KernelOutputsRoundTripBesideTheExpectedOnes) {
  ProblemSpec s;
  s.lengths = {9, 0, 66};
  s.state = StateSource::pool;
  s.indices = {2, -1, 3};
  s.chunk_states = true;
  Case c;
  c.problem = random_problem(s);
  c.expected = run_reference<double>(c.problem, Algorithm::recurrent);
  c.kernel_outputs = run_reference<float>(c.problem, Algorithm::chunked);
  ASSERT_NE(c.kernel_outputs->o, c.expected->o);
  const Case back = round_trip(path("kernel_outputs.h5"), c);
  ASSERT_TRUE(back.expected && back.kernel_outputs);
  EXPECT_EQ(back.expected->o, c.expected->o);
  EXPECT_EQ(back.kernel_outputs->o, c.kernel_outputs->o);
  EXPECT_EQ(back.kernel_outputs->final_state, c.kernel_outputs->final_state);
  EXPECT_EQ(back.kernel_outputs->chunk_states, c.kernel_outputs->chunk_states);
  EXPECT_EQ(back.kernel_outputs->written, (std::vector<char>{1, 0, 1}));

  c.kernel_outputs.reset();
  EXPECT_FALSE(round_trip(path("no_kernel_outputs.h5"), c).kernel_outputs);

  c.kernel_outputs = c.expected;
  c.kernel_outputs->o.pop_back();
  File file = File::create(path("bad_kernel_outputs.h5"));
  EXPECT_THROW(file.write_case("c", c), std::invalid_argument);
}

// A verify case stores L and expects the state after every token, though it has no token_states tensor.
TEST_F(CaseIo, VerifyCaseKeepsLAndItsExpectedTokenStates) {
  ProblemSpec s;
  s.mode = Mode::verify;
  s.lengths = {4, 4};
  s.state = StateSource::table;
  s.L = 4;
  s.indices = {1, 2, 3, 4, -1, -1, -1, -1};  // the second request is a padding row
  s.accepted = {2, 1};
  Case c;
  c.problem = random_problem(s);
  ASSERT_FALSE(c.problem.token_states);
  c.expected = run_reference<double>(c.problem, Algorithm::recurrent);
  ASSERT_EQ(c.expected->token_states.size(), static_cast<std::size_t>(8 * 16 * 16));
  const Case back = round_trip(path("verify.h5"), c);
  EXPECT_EQ(back.problem.mode, Mode::verify);
  EXPECT_EQ(back.problem.L, 4);
  expect_same_problem(c.problem, back.problem);
  ASSERT_TRUE(back.expected);
  EXPECT_EQ(back.expected->token_states, c.expected->token_states);
  EXPECT_EQ(back.expected->written, (std::vector<char>{1, 0}));
  EXPECT_TRUE(validate(back.problem, profile_strict()).empty()) << "the verify case read back is a valid call";

  edit(path("verify.h5"),
       [](hid_t f) { ASSERT_GE(H5Ldelete(f, "/cases/case/expected/token_states", H5P_DEFAULT), 0); });
  expect_format_error([&] { File::open(path("verify.h5")).read_case("case"); },
                      {"lacks 'token_states', which every verify case has"});
}

TEST_F(CaseIo, AttributeLBelongsToVerifyCasesOnly) {
  ProblemSpec s;
  s.mode = Mode::verify;
  s.lengths = {2};
  s.state = StateSource::scratch;
  Case verify;
  verify.problem = random_problem(s);
  Case prefill;
  prefill.problem = random_problem(ProblemSpec{});
  {
    File file = File::create(path("l.h5"));
    file.write_case("verify", verify);
    file.write_case("prefill", prefill);
    file.close();
  }
  edit(path("l.h5"), [](hid_t f) {
    ASSERT_GE(H5Adelete_by_name(f, "/cases/verify", "L", H5P_DEFAULT), 0);
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate_by_name(f, "/cases/prefill", "L", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT,
                                      H5P_DEFAULT);
    const i64 two = 2;
    ASSERT_GE(H5Awrite(a, H5T_NATIVE_INT64, &two), 0);
    H5Aclose(a), H5Sclose(space);
  });
  const File in = File::open(path("l.h5"));
  expect_format_error([&] { in.read_case("verify"); }, {"case 'verify'", "'L'"});
  expect_format_error([&] { in.read_case("prefill"); },
                      {"case 'prefill'", "holds attribute 'L', which only a verify case has"});
}

TEST_F(CaseIo, ToleranceOutputsMustBeOutputTensorsInOrder) {
  Case c;
  c.problem = random_problem(ProblemSpec{});
  c.tolerance = plain_tolerance(1e-3);
  File file = File::create(path("tolerance.h5"));
  c.tolerance->outputs = {{"q", 0, 0, 1}};
  EXPECT_THROW(file.write_case("not_an_output", c), std::invalid_argument);
  c.tolerance->outputs = {{"final_state", 0, 0, 1}, {"o", 0, 0, 1}};
  EXPECT_THROW(file.write_case("out_of_order", c), std::invalid_argument);
  c.tolerance->outputs = {{"o", 0, 0, 1}};
  file.write_case("c", c);
  file.close();
  edit(path("tolerance.h5"), [](hid_t f) {
    const hid_t g = H5Gcreate2(f, "/cases/c/tolerance/q", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(g, 0);
    H5Gclose(g);
  });
  expect_format_error([&] { File::open(path("tolerance.h5")).read_case("c"); },
                      {"case 'c', group 'tolerance'", "holds 'q', which is not an output tensor"});
}

TEST_F(CaseIo, ExpectedOutputsMustMatchTheProblem) {
  Case c;
  c.problem = random_problem(ProblemSpec{});
  c.expected = run_reference<double>(c.problem, Algorithm::recurrent);
  c.expected->o.pop_back();
  File file = File::create(path("bad.h5"));
  EXPECT_THROW(file.write_case("c", c), std::invalid_argument);
  EXPECT_TRUE(file.case_names().empty()) << "a refused case leaves nothing behind";
}

// Every contract case the project defines round-trips, and the contract still finds its violation.
TEST_F(CaseIo, ContractCasesRoundTripWithTheirViolation) {
  const std::vector<ContractCase> cases = contract_cases();
  File file = File::create(path("contract.h5"), {{"suite", "contract"}});
  std::vector<std::string> written;
  for (const ContractCase& cc : cases) {
    Case c{cc.problem, {{"profile", cc.profile->name}}, std::nullopt, ExpectedViolation{cc.rule, cc.message}, {}};
    file.write_case(cc.name, c);
    written.push_back(cc.name);
  }
  file.close();
  std::sort(written.begin(), written.end());
  const File in = File::open(path("contract.h5"));
  EXPECT_EQ(in.metadata(), (Metadata{{"suite", "contract"}}));
  EXPECT_EQ(in.case_names(), written);
  for (const ContractCase& cc : cases) {
    SCOPED_TRACE(cc.name);
    const Case back = in.read_case(cc.name, ViewCheck::well_formed_only);
    ASSERT_TRUE(back.violation);
    EXPECT_EQ(back.violation->rule, cc.rule);
    EXPECT_EQ(back.violation->message, cc.message);
    EXPECT_EQ(back.metadata.at("profile"), cc.profile->name);
    expect_same_problem(cc.problem, back.problem);
    const auto found = validate(back.problem, *cc.profile);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].rule, cc.rule);
    EXPECT_NE(found[0].message.find(cc.message), std::string::npos) << found[0].message;
  }
}

TEST_F(CaseIo, ViewsOutsideTheirBuffersNeedAContractCaseAndAnExplicitRead) {
  Case c;
  c.problem = random_problem(ProblemSpec{});
  c.problem.q.view.offset = 1;
  File file = File::create(path("oob.h5"));
  EXPECT_THROW(file.write_case("plain", c), std::invalid_argument);
  c.violation = ExpectedViolation{Rule::view_in_bounds, "reaches bytes"};
  file.write_case("contract", c);
  file.close();
  const File in = File::open(path("oob.h5"));
  expect_format_error([&] { in.read_case("contract"); },
                      {"case 'contract', tensor 'q'", "outside its", "-byte buffer 'q'"});
  EXPECT_EQ(in.read_case("contract", ViewCheck::well_formed_only).problem.q.view.offset, 1);
}

// ---- writer refusals ----

TEST_F(CaseIo, WriterRefusesWhatItCannotStore) {
  File file = File::create(path("refused.h5"));
  Case c;
  c.problem = random_problem(ProblemSpec{});
  Case mixed = c;
  mixed.problem.k = Tensor{c.problem.q.buffer, c.problem.k.view};
  mixed.problem.k.view.dtype = DType::i32;
  try {
    file.write_case("mixed", mixed);
    ADD_FAILURE() << "two dtypes on one buffer were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("one dtype per buffer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(file.write_case("a/b", c), std::invalid_argument);
  file.write_case("c", c);
  EXPECT_THROW(file.write_case("c", c), std::invalid_argument) << "a second case of one name";
  file.close();
  File in = File::open(path("refused.h5"));
  EXPECT_EQ(in.case_names(), std::vector<std::string>{"c"});
  EXPECT_THROW(in.write_case("d", c), std::invalid_argument) << "opened read-only";
}

// ---- determinism ----

TEST_F(CaseIo, IdenticalWritesGiveByteIdenticalFiles) {
  auto write = [&](const fs::path& p) {
    File file = File::create(p, {{"generator_run", "determinism"}});
    for (const auto& [name, spec] : specs()) {
      Case c;
      c.problem = random_problem(spec);
      c.metadata = {{"seed", "11"}};
      c.tolerance = plain_tolerance(5e-3);
      c.expected = run_reference<double>(c.problem, Algorithm::recurrent);
      file.write_case(name, c);
    }
    file.close();
  };
  write(path("a.h5"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // a second later: no times stored
  write(path("b.h5"));
  const auto a = bytes_of(path("a.h5")), b = bytes_of(path("b.h5"));
  ASSERT_GT(a.size(), 10000u);
  EXPECT_TRUE(a == b) << "files differ";
}

// ---- hostile files ----

class HostileFile : public CaseIo {
 protected:
  void SetUp() override {
    CaseIo::SetUp();
    ProblemSpec s;
    s.lengths = {80};  // q, k, v, g and o over 4 KiB: chunked, deflated and fletcher32-checked
    Case c;
    c.problem = random_problem(s);
    File file = File::create(good());
    file.write_case("c", c);
    file.close();
  }
  fs::path good() const { return path("good.h5"); }
};

TEST_F(HostileFile, TruncatedFile) {
  auto bytes = bytes_of(good());
  bytes.resize(bytes.size() / 2);
  write_bytes(path("half.h5"), bytes);
  expect_format_error([&] { File::open(path("half.h5")); },
                      {"golden file '", "half.h5'", "cannot be opened as an HDF5 file", "truncated"});
}

TEST_F(HostileFile, GarbageAndMissingFiles) {
  std::vector<char> garbage(4096);
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 131 + 7);
  write_bytes(path("garbage.h5"), garbage);
  expect_format_error([&] { File::open(path("garbage.h5")); }, {"cannot be opened as an HDF5 file"});
  expect_format_error([&] { File::open(path("absent.h5")); }, {"absent.h5", "cannot be opened"});
}

TEST_F(HostileFile, HdfFileOfAnotherKind) {
  H5Fclose(H5Fcreate(path("other.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  expect_format_error([&] { File::open(path("other.h5")); }, {"not a kda-oracle golden file"});
}

TEST_F(HostileFile, NewerSchemaVersion) {
  edit(good(), [](hid_t f) { set_int_attribute(f, "schema_version", 3); });
  expect_format_error([&] { File::open(good()); }, {"schema version 3, newer than this reader's version 2"});
}

TEST_F(HostileFile, SchemaVersionBeforeTheFirst) {
  edit(good(), [](hid_t f) { set_int_attribute(f, "schema_version", 0); });
  expect_format_error([&] { File::open(good()); },
                      {"schema version 0, which this reader does not read (it reads 1 to 2)"});
}

TEST_F(HostileFile, MissingCaseAndMissingTensor) {
  edit(good(), [](hid_t f) { ASSERT_GE(H5Ldelete(f, "/cases/c/tensors/k", H5P_DEFAULT), 0); });
  const File in = File::open(good());
  expect_format_error([&] { in.read_case("nope"); }, {"has no case 'nope'"});
  expect_format_error([&] { in.read_case("c"); }, {"case 'c'", "tensor 'k' is missing"});
}

// Replaces buffer q of case c by an f32 dataset of `elements` elements, never written (HDF5 then
// stores no data for it, whatever its size).
void replace_buffer_q(hid_t file, hsize_t elements) {
  const hid_t buffers = H5Gopen2(file, "/cases/c/buffers", H5P_DEFAULT);
  ASSERT_GE(H5Ldelete(buffers, "q", H5P_DEFAULT), 0);
  const hid_t space = H5Screate_simple(1, &elements, nullptr);
  const hid_t d = H5Dcreate2(buffers, "q", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  const hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, 3);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(d, "dtype", str, scalar, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Awrite(a, str, "f32"), 0);  // a fixed-length string, as h5py writes np.bytes_
  H5Aclose(a), H5Sclose(scalar), H5Tclose(str), H5Dclose(d), H5Sclose(space), H5Gclose(buffers);
}

TEST_F(HostileFile, BufferTooShortForItsView) {
  i64 elements = 0;
  edit(good(), [&](hid_t f) {
    elements = points(f, "/cases/c/buffers/q") - 1;
    replace_buffer_q(f, static_cast<hsize_t>(elements));
  });
  expect_format_error([&] { File::open(good()).read_case("c"); },
                      {"tensor 'q'", "outside its " + std::to_string(elements * 4) + "-byte buffer 'q'"});
}

// A buffer declared 1 GiB against 256 MiB available: refused before anything is allocated (else the
// read would go on and fail the input checksum), naming the case, the bytes and the limit.
TEST_F(HostileFile, AClaimBeyondTheMemoryAvailableIsRefusedBeforeReading) {
  edit(good(), [](hid_t f) { replace_buffer_q(f, hsize_t{1} << 28); });
  const test::ScopedEnv limit("KDA_MEMORY_LIMIT", "268435456");
  std::string message;
  try {
    File::open(good()).read_case("c");
  } catch (const MemoryError& e) {
    message = e.what();
  }
  for (const std::string fragment : {"good.h5', case 'c' needs 10737", "more than the 268435456 bytes", "KDA_MEMORY_LIMIT"})
    EXPECT_NE(message.find(fragment), std::string::npos) << "'" << message << "' lacks '" << fragment << "'";
}

TEST_F(HostileFile, ChangedInputByteFailsTheChecksum) {
  edit(good(), [](hid_t f) {
    const auto n = static_cast<std::size_t>(points(f, "/cases/c/buffers/k"));
    const hid_t d = H5Dopen2(f, "/cases/c/buffers/k", H5P_DEFAULT);
    std::vector<float> k(n);
    ASSERT_GE(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, k.data()), 0);
    k[n / 2] = std::nextafter(k[n / 2], 1.0f);
    ASSERT_GE(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, k.data()), 0);
    H5Dclose(d);
  });
  expect_format_error([&] { File::open(good()).read_case("c"); }, {"case 'c'", "input checksum mismatch"});
}

TEST_F(HostileFile, StridesThatOverflow) {
  edit(good(), [](hid_t f) {
    const hid_t t = H5Gopen2(f, "/cases/c/tensors/v", H5P_DEFAULT);
    set_int_array_attribute(t, "strides", {256, i64{1} << 62, 16, 1});  // 15 tokens * 2^62
    H5Gclose(t);
  });
  expect_format_error([&] { File::open(good()).read_case("c"); }, {"tensor 'v'", "index arithmetic overflows 64 bits"});
}

TEST_F(HostileFile, WrongElementType) {
  edit(good(), [](hid_t f) {
    const hid_t d = H5Dopen2(f, "/cases/c/buffers/beta", H5P_DEFAULT);
    H5Adelete(d, "dtype");
    const hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 4);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate2(d, "dtype", str, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, str, "bf16");
    H5Aclose(a), H5Sclose(scalar), H5Tclose(str), H5Dclose(d);
  });
  expect_format_error([&] { File::open(good()).read_case("c"); },
                      {"buffer 'beta'", "holds 4-byte float elements, expected uint16 (bf16 bit patterns)"});
}

// Found by fuzz_hdf5_readers: a group in HDF5's dense link storage with one byte of a fractal-heap block
// changed. Listed by position, libhdf5 1.10.8 freed uninitialised memory (a crash under AddressSanitizer,
// where fresh memory holds garbage; scripts/fuzz.sh replays this input there); listed in native order,
// HDF5 reports the bad checksum and the reader a FormatError.
TEST_F(HostileFile, CorruptedDenseGroupIsRefusedWithoutCrashing) {
  const fs::path file = fs::path(KDA_FUZZ_CORPUS) / "hdf5_readers" / "golden-dense-links-corrupted.h5";
  expect_format_error([&] { File::open(file).read_case("contract-varlen_batch_one"); },
                      {"case 'contract-varlen_batch_one': cannot list members (HDF5: incorrect metadata checksum"});
}

// Reads every case of a file in a child process. 0: read, 1: FormatError, 2: another exception,
// -signal: crashed. What the child printed on stderr goes to `printed`.
int read_in_child(const fs::path& file, const fs::path& printed) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen(printed.c_str(), "w", stderr)) ::_exit(3);
    int code = 0;
    try {
      const File in = File::open(file);
      for (const auto& name : in.case_names()) in.read_case(name);
    } catch (const FormatError&) {
      code = 1;
    } catch (const std::exception&) {
      code = 2;
    }
    ::_exit(code);  // no exit handlers: HDF5's leaks on corrupted input are not this test's subject
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
}

// Bit flips anywhere: refused with a FormatError (HDF5 checksums its metadata and, here, the chunks;
// strings are kept out of its unchecked global heap) or read as they are; never a crash, never a
// word on stderr. Each read runs in a child process, so a crash names its flip.
TEST_F(HostileFile, FlippedBitsNeverCrash) {
  const auto good_bytes = bytes_of(good());
  std::mt19937 rng(2024);
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    auto bytes = good_bytes;
    const std::size_t at = rng() % bytes.size();
    const int bit = static_cast<int>(rng() % 8);
    bytes[at] = static_cast<char>(bytes[at] ^ (1 << bit));
    write_bytes(path("flipped.h5"), bytes);
    const int outcome = read_in_child(path("flipped.h5"), path("stderr.txt"));
    ASSERT_GE(outcome, 0) << "signal " << -outcome << " reading with byte " << at << " bit " << bit << " flipped";
    EXPECT_NE(outcome, 2) << "byte " << at << " bit " << bit << ": another exception than FormatError";
    EXPECT_TRUE(bytes_of(path("stderr.txt")).empty()) << "byte " << at << " bit " << bit << ": printed on stderr";
    refused += outcome == 1;
  }
  EXPECT_GT(refused, 200) << "most flips must be detected";
}

}  // namespace
}  // namespace kda::golden
