//===- ArrayFile.h - .npy/.npz internals ------------------------*- C++ -*-===//
//
// Shared by Npy.cpp (the .npy format, arrays, file I/O) and Npz.cpp (zip
// archives of .npy members). Errors are C++ exceptions (Failure) inside the
// runtime; runGuarded turns them into the C ABI's return code and message.
//
// Every byte read from a file is untrusted: sizes and offsets are checked
// against what the file (or zip member) really holds before anything is
// allocated or read.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_ARRAYFILE_H
#define DTRAIN_RUNTIME_ARRAYFILE_H

#include "Internal.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <string_view>

namespace dtrain::rt {

/// An error of an array file function: the message without the file name.
struct Failure {
  std::string message;
};

/// Throws a Failure with the printf-formatted message.
[[noreturn]] void fail(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

/// S in single quotes for a message, non-printable bytes as \xNN, cut to
/// about MAX characters.
std::string quoted(std::string_view s, size_t max = 64);

/// Runs BODY(); returns 0, or 1 with "CONTEXT: <failure>" in ERROR (see
/// dtrain_rt.h) when it throws a Failure or runs out of memory.
template <typename Body>
int runGuarded(const std::string &context, char *error, size_t errorSize,
               Body &&body);

/// Copies "CONTEXT: MESSAGE" into ERROR as the C ABI promises. Returns 1.
int reportFailure(const std::string &context, const std::string &message,
                  char *error, size_t errorSize);

/// The N-byte little-endian integer at P, and its inverse.
inline uint64_t readLE(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}
inline void writeLE(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i)
    p[i] = (unsigned char)(v >> (8 * i));
}

//===--- Byte streams -----------------------------------------------------===//

/// The bytes of one .npy stream (a file or a zip member), of known length.
class ByteSource {
public:
  virtual ~ByteSource() = default;
  /// Bytes left to read.
  virtual uint64_t remaining() const = 0;
  /// Reads exactly N <= remaining() bytes into DST, or fails.
  virtual void read(void *dst, size_t n) = 0;
};

class ByteSink {
public:
  virtual ~ByteSink() = default;
  virtual void write(const void *src, size_t n) = 0;
};

/// A regular file opened for reading, read at explicit offsets.
class InputFile {
public:
  explicit InputFile(const char *path); // fails when it cannot be opened
  ~InputFile();
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  uint64_t size() const { return size_; }
  /// Reads N bytes at OFFSET; fails unless [OFFSET, OFFSET + N) is in the
  /// file.
  void readAt(uint64_t offset, void *dst, size_t n) const;

private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// Bytes [BEGIN, END) of an InputFile, read in order; optionally keeps the
/// CRC-32 of what was read.
class FileRange : public ByteSource {
public:
  FileRange(const InputFile &file, uint64_t begin, uint64_t end);
  uint64_t remaining() const override { return end_ - pos_; }
  void read(void *dst, size_t n) override;
  uint32_t crc() const { return crc_; }

private:
  const InputFile &file_;
  uint64_t pos_, end_;
  uint32_t crc_ = 0;
};

/// A file written under a temporary name in PATH's directory and renamed to
/// PATH by commit(); removed when destroyed uncommitted, so that a failed
/// write leaves no partial file at PATH.
class OutputFile : public ByteSink {
public:
  explicit OutputFile(const char *path);
  ~OutputFile() override;
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  void write(const void *src, size_t n) override;
  /// Overwrites N bytes at OFFSET (< the bytes written so far).
  void writeAt(uint64_t offset, const void *src, size_t n);
  uint64_t position() const { return pos_; }
  void commit();

private:
  std::string path_, temp_;
  int fd_ = -1;
  uint64_t pos_ = 0;
};

/// Writes BYTES to PATH through an OutputFile (replacing it atomically); a
/// failure reads "WHAT: PATH: reason".
void writeFileAtomically(const std::string &path, std::string_view bytes,
                         const char *what);

/// Fails as writeFileAtomically would where PATH cannot be created, leaving
/// nothing behind: an output written after a long run is checked before it.
void checkCreatable(const std::string &path, const char *what);

/// CRC-32 (as zip uses it) of N bytes at DATA, continuing from CRC.
uint32_t updateCrc32(uint32_t crc, const void *data, size_t n);

/// Passes bytes to another sink and keeps their count and CRC-32.
class CountingSink : public ByteSink {
public:
  explicit CountingSink(ByteSink &out) : out_(out) {}
  void write(const void *src, size_t n) override;
  uint64_t count() const { return count_; }
  uint32_t crc() const { return crc_; }

private:
  ByteSink &out_;
  uint64_t count_ = 0;
  uint32_t crc_ = 0;
};

//===--- The .npy format --------------------------------------------------===//

/// Reads a whole .npy stream from SOURCE into OUT (all of it: trailing
/// bytes are an error). OUT is written only on success.
void readNpy(ByteSource &source, dtrain_rt_array_t *out);

/// Checks that ARRAY can be written and returns the size of its .npy stream.
uint64_t npySize(const dtrain_rt_array_t *array);

/// Writes ARRAY (checked by npySize) as a .npy stream.
void writeNpy(ByteSink &sink, const dtrain_rt_array_t &array);

/// Sizes and offsets above this use ZIP64 records when writing .npz files
/// (2^31 - 1, as Python's zipfile; tests lower it).
DTRAIN_RT_TEST_API void setZip64LimitForTesting(uint64_t limit);

//===--- Implementation ---------------------------------------------------===//

template <typename Body>
int runGuarded(const std::string &context, char *error, size_t errorSize,
               Body &&body) {
  try {
    body();
    return 0;
  } catch (const Failure &f) {
    return reportFailure(context, f.message, error, errorSize);
  } catch (const std::bad_alloc &) {
    return reportFailure(context, "out of memory", error, errorSize);
  } catch (const std::exception &e) {
    return reportFailure(context, std::string("internal error: ") + e.what(),
                         error, errorSize);
  }
}

} // namespace dtrain::rt

#endif // DTRAIN_RUNTIME_ARRAYFILE_H
