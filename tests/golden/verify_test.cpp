// Verification against a golden file: live kernels and results files judged alike; a perturbed
// element, a changed gap byte, a wrong rejection, a missing result each fail the case they belong
// to and no other; results files that do not fit their cases are refused with a FormatError.
#include <gtest/gtest.h>

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "../support/scoped_env.hpp"
#include "kda/golden/generate.hpp"
#include "kda/golden/verify.hpp"
#include "kda/memory.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::golden {
namespace {

namespace fs = std::filesystem;

class Verify : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("kda_verify_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    generate(smoke_suite(), golden_path());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static fs::path golden_path() { return dir_ / "smoke.h5"; }
  static fs::path path(const std::string& name) { return dir_ / name; }

  // A results file of the fp64 reference's outputs on every case; `change` may alter a case's problem
  // after the run (return true to have written the case itself instead).
  using Change = std::function<bool(const std::string& name, Case& c, ResultsFile& out)>;
  static fs::path results(const std::string& file, const Change& change = {}) {
    const File golden = File::open(golden_path());
    auto kernel = make_reference_kernel(Precision::fp64, Algorithm::recurrent);
    ResultsFile out = ResultsFile::create(path(file), "test");
    for (const auto& name : golden.case_names()) {
      Case c = golden.read_case(name, ViewCheck::inside_buffers_unless_contract);
      if (change && change(name, c, out)) continue;
      if (c.violation)
        out.write_rejection(name, {std::string(kda::name_of(c.violation->rule)), c.violation->message});
      else if (kernel->run(c.problem).status == RunOutcome::Status::ok)
        out.write_outputs(name, c.problem);
    }
    out.close();
    return path(file);
  }

  static std::vector<CaseReport> verify_results(const fs::path& file) {
    return verify(File::open(golden_path()), ResultsFile::open(file));
  }

 private:
  static inline fs::path dir_;
};

const CaseReport& find(const std::vector<CaseReport>& reports, const std::string& name) {
  const auto at = std::find_if(reports.begin(), reports.end(), [&](const CaseReport& r) { return r.name == name; });
  if (at == reports.end()) throw std::runtime_error("no report for " + name);
  return *at;
}

// Every case passed (or was skipped) but the named ones, which failed.
void expect_failed_exactly(const std::vector<CaseReport>& reports, std::vector<std::string> failing) {
  for (const auto& r : reports) {
    const bool expected = std::find(failing.begin(), failing.end(), r.name) != failing.end();
    EXPECT_EQ(r.outcome == Outcome::failed, expected) << r.name << (r.notes.empty() ? "" : ": " + r.notes[0]);
  }
}

bool mentions(const CaseReport& r, const std::string& fragment) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](auto& n) { return n.find(fragment) != std::string::npos; });
}

TEST_F(Verify, EveryReferenceKernelPassesTheSmokeSuite) {
  const File golden = File::open(golden_path());
  for (auto precision : {Precision::fp64, Precision::fp32})
    for (auto algorithm : {Algorithm::recurrent, Algorithm::chunked}) {
      auto kernel = make_reference_kernel(precision, algorithm);
      SCOPED_TRACE(kernel->name());
      const auto reports = verify(golden, *kernel);
      ASSERT_EQ(reports.size(), smoke_suite().cases.size() + smoke_suite().contract_cases.size());
      expect_failed_exactly(reports, {});
      for (const auto& r : reports) EXPECT_EQ(r.outcome, Outcome::passed) << r.name;
      EXPECT_TRUE(find(reports, "contract-chunk_size").expected_rule);
      EXPECT_EQ(find(reports, "decode_batch").outputs.size(), 2u) << "o and the pool's final states";
    }
}

TEST_F(Verify, SavedResultsAreJudgedLikeTheLiveRun) {
  const File golden = File::open(golden_path());
  auto kernel = make_reference_kernel(Precision::fp32, Algorithm::chunked);
  ResultsFile saved = ResultsFile::create(path("saved.h5"), kernel->name());
  const auto live = verify(golden, *kernel, {}, &saved);
  saved.close();
  const ResultsFile stored = ResultsFile::open(path("saved.h5"));
  EXPECT_EQ(stored.kernel(), "ref-fp32-chunked");
  const auto replayed = verify(golden, stored);
  ASSERT_EQ(live.size(), replayed.size());
  for (std::size_t i = 0; i < live.size(); ++i) {
    EXPECT_EQ(live[i].name, replayed[i].name);
    EXPECT_EQ(live[i].outcome, replayed[i].outcome) << live[i].name;
    ASSERT_EQ(live[i].outputs.size(), replayed[i].outputs.size()) << live[i].name;
    for (std::size_t j = 0; j < live[i].outputs.size(); ++j)
      EXPECT_EQ(live[i].outputs[j].rel_rms, replayed[i].outputs[j].rel_rms) << live[i].name;
  }
}

TEST_F(Verify, OnePerturbedElementFailsItsCaseOnly) {
  const auto file = results("perturbed.h5", [](const std::string& name, Case& c, ResultsFile& out) {
    if (name != "chunk_boundaries") return false;
    make_reference_kernel(Precision::fp64, Algorithm::recurrent)->run(c.problem);
    c.problem.o.set({0, 100, 0, 3}, c.problem.o.at({0, 100, 0, 3}) + 0.25);
    out.write_outputs(name, c.problem);
    return true;
  });
  const auto reports = verify_results(file);
  expect_failed_exactly(reports, {"chunk_boundaries"});
  const CaseReport& r = find(reports, "chunk_boundaries");
  ASSERT_FALSE(r.outputs.empty());
  EXPECT_EQ(r.outputs[0].tensor, "o");
  EXPECT_FALSE(r.outputs[0].passed());
  EXPECT_EQ(r.outputs[0].worst.sequence, 1) << "token 100 is token 37 of the second sequence";
  EXPECT_EQ(r.outputs[0].worst.token, 37);
  for (std::size_t i = 1; i < r.outputs.size(); ++i) EXPECT_TRUE(r.outputs[i].passed()) << r.outputs[i].tensor;
}

TEST_F(Verify, AWriteOutsideTheOutputViewsFails) {
  // The strided case's o has a padded token stride: element 0 of its buffer is a leading gap.
  const auto file = results("gap.h5", [](const std::string& name, Case& c, ResultsFile& out) {
    if (name != "strided_inputs") return false;
    make_reference_kernel(Precision::fp64, Algorithm::recurrent)->run(c.problem);
    EXPECT_GT(c.problem.o.view.offset, 0);
    store_element(c.problem.o.buffer->data(), c.problem.o.dtype(), 0, 1.0);
    out.write_outputs(name, c.problem);
    return true;
  });
  const auto reports = verify_results(file);
  expect_failed_exactly(reports, {"strided_inputs"});
  const CaseReport& r = find(reports, "strided_inputs");
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_NE(r.changes[0].find("o:"), std::string::npos) << r.changes[0];
  for (const auto& t : r.outputs) EXPECT_TRUE(t.passed()) << t.tensor;
}

TEST_F(Verify, RejectionsAreJudgedByRule) {
  const auto file = results("rejections.h5", [](const std::string& name, Case&, ResultsFile& out) {
    if (name == "decode_batch") out.write_rejection(name, {"state_pool_alignment", "not today"});
    else if (name == "contract-chunk_size") out.write_rejection(name, {"lower_bound_range", "wrong rule"});
    else if (name == "contract-view_in_bounds") out.write_unsupported(name, "no bounds checks in this kernel");
    else return false;
    return true;
  });
  const auto reports = verify_results(file);
  expect_failed_exactly(reports, {"decode_batch", "contract-chunk_size"});
  EXPECT_TRUE(mentions(find(reports, "decode_batch"), "rejected a valid call: state_pool_alignment: not today"));
  EXPECT_TRUE(mentions(find(reports, "contract-chunk_size"), "rejected, but not for chunk_size: lower_bound_range"));
  EXPECT_EQ(find(reports, "contract-view_in_bounds").outcome, Outcome::skipped);
}

TEST_F(Verify, AnAcceptedContractCaseFails) {
  const auto file = results("accepted.h5", [](const std::string& name, Case& c, ResultsFile& out) {
    if (name != "contract-chunk_size") return false;
    out.write_outputs(name, c.problem);  // whatever was in the buffers: the call was not rejected
    return true;
  });
  const auto reports = verify_results(file);
  expect_failed_exactly(reports, {"contract-chunk_size"});
  EXPECT_TRUE(mentions(find(reports, "contract-chunk_size"), "instead of rejecting it"));
}

TEST_F(Verify, MissingAndUnknownCasesFail) {
  const auto file = results("missing.h5", [](const std::string& name, Case&, ResultsFile& out) {
    if (name != "decode_batch") return false;
    out.write_unsupported("decode_batch_typo", "a case the golden file does not have");
    return true;
  });
  const auto reports = verify_results(file);
  expect_failed_exactly(reports, {"decode_batch", "decode_batch_typo"});
  EXPECT_TRUE(mentions(find(reports, "decode_batch"), "no result for this case"));
  EXPECT_TRUE(mentions(find(reports, "decode_batch_typo"), "golden file has no case of this name"));
}

// ---- results files that do not fit, or are damaged ----

void expect_format_error(const std::function<void()>& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "no FormatError";
  } catch (const FormatError& e) {
    for (const auto& fragment : fragments) EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

void edit(const fs::path& file, const std::function<void(hid_t)>& change) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  change(f);
  ASSERT_GE(H5Fclose(f), 0);
}

void string_attribute(hid_t object, const char* name, const std::string& value) {
  if (H5Aexists(object, name) > 0) H5Adelete(object, name);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size());
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(object, name, type, scalar, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Awrite(a, type, value.c_str()), 0);
  H5Aclose(a), H5Sclose(scalar), H5Tclose(type);
}

// Replaces a dataset with `dims` elements of `type` (zeros) and the given dtype attribute.
void replace_dataset(hid_t file, const std::string& at, hid_t type, std::vector<hsize_t> dims, const std::string& dtype) {
  H5Ldelete(file, at.c_str(), H5P_DEFAULT);
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t d = H5Dcreate2(file, at.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(d, 0) << at;
  string_attribute(d, "dtype", dtype);
  H5Dclose(d), H5Sclose(space);
}

TEST_F(Verify, ResultBuffersThatDoNotFitTheCaseAreRefused) {
  const fs::path good = results("fits.h5");
  const std::string o = "/cases/chunk_boundaries/o";
  const auto elements = static_cast<hsize_t>(File::open(golden_path()).read_case("chunk_boundaries").problem.o.numel());
  struct Damage {
    std::string name;
    std::function<void(hid_t)> change;
    std::initializer_list<std::string> fragments;
  };
  const Damage damages[] = {
      {"other dtype", [&](hid_t f) { replace_dataset(f, o, H5T_IEEE_F64LE, {elements}, "f64"); },
       {"results file '", "case 'chunk_boundaries'", "output 'o' holds f64 elements, the case's buffer f32"}},
      {"short", [&](hid_t f) { replace_dataset(f, o, H5T_IEEE_F32LE, {elements - 1}, "f32"); },
       {"output 'o' holds " + std::to_string(elements - 1) + " elements, the case's whole buffer"}},
      {"missing", [&](hid_t f) { H5Ldelete(f, o.c_str(), H5P_DEFAULT); }, {"output 'o' is missing"}},
      {"2-D", [&](hid_t f) { replace_dataset(f, o, H5T_IEEE_F32LE, {2, elements / 2}, "f32"); },
       {"output 'o'", "is not a 1-D array"}},
      {"wrong element type", [&](hid_t f) { replace_dataset(f, o, H5T_STD_I32LE, {elements}, "f32"); },
       {"output 'o'", "holds 4-byte signed integer elements, expected float32"}},
      {"unknown dtype", [&](hid_t f) { replace_dataset(f, o, H5T_IEEE_F32LE, {elements}, "f24"); },
       {"dtype 'f24' is not one of"}},
      {"unknown output", [&](hid_t f) { replace_dataset(f, "/cases/chunk_boundaries/p", H5T_IEEE_F32LE, {4}, "f32"); },
       {"holds 'p', which is not an output tensor"}},
      {"outputs and a rejection",
       [&](hid_t f) {
         const hid_t g = H5Gopen2(f, "/cases/chunk_boundaries", H5P_DEFAULT);
         string_attribute(g, "rejected_rule", "chunk_size");
         H5Gclose(g);
       },
       {"must hold exactly one of"}},
      {"rejection without message",
       [&](hid_t f) {
         const hid_t g = H5Gopen2(f, "/cases/contract-chunk_size", H5P_DEFAULT);
         H5Adelete(g, "rejected_message");
         H5Gclose(g);
       },
       {"case 'contract-chunk_size'", "attribute 'rejected_message' is missing"}},
  };
  for (const auto& damage : damages) {
    SCOPED_TRACE(damage.name);
    const fs::path bad = path("damaged.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    edit(bad, damage.change);
    expect_format_error([&] { verify_results(bad); }, damage.fragments);
  }
}

// An output declared 1 GiB against 256 MiB available: refused before it is read (else the reader would
// allocate it, and only then find that it does not fit the case).
// A program that times its own calls (the Python adapter kit) stores each call's wall seconds as the
// case's attribute `seconds`; absent, there is none.
TEST_F(Verify, ACallsOwnSecondsAreReadWhenStored) {
  const fs::path file = results("timed.h5");
  EXPECT_FALSE(ResultsFile::open(file).read("chunk_boundaries").seconds);
  edit(file, [](hid_t f) {
    const hid_t g = H5Gopen2(f, "/cases/chunk_boundaries", H5P_DEFAULT);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate2(g, "seconds", H5T_IEEE_F64LE, scalar, H5P_DEFAULT, H5P_DEFAULT);
    const double seconds = 0.25;
    ASSERT_GE(H5Awrite(a, H5T_NATIVE_DOUBLE, &seconds), 0);
    H5Aclose(a), H5Sclose(scalar), H5Gclose(g);
  });
  EXPECT_EQ(ResultsFile::open(file).read("chunk_boundaries").seconds, 0.25);
}

TEST_F(Verify, ResultBuffersBeyondTheMemoryAvailableAreRefusedBeforeReading) {
  const fs::path huge = results("huge.h5");
  edit(huge, [](hid_t f) { replace_dataset(f, "/cases/chunk_boundaries/o", H5T_IEEE_F32LE, {hsize_t{1} << 28}, "f32"); });
  const test::ScopedEnv limit("KDA_MEMORY_LIMIT", "268435456");
  std::string message;
  try {
    ResultsFile::open(huge).read("chunk_boundaries");
  } catch (const MemoryError& e) {
    message = e.what();
  }
  for (const std::string fragment : {"huge.h5', case 'chunk_boundaries' needs 10737", "more than the 268435456 bytes"})
    EXPECT_NE(message.find(fragment), std::string::npos) << "'" << message << "' lacks '" << fragment << "'";
}

TEST_F(Verify, DamagedResultsFilesAreRefused) {
  const fs::path good = results("header.h5");
  auto damaged = [&](const std::function<void(hid_t)>& change) {
    fs::copy_file(good, path("damaged.h5"), fs::copy_options::overwrite_existing);
    edit(path("damaged.h5"), change);
    return path("damaged.h5");
  };
  expect_format_error([&] {
    ResultsFile::open(damaged([](hid_t f) {
      const std::int64_t two = 2;
      const hid_t a = H5Aopen(f, "schema_version", H5P_DEFAULT);
      H5Awrite(a, H5T_NATIVE_INT64, &two);
      H5Aclose(a);
    }));
  }, {"results file '", "schema version 2, newer than this reader's version 1"});
  expect_format_error([&] { ResultsFile::open(damaged([](hid_t f) { H5Adelete(f, "kernel"); })); },
                      {"attribute 'kernel' is missing"});
  expect_format_error([&] { ResultsFile::open(damaged([](hid_t f) { H5Ldelete(f, "cases", H5P_DEFAULT); })); },
                      {"group 'cases' is missing"});
  expect_format_error([&] { ResultsFile::open(golden_path()); },
                      {"has schema 'kda-oracle/golden', this reader reads 'kda-oracle/results'"});
  std::ifstream in(good, std::ios::binary);
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  bytes.resize(bytes.size() / 2);
  std::ofstream(path("truncated.h5"), std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  expect_format_error([&] { ResultsFile::open(path("truncated.h5")); }, {"cannot be opened as an HDF5 file"});
}

// A verify case's results carry every buffer the call may write: the pool (index-table form) or
// the scratch buffer and the pool (scratch form); a wrong per-token state fails that case only, and so
// does a scratch-form run that writes the committed pool.
TEST_F(Verify, VerifyCasesAreJudgedWhereTheirFormStoresTheStates) {
  const File golden = File::open(golden_path());
  const fs::path good = results("verify.h5");
  const ResultsFile stored = ResultsFile::open(good);
  auto names = [](const CaseResult& r) {
    std::vector<std::string> out;
    for (const auto& b : r.outputs) out.push_back(b.tensor);
    return out;
  };
  EXPECT_EQ(names(stored.read("verify_table")), (std::vector<std::string>{"state_pool", "o"}));
  EXPECT_EQ(names(stored.read("verify_scratch")), (std::vector<std::string>{"state_pool", "o", "scratch_states"}));
  expect_failed_exactly(verify_results(good), {});

  // The state after token 2 of request 0, in scratch row 2 (the row map sends request 0 there).
  const auto scratch = results("verify_scratch_state.h5", [](const std::string& name, Case& c, ResultsFile& out) {
    if (name != "verify_scratch") return false;
    make_reference_kernel(Precision::fp64, Algorithm::recurrent)->run(c.problem);
    Tensor& st = *c.problem.scratch_states;
    st.set({2, 2, 1, 3, 4}, st.at({2, 2, 1, 3, 4}) + 0.5);
    out.write_outputs(name, c.problem);
    return true;
  });
  const auto reports = verify_results(scratch);
  expect_failed_exactly(reports, {"verify_scratch"});
  const CaseReport& r = find(reports, "verify_scratch");
  const auto states =
      std::find_if(r.outputs.begin(), r.outputs.end(), [](auto& t) { return t.tensor == "scratch_states"; });
  ASSERT_NE(states, r.outputs.end()) << "a verify case is judged on the state after every token, where it is stored";
  EXPECT_FALSE(states->passed());

  // The scratch form only reads the pool: a run that also commits a state there fails.
  const auto pool = results("verify_scratch_pool.h5", [](const std::string& name, Case& c, ResultsFile& out) {
    if (name != "verify_scratch") return false;
    make_reference_kernel(Precision::fp64, Algorithm::recurrent)->run(c.problem);
    Tensor& sp = *c.problem.state_pool;
    sp.set({3, 0, 0, 0}, sp.at({3, 0, 0, 0}) + 1.0);  // slot 3: request 0's committed state
    out.write_outputs(name, c.problem);
    return true;
  });
  const auto pool_reports = verify_results(pool);
  expect_failed_exactly(pool_reports, {"verify_scratch"});
  EXPECT_FALSE(find(pool_reports, "verify_scratch").changes.empty()) << "the committed pool changed";
}

// Schema version 1 (before verify calls) lays out every other case as version 2 does: such a file
// still opens and verifies.
TEST_F(Verify, ASchemaVersionOneFileStillVerifies) {
  const Suite& suite = smoke_suite();
  {
    File v1 = File::create(path("v1.h5"));
    for (const SuiteCase& c : suite.cases)
      if (c.spec.problem.mode != Mode::verify) v1.write_case(c.name, golden_case(suite, c));
    v1.close();
  }
  edit(path("v1.h5"), [](hid_t f) {
    const std::int64_t one = 1;
    const hid_t a = H5Aopen(f, "schema_version", H5P_DEFAULT);
    ASSERT_GE(H5Awrite(a, H5T_NATIVE_INT64, &one), 0);
    H5Aclose(a);
  });
  const auto reports = verify(File::open(path("v1.h5")), *make_reference_kernel(Precision::fp64, Algorithm::recurrent));
  ASSERT_EQ(reports.size(), 7u);
  for (const auto& r : reports) EXPECT_EQ(r.outcome, Outcome::passed) << r.name;
}

TEST_F(Verify, ACaseWithoutExpectedOutputsIsNotAGoldenCase) {
  Case c = File::open(golden_path()).read_case("decode_batch");
  c.expected.reset();
  auto kernel = make_reference_kernel(Precision::fp64, Algorithm::recurrent);
  expect_format_error([&] { verify_case("decode_batch", c, *kernel); },
                      {"case 'decode_batch' is not a golden case: it has no expected outputs"});
}

}  // namespace
}  // namespace kda::golden
