//===- OnnxWeights.h - the initializers of an ONNX model file ---*- C++ -*-===//
//
// Reads the initializers (weights) of an ONNX model without protobuf or
// libonnx, for the main of compiled models (ModelMain.cpp). The file is
// mapped and its protobuf wire format walked directly, following only
// ModelProto.graph (7) -> GraphProto.initializer (5) -> TensorProto; every
// other field is skipped by its length, so opening a 500 MB model touches
// little more than the tensors' headers. Data is copied straight from the
// mapping (or the external data file) into the caller's buffer.
//
// Every byte of the file is untrusted: truncated varints, lengths past the
// end, wrong wire types, data that does not match the dimensions and short
// external files are Failures (ArrayFile.h) whose one-line message names the
// file and the initializer, never out-of-bounds reads. (A file truncated by
// another process while it is mapped is outside this promise.)
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_ONNXWEIGHTS_H
#define DTRAIN_RUNTIME_ONNXWEIGHTS_H

#include "ArrayFile.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain::rt {

/// A dense initializer, as indexed by OnnxInitializers::open. Only name,
/// dtype and dims are meant for callers; the rest says where the data is.
struct OnnxTensor {
  std::string name;
  int32_t onnxType = 0; // TensorProto.DataType as stored (0: absent)
  int32_t dtype = -1;   // its DTRAIN_RT_* type; -1 when the runtime lacks it
  std::vector<int64_t> dims;

  // The TensorProto message, [begin, end) in the file, walked again by
  // read() for the typed data fields.
  uint64_t begin = 0, end = 0;
  uint32_t typedFields = 0; // bit N set: field N (float_data, ...) is present
  uint64_t typedValues = 0; // the number of values in those fields
  bool segmented = false;
  bool hasRaw = false;
  uint64_t rawBegin = 0, rawSize = 0;
  int64_t dataLocation = 0; // TensorProto.DataLocation (1: EXTERNAL)
  std::map<std::string, std::string> externalData; // key -> value
};

/// DIMS as the messages of the runtime write shapes: "3x4", "()" for a
/// scalar.
std::string dimsString(const std::vector<int64_t> &dims);

/// The initializers of one ONNX model file. (Exported for the runtime's
/// tests only; not part of the C ABI.)
class DTRAIN_RT_TEST_API OnnxInitializers {
public:
  /// Maps PATH and indexes the initializers of its graph. Fails on files
  /// that are not well-formed ONNX protobuf, and on duplicate names.
  static std::unique_ptr<OnnxInitializers> open(const std::string &path);
  ~OnnxInitializers();
  OnnxInitializers(const OnnxInitializers &) = delete;
  OnnxInitializers &operator=(const OnnxInitializers &) = delete;

  const std::string &path() const { return path_; }
  /// The dense initializers, in file order.
  const std::vector<OnnxTensor> &tensors() const { return tensors_; }

  /// The initializer NAME, checked to be readable: a type the runtime
  /// reads, non-negative dimensions, exactly one source of data of the
  /// right size (the typed fields' counts are checked by read). Fails when
  /// it is absent, sparse or unreadable.
  const OnnxTensor &lookup(std::string_view name) const;

  /// The number of elements of T (1 for a scalar), or -1 on overflow.
  static int64_t numElements(const OnnxTensor &t);

  /// Copies the elements of T (from lookup) into DEST, which holds exactly
  /// BYTES = numElements(T) * dtrain_rt_dtype_size(T.dtype) bytes, row-major
  /// as stored; 16-bit floats as their bit patterns. Fails when the data
  /// does not match the dimensions or the external file cannot be read;
  /// DEST may then be partly written.
  void read(const OnnxTensor &t, void *dest, size_t bytes) const;

private:
  explicit OnnxInitializers(std::string path) : path_(std::move(path)) {}
  void index();
  void check(const OnnxTensor &t) const;
  void readExternal(const OnnxTensor &t, void *dest, size_t bytes) const;
  void readTyped(const OnnxTensor &t, void *dest, size_t bytes) const;

  std::string path_;
  const unsigned char *data_ = nullptr;
  size_t size_ = 0;
  std::vector<OnnxTensor> tensors_;
  std::map<std::string, size_t, std::less<>> byName_;
  std::set<std::string, std::less<>> sparse_;
};

} // namespace dtrain::rt

#endif // DTRAIN_RUNTIME_ONNXWEIGHTS_H
