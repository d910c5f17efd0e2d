//===- Npy.cpp - arrays and the .npy format -------------------------------===//
//
// The array functions of the C ABI, NumPy's .npy format (read and write),
// and the file I/O that Npz.cpp shares. Format reference:
// numpy.lib.format (versions 1.0, 2.0, 3.0):
//
//   "\x93NUMPY" major minor  header_len (u16 LE for 1.0, u32 LE otherwise)
//   header: a Python dict literal {'descr': '<f4', 'fortran_order': False,
//           'shape': (2, 3), } padded with spaces, ending in '\n'
//   data:   the elements, C (or Fortran) order, in the descr's byte order
//
//===----------------------------------------------------------------------===//

#include "ArrayFile.h"
#include "Float16.h"

#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

using namespace dtrain::rt;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the array file code assumes a little-endian host");

//===--- Errors -----------------------------------------------------------===//

void dtrain::rt::fail(const char *format, ...) {
  va_list args;
  va_start(args, format);
  char buffer[1024];
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  throw Failure{buffer};
}

std::string dtrain::rt::quoted(std::string_view s, size_t max) {
  std::string out = "'";
  for (size_t i = 0; i < s.size(); ++i) {
    if (out.size() > max) {
      out += "...";
      break;
    }
    unsigned char c = s[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out + "'";
}

int dtrain::rt::reportFailure(const std::string &context,
                              const std::string &message, char *error,
                              size_t errorSize) {
  if (error && errorSize > 0) {
    std::string line = context + ": " + message;
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::snprintf(error, errorSize, "%s", line.c_str());
  }
  return 1;
}

//===--- File I/O ---------------------------------------------------------===//

InputFile::InputFile(const char *path) {
  fd_ = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    fail("cannot open: %s", std::strerror(errno));
  struct stat st;
  if (::fstat(fd_, &st) != 0)
    fail("cannot stat: %s", std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    fail("is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    fail("not a regular file");
  size_ = uint64_t(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

void InputFile::readAt(uint64_t offset, void *dst, size_t n) const {
  if (offset > size_ || n > size_ - offset)
    fail("unexpected end of file (%zu bytes at offset %llu of a %llu-byte "
         "file)",
         n, (unsigned long long)offset, (unsigned long long)size_);
  char *p = static_cast<char *>(dst);
  while (n > 0) {
    ssize_t got =
        ::pread(fd_, p, std::min<size_t>(n, size_t(1) << 30), off_t(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      fail("read error: %s", std::strerror(errno));
    if (got == 0)
      fail("unexpected end of file (it shrank while being read)");
    p += got;
    offset += uint64_t(got);
    n -= size_t(got);
  }
}

FileRange::FileRange(const InputFile &file, uint64_t begin, uint64_t end)
    : file_(file), pos_(begin), end_(end) {}

void FileRange::read(void *dst, size_t n) {
  if (n > remaining())
    fail("unexpected end of data (%zu bytes wanted, %llu left)", n,
         (unsigned long long)remaining());
  file_.readAt(pos_, dst, n);
  crc_ = updateCrc32(crc_, dst, n);
  pos_ += n;
}

OutputFile::OutputFile(const char *path) : path_(path) {
  // A unique name next to PATH, so that commit's rename stays in one file
  // system.
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_ = path_ + ".tmp" + std::to_string(::getpid()) + "." +
            std::to_string(counter++);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && (errno != EEXIST || attempt == 100))
      fail("cannot create: %s", std::strerror(errno));
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void OutputFile::write(const void *src, size_t n) {
  const char *p = static_cast<const char *>(src);
  while (n > 0) {
    ssize_t put = ::write(fd_, p, std::min<size_t>(n, size_t(1) << 30));
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      fail("write error: %s", std::strerror(errno));
    p += put;
    pos_ += uint64_t(put);
    n -= size_t(put);
  }
}

void OutputFile::writeAt(uint64_t offset, const void *src, size_t n) {
  if (offset > pos_ || n > pos_ - offset ||
      ::pwrite(fd_, src, n, off_t(offset)) != ssize_t(n))
    fail("write error: %s", std::strerror(errno));
}

void OutputFile::commit() {
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(temp_.c_str());
    fail("write error: %s", std::strerror(err));
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(temp_.c_str());
    fail("cannot replace: %s", std::strerror(err));
  }
}

/// Runs WRITE on an OutputFile at PATH; a failure reads "WHAT: PATH:
/// reason".
template <typename Write>
static void writeNamingFailures(const std::string &path, const char *what,
                                Write write) {
  try {
    OutputFile out(path.c_str());
    write(out);
  } catch (Failure &f) {
    f.message = std::string(what) + ": " + path + ": " + f.message;
    throw;
  }
}

void dtrain::rt::writeFileAtomically(const std::string &path,
                                     std::string_view bytes, const char *what) {
  writeNamingFailures(path, what, [&](OutputFile &out) {
    out.write(bytes.data(), bytes.size());
    out.commit();
  });
}

void dtrain::rt::checkCreatable(const std::string &path, const char *what) {
  // Uncommitted, the file's temporary name goes with it; the rename onto
  // a directory would fail only at the commit.
  writeNamingFailures(path, what, [&](OutputFile &) {
    struct stat status;
    if (::stat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode))
      fail("is a directory");
  });
}

uint32_t dtrain::rt::updateCrc32(uint32_t crc, const void *data, size_t n) {
  const Bytef *p = static_cast<const Bytef *>(data);
  while (n > 0) {
    uInt chunk = uInt(std::min<size_t>(n, size_t(1) << 30));
    crc = uint32_t(crc32(crc, p, chunk));
    p += chunk;
    n -= chunk;
  }
  return crc;
}

void CountingSink::write(const void *src, size_t n) {
  out_.write(src, n);
  crc_ = updateCrc32(crc_, src, n);
  count_ += n;
}

//===--- Element types ----------------------------------------------------===//

namespace {

/// The .npy element types the runtime reads, and what each reads as. The
/// first entry of each DTRAIN_RT_* type is exact and is what that type is
/// written as (BF16, which numpy lacks, is written as F32).
struct FileType {
  char kind; // numpy's kind: 'f' float, 'i' signed, 'u' unsigned, 'b' bool
  int size;  // bytes
  int32_t dtype;
};
constexpr FileType fileTypes[] = {
    {'f', 4, DTRAIN_RT_F32},
    {'f', 8, DTRAIN_RT_F64},
    {'f', 2, DTRAIN_RT_F16},
    {'i', 8, DTRAIN_RT_I64},
    {'i', 4, DTRAIN_RT_I32},
    {'b', 1, DTRAIN_RT_BOOL},
    // Widened on read (lossless).
    {'i', 1, DTRAIN_RT_I32},
    {'u', 1, DTRAIN_RT_I32},
    {'i', 2, DTRAIN_RT_I32},
    {'u', 2, DTRAIN_RT_I32},
    {'u', 4, DTRAIN_RT_I64},
};

/// '<f4', '|u1', ...
std::string descrOf(const FileType &t) {
  return std::string(1, t.size == 1 ? '|' : '<') + t.kind +
         std::to_string(t.size);
}

std::string acceptedDescrs() {
  std::string s;
  for (const FileType &t : fileTypes)
    s += (s.empty() ? "" : ", ") + descrOf(t);
  return s + ", and '>' (big-endian) variants";
}

const FileType &writtenType(int32_t dtype) {
  if (dtype == DTRAIN_RT_BF16)
    dtype = DTRAIN_RT_F32;
  for (const FileType &t : fileTypes)
    if (t.dtype == dtype)
      return t;
  fail("internal error: no file type for dtype %d", dtype);
}

/// An element type from a header: the table entry and its byte order.
struct ParsedType {
  const FileType *type;
  bool bigEndian;
};

ParsedType parseDescr(std::string_view descr) {
  auto unsupported = [&](const char *why) {
    fail("unsupported dtype %s%s (accepted: %s)", quoted(descr).c_str(), why,
         acceptedDescrs().c_str());
  };
  std::string_view s = descr;
  char order = '=';
  if (!s.empty() && std::strchr("<>|=", s[0]) && s[0] != '\0') {
    order = s[0];
    s.remove_prefix(1);
  }
  if (s.size() < 2 || s.size() > 3 || s[1] < '1' || s[1] > '9' ||
      (s.size() == 3 && (s[2] < '0' || s[2] > '9')))
    unsupported("");
  int size = s[1] - '0';
  if (s.size() == 3)
    size = size * 10 + (s[2] - '0');
  const FileType *type = nullptr;
  for (const FileType &t : fileTypes)
    if (t.kind == s[0] && t.size == size)
      type = &t;
  if (!type)
    unsupported(s[0] == 'V' ? " (raw records; bfloat16 arrays saved through "
                              "ml_dtypes look like this: save them as "
                              "float32)"
                            : "");
  if (order == '|' && size > 1)
    unsupported(" (byte order '|' on a multi-byte type)");
  return {type, order == '>'};
}

//===--- Shapes -----------------------------------------------------------===//

std::string shapeString(int rank, const int64_t *shape) {
  std::string s = "(";
  for (int i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (rank == 1 ? ",)" : ")");
}

/// The number of elements of a shape, or -1 when a dimension is negative or
/// the product overflows int64.
int64_t numElements(int rank, const int64_t *shape) {
  int64_t n = 1;
  bool overflow = false;
  for (int i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return -1;
    overflow |= __builtin_mul_overflow(n, shape[i], &n);
  }
  // A zero dimension makes any overflow of the other ones irrelevant.
  for (int i = 0; i < rank; ++i)
    if (shape[i] == 0)
      return 0;
  return overflow ? -1 : n;
}

/// ELEMENTS * SIZE bytes, failing when it exceeds what memory can hold.
size_t byteCount(int64_t elements, int64_t size, int rank,
                 const int64_t *shape) {
  int64_t bytes;
  if (elements < 0 || __builtin_mul_overflow(elements, size, &bytes) ||
      uint64_t(bytes) > SIZE_MAX / 2)
    fail("shape %s is too large (its size in bytes overflows)",
         shapeString(rank, shape).c_str());
  return size_t(bytes);
}

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, FreeDeleter>;

/// BYTES of memory (at least one, so that data is never NULL).
Buffer allocate(size_t bytes, bool zero) {
  void *p = zero ? std::calloc(std::max<size_t>(bytes, 1), 1)
                 : std::malloc(std::max<size_t>(bytes, 1));
  if (!p)
    fail("cannot allocate %zu bytes", bytes);
  return Buffer(static_cast<char *>(p));
}

/// Checks a requested array (for alloc and write); returns its byte size.
size_t checkArray(int32_t dtype, int32_t rank, const int64_t *shape,
                  int64_t elementSize) {
  if (!isKnownDType(dtype))
    fail("unknown dtype %d (accepted: %d = f32, %d = f64, %d = f16, %d = "
         "bf16, %d = i64, %d = i32, %d = bool)",
         dtype, DTRAIN_RT_F32, DTRAIN_RT_F64, DTRAIN_RT_F16, DTRAIN_RT_BF16,
         DTRAIN_RT_I64, DTRAIN_RT_I32, DTRAIN_RT_BOOL);
  if (rank < 0 || rank > DTRAIN_RT_MAX_RANK)
    fail("rank %d (accepted: 0..%d)", rank, DTRAIN_RT_MAX_RANK);
  if (rank > 0 && !shape)
    fail("shape is NULL with rank %d", rank);
  for (int i = 0; i < rank; ++i)
    if (shape[i] < 0)
      fail("dimension %d of shape %s is negative", i,
           shapeString(rank, shape).c_str());
  return byteCount(numElements(rank, shape), elementSize, rank, shape);
}

//===--- Reading ----------------------------------------------------------===//

struct Header {
  std::string descr;
  bool fortranOrder = false;
  int rank = 0;
  int64_t shape[DTRAIN_RT_MAX_RANK] = {};
};

/// Parses the header's dict literal: exactly the keys 'descr' (a string),
/// 'fortran_order' (True/False) and 'shape' (a tuple of non-negative
/// integers), in any order, then only whitespace.
class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  Header parse() {
    Header h;
    bool seen[3] = {false, false, false};
    expect('{', "'{'");
    while (!peek('}')) {
      std::string_view key = string("a key");
      expect(':', "':'");
      int index = key == "descr"           ? 0
                  : key == "fortran_order" ? 1
                  : key == "shape"         ? 2
                                           : -1;
      if (index < 0)
        fail("unexpected key %s in the header (accepted keys: 'descr', "
             "'fortran_order', 'shape')",
             quoted(key).c_str());
      if (seen[index])
        fail("key %s appears twice in the header", quoted(key).c_str());
      seen[index] = true;
      if (index == 0)
        parseDescr(h);
      else if (index == 1)
        h.fortranOrder = boolean();
      else
        parseShape(h);
      if (!consume(','))
        break;
    }
    expect('}', "',' or '}'");
    skipSpace();
    if (pos_ != s_.size())
      malformed("text after the closing '}'");
    static const char *const names[3] = {"descr", "fortran_order", "shape"};
    for (int i = 0; i < 3; ++i)
      if (!seen[i])
        fail("the header lacks the key '%s': %s", names[i],
             quoted(s_, 80).c_str());
    return h;
  }

private:
  [[noreturn]] void malformed(const char *what) {
    fail("malformed header (%s at byte %zu): %s", what, pos_,
         quoted(s_, 80).c_str());
  }

  void skipSpace() {
    while (pos_ < s_.size() && std::strchr(" \t\r\n", s_[pos_]) &&
           s_[pos_] != '\0')
      ++pos_;
  }

  bool peek(char c) {
    skipSpace();
    return pos_ < s_.size() && s_[pos_] == c;
  }

  bool consume(char c) {
    if (!peek(c))
      return false;
    ++pos_;
    return true;
  }

  void expect(char c, const char *what) {
    if (!consume(c))
      malformed((std::string("expected ") + what).c_str());
  }

  std::string_view string(const char *what) {
    skipSpace();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      malformed((std::string("expected ") + what).c_str());
    char quote = s_[pos_++];
    size_t begin = pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\')
        malformed("escape sequence in a string");
      ++pos_;
    }
    if (pos_ >= s_.size())
      malformed("unterminated string");
    return s_.substr(begin, pos_++ - begin);
  }

  bool word(std::string_view w) {
    skipSpace();
    if (s_.substr(pos_, w.size()) != w)
      return false;
    pos_ += w.size();
    return true;
  }

  bool boolean() {
    if (word("True"))
      return true;
    if (word("False"))
      return false;
    malformed("expected True or False for 'fortran_order'");
  }

  void parseDescr(Header &h) {
    if (peek('[') || peek('{'))
      fail("structured dtypes are not supported (the header's 'descr' is a "
           "list or dict; accepted: %s)",
           acceptedDescrs().c_str());
    h.descr = std::string(string("a string for 'descr'"));
  }

  void parseShape(Header &h) {
    expect('(', "'(' for 'shape'");
    int rank = 0;
    while (!peek(')')) {
      skipSpace();
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9')
        malformed("expected a non-negative integer in 'shape'");
      int64_t v = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, s_[pos_] - '0', &v))
          fail("dimension %d of the header's shape overflows int64", rank);
        ++pos_;
      }
      if (pos_ < s_.size() && s_[pos_] == 'L') // Python 2's long suffix
        ++pos_;
      if (rank < DTRAIN_RT_MAX_RANK)
        h.shape[rank] = v;
      ++rank;
      if (!consume(','))
        break;
    }
    expect(')', "',' or ')' in 'shape'");
    if (rank > DTRAIN_RT_MAX_RANK)
      fail("rank %d (accepted: 0..%d)", rank, DTRAIN_RT_MAX_RANK);
    h.rank = rank;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

/// Element I of DATA (of TYPE) as an integer (integer and bool types).
int64_t loadInteger(const unsigned char *p, const ParsedType &t) {
  const int n = t.type->size;
  uint64_t u = 0;
  for (int i = 0; i < n; ++i)
    u |= uint64_t(p[t.bigEndian ? n - 1 - i : i]) << (8 * i);
  if (t.type->kind == 'b')
    return u != 0;
  if (t.type->kind == 'i' && n < 8 && (u >> (8 * n - 1)) & 1)
    u |= ~uint64_t(0) << (8 * n); // sign-extend
  return int64_t(u);
}

void byteSwap(char *data, size_t elements, int size) {
  for (size_t i = 0; i < elements; ++i)
    std::reverse(data + i * size, data + (i + 1) * size);
}

/// The row-major copy of a column-major (Fortran order) array.
Buffer transposeFromFortran(const char *src, int rank, const int64_t *shape,
                            int64_t elements, size_t elementSize) {
  Buffer dst = allocate(size_t(elements) * elementSize, false);
  int64_t stride[DTRAIN_RT_MAX_RANK], index[DTRAIN_RT_MAX_RANK] = {};
  for (int d = 0; d < rank; ++d)
    stride[d] = d == 0 ? 1 : stride[d - 1] * shape[d - 1];
  int64_t offset = 0; // of the current row-major index in SRC, in elements
  for (int64_t n = 0; n < elements; ++n) {
    std::memcpy(dst.get() + size_t(n) * elementSize,
                src + size_t(offset) * elementSize, elementSize);
    for (int d = rank - 1; d >= 0; --d) {
      offset += stride[d];
      if (++index[d] < shape[d])
        break;
      offset -= stride[d] * shape[d];
      index[d] = 0;
    }
  }
  return dst;
}

} // namespace

void dtrain::rt::readNpy(ByteSource &source, dtrain_rt_array_t *out) {
  static const char magic[] = "\x93NUMPY";
  unsigned char prefix[12];
  const uint64_t total = source.remaining();
  if (total < 10)
    fail("not a .npy file (%llu bytes; a .npy file starts with "
         "\\x93NUMPY and a header)",
         (unsigned long long)total);
  source.read(prefix, 8);
  if (std::memcmp(prefix, magic, 6) != 0)
    fail("not a .npy file (it starts with %s, not with \\x93NUMPY)",
         quoted(std::string_view((const char *)prefix, 6)).c_str());
  const int major = prefix[6], minor = prefix[7];
  if (major < 1 || major > 3 || minor != 0)
    fail("unsupported .npy format version %d.%d (accepted: 1.0, 2.0, 3.0)",
         major, minor);
  const int lengthBytes = major == 1 ? 2 : 4;
  if (source.remaining() < uint64_t(lengthBytes))
    fail("truncated: the file ends inside the header length");
  source.read(prefix + 8, lengthBytes);
  const uint64_t headerLength = readLE(prefix + 8, lengthBytes);
  constexpr uint64_t maxHeader = 1 << 20;
  if (headerLength > source.remaining())
    fail("truncated: the header is %llu bytes but only %llu follow",
         (unsigned long long)headerLength,
         (unsigned long long)source.remaining());
  if (headerLength > maxHeader)
    fail("the header is %llu bytes (accepted: at most %llu)",
         (unsigned long long)headerLength, (unsigned long long)maxHeader);
  std::string text(headerLength, '\0');
  source.read(text.data(), text.size());
  const Header h = HeaderParser(text).parse();
  const ParsedType type = parseDescr(h.descr);

  const int64_t elements = numElements(h.rank, h.shape);
  const size_t fileBytes =
      byteCount(elements, type.type->size, h.rank, h.shape);
  if (fileBytes != source.remaining())
    fail("%s: shape %s of %s needs %zu bytes of data, but %llu follow the "
         "header",
         fileBytes > source.remaining() ? "truncated" : "size mismatch",
         shapeString(h.rank, h.shape).c_str(), quoted(h.descr).c_str(),
         fileBytes, (unsigned long long)source.remaining());

  const int64_t outSize = dtypeSize(type.type->dtype);
  Buffer data = allocate(size_t(elements) * size_t(outSize), false);
  if (outSize == type.type->size) {
    source.read(data.get(), fileBytes);
    if (type.bigEndian && outSize > 1)
      byteSwap(data.get(), size_t(elements), int(outSize));
    // Code compiled for i1 reads a byte as 0 or 1 only; NumPy writes no
    // other, but a file may hold any byte.
    if (type.type->dtype == DTRAIN_RT_BOOL)
      for (size_t i = 0; i < size_t(elements); ++i)
        data.get()[i] = data.get()[i] != 0;
  } else {
    // Widening integer conversion, a chunk at a time.
    std::vector<unsigned char> chunk;
    const size_t chunkElements = size_t(1) << 16;
    for (size_t begin = 0; begin < size_t(elements); begin += chunkElements) {
      size_t n = std::min(chunkElements, size_t(elements) - begin);
      chunk.resize(n * size_t(type.type->size));
      source.read(chunk.data(), chunk.size());
      for (size_t i = 0; i < n; ++i) {
        int64_t v = loadInteger(&chunk[i * size_t(type.type->size)], type);
        char *dst = data.get() + (begin + i) * size_t(outSize);
        if (outSize == 8) {
          std::memcpy(dst, &v, 8);
        } else {
          int32_t v32 = int32_t(v);
          std::memcpy(dst, &v32, 4);
        }
      }
    }
  }
  if (h.fortranOrder && h.rank > 1 && elements > 0)
    data = transposeFromFortran(data.get(), h.rank, h.shape, elements,
                                size_t(outSize));

  *out = dtrain_rt_array_t{};
  out->dtype = type.type->dtype;
  out->rank = h.rank;
  std::copy(h.shape, h.shape + h.rank, out->shape);
  out->data = data.release();
}

//===--- Writing ----------------------------------------------------------===//

namespace {

/// The header dict, padded with spaces and ended by '\n' so that the
/// 10-byte prefix and the header fill a multiple of 64 bytes, as numpy
/// writes it. Always format 1.0: with rank <= 8 the header is short.
std::string makeHeader(const dtrain_rt_array_t &array) {
  std::string dict = "{'descr': '" + descrOf(writtenType(array.dtype)) +
                     "', 'fortran_order': False, 'shape': " +
                     shapeString(array.rank, array.shape) + ", }";
  size_t padding = (64 - (10 + dict.size() + 1) % 64) % 64;
  return dict + std::string(padding, ' ') + "\n";
}

} // namespace

uint64_t dtrain::rt::npySize(const dtrain_rt_array_t *array) {
  if (!array)
    fail("cannot write: the array is NULL");
  try {
    checkArray(array->dtype, array->rank, array->shape,
               dtypeSize(array->dtype));
  } catch (Failure &f) {
    f.message = "cannot write: " + f.message;
    throw;
  }
  // checkArray bounds the in-memory size by SIZE_MAX / 2: the file's
  // elements are at most twice as large (BF16 written as f32).
  const uint64_t elements = uint64_t(numElements(array->rank, array->shape));
  if (elements > 0 && !array->data)
    fail("cannot write: data is NULL for %llu elements",
         (unsigned long long)elements);
  return 10 + makeHeader(*array).size() +
         elements * uint64_t(writtenType(array->dtype).size);
}

void dtrain::rt::writeNpy(ByteSink &sink, const dtrain_rt_array_t &array) {
  const std::string header = makeHeader(array);
  unsigned char prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  writeLE(prefix + 8, header.size(), 2);
  sink.write(prefix, sizeof prefix);
  sink.write(header.data(), header.size());

  const size_t elements = size_t(numElements(array.rank, array.shape));
  const char *data = static_cast<const char *>(array.data);
  if (array.dtype != DTRAIN_RT_BF16) {
    if (elements > 0)
      sink.write(data, elements * size_t(dtypeSize(array.dtype)));
    return;
  }
  // BF16 -> f32, exactly, a chunk at a time.
  std::vector<float> chunk;
  const size_t chunkElements = size_t(1) << 16;
  for (size_t begin = 0; begin < elements; begin += chunkElements) {
    size_t n = std::min(chunkElements, elements - begin);
    chunk.resize(n);
    for (size_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, data + 2 * (begin + i), 2);
      chunk[i] = bf16ToF32(bits);
    }
    sink.write(chunk.data(), n * sizeof(float));
  }
}

//===--- C ABI ------------------------------------------------------------===//

extern "C" {

int64_t dtrain_rt_dtype_size(int32_t dtype) { return dtypeSize(dtype); }

int64_t dtrain_rt_array_num_elements(const dtrain_rt_array_t *array) {
  if (!array || array->rank < 0 || array->rank > DTRAIN_RT_MAX_RANK)
    return -1;
  return numElements(array->rank, array->shape);
}

int dtrain_rt_array_alloc(dtrain_rt_array_t *out, int32_t dtype, int32_t rank,
                          const int64_t *shape, char *error, size_t errorSize) {
  if (!out)
    return reportFailure("dtrain_rt_array_alloc", "out is NULL", error,
                         errorSize);
  *out = dtrain_rt_array_t{};
  return runGuarded("dtrain_rt_array_alloc", error, errorSize, [&] {
    size_t bytes = checkArray(dtype, rank, shape, dtypeSize(dtype));
    Buffer data = allocate(bytes, true);
    out->dtype = dtype;
    out->rank = rank;
    std::copy(shape, shape + rank, out->shape);
    out->data = data.release();
  });
}

void dtrain_rt_array_free(dtrain_rt_array_t *array) {
  if (!array)
    return;
  std::free(array->data);
  *array = dtrain_rt_array_t{};
}

int dtrain_rt_npy_read(const char *path, dtrain_rt_array_t *out, char *error,
                       size_t errorSize) {
  const std::string context = path ? path : "dtrain_rt_npy_read";
  if (out)
    *out = dtrain_rt_array_t{};
  return runGuarded(context, error, errorSize, [&] {
    if (!path || !out)
      fail("%s is NULL", path ? "out" : "path");
    InputFile file(path);
    FileRange range(file, 0, file.size());
    readNpy(range, out);
  });
}

int dtrain_rt_npy_write(const char *path, const dtrain_rt_array_t *array,
                        char *error, size_t errorSize) {
  const std::string context = path ? path : "dtrain_rt_npy_write";
  return runGuarded(context, error, errorSize, [&] {
    if (!path)
      fail("path is NULL");
    npySize(array);
    OutputFile file(path);
    writeNpy(file, *array);
    file.commit();
  });
}

} // extern "C"
