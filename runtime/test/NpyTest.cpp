//===- NpyTest.cpp - .npy/.npz reading and writing ------------------------===//
//
// Reads the files npy_fixtures.py wrote with numpy into $DTRAIN_NPY_FIXTURES/in
// and checks them element by element against expectedValue(), the mirror of
// the script's value(); checks that damaged files are rejected with clear
// messages and that no mutation of a valid file crashes the reader; and
// writes $DTRAIN_NPY_FIXTURES/out/*, which `npy_fixtures.py check` then loads
// with numpy (ctest: runtime-npy-numpy-reads).
//
//===----------------------------------------------------------------------===//

#include "ArrayFile.h"
#include "ElementAccess.h"
#include "Float16.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

using namespace dtrain::rt;
using namespace dtrain::rt::test;

namespace {

std::string fixtureDir() {
  const char *dir = std::getenv("DTRAIN_NPY_FIXTURES");
  return dir ? dir : "";
}
std::string in(const std::string &name) { return fixtureDir() + "/in/" + name; }
std::string out(const std::string &name) {
  return fixtureDir() + "/out/" + name;
}

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

/// Mirrors value() of npy_fixtures.py.
double expectedValue(int64_t i, const std::string &t) {
  const double b = double((i * 7) % 23 - 11);
  if (t == "f2")
    return b * 0.25;
  if (t == "f4")
    return b * 0.25 + double(i) * std::ldexp(1.0, -12);
  if (t == "f8")
    return b * 0.25 + double(i) * std::ldexp(1.0, -40);
  if (t == "i8")
    return b * 1000000007000.0;
  if (t == "i4")
    return b * 100000007.0;
  if (t == "i2")
    return b * 1000;
  if (t == "i1")
    return b * 10;
  if (t == "u1")
    return double((i * 37) % 256);
  if (t == "u2")
    return double((i * 997) % 65536);
  if (t == "u4")
    return double((uint64_t(i) * 2654435761u) % (uint64_t(1) << 32));
  if (t == "b1")
    return i % 3 == 0;
  ADD_FAILURE() << "unknown type " << t;
  return 0;
}

double element(const dtrain_rt_array_t &a, int64_t i) {
  return loadElement(a.data, a.dtype, i);
}

void setElement(dtrain_rt_array_t &a, int64_t i, double v) {
  storeElement(a.data, a.dtype, i, v);
}

/// An array freed at scope exit.
struct Array : dtrain_rt_array_t {
  Array() : dtrain_rt_array_t{} {}
  ~Array() { dtrain_rt_array_free(this); }
  Array(const Array &) = delete;
  Array &operator=(const Array &) = delete;
};

/// A new array of DTYPE and SHAPE filled with expectedValue(i, T).
void make(Array &a, int32_t dtype, std::vector<int64_t> shape,
          const std::string &t) {
  char error[256];
  ASSERT_EQ(dtrain_rt_array_alloc(&a, dtype, int32_t(shape.size()),
                                  shape.data(), error, sizeof error),
            0)
      << error;
  for (int64_t i = 0, n = dtrain_rt_array_num_elements(&a); i < n; ++i)
    setElement(a, i, expectedValue(i, t));
}

/// Checks A's type, shape, and elements against expectedValue(i, T).
void expectArray(const dtrain_rt_array_t &a, int32_t dtype,
                 std::vector<int64_t> shape, const std::string &t) {
  ASSERT_EQ(a.dtype, dtype);
  ASSERT_EQ(a.rank, int32_t(shape.size()));
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    ASSERT_EQ(a.shape[d], shape[d]) << "dimension " << d;
    n *= shape[d];
  }
  for (size_t d = shape.size(); d < DTRAIN_RT_MAX_RANK; ++d)
    EXPECT_EQ(a.shape[d], 0);
  ASSERT_EQ(dtrain_rt_array_num_elements(&a), n);
  ASSERT_NE(a.data, nullptr);
  int mismatches = 0;
  for (int64_t i = 0; i < n && mismatches < 5; ++i)
    if (element(a, i) != expectedValue(i, t)) {
      ++mismatches;
      ADD_FAILURE() << "element " << i << ": " << element(a, i) << ", expected "
                    << expectedValue(i, t);
    }
}

void readNpyFile(const std::string &path, Array &a) {
  char error[512] = "";
  ASSERT_EQ(dtrain_rt_npy_read(path.c_str(), &a, error, sizeof error), 0)
      << error;
}

void readNpzMember(const std::string &path, const char *name, Array &a) {
  char error[512] = "";
  ASSERT_EQ(dtrain_rt_npz_read(path.c_str(), name, &a, error, sizeof error), 0)
      << error;
}

/// Expects reading PATH (member NAME of an .npz when not NULL) to fail with
/// a one-line message naming PATH and containing WHAT.
void expectReadError(const std::string &path, const char *name,
                     const std::string &what) {
  SCOPED_TRACE(path);
  Array a;
  a.data = &a; // must be reset, not freed
  char error[512] = "";
  int rc = name
               ? dtrain_rt_npz_read(path.c_str(), name, &a, error, sizeof error)
               : dtrain_rt_npy_read(path.c_str(), &a, error, sizeof error);
  EXPECT_NE(rc, 0);
  EXPECT_EQ(a.data, nullptr);
  EXPECT_EQ(a.rank, 0);
  std::string message = error;
  EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(what), std::string::npos)
      << "message: " << message << "\nexpected to contain: " << what;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

class NpyTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(fixtureDir().empty())
        << "DTRAIN_NPY_FIXTURES is not set (ctest sets it and runs "
           "npy_fixtures.py generate first)";
    ASSERT_TRUE(exists(in("f4.npy")))
        << "no fixtures in " << fixtureDir() << "/in";
  }
};

//===--- Reading numpy's files --------------------------------------------===//

struct TypeCase {
  const char *t;
  int32_t dtype;
};
const TypeCase typeCases[] = {
    {"f4", DTRAIN_RT_F32}, {"f8", DTRAIN_RT_F64}, {"f2", DTRAIN_RT_F16},
    {"i8", DTRAIN_RT_I64}, {"i4", DTRAIN_RT_I32}, {"i2", DTRAIN_RT_I32},
    {"i1", DTRAIN_RT_I32}, {"u1", DTRAIN_RT_I32}, {"u2", DTRAIN_RT_I32},
    {"u4", DTRAIN_RT_I64}, {"b1", DTRAIN_RT_BOOL},
};

TEST_F(NpyTest, ReadsEveryType) {
  for (const TypeCase &c : typeCases) {
    SCOPED_TRACE(c.t);
    Array a;
    readNpyFile(in(std::string(c.t) + ".npy"), a);
    expectArray(a, c.dtype, {3, 5}, c.t);
  }
}

TEST_F(NpyTest, ReadsNonzeroBoolBytesAsOne) {
  // Compiled code loads a bool as an i1, which must be 0 or 1.
  Array a;
  readNpyFile(in("b1_bytes.npy"), a);
  ASSERT_EQ(a.dtype, DTRAIN_RT_BOOL);
  ASSERT_EQ(dtrain_rt_array_num_elements(&a), 4);
  const auto *bytes = static_cast<const uint8_t *>(a.data);
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[1], 1);
  EXPECT_EQ(bytes[2], 1);
  EXPECT_EQ(bytes[3], 1);
}

TEST_F(NpyTest, ReadsBigEndian) {
  for (const TypeCase &c : typeCases) {
    std::string t = c.t;
    if (t == "b1" || t == "i1" || t == "u1")
      continue;
    SCOPED_TRACE(t);
    Array a;
    readNpyFile(in("be_" + t + ".npy"), a);
    expectArray(a, c.dtype, {4, 3}, t);
  }
}

TEST_F(NpyTest, TransposesFortranOrder) {
  struct {
    const char *file, *t;
    int32_t dtype;
    std::vector<int64_t> shape;
  } cases[] = {
      {"fortran_f4.npy", "f4", DTRAIN_RT_F32, {3, 4}},
      {"fortran_i8.npy", "i8", DTRAIN_RT_I64, {2, 3, 4}},
      {"fortran_be_f8.npy", "f8", DTRAIN_RT_F64, {2, 5}},
      {"fortran_u1.npy", "u1", DTRAIN_RT_I32, {5, 7}},
      {"fortran_1d.npy", "f4", DTRAIN_RT_F32, {6}},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(c.file);
    Array a;
    readNpyFile(in(c.file), a);
    expectArray(a, c.dtype, c.shape, c.t);
  }
}

TEST_F(NpyTest, ReadsScalarsAndEmptyArrays) {
  Array f, i, e, e3;
  readNpyFile(in("scalar_f4.npy"), f);
  ASSERT_EQ(f.rank, 0);
  ASSERT_EQ(dtrain_rt_array_num_elements(&f), 1);
  EXPECT_EQ(element(f, 0), 3.5);
  readNpyFile(in("scalar_i8.npy"), i);
  ASSERT_EQ(i.dtype, DTRAIN_RT_I64);
  EXPECT_EQ(element(i, 0), -7);
  readNpyFile(in("empty_f4.npy"), e);
  expectArray(e, DTRAIN_RT_F32, {0}, "f4");
  readNpyFile(in("empty_i8.npy"), e3);
  expectArray(e3, DTRAIN_RT_I64, {3, 0, 2}, "i8");
}

TEST_F(NpyTest, ReadsRankEightAndLargeArrays) {
  Array r, f, u;
  readNpyFile(in("rank8.npy"), r);
  expectArray(r, DTRAIN_RT_F32, {1, 2, 1, 2, 1, 1, 2, 1}, "f4");
  readNpyFile(in("large_f4.npy"), f);
  expectArray(f, DTRAIN_RT_F32, {100003}, "f4");
  readNpyFile(in("large_u1.npy"), u);
  expectArray(u, DTRAIN_RT_I32, {200001}, "u1");
}

TEST_F(NpyTest, KeepsSpecialValuesBitExact) {
  Array a;
  readNpyFile(in("specials.npy"), a);
  ASSERT_EQ(a.dtype, DTRAIN_RT_F32);
  ASSERT_EQ(dtrain_rt_array_num_elements(&a), 6);
  const uint32_t bits[] = {0x7fc00000, 0x7f800000, 0xff800000,
                           0x80000000, 0x00000001, 0x7f7fffff};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(floatBits(static_cast<const float *>(a.data)[i]), bits[i]) << i;
}

TEST_F(NpyTest, ReadsFormatVersions) {
  Array v2, v3, quotes;
  readNpyFile(in("v2.npy"), v2);
  expectArray(v2, DTRAIN_RT_F32, {3, 5}, "f4");
  readNpyFile(in("v3.npy"), v3);
  expectArray(v3, DTRAIN_RT_I64, {3, 5}, "i8");
  readNpyFile(in("hdr_double_quotes.npy"), quotes);
  ASSERT_EQ(quotes.rank, 1);
  EXPECT_EQ(element(quotes, 0), 1.5);
  EXPECT_EQ(element(quotes, 1), -2);
}

//===--- Damaged and unsupported .npy files -------------------------------===//

TEST_F(NpyTest, RejectsDamagedNpyFiles) {
  const std::pair<const char *, const char *> cases[] = {
      {"bad_magic.npy", "not a .npy file (it starts with '\\x93NUMPZ'"},
      {"truncated_data.npy", "truncated: shape (3, 5) of '<f4' needs 60 bytes "
                             "of data, but 57 follow the header"},
      {"truncated_header.npy", "truncated: the header is 118 bytes"},
      {"trailing_data.npy", "size mismatch: shape (3, 5) of '<f4' needs 60"},
      {"zero_bytes.npy", "not a .npy file (0 bytes"},
      {"bad_version.npy", "unsupported .npy format version 4.0 (accepted: "
                          "1.0, 2.0, 3.0)"},
      {"huge_header_length.npy", "truncated: the header is 2147483647 bytes"},
      {"hdr_unterminated.npy", "malformed header (expected a non-negative "
                               "integer in 'shape' at byte 54): '{'descr'"},
      {"hdr_missing_key.npy", "the header lacks the key 'fortran_order'"},
      {"hdr_extra_key.npy", "unexpected key 'x' in the header (accepted keys"},
      {"hdr_duplicate_key.npy", "key 'descr' appears twice"},
      {"hdr_negative_dim.npy", "expected a non-negative integer in 'shape'"},
      {"hdr_shape_overflow.npy",
       "shape (4294967296, 4294967296, 4294967296) is too large"},
      {"hdr_dim_overflow.npy", "dimension 0 of the header's shape overflows"},
      {"hdr_huge_shape.npy", "truncated: shape (1000000000000,) of '<f4' "
                             "needs 4000000000000 bytes"},
      {"hdr_rank9.npy", "rank 9 (accepted: 0..8)"},
      {"rank9_numpy.npy", "rank 9 (accepted: 0..8)"},
      {"hdr_complex.npy", "unsupported dtype '<c8' (accepted: <f4, <f8, <f2, "
                          "<i8, <i4, |b1, |i1, |u1, <i2, <u2, <u4, and '>' "
                          "(big-endian) variants)"},
      {"hdr_u8.npy", "unsupported dtype '<u8'"},
      {"hdr_object.npy", "unsupported dtype '|O'"},
      {"hdr_structured.npy", "structured dtypes are not supported"},
      {"hdr_void2.npy", "unsupported dtype '|V2' (raw records; bfloat16"},
      {"hdr_bad_order.npy", "unsupported dtype '|f4' (byte order '|'"},
      {"hdr_bad_bool.npy", "expected True or False for 'fortran_order'"},
      {"hdr_binary.npy", "malformed header (expected a key at byte 1): "
                         "'{\\x00\\xff\\x93NUMPY"},
      {"hdr_after_brace.npy", "text after the closing '}'"},
      {"hdr_escape.npy", "escape sequence in a string"},
      {"savez.npz", "not a .npy file (it starts with 'PK\\x03\\x04"},
      {"does-not-exist.npy", "cannot open: No such file or directory"},
      {"", "is a directory, not a file"},
  };
  for (const auto &[file, what] : cases)
    expectReadError(in(file), nullptr, what);
}

TEST_F(NpyTest, ErrorBufferIsOptionalAndTruncated) {
  Array a;
  EXPECT_NE(dtrain_rt_npy_read(in("bad_magic.npy").c_str(), &a, nullptr, 0), 0);
  char small[8];
  std::memset(small, 'x', sizeof small);
  EXPECT_NE(
      dtrain_rt_npy_read(in("bad_magic.npy").c_str(), &a, small, sizeof small),
      0);
  EXPECT_EQ(std::strlen(small), 7u);
  char untouched = 'u';
  EXPECT_NE(dtrain_rt_npy_read(in("bad_magic.npy").c_str(), &a, &untouched, 0),
            0);
  EXPECT_EQ(untouched, 'u');
  char error[256];
  EXPECT_NE(dtrain_rt_npy_read(nullptr, &a, error, sizeof error), 0);
  EXPECT_STREQ(error, "dtrain_rt_npy_read: path is NULL");
  EXPECT_NE(
      dtrain_rt_npy_read(in("f4.npy").c_str(), nullptr, error, sizeof error),
      0);
  EXPECT_NE(std::string(error).find("out is NULL"), std::string::npos);
}

//===--- .npz archives ----------------------------------------------------===//

std::vector<std::string> npzNames(const std::string &path) {
  char **names = nullptr;
  int32_t count = -1;
  char error[512] = "";
  EXPECT_EQ(
      dtrain_rt_npz_names(path.c_str(), &names, &count, error, sizeof error), 0)
      << error;
  std::vector<std::string> result;
  for (int32_t i = 0; names && i < count; ++i)
    result.push_back(names[i]);
  if (names)
    EXPECT_EQ(names[count], nullptr);
  dtrain_rt_npz_names_free(names);
  return result;
}

using Names = std::vector<std::string>;

TEST_F(NpyTest, ReadsSavez) {
  EXPECT_EQ(npzNames(in("savez.npz")), (Names{"x", "y"}));
  Array x, y, x2;
  readNpzMember(in("savez.npz"), "x", x);
  expectArray(x, DTRAIN_RT_F32, {4, 3}, "f4");
  readNpzMember(in("savez.npz"), "y", y);
  expectArray(y, DTRAIN_RT_I64, {4}, "i8");
  readNpzMember(in("savez.npz"), "x.npy", x2);
  expectArray(x2, DTRAIN_RT_F32, {4, 3}, "f4");
  expectReadError(in("savez.npz"), "z",
                  "no array 'z' in the archive (it holds: 'x', 'y')");
}

TEST_F(NpyTest, ReadsSavezCompressed) {
  const std::string path = in("compressed.npz");
  EXPECT_EQ(npzNames(path), (Names{"x", "y", "big", "empty", "scalar"}));
  Array x, y, big, empty, scalar;
  readNpzMember(path, "x", x);
  expectArray(x, DTRAIN_RT_F64, {5, 2}, "f8");
  readNpzMember(path, "y", y);
  expectArray(y, DTRAIN_RT_I32, {5}, "i4");
  readNpzMember(path, "big", big);
  expectArray(big, DTRAIN_RT_I32, {300007}, "u1");
  readNpzMember(path, "empty", empty);
  expectArray(empty, DTRAIN_RT_F32, {0, 3}, "f4");
  readNpzMember(path, "scalar", scalar);
  ASSERT_EQ(scalar.rank, 0);
  EXPECT_EQ(element(scalar, 0), 3.5);
}

TEST_F(NpyTest, ReadsZip64Records) {
  const std::string path = in("zip64.npz");
  EXPECT_EQ(npzNames(path), (Names{"x", "y"}));
  Array x, y;
  readNpzMember(path, "x", x);
  expectArray(x, DTRAIN_RT_F32, {4, 3}, "f4");
  readNpzMember(path, "y", y);
  expectArray(y, DTRAIN_RT_I64, {4}, "i8");
}

TEST_F(NpyTest, ReadsArchivesWithOtherMembersAndNone) {
  EXPECT_EQ(npzNames(in("mixed.npz")), (Names{"notes.txt", "x"}));
  Array x;
  readNpzMember(in("mixed.npz"), "x", x);
  expectArray(x, DTRAIN_RT_I32, {2, 2}, "i4");
  expectReadError(in("mixed.npz"), "notes.txt",
                  "member 'notes.txt': not a .npy file");
  EXPECT_EQ(npzNames(in("empty.npz")), Names{});
  expectReadError(in("empty.npz"), "x",
                  "no array 'x' in the archive (it holds: nothing)");
}

TEST_F(NpyTest, RejectsDamagedArchives) {
  struct {
    const char *file, *member, *what;
  } cases[] = {
      {"bad_crc.npz", "y", "member 'y.npy': CRC-32 mismatch"},
      {"truncated.npz", "x", "not a zip archive (no end of central directory"},
      {"not_zip.npz", "x", "not a zip archive"},
      {"zero_bytes.npy", "x", "not a zip archive (0 bytes"},
      {"f4.npy", "x", "not a zip archive"},
      {"bad_method.npz", "x",
       "member 'x.npy': compression method 12 is not "
       "supported (accepted: 0 = stored, 8 = deflate)"},
      {"bad_deflate.npz", "x", "member 'x.npy': "},
      {"bad_sizes.npz", "x", "member 'x.npy': "},
      {"does-not-exist.npz", "x", "cannot open: No such file or directory"},
  };
  for (const auto &c : cases)
    expectReadError(in(c.file), c.member, c.what);
  // The undamaged member of a damaged archive still reads.
  Array x;
  readNpzMember(in("bad_crc.npz"), "x", x);
  expectArray(x, DTRAIN_RT_F32, {4, 3}, "f4");
}

//===--- Robustness: every truncation, random corruption ------------------===//

std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

/// An in-memory file (memfd) for the many small files of the robustness
/// test: the runtime opens it by its /proc path like any file.
class ScratchFile {
public:
  ScratchFile() : fd_(::memfd_create("npy-fuzz", MFD_CLOEXEC)) {}
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

/// Reads PATH as a .npy or every member of it as a .npz; only checks that
/// failures are reported properly (the point is not crashing, under ASan).
int readAnything(const std::string &path, bool npz) {
  char error[512];
  int failures = 0;
  auto check = [&](int rc, dtrain_rt_array_t *a) {
    if (rc != 0) {
      ++failures;
      EXPECT_EQ(std::string(error).rfind(path + ": ", 0), 0u) << error;
    } else if (a) {
      int64_t n = dtrain_rt_array_num_elements(a);
      EXPECT_GE(n, 0);
      EXPECT_NE(a->data, nullptr);
      // Touch every byte so that ASan sees a short allocation.
      volatile char sink = 0;
      for (int64_t i = 0; i < n * dtypeSize(a->dtype); ++i)
        sink = sink ^ static_cast<char *>(a->data)[i];
    }
    dtrain_rt_array_free(a);
  };
  Array a;
  if (!npz) {
    check(dtrain_rt_npy_read(path.c_str(), &a, error, sizeof error), &a);
    return failures;
  }
  char **names = nullptr;
  int32_t count = 0;
  check(dtrain_rt_npz_names(path.c_str(), &names, &count, error, sizeof error),
        nullptr);
  for (int32_t i = 0; i < count; ++i)
    check(dtrain_rt_npz_read(path.c_str(), names[i], &a, error, sizeof error),
          &a);
  dtrain_rt_npz_names_free(names);
  return failures;
}

// Random damages per file (a sanitizer build may raise it:
// -DCMAKE_CXX_FLAGS=-DDTRAIN_NPY_FUZZ_ROUNDS=100000).
#ifndef DTRAIN_NPY_FUZZ_ROUNDS
#define DTRAIN_NPY_FUZZ_ROUNDS 1500
#endif

TEST_F(NpyTest, SurvivesTruncationAndCorruption) {
  const std::pair<const char *, bool> files[] = {
      {"f4.npy", false},
      {"be_f8.npy", false},
      {"fortran_i8.npy", false},
      {"v3.npy", false},
      {"u2.npy", false},
      {"savez.npz", true},
      {"small_compressed.npz", true},
      {"zip64.npz", true},
      {"mixed.npz", true},
  };
  ScratchFile scratch;
  ASSERT_TRUE(scratch.ok());
  std::mt19937 random(12345);
  for (const auto &[file, npz] : files) {
    SCOPED_TRACE(file);
    const std::string good = slurp(in(file));
    ASSERT_FALSE(good.empty());
    // Every truncation is an error (for big archives, a sample of them).
    const size_t step = good.size() > 4096 ? good.size() / 1500 : 1;
    for (size_t n = 0; n < good.size(); n += step) {
      scratch.set(good.substr(0, n));
      EXPECT_GT(readAnything(scratch.path(), npz), 0) << "truncated to " << n;
    }
    // Random damage: 1 to 4 bytes set to random or boundary values.
    for (int round = 0; round < DTRAIN_NPY_FUZZ_ROUNDS; ++round) {
      std::string bad = good;
      const int edits = 1 + int(random() % 4);
      for (int e = 0; e < edits; ++e) {
        size_t at = random() % std::min<size_t>(bad.size(), 400);
        if (random() % 4 == 0)
          at = random() % bad.size();
        static const unsigned char values[] = {0x00, 0xff, 0x7f, 0x80,
                                               '(',  ')',  ',',  '9'};
        bad[at] = char(random() % 2 ? values[random() % 8] : random());
      }
      scratch.set(bad);
      readAnything(scratch.path(), npz);
    }
  }
}

//===--- Writing ----------------------------------------------------------===//

TEST_F(NpyTest, WritesFilesNumpyReads) {
  // npy_fixtures.py check loads these with numpy.
  const std::pair<const char *, int32_t> types[] = {
      {"f4", DTRAIN_RT_F32}, {"f8", DTRAIN_RT_F64}, {"f2", DTRAIN_RT_F16},
      {"i8", DTRAIN_RT_I64}, {"i4", DTRAIN_RT_I32}, {"b1", DTRAIN_RT_BOOL},
  };
  char error[512] = "";
  for (const auto &[t, dtype] : types) {
    SCOPED_TRACE(t);
    Array a, back;
    make(a, dtype, {3, 5}, t);
    const std::string path = out(std::string("out_") + t + ".npy");
    ASSERT_EQ(dtrain_rt_npy_write(path.c_str(), &a, error, sizeof error), 0)
        << error;
    readNpyFile(path, back);
    expectArray(back, dtype, {3, 5}, t);
  }
  // BF16 is written as f32.
  Array bf16, bf16Back;
  make(bf16, DTRAIN_RT_BF16, {2, 6}, "f2");
  ASSERT_EQ(dtrain_rt_npy_write(out("out_bf16.npy").c_str(), &bf16, error,
                                sizeof error),
            0)
      << error;
  readNpyFile(out("out_bf16.npy"), bf16Back);
  expectArray(bf16Back, DTRAIN_RT_F32, {2, 6}, "f2");

  Array scalar, empty, rank8, back;
  ASSERT_EQ(dtrain_rt_array_alloc(&scalar, DTRAIN_RT_I64, 0, nullptr, error,
                                  sizeof error),
            0);
  setElement(scalar, 0, -7);
  ASSERT_EQ(dtrain_rt_npy_write(out("out_scalar.npy").c_str(), &scalar, error,
                                sizeof error),
            0)
      << error;
  readNpyFile(out("out_scalar.npy"), back);
  ASSERT_EQ(back.rank, 0);
  EXPECT_EQ(element(back, 0), -7);
  make(empty, DTRAIN_RT_F32, {3, 0}, "f4");
  ASSERT_EQ(dtrain_rt_npy_write(out("out_empty.npy").c_str(), &empty, error,
                                sizeof error),
            0)
      << error;
  make(rank8, DTRAIN_RT_I32, {1, 2, 1, 2, 1, 1, 2, 1}, "i4");
  ASSERT_EQ(dtrain_rt_npy_write(out("out_rank8.npy").c_str(), &rank8, error,
                                sizeof error),
            0)
      << error;

  // Archives: plain, and with ZIP64 records everywhere.
  Array x, y, s;
  make(x, DTRAIN_RT_F32, {4, 3}, "f4");
  make(y, DTRAIN_RT_I64, {4}, "i8");
  ASSERT_EQ(
      dtrain_rt_array_alloc(&s, DTRAIN_RT_F32, 0, nullptr, error, sizeof error),
      0);
  setElement(s, 0, 3.5);
  const char *const names[] = {"x", "y", "scalar"};
  const dtrain_rt_array_t arrays[] = {x, y, s};
  for (const char *file : {"out.npz", "out_zip64.npz"}) {
    SCOPED_TRACE(file);
    const bool zip64 = std::string(file) == "out_zip64.npz";
    setZip64LimitForTesting(zip64 ? 0 : 0x7fffffff);
    int rc = dtrain_rt_npz_write(out(file).c_str(), 3, names, arrays, error,
                                 sizeof error);
    setZip64LimitForTesting(0x7fffffff);
    ASSERT_EQ(rc, 0) << error;
    EXPECT_EQ(npzNames(out(file)), (Names{"x", "y", "scalar"}));
    Array xb, yb, sb;
    readNpzMember(out(file), "x", xb);
    expectArray(xb, DTRAIN_RT_F32, {4, 3}, "f4");
    readNpzMember(out(file), "y", yb);
    expectArray(yb, DTRAIN_RT_I64, {4}, "i8");
    readNpzMember(out(file), "scalar", sb);
    EXPECT_EQ(element(sb, 0), 3.5);
  }
  ASSERT_EQ(dtrain_rt_npz_write(out("out_empty.npz").c_str(), 0, nullptr,
                                nullptr, error, sizeof error),
            0)
      << error;
  EXPECT_EQ(npzNames(out("out_empty.npz")), Names{});
}

TEST_F(NpyTest, RejectsBadWritesWithoutLeavingFiles) {
  const std::string path = out("bad.npy");
  char error[512] = "";
  Array good;
  make(good, DTRAIN_RT_F32, {2, 2}, "f4");
  auto expectWriteError = [&](const dtrain_rt_array_t &a,
                              const std::string &what) {
    EXPECT_NE(dtrain_rt_npy_write(path.c_str(), &a, error, sizeof error), 0);
    EXPECT_NE(std::string(error).find(path + ": " + what), std::string::npos)
        << error;
    EXPECT_FALSE(exists(path));
  };
  dtrain_rt_array_t a = good;
  a.dtype = 9;
  expectWriteError(a, "cannot write: unknown dtype 9 (accepted: 0 = f32");
  a = good;
  a.rank = 9;
  expectWriteError(a, "cannot write: rank 9 (accepted: 0..8)");
  a = good;
  a.shape[1] = -2;
  expectWriteError(a, "cannot write: dimension 1 of shape (2, -2) is negative");
  a = good;
  a.data = nullptr;
  expectWriteError(a, "cannot write: data is NULL for 4 elements");
  a = good;
  a.rank = 3;
  a.shape[0] = a.shape[1] = a.shape[2] = int64_t(1) << 40;
  expectWriteError(a, "cannot write: shape (1099511627776, 1099511627776, "
                      "1099511627776) is too large");
  EXPECT_NE(dtrain_rt_npy_write(path.c_str(), nullptr, error, sizeof error), 0);
  EXPECT_NE(std::string(error).find("the array is NULL"), std::string::npos);

  const std::string missing = out("no-such-dir/x.npy");
  EXPECT_NE(dtrain_rt_npy_write(missing.c_str(), &good, error, sizeof error),
            0);
  EXPECT_EQ(std::string(error),
            missing + ": cannot create: No such file or directory");
  // A directory in the way: nothing written, no temporary left behind.
  const std::string dir = out("a-directory.npy");
  ::mkdir(dir.c_str(), 0755);
  EXPECT_NE(dtrain_rt_npy_write(dir.c_str(), &good, error, sizeof error), 0);
  EXPECT_NE(std::string(error).find("cannot replace:"), std::string::npos)
      << error;
  ::rmdir(dir.c_str());

  const std::string npz = out("bad.npz");
  const dtrain_rt_array_t arrays[] = {good, good};
  auto expectNpzError = [&](int32_t count, const char *const *names,
                            const dtrain_rt_array_t *as,
                            const std::string &what) {
    EXPECT_NE(
        dtrain_rt_npz_write(npz.c_str(), count, names, as, error, sizeof error),
        0);
    EXPECT_NE(std::string(error).find(npz + ": " + what), std::string::npos)
        << error;
    EXPECT_FALSE(exists(npz));
  };
  const char *const twice[] = {"x", "x"};
  expectNpzError(2, twice, arrays, "cannot write: the name 'x' appears twice");
  const char *const emptyName[] = {"x", ""};
  expectNpzError(2, emptyName, arrays, "cannot write: name 1 is empty");
  expectNpzError(-1, twice, arrays, "cannot write: count is -1");
  expectNpzError(2, nullptr, arrays, "cannot write: names is NULL");
  dtrain_rt_array_t withBad[] = {good, good};
  withBad[1].rank = 12;
  const char *const xy[] = {"x", "y"};
  expectNpzError(2, xy, withBad, "member 'y.npy': cannot write: rank 12");

  // Nothing but the files written on purpose in the output directory.
  std::string leftovers;
  if (FILE *ls = popen(("ls -a '" + out("") + "'").c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, ls))
      if (std::strstr(line, ".tmp"))
        leftovers += line;
    pclose(ls);
  }
  EXPECT_EQ(leftovers, "");
}

//===--- Array helpers ----------------------------------------------------===//

TEST(NpyArray, AllocNumElementsAndFree) {
  char error[256] = "";
  Array a;
  const int64_t shape[] = {2, 3, 4};
  ASSERT_EQ(
      dtrain_rt_array_alloc(&a, DTRAIN_RT_F64, 3, shape, error, sizeof error),
      0)
      << error;
  EXPECT_EQ(dtrain_rt_array_num_elements(&a), 24);
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(static_cast<double *>(a.data)[i], 0.0);
  dtrain_rt_array_free(&a);
  EXPECT_EQ(a.data, nullptr);
  EXPECT_EQ(a.rank, 0);
  dtrain_rt_array_free(&a); // twice is harmless
  dtrain_rt_array_free(nullptr);

  EXPECT_EQ(dtrain_rt_array_num_elements(nullptr), -1);
  dtrain_rt_array_t big{};
  big.rank = 3;
  big.shape[0] = big.shape[1] = big.shape[2] = int64_t(1) << 30;
  EXPECT_EQ(dtrain_rt_array_num_elements(&big), -1); // overflow
  big.shape[1] = 0;
  EXPECT_EQ(dtrain_rt_array_num_elements(&big), 0);
  big.shape[1] = -1;
  EXPECT_EQ(dtrain_rt_array_num_elements(&big), -1);
  big.rank = 9;
  EXPECT_EQ(dtrain_rt_array_num_elements(&big), -1);

  EXPECT_NE(
      dtrain_rt_array_alloc(&a, DTRAIN_RT_I32, 9, shape, error, sizeof error),
      0);
  EXPECT_STREQ(error, "dtrain_rt_array_alloc: rank 9 (accepted: 0..8)");
  EXPECT_EQ(a.data, nullptr);
  const int64_t huge[] = {int64_t(1) << 62, 4};
  EXPECT_NE(
      dtrain_rt_array_alloc(&a, DTRAIN_RT_I32, 2, huge, error, sizeof error),
      0);
  EXPECT_NE(std::string(error).find("is too large"), std::string::npos);

  EXPECT_EQ(dtrain_rt_dtype_size(DTRAIN_RT_I64), 8);
  EXPECT_EQ(dtrain_rt_dtype_size(DTRAIN_RT_I32), 4);
  EXPECT_EQ(dtrain_rt_dtype_size(DTRAIN_RT_BF16), 2);
  EXPECT_EQ(dtrain_rt_dtype_size(DTRAIN_RT_BOOL), 1);
  EXPECT_EQ(dtrain_rt_dtype_size(7), 0);
}

} // namespace
