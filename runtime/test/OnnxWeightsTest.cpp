//===- OnnxWeightsTest.cpp - reading the initializers of ONNX files -------===//
//
// Reads the models onnx_weights_fixtures.py wrote into $DTRAIN_ONNX_FIXTURES
// (with the onnx package, or encoded by hand for the wire-format corner
// cases) and checks every initializer element by element against
// expectedValue(), the mirror of the script's value(); checks that malformed
// files and initializers are rejected with one-line messages naming the file
// and the initializer; and that no truncation or corruption of a valid file
// crashes the reader.
//
//===----------------------------------------------------------------------===//

#include "OnnxWeights.h"
#include "ElementAccess.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

using namespace dtrain::rt;
using namespace dtrain::rt::test;

namespace {

std::string fixtureDir() {
  const char *dir = std::getenv("DTRAIN_ONNX_FIXTURES");
  return dir ? dir : "";
}
std::string in(const std::string &name) { return fixtureDir() + "/" + name; }

/// Mirrors value() of onnx_weights_fixtures.py.
double expectedValue(int64_t i, int32_t dtype) {
  const double b = double((i * 7) % 23 - 11);
  switch (dtype) {
  case DTRAIN_RT_F32:
    return b * 0.25 + double(i) * std::ldexp(1.0, -12);
  case DTRAIN_RT_F64:
    return b * 0.25 + double(i) * std::ldexp(1.0, -40);
  case DTRAIN_RT_I64:
    return b * 1000000007000.0;
  case DTRAIN_RT_I32:
    return b * 100000007.0;
  default: // f16, bf16
    return b * 0.25;
  }
}

/// The message of the Failure that BODY throws ("" when it does not).
template <typename Body> std::string failureOf(Body &&body) {
  try {
    body();
  } catch (const Failure &f) {
    return f.message;
  }
  return "";
}

/// Opens PATH, failing the test (and returning null) when it cannot.
std::unique_ptr<OnnxInitializers> openOrFail(const std::string &path) {
  std::unique_ptr<OnnxInitializers> model;
  std::string error = failureOf([&] { model = OnnxInitializers::open(path); });
  EXPECT_EQ(error, "");
  return model;
}

/// Reads initializer NAME of MODEL and checks its type, shape and values.
void expectTensor(const OnnxInitializers &model, const std::string &name,
                  int32_t dtype, std::vector<int64_t> dims) {
  SCOPED_TRACE(name);
  const OnnxTensor *t = nullptr;
  ASSERT_EQ(failureOf([&] { t = &model.lookup(name); }), "");
  EXPECT_EQ(t->name, name);
  ASSERT_EQ(t->dtype, dtype);
  ASSERT_EQ(t->dims, dims);
  const int64_t n = OnnxInitializers::numElements(*t);
  // A guard element on each side catches writes out of bounds.
  const size_t size = size_t(dtypeSize(dtype));
  std::vector<char> buffer((size_t(n) + 2) * size, '\x5a');
  ASSERT_EQ(failureOf([&] {
              model.read(*t, buffer.data() + size, size_t(n) * size);
            }),
            "");
  for (size_t i = 0; i < size; ++i) {
    EXPECT_EQ(buffer[i], '\x5a');
    EXPECT_EQ(buffer[(size_t(n) + 1) * size + i], '\x5a');
  }
  for (int64_t i = 0, mismatches = 0; i < n && mismatches < 5; ++i) {
    double got = loadElement(buffer.data() + size, dtype, i);
    if (got != expectedValue(i, dtype)) {
      ++mismatches;
      ADD_FAILURE() << "element " << i << ": " << got << ", expected "
                    << expectedValue(i, dtype);
    }
  }
}

/// Expects reading initializer NAME of PATH (lookup, then read) to fail
/// with a one-line message that names PATH and the initializer and contains
/// WHAT.
void expectReadError(const std::string &path, const std::string &name,
                     const std::string &what) {
  SCOPED_TRACE(path + ": " + name);
  auto model = openOrFail(path);
  ASSERT_TRUE(model);
  std::string error = failureOf([&] {
    const OnnxTensor &t = model->lookup(name);
    std::vector<char> buffer(
        size_t(OnnxInitializers::numElements(t) * dtypeSize(t.dtype)));
    model->read(t, buffer.data(), buffer.size());
  });
  ASSERT_NE(error, "") << "no error";
  EXPECT_EQ(error.rfind(path + ": initializer '" + name + "': ", 0), 0u)
      << error;
  EXPECT_NE(error.find(what), std::string::npos)
      << "message: " << error << "\nexpected to contain: " << what;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

/// Expects opening PATH to fail with a message starting with PATH and
/// containing WHAT.
void expectOpenError(const std::string &path, const std::string &what) {
  SCOPED_TRACE(path);
  std::string error = failureOf([&] { OnnxInitializers::open(path); });
  ASSERT_NE(error, "") << "no error";
  EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  EXPECT_NE(error.find(what), std::string::npos)
      << "message: " << error << "\nexpected to contain: " << what;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

class OnnxWeightsTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(fixtureDir().empty())
        << "DTRAIN_ONNX_FIXTURES is not set (ctest sets it and runs "
           "onnx_weights_fixtures.py generate first)";
    struct stat st;
    ASSERT_EQ(::stat(in("types.onnx").c_str(), &st), 0)
        << "no fixtures in " << fixtureDir();
  }
};

//===--- Reading ----------------------------------------------------------===//

struct TypeCase {
  const char *name;
  int32_t dtype;
};
const TypeCase typeCases[] = {
    {"f32", DTRAIN_RT_F32},   {"f64", DTRAIN_RT_F64}, {"f16", DTRAIN_RT_F16},
    {"bf16", DTRAIN_RT_BF16}, {"i64", DTRAIN_RT_I64}, {"i32", DTRAIN_RT_I32},
};

TEST_F(OnnxWeightsTest, ReadsEveryTypeTypedAndRaw) {
  auto model = openOrFail(in("types.onnx"));
  ASSERT_TRUE(model);
  for (const TypeCase &c : typeCases) {
    expectTensor(*model, c.name, c.dtype, {3, 4});
    expectTensor(*model, std::string(c.name) + "_raw", c.dtype, {2, 3});
  }
}

TEST_F(OnnxWeightsTest, ReadsScalarsEmptyTensorsAndOddNames) {
  auto model = openOrFail(in("types.onnx"));
  ASSERT_TRUE(model);
  float scalar = 0;
  const OnnxTensor &t = model->lookup("scalar");
  EXPECT_TRUE(t.dims.empty());
  EXPECT_EQ(OnnxInitializers::numElements(t), 1);
  model->read(t, &scalar, sizeof scalar);
  EXPECT_EQ(scalar, 3.5f);
  int64_t scalarI64 = 0;
  model->read(model->lookup("scalar_i64"), &scalarI64, sizeof scalarI64);
  EXPECT_EQ(scalarI64, -7);
  const OnnxTensor &empty = model->lookup("empty");
  EXPECT_EQ(empty.dims, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(OnnxInitializers::numElements(empty), 0);
  model->read(empty, nullptr, 0);
  expectTensor(*model, "layer.1/weight name", DTRAIN_RT_F32, {5});
}

TEST_F(OnnxWeightsTest, ListsTheInitializersInFileOrder) {
  auto model = openOrFail(in("types.onnx"));
  ASSERT_TRUE(model);
  std::vector<std::string> names;
  for (const OnnxTensor &t : model->tensors())
    names.push_back(t.name);
  ASSERT_EQ(names.size(), 17u);
  EXPECT_EQ(names[0], "f32");
  EXPECT_EQ(names[1], "f32_raw");
  EXPECT_EQ(names.back(), "u8");
  // The unsupported type is indexed (a model may have such initializers);
  // only reading it fails.
  EXPECT_EQ(model->tensors().back().dtype, -1);
}

TEST_F(OnnxWeightsTest, ReadsUnusualEncodings) {
  // Unpacked repeated fields, fields split over several occurrences,
  // unknown fields, the last of two names.
  auto model = openOrFail(in("crafted.onnx"));
  ASSERT_TRUE(model);
  expectTensor(*model, "f32_unpacked", DTRAIN_RT_F32, {2, 2});
  expectTensor(*model, "f64_unpacked", DTRAIN_RT_F64, {3});
  expectTensor(*model, "i64_unpacked", DTRAIN_RT_I64, {5});
  expectTensor(*model, "f32_split", DTRAIN_RT_F32, {2, 2});
  expectTensor(*model, "dims_split", DTRAIN_RT_F32, {2, 3});
  expectTensor(*model, "last_name", DTRAIN_RT_F32, {});
  EXPECT_NE(failureOf([&] { model->lookup("first_name"); }), "");
  // Two graph fields merge, as protobuf parses them.
  auto merged = openOrFail(in("two_graphs.onnx"));
  ASSERT_TRUE(merged);
  expectTensor(*merged, "f32_unpacked", DTRAIN_RT_F32, {2, 2});
  expectTensor(*merged, "f64_unpacked", DTRAIN_RT_F64, {3});
}

TEST_F(OnnxWeightsTest, ReadsExternalData) {
  auto model = openOrFail(in("external.onnx"));
  ASSERT_TRUE(model);
  expectTensor(*model, "f32", DTRAIN_RT_F32, {3, 4});
  expectTensor(*model, "i64", DTRAIN_RT_I64, {5});
  expectTensor(*model, "f16", DTRAIN_RT_F16, {6});
  expectTensor(*model, "scalar", DTRAIN_RT_F32, {});
  // The location is relative to the model's directory, not to the working
  // directory.
  auto sub = openOrFail(in("sub/model.onnx"));
  ASSERT_TRUE(sub);
  expectTensor(*sub, "w", DTRAIN_RT_F32, {2, 3});
  // Without offset and length, the whole file; with an offset.
  auto bad = openOrFail(in("bad_external.onnx"));
  ASSERT_TRUE(bad);
  expectTensor(*bad, "no_length_exact", DTRAIN_RT_F32, {4});
  float pair[2];
  bad->read(bad->lookup("with_offset"), pair, sizeof pair);
  EXPECT_EQ(pair[0], float(expectedValue(2, DTRAIN_RT_F32)));
  EXPECT_EQ(pair[1], float(expectedValue(3, DTRAIN_RT_F32)));
}

//===--- Errors -----------------------------------------------------------===//

TEST_F(OnnxWeightsTest, RejectsBadInitializers) {
  const std::string bad = in("bad_tensors.onnx");
  expectReadError(bad, "raw_short",
                  "raw_data holds 12 bytes, but shape 4 of FLOAT (1) needs 16");
  expectReadError(bad, "float_count",
                  "float_data holds 5 values, but shape 2x3 needs 6");
  expectReadError(bad, "too_many",
                  "float_data holds 3 values, but shape 2 needs 2");
  expectReadError(bad, "i64_count",
                  "int64_data holds 2 values, but shape 4 needs 4");
  expectReadError(bad, "no_data",
                  "it has no data (neither raw_data nor float_data) for its 3 "
                  "elements");
  expectReadError(bad, "no_type", "it has no data_type");
  expectReadError(bad, "negative_dim",
                  "dimension 0 of its shape is negative (-1)");
  expectReadError(bad, "huge",
                  "its shape 1099511627776x1099511627776 is too "
                  "large");
  expectReadError(bad, "wrong_field",
                  "it has float_data, which data type INT64 (7) does not use "
                  "(expected int64_data or raw_data)");
  expectReadError(bad, "raw_and_typed", "it has both raw_data and float_data");
  expectReadError(bad, "complex",
                  "it has data type COMPLEX64 (14), which the runtime does "
                  "not read (accepted: FLOAT, DOUBLE, FLOAT16, BFLOAT16, "
                  "INT64, INT32)");
  expectReadError(bad, "segmented", "it is segmented");
  expectReadError(bad, "ext_not_external",
                  "it has external_data, but its data_location is not "
                  "EXTERNAL");
  expectReadError(bad, "bad_location",
                  "its data_location is 7 (accepted: 0 = DEFAULT, 1 = "
                  "EXTERNAL)");
  expectReadError(in("types.onnx"), "u8",
                  "it has data type UINT8 (2), which the runtime does not "
                  "read");
}

TEST_F(OnnxWeightsTest, RejectsBadExternalData) {
  const std::string bad = in("bad_external.onnx");
  expectReadError(bad, "missing_file",
                  "external data file " + fixtureDir() +
                      "/nope.bin: cannot open: No such file or directory");
  expectReadError(bad, "short_file",
                  "external data file " + fixtureDir() +
                      "/short.bin: it is 5 bytes, but the initializer's 16 "
                      "bytes are expected at offset 0");
  expectReadError(bad, "offset_past_end",
                  "exact.bin: it is 16 bytes, but the initializer's 16 bytes "
                  "are expected at offset 1000");
  expectReadError(bad, "bad_offset",
                  "external_data 'offset' is '12x', not a non-negative "
                  "integer");
  expectReadError(bad, "length_mismatch",
                  "its external_data length is 7 bytes, but shape 4 of FLOAT "
                  "(1) needs 16");
  expectReadError(bad, "absolute",
                  "external_data location '/etc/passwd' must be a relative "
                  "path");
  expectReadError(bad, "no_location",
                  "its data_location is EXTERNAL, but external_data has no "
                  "'location'");
  expectReadError(bad, "no_length_longer",
                  "it is 16 bytes, but the initializer's 8 bytes are expected "
                  "at offset 0 up to the end of the file (no 'length' is "
                  "given)");
  expectReadError(bad, "directory", "/sub: is a directory, not a file");
}

TEST_F(OnnxWeightsTest, RejectsMissingAndSparseInitializers) {
  auto model = openOrFail(in("types.onnx"));
  ASSERT_TRUE(model);
  std::string error = failureOf([&] { model->lookup("fc9.weight"); });
  EXPECT_EQ(error, in("types.onnx") +
                       ": no initializer 'fc9.weight' (the file has 17 "
                       "initializers: 'f32', 'f32_raw', 'f64', 'f64_raw', "
                       "'f16', 'f16_raw', 'bf16', 'bf16_raw', ...)");
  error = failureOf([&] { model->lookup("sparse_w"); });
  EXPECT_EQ(error, in("types.onnx") +
                       ": initializer 'sparse_w' is a sparse_initializer, "
                       "which the runtime does not read (store it as a dense "
                       "initializer)");
}

TEST_F(OnnxWeightsTest, RejectsMalformedFiles) {
  expectOpenError(in("nope.onnx"), "cannot open: No such file or directory");
  expectOpenError(fixtureDir(), "is a directory, not a file");
  expectOpenError(in("empty.onnx"),
                  "not a valid ONNX model: it has no graph (ModelProto field "
                  "7)");
  expectOpenError(in("no_graph.onnx"), "it has no graph");
  expectOpenError(in("text.onnx"), "not a valid ONNX model: ");
  expectOpenError(in("truncated.onnx"),
                  "not a valid ONNX model: field 7 at byte 25 needs 974 "
                  "bytes, but the file has only 475 left");
  expectOpenError(in("bad_length.onnx"),
                  "field 7 at byte 2 needs 1000 bytes, but the file has only "
                  "10 left");
  expectOpenError(in("graph_varint.onnx"),
                  "field 7 (ModelProto.graph) at byte 2 is varint, expected "
                  "length-delimited");
  expectOpenError(in("truncated_varint.onnx"),
                  "the file ends inside the varint at byte 2");
  expectOpenError(in("overlong_varint.onnx"),
                  "the varint at byte 1 is longer than 64 bits");
  expectOpenError(in("group.onnx"),
                  "field 9 at byte 2 is a group (wire type 3), which ONNX "
                  "does not use");
  expectOpenError(in("field_zero.onnx"), "invalid field number 0 at byte 0");
  expectOpenError(in("bad_wire_type.onnx"), "invalid wire type 7 at byte 0");
  expectOpenError(in("tensor_wrong_wire.onnx"),
                  "initializer 'w': malformed TensorProto: field 1 (dims) at "
                  "byte 9 is 32-bit, expected varint or length-delimited");
  expectOpenError(in("tensor_unnamed.onnx"),
                  "initializer #1: malformed TensorProto: field 8 (name) at "
                  "byte 6 is varint, expected length-delimited");
  expectOpenError(in("tensor_bad_length.onnx"),
                  "initializer #1: malformed TensorProto: field 9 at byte 8 "
                  "needs 100 bytes, but the initializer has only 7 left");
  expectOpenError(in("tensor_bad_packed.onnx"),
                  "initializer 'w': malformed TensorProto: the packed dims "
                  "ends inside the varint at byte 11");
  expectOpenError(in("packed_odd.onnx"),
                  "initializer 'w': malformed TensorProto: a packed "
                  "float_data of 6 bytes is not a whole number of 4-byte "
                  "values");
  expectOpenError(in("duplicate.onnx"),
                  "initializer 'f32_unpacked' appears twice in the graph");
}

TEST_F(OnnxWeightsTest, ChecksTheDestinationSize) {
  auto model = openOrFail(in("types.onnx"));
  ASSERT_TRUE(model);
  std::vector<float> buffer(12);
  std::string error =
      failureOf([&] { model->read(model->lookup("f32"), buffer.data(), 40); });
  EXPECT_NE(error.find("internal error: a destination of 40 bytes for 48 "
                       "bytes of data"),
            std::string::npos)
      << error;
}

//===--- Robustness: every truncation, random corruption ------------------===//

std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

/// An in-memory file (memfd) for the many small files of the robustness
/// test, opened by its /proc path like any file.
class ScratchFile {
public:
  ScratchFile() : fd_(::memfd_create("onnx-fuzz", MFD_CLOEXEC)) {}
  ~ScratchFile() { ::close(fd_); }
  bool ok() const { return fd_ >= 0; }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }
  void set(const std::string &bytes) {
    ASSERT_EQ(::ftruncate(fd_, 0), 0);
    ASSERT_EQ(::pwrite(fd_, bytes.data(), bytes.size(), 0),
              ssize_t(bytes.size()));
  }

private:
  int fd_;
};

/// Opens PATH and reads every initializer it lists; returns the number of
/// failures, checking only that they are reported properly (the point is
/// not crashing, under ASan).
int readAnything(const std::string &path) {
  int failures = 0;
  auto check = [&](const std::string &error) {
    if (error.empty())
      return;
    ++failures;
    EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  };
  std::unique_ptr<OnnxInitializers> model;
  check(failureOf([&] { model = OnnxInitializers::open(path); }));
  if (!model)
    return failures;
  for (const OnnxTensor &listed : model->tensors())
    check(failureOf([&] {
      const OnnxTensor &t = model->lookup(listed.name);
      // lookup bounds the size by the file's, except for external data.
      const size_t bytes =
          size_t(OnnxInitializers::numElements(t) * dtypeSize(t.dtype));
      if (bytes > (size_t(1) << 26))
        return;
      std::vector<char> buffer(bytes);
      model->read(t, buffer.data(), buffer.size());
    }));
  return failures;
}

// Random damages per file (a sanitizer build may raise it:
// -DCMAKE_CXX_FLAGS=-DDTRAIN_ONNX_FUZZ_ROUNDS=100000).
#ifndef DTRAIN_ONNX_FUZZ_ROUNDS
#define DTRAIN_ONNX_FUZZ_ROUNDS 3000
#endif

TEST_F(OnnxWeightsTest, SurvivesTruncationAndCorruption) {
  ScratchFile scratch;
  ASSERT_TRUE(scratch.ok());
  std::mt19937 random(12345);
  for (const char *file : {"types.onnx", "crafted.onnx", "bad_tensors.onnx"}) {
    SCOPED_TRACE(file);
    const std::string good = slurp(in(file));
    ASSERT_FALSE(good.empty());
    // Every truncation is an error (the graph's length runs past the end).
    for (size_t n = 0; n < good.size(); ++n) {
      scratch.set(good.substr(0, n));
      EXPECT_GT(readAnything(scratch.path()), 0) << "truncated to " << n;
    }
    // Random damage: 1 to 4 bytes set to random or boundary values.
    for (int round = 0; round < DTRAIN_ONNX_FUZZ_ROUNDS; ++round) {
      std::string bad = good;
      const int edits = 1 + int(random() % 4);
      for (int e = 0; e < edits; ++e) {
        static const unsigned char values[] = {0x00, 0xff, 0x7f, 0x80,
                                               0x01, 0x08, 0x0a, 0x4a};
        bad[random() % bad.size()] =
            char(random() % 2 ? values[random() % 8] : random());
      }
      scratch.set(bad);
      readAnything(scratch.path());
    }
  }
}

} // namespace
