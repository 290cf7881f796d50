// golden import: recorded calls (docs/golden.md) become Problems laid out exactly as recorded, with
// contents from the call, a safetensors file or the seed; bad calls and bad tensor files are refused
// with errors naming the file, the tensor and what is wrong.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "kda/golden/call_import.hpp"
#include "kda/golden/safetensors.hpp"

namespace kda::golden {
namespace {

namespace fs = std::filesystem;
using i64 = std::int64_t;

const fs::path kCalls = fs::path(KDA_CALLS_DIR);

class CallImport : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kda_call_import_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }

  // A safetensors file: the 8-byte little-endian header length, the JSON header, the data.
  fs::path write_safetensors(const std::string& name, const std::string& header, const std::vector<char>& data) const {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return write(name, bytes + header + std::string(data.begin(), data.end()));
  }

  // A decode call of one sequence whose q and k come from the tensors file (f32 [1,1,1,4]).
  std::string decode_call(const std::string& q_dtype = "f32") const {
    return R"({"schema": "kda-oracle/call", "version": 1, "entry": "test.decode", "mode": "decode",
      "options": {"l2norm_qk": true},
      "tensors": {
        "q": {"dtype": ")" + q_dtype + R"(", "shape": [1, 1, 1, 4], "strides": [8, 8, 8, 2], "offset": 1, "safetensors": "q"},
        "k": {"dtype": "f32", "shape": [1, 1, 1, 4], "safetensors": "k"},
        "v": {"dtype": "f32", "shape": [1, 1, 1, 4]}, "g": {"dtype": "f32", "shape": [1, 1, 1, 4]},
        "beta": {"dtype": "f32", "shape": [1, 1, 1]},
        "state_pool": {"dtype": "f32", "shape": [2, 1, 4, 4]},
        "state_indices": {"dtype": "i32", "shape": [1], "values": [1]},
        "o": {"dtype": "f32", "shape": [1, 1, 1, 4]}}})";
  }

  static std::vector<char> floats(const std::vector<float>& xs) {
    std::vector<char> out(xs.size() * 4);
    std::memcpy(out.data(), xs.data(), out.size());
    return out;
  }

  static std::string qk_header(const std::string& q_dtype = "F32", const std::string& q_end = "16") {
    return R"({"__metadata__": {"format": "pt"}, "q": {"dtype": ")" + q_dtype +
           R"(", "shape": [1, 1, 1, 4], "data_offsets": [0, )" + q_end +
           R"(]}, "k": {"dtype": "F32", "shape": [1, 1, 1, 4], "data_offsets": [16, 32]}})";
  }

  fs::path dir_;
};

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const ImportError& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST_F(CallImport, KeepsTheRecordedLayoutPoisonAndValues) {
  const ImportedCall call = import_call(kCalls / "varlen_prefill.json", std::nullopt, profile_strict());
  const Problem& p = call.problem;
  EXPECT_FALSE(call.violation);
  EXPECT_EQ(call.entry, "fla.ops.kda.chunk_kda");
  EXPECT_EQ(p.mode, Mode::prefill);
  EXPECT_EQ(p.N, 2);
  EXPECT_EQ(p.T, 20);
  EXPECT_EQ(p.HV, 2);
  EXPECT_EQ(p.q.view.strides, (Shape{400, 20, 16, 1}));
  EXPECT_EQ(p.q.view.offset, 3);
  EXPECT_EQ(p.cu_seqlens->integer_at(1), 7);
  // q's padding (elements 16..19 of each token row) and every output hold NaN; inputs are drawn.
  EXPECT_TRUE(std::isnan(load_element(p.q.buffer->data(), DType::bf16, 3 + 16)));
  EXPECT_TRUE(std::isnan(p.o.at({0, 5, 1, 3})));
  EXPECT_TRUE(std::isnan(p.final_state->at({1, 1, 2, 2})));
  EXPECT_TRUE(std::isfinite(p.q.at({0, 19, 0, 15})));
  EXPECT_TRUE(std::isfinite(p.initial_state->at({1, 1, 15, 15})));
  // The same seed draws the same inputs.
  const ImportedCall again = import_call(kCalls / "varlen_prefill.json", std::nullopt, profile_strict());
  EXPECT_EQ(std::memcmp(p.v.buffer->data(), again.problem.v.buffer->data(), p.v.buffer->size()), 0);
}

TEST_F(CallImport, PooledDecodeAndVerifyTable) {
  const ImportedCall decode = import_call(kCalls / "pooled_decode.json", std::nullopt, profile_strict());
  EXPECT_FALSE(decode.violation);
  EXPECT_EQ(decode.problem.state_indices->integer_at(1), -1);
  EXPECT_EQ(decode.problem.state_pool->view.offset, 32);
  const ImportedCall verify = import_call(kCalls / "verify_table.json", std::nullopt, profile_strict());
  EXPECT_FALSE(verify.violation);
  EXPECT_EQ(verify.problem.L, 3);
  EXPECT_EQ(verify.problem.state_indices->integer_at(1, 2), 6);  // column-major [2,3] table
  EXPECT_EQ(verify.problem.num_accepted->integer_at(0), 2);
  const Case c = golden_case(verify);
  ASSERT_TRUE(c.expected);
  ASSERT_TRUE(c.tolerance);
}

TEST_F(CallImport, AnInvalidCallIsAContractCase) {
  const ImportedCall call = import_call(kCalls / "decreasing_cu_seqlens.json", std::nullopt, profile_strict());
  ASSERT_TRUE(call.violation);
  EXPECT_EQ(call.violation->rule, Rule::cu_seqlens_monotonic);
  const Case c = golden_case(call);
  EXPECT_FALSE(c.expected);
  EXPECT_EQ(c.violation, call.violation);
}

TEST_F(CallImport, ContentsFromSafetensorsAreExact) {
  const std::vector<float> q{1.5f, -2.25f, 3.0f, 0.125f}, k{-1.0f, 0.5f, 0.25f, 2.0f};
  std::vector<float> both = q;
  both.insert(both.end(), k.begin(), k.end());
  const auto tensors = write_safetensors("t.safetensors", qk_header(), floats(both));
  const auto json = write("call.json", decode_call());
  const Problem p = import_call(json, tensors, profile_strict()).problem;
  for (i64 c = 0; c < 4; ++c) {
    EXPECT_EQ(p.q.at({0, 0, 0, c}), q[static_cast<std::size_t>(c)]);
    EXPECT_EQ(p.k.at({0, 0, 0, c}), k[static_cast<std::size_t>(c)]);
    // q's stride 2 leaves a gap between elements, and its offset one before: poison
    EXPECT_TRUE(std::isnan(load_element(p.q.buffer->data(), DType::f32, 2 * c)));
  }
}

TEST_F(CallImport, BadTensorFilesAreNamed) {
  const auto json = write("call.json", decode_call());
  const std::vector<char> data = floats({1, 2, 3, 4, 5, 6, 7, 8});
  // missing tensor
  const auto no_k = write_safetensors(
      "no_k.safetensors", R"({"q": {"dtype": "F32", "shape": [1, 1, 1, 4], "data_offsets": [0, 16]}})", data);
  expect_error([&] { import_call(json, no_k, profile_strict()); }, {"no_k.safetensors", "no tensor 'k'"});
  // dtype mismatch between the call and the file
  const auto bf16_q = write_safetensors("bf16.safetensors", qk_header("BF16", "8") , floats({1, 2, 3, 4, 5, 6, 7, 8}));
  expect_error([&] { import_call(json, bf16_q, profile_strict()); }, {"tensor 'q'", "dtype mismatch", "BF16", "f32"});
  // shape vs data size
  const auto short_q = write_safetensors("short.safetensors", qk_header("F32", "12"), data);
  expect_error([&] { import_call(json, short_q, profile_strict()); },
               {"short.safetensors", "tensor 'q'", "take 16 bytes, its data_offsets 12"});
  // truncated file: the data stops before k's end, or the header runs past the end
  const auto truncated = write_safetensors("cut.safetensors", qk_header(), floats({1, 2, 3, 4, 5}));
  expect_error([&] { import_call(json, truncated, profile_strict()); }, {"cut.safetensors", "tensor 'k'", "truncated"});
  const auto cut_header = write("cut_header.safetensors", std::string("\xff\x00\x00\x00\x00\x00\x00\x00{\"q\"", 12));
  expect_error([&] { import_call(json, cut_header, profile_strict()); }, {"cut_header.safetensors", "truncated", "255"});
  // a key without a tensors file
  expect_error([&] { import_call(json, std::nullopt, profile_strict()); }, {"names safetensors key", "no tensors file"});
}

TEST_F(CallImport, BadCallsAreNamed) {
  std::string call = decode_call();
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = call;
    text.replace(text.find(from), from.size(), to);
    return write("bad.json", text);
  };
  expect_error([&] { import_call(with(R"("values": [1])", R"("values": [1, 2])"), std::nullopt, profile_strict()); },
               {"bad.json", "tensor 'state_indices'", "2 values", "1 elements"});
  expect_error([&] { import_call(with(R"(, "values": [1])", ""), std::nullopt, profile_strict()); },
               {"tensor 'state_indices' needs its contents"});
  expect_error([&] { import_call(with(R"("o": {)", R"("out": {)"), std::nullopt, profile_strict()); },
               {"unknown tensor 'out'"});
  expect_error([&] { import_call(with(R"("v": {"dtype": "f32", "shape": [1, 1, 1, 4]}, )", ""), std::nullopt,
                                 profile_strict()); },
               {"tensor 'v' is missing"});
  expect_error([&] { import_call(with(R"("l2norm_qk")", R"("l2norm")"), std::nullopt, profile_strict()); },
               {"unknown option 'l2norm'"});
  expect_error([&] { import_call(with(R"("version": 1)", R"("version": 9)"), std::nullopt, profile_strict()); },
               {"version 9"});
  expect_error([&] { import_call(with(R"("dtype": "f32", "shape": [1, 1, 1, 4], "safetensors": "k")", R"("dtype": "fp8", "shape": [1, 1, 1, 4])"),
                                 std::nullopt, profile_strict()); },
               {"tensor 'k'", "unknown dtype 'fp8'"});
}

}  // namespace
}  // namespace kda::golden
