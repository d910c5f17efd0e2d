//===- OnnxWeights.cpp - the initializers of an ONNX model file -----------===//
//
// A reader of just enough of the protobuf wire format for ONNX initializers
// (field numbers from onnx/onnx.proto):
//
//   ModelProto   7 graph (GraphProto)
//   GraphProto   5 initializer (TensorProto, repeated)
//                15 sparse_initializer (SparseTensorProto; 1 values)
//   TensorProto  1 dims (int64)         2 data_type         3 segment
//                4 float_data           5 int32_data (also f16/bf16 bits)
//                6 string_data          7 int64_data        8 name
//                9 raw_data             10 double_data      11 uint64_data
//                13 external_data (StringStringEntryProto: 1 key, 2 value)
//                14 data_location (1: EXTERNAL)
//
// A field is a varint tag (number << 3 | wire type) and a payload: a varint
// (0), 8 bytes (1), a varint length and that many bytes (2), or 4 bytes
// (5). Repeated scalars may be packed (wire type 2) or not, and may be split
// over several occurrences, which concatenate; for other fields the last
// occurrence wins, and a message field that occurs twice is merged (two
// `graph` fields contribute the initializers of both), as protobuf parses.
//
//===----------------------------------------------------------------------===//

#include "OnnxWeights.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

using namespace dtrain::rt;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "ONNX stores raw data little-endian, as this host must be");

namespace {

//===--- The wire format --------------------------------------------------===//

enum WireType {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kFixed32 = 5,
};

/// One field of a message: its number, wire type, the file offset of its
/// tag, and its value (varint) or its payload [begin, end) as file offsets
/// (the other wire types).
struct Field {
  uint64_t number;
  int wireType;
  uint64_t at;
  uint64_t value;
  uint64_t begin, end;
};

/// The fields of the message (or packed list) at [BEGIN, END) of DATA, in
/// order; every read is checked against END. WHAT names the container in
/// messages ("file", "graph", ...).
class Walker {
public:
  Walker(const unsigned char *data, uint64_t begin, uint64_t end,
         const char *what)
      : data_(data), pos_(begin), end_(end), what_(what) {}

  bool done() const { return pos_ >= end_; }

  uint64_t varint() {
    const uint64_t start = pos_;
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (pos_ >= end_)
        fail("the %s ends inside the varint at byte %llu", what_,
             (unsigned long long)start);
      const unsigned char b = data_[pos_++];
      if (shift == 63 && b > 1)
        fail("the varint at byte %llu is longer than 64 bits",
             (unsigned long long)start);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return v;
    }
  }

  Field next() {
    const uint64_t at = pos_;
    const uint64_t tag = varint();
    Field f{tag >> 3, int(tag & 7), at, 0, 0, 0};
    if (f.number == 0 || f.number > 0x1fffffff)
      fail("invalid field number %llu at byte %llu",
           (unsigned long long)f.number, (unsigned long long)at);
    switch (f.wireType) {
    case kVarint:
      f.value = varint();
      return f;
    case kFixed64:
      return take(f, 8);
    case kFixed32:
      return take(f, 4);
    case kLen:
      return take(f, varint());
    case 3:
    case 4:
      fail("field %llu at byte %llu is a group (wire type %d), which ONNX "
           "does not use",
           (unsigned long long)f.number, (unsigned long long)at, f.wireType);
    default:
      fail("invalid wire type %d at byte %llu", f.wireType,
           (unsigned long long)at);
    }
  }

private:
  Field &take(Field &f, uint64_t n) {
    if (n > end_ - pos_)
      fail("field %llu at byte %llu needs %llu bytes, but the %s has only "
           "%llu left",
           (unsigned long long)f.number, (unsigned long long)f.at,
           (unsigned long long)n, what_, (unsigned long long)(end_ - pos_));
    f.begin = pos_;
    f.end = pos_ += n;
    return f;
  }

  const unsigned char *data_;
  uint64_t pos_, end_;
  const char *what_;
};

const char *wireTypeName(int wireType) {
  switch (wireType) {
  case kVarint:
    return "varint";
  case kFixed64:
    return "64-bit";
  case kLen:
    return "length-delimited";
  default:
    return "32-bit";
  }
}

/// Fails unless F has wire type WIRE (or ALSO, e.g. the packed form).
void expectWire(const Field &f, const char *name, int wire, int also = -1) {
  if (f.wireType == wire || f.wireType == also)
    return;
  fail("field %llu (%s) at byte %llu is %s, expected %s%s%s",
       (unsigned long long)f.number, name, (unsigned long long)f.at,
       wireTypeName(f.wireType), wireTypeName(wire), also >= 0 ? " or " : "",
       also >= 0 ? wireTypeName(also) : "");
}

//===--- TensorProto ------------------------------------------------------===//

enum TensorField {
  kDims = 1,
  kDataType = 2,
  kSegment = 3,
  kFloatData = 4,
  kInt32Data = 5,
  kStringData = 6,
  kInt64Data = 7,
  kName = 8,
  kRawData = 9,
  kDoubleData = 10,
  kUint64Data = 11,
  kExternalData = 13,
  kDataLocation = 14,
};

/// The typed data fields: their number, name and wire types (unpacked,
/// packed).
struct TypedField {
  int number;
  const char *name;
  int wire;
};
constexpr TypedField typedFields[] = {
    {kFloatData, "float_data", kFixed32},
    {kInt32Data, "int32_data", kVarint},
    {kStringData, "string_data", kLen},
    {kInt64Data, "int64_data", kVarint},
    {kDoubleData, "double_data", kFixed64},
    {kUint64Data, "uint64_data", kVarint},
};

const TypedField &typedField(int number) {
  for (const TypedField &f : typedFields)
    if (f.number == number)
      return f;
  fail("internal error: no typed field %d", number);
}

/// The number of values in F, an occurrence of the typed field TF; checks
/// a packed list completely, so that reading it later cannot fail.
uint64_t valueCount(const unsigned char *data, const Field &f,
                    const TypedField &tf) {
  if (f.wireType != kLen || tf.wire == kLen)
    return 1;
  const uint64_t length = f.end - f.begin;
  if (tf.wire != kVarint) {
    const int width = tf.wire == kFixed32 ? 4 : 8;
    if (length % width != 0)
      fail("a packed %s of %llu bytes is not a whole number of %d-byte "
           "values",
           tf.name, (unsigned long long)length, width);
    return length / width;
  }
  // Each varint ends with the one byte of it that lacks the 0x80 bit.
  uint64_t count = 0;
  for (uint64_t i = f.begin; i < f.end; ++i)
    count += data[i] < 0x80;
  if (length > 0 && data[f.end - 1] >= 0x80)
    fail("the packed %s at byte %llu ends inside a varint", tf.name,
         (unsigned long long)f.begin);
  return count;
}

/// TensorProto.DataType names, by value.
const char *const onnxTypeNames[] = {
    "UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",  "INT16",
    "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16", "DOUBLE",
    "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};

std::string onnxTypeName(int64_t type) {
  if (type >= 0 && type < int64_t(std::size(onnxTypeNames)))
    return onnxTypeNames[type] + (" (" + std::to_string(type) + ")");
  return "data type " + std::to_string(type);
}

/// The ONNX types the runtime reads, their DTRAIN_RT_* type and the typed
/// field that holds them when raw_data is not used.
struct TypeMapping {
  int64_t onnxType;
  int32_t dtype;
  int field;
};
constexpr TypeMapping typeMappings[] = {
    {1, DTRAIN_RT_F32, kFloatData},  {11, DTRAIN_RT_F64, kDoubleData},
    {10, DTRAIN_RT_F16, kInt32Data}, {16, DTRAIN_RT_BF16, kInt32Data},
    {7, DTRAIN_RT_I64, kInt64Data},  {6, DTRAIN_RT_I32, kInt32Data},
};

const TypeMapping *mappingOf(int64_t onnxType) {
  for (const TypeMapping &m : typeMappings)
    if (m.onnxType == onnxType)
      return &m;
  return nullptr;
}

std::string acceptedTypes() {
  std::string s;
  for (const TypeMapping &m : typeMappings)
    s += (s.empty() ? "" : ", ") + std::string(onnxTypeNames[m.onnxType]);
  return s;
}

/// A non-negative decimal integer of an external_data entry.
uint64_t parseDecimal(const std::string &key, const std::string &text) {
  uint64_t v = 0;
  bool ok = !text.empty();
  for (char c : text) {
    ok = ok && c >= '0' && c <= '9' && !__builtin_mul_overflow(v, 10, &v) &&
         !__builtin_add_overflow(v, uint64_t(c - '0'), &v);
    if (!ok)
      break;
  }
  if (!ok)
    fail("external_data '%s' is %s, not a non-negative integer", key.c_str(),
         quoted(text).c_str());
  return v;
}

/// Reads the name of the TensorProto at [BEGIN, END) as far as it can be
/// parsed, for messages about a malformed one ("" when it cannot).
std::string tolerantName(const unsigned char *data, uint64_t begin,
                         uint64_t end) {
  std::string name;
  try {
    Walker w(data, begin, end, "initializer");
    while (!w.done()) {
      Field f = w.next();
      if (f.number == kName && f.wireType == kLen)
        name.assign((const char *)data + f.begin, f.end - f.begin);
    }
  } catch (const Failure &) {
  }
  return name;
}

/// "initializer 'NAME'", or "initializer #INDEX" when it has no name yet.
std::string describe(const std::string &name, size_t index) {
  if (name.empty())
    return "initializer #" + std::to_string(index + 1);
  return "initializer " + quoted(name, 200);
}

struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

} // namespace

std::string dtrain::rt::dimsString(const std::vector<int64_t> &dims) {
  if (dims.empty())
    return "()";
  std::string s;
  for (int64_t d : dims)
    s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

//===--- Opening and indexing ---------------------------------------------===//

std::unique_ptr<OnnxInitializers>
OnnxInitializers::open(const std::string &path) {
  std::unique_ptr<OnnxInitializers> model(new OnnxInitializers(path));
  try {
    // O_NONBLOCK: a FIFO must not block the open (it is refused below).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
      fail("cannot open: %s", std::strerror(errno));
    FdCloser closer{fd};
    struct stat st;
    if (::fstat(fd, &st) != 0)
      fail("cannot stat: %s", std::strerror(errno));
    if (S_ISDIR(st.st_mode))
      fail("is a directory, not a file");
    if (!S_ISREG(st.st_mode))
      fail("not a regular file");
    // An empty file is a valid (empty) message: it fails below for lack of
    // a graph, and cannot be mapped.
    if (st.st_size > 0) {
      void *p =
          ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED)
        fail("cannot map: %s", std::strerror(errno));
      model->data_ = static_cast<const unsigned char *>(p);
      model->size_ = size_t(st.st_size);
    }
    model->index();
  } catch (Failure &f) {
    f.message = path + ": " + f.message;
    throw;
  }
  return model;
}

OnnxInitializers::~OnnxInitializers() {
  if (data_)
    ::munmap(const_cast<unsigned char *>(data_), size_);
}

void OnnxInitializers::index() {
  // The messages of the initializers first (a malformed file fails as a
  // whole), then each one (a malformed one fails by its name).
  std::vector<Field> dense, sparse;
  try {
    bool graph = false;
    Walker model(data_, 0, size_, "file");
    while (!model.done()) {
      Field f = model.next();
      if (f.number != 7)
        continue;
      expectWire(f, "ModelProto.graph", kLen);
      graph = true;
      Walker g(data_, f.begin, f.end, "graph");
      while (!g.done()) {
        Field gf = g.next();
        if (gf.number == 5) {
          expectWire(gf, "GraphProto.initializer", kLen);
          dense.push_back(gf);
        } else if (gf.number == 15) {
          expectWire(gf, "GraphProto.sparse_initializer", kLen);
          sparse.push_back(gf);
        }
      }
    }
    if (!graph)
      fail("it has no graph (ModelProto field 7)");
  } catch (Failure &f) {
    f.message = "not a valid ONNX model: " + f.message;
    throw;
  }

  for (size_t i = 0; i < dense.size(); ++i) {
    OnnxTensor t;
    t.begin = dense[i].begin;
    t.end = dense[i].end;
    try {
      Walker w(data_, t.begin, t.end, "initializer");
      while (!w.done()) {
        Field f = w.next();
        switch (f.number) {
        case kDims:
          expectWire(f, "dims", kVarint, kLen);
          if (f.wireType == kVarint) {
            t.dims.push_back(int64_t(f.value));
          } else {
            Walker packed(data_, f.begin, f.end, "packed dims");
            while (!packed.done())
              t.dims.push_back(int64_t(packed.varint()));
          }
          break;
        case kDataType:
          expectWire(f, "data_type", kVarint);
          t.onnxType = int32_t(f.value); // an int32 field, as protobuf reads it
          break;
        case kSegment:
          expectWire(f, "segment", kLen);
          t.segmented = true;
          break;
        case kFloatData:
        case kInt32Data:
        case kStringData:
        case kInt64Data:
        case kDoubleData:
        case kUint64Data: {
          const TypedField &tf = typedField(int(f.number));
          expectWire(f, tf.name, tf.wire, kLen);
          t.typedFields |= 1u << f.number;
          t.typedValues += valueCount(data_, f, tf);
          break;
        }
        case kName:
          expectWire(f, "name", kLen);
          t.name.assign((const char *)data_ + f.begin, f.end - f.begin);
          break;
        case kRawData:
          expectWire(f, "raw_data", kLen);
          t.hasRaw = true;
          t.rawBegin = f.begin;
          t.rawSize = f.end - f.begin;
          break;
        case kExternalData: {
          expectWire(f, "external_data", kLen);
          std::string key, value;
          Walker entry(data_, f.begin, f.end, "external_data entry");
          while (!entry.done()) {
            Field ef = entry.next();
            if (ef.number != 1 && ef.number != 2)
              continue;
            expectWire(ef, ef.number == 1 ? "key" : "value", kLen);
            (ef.number == 1 ? key : value)
                .assign((const char *)data_ + ef.begin, ef.end - ef.begin);
          }
          t.externalData[key] = value;
          break;
        }
        case kDataLocation:
          expectWire(f, "data_location", kVarint);
          t.dataLocation = int64_t(f.value);
          break;
        default:
          break;
        }
      }
    } catch (Failure &f) {
      f.message = describe(tolerantName(data_, t.begin, t.end), i) +
                  ": malformed TensorProto: " + f.message;
      throw;
    }
    if (const TypeMapping *m = mappingOf(t.onnxType))
      t.dtype = m->dtype;
    if (!byName_.emplace(t.name, tensors_.size()).second)
      fail("%s appears twice in the graph", describe(t.name, i).c_str());
    tensors_.push_back(std::move(t));
  }

  for (size_t i = 0; i < sparse.size(); ++i) {
    try {
      Walker w(data_, sparse[i].begin, sparse[i].end, "sparse initializer");
      while (!w.done()) {
        Field f = w.next();
        if (f.number != 1)
          continue;
        expectWire(f, "SparseTensorProto.values", kLen);
        sparse_.insert(tolerantName(data_, f.begin, f.end));
      }
    } catch (Failure &f) {
      f.message = "sparse initializer #" + std::to_string(i + 1) +
                  ": malformed SparseTensorProto: " + f.message;
      throw;
    }
  }
}

//===--- Lookup and checks ------------------------------------------------===//

int64_t OnnxInitializers::numElements(const OnnxTensor &t) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : t.dims) {
    if (d < 0)
      return -1;
    overflow |= __builtin_mul_overflow(n, d, &n);
  }
  // A zero dimension makes any overflow of the other ones irrelevant.
  for (int64_t d : t.dims)
    if (d == 0)
      return 0;
  return overflow ? -1 : n;
}

const OnnxTensor &OnnxInitializers::lookup(std::string_view name) const {
  auto it = byName_.find(name);
  if (it == byName_.end()) {
    if (sparse_.count(name))
      fail("%s: initializer %s is a sparse_initializer, which the runtime "
           "does not read (store it as a dense initializer)",
           path_.c_str(), quoted(name, 200).c_str());
    std::string known;
    for (size_t i = 0; i < tensors_.size() && i < 8; ++i)
      known += (i ? ", " : ": ") + quoted(tensors_[i].name, 40);
    if (tensors_.size() > 8)
      known += ", ...";
    fail("%s: no initializer %s (the file has %zu%s%s)", path_.c_str(),
         quoted(name, 200).c_str(), tensors_.size(),
         tensors_.size() == 1 ? " initializer" : " initializers",
         known.c_str());
  }
  const OnnxTensor &t = tensors_[it->second];
  try {
    check(t);
  } catch (Failure &f) {
    f.message =
        path_ + ": initializer " + quoted(t.name, 200) + ": " + f.message;
    throw;
  }
  return t;
}

void OnnxInitializers::check(const OnnxTensor &t) const {
  if (t.onnxType == 0)
    fail("it has no data_type");
  const TypeMapping *mapping = mappingOf(t.onnxType);
  if (!mapping)
    fail("it has data type %s, which the runtime does not read (accepted: "
         "%s)",
         onnxTypeName(t.onnxType).c_str(), acceptedTypes().c_str());
  if (t.segmented)
    fail("it is segmented (TensorProto.segment), which the runtime does not "
         "read");
  for (size_t d = 0; d < t.dims.size(); ++d)
    if (t.dims[d] < 0)
      fail("dimension %zu of its shape is negative (%lld)", d,
           (long long)t.dims[d]);
  const int64_t elements = numElements(t);
  int64_t bytes;
  if (elements < 0 ||
      __builtin_mul_overflow(elements, dtypeSize(t.dtype), &bytes) ||
      uint64_t(bytes) > SIZE_MAX / 2)
    fail("its shape %s is too large (its size in bytes overflows)",
         dimsString(t.dims).c_str());
  const std::string type = onnxTypeName(t.onnxType);

  // Exactly one source of data.
  for (const TypedField &f : typedFields)
    if ((t.typedFields >> f.number & 1) && f.number != mapping->field)
      fail("it has %s, which data type %s does not use (expected %s or "
           "raw_data)",
           f.name, type.c_str(), typedField(mapping->field).name);
  const char *typed = t.typedFields ? typedField(mapping->field).name : nullptr;
  if (t.dataLocation != 0 && t.dataLocation != 1)
    fail("its data_location is %lld (accepted: 0 = DEFAULT, 1 = EXTERNAL)",
         (long long)t.dataLocation);
  if (t.dataLocation == 1) {
    if (t.hasRaw || typed)
      fail("its data_location is EXTERNAL, but it also has %s",
           t.hasRaw ? "raw_data" : typed);
    auto location = t.externalData.find("location");
    if (location == t.externalData.end() || location->second.empty())
      fail("its data_location is EXTERNAL, but external_data has no "
           "'location'");
    const std::string &path = location->second;
    if (path[0] == '/' || path.find('\0') != std::string::npos)
      fail("external_data location %s must be a relative path (to the "
           "model's directory)",
           quoted(path, 200).c_str());
    auto offset = t.externalData.find("offset");
    if (offset != t.externalData.end())
      parseDecimal("offset", offset->second);
    auto length = t.externalData.find("length");
    if (length != t.externalData.end() &&
        parseDecimal("length", length->second) != uint64_t(bytes))
      fail("its external_data length is %s bytes, but shape %s of %s needs "
           "%lld",
           length->second.c_str(), dimsString(t.dims).c_str(), type.c_str(),
           (long long)bytes);
    return;
  }
  if (!t.externalData.empty())
    fail("it has external_data, but its data_location is not EXTERNAL");
  if (t.hasRaw && typed)
    fail("it has both raw_data and %s", typed);
  if (t.hasRaw && t.rawSize != uint64_t(bytes))
    fail("raw_data holds %llu bytes, but shape %s of %s needs %lld",
         (unsigned long long)t.rawSize, dimsString(t.dims).c_str(),
         type.c_str(), (long long)bytes);
  if (typed && t.typedValues != uint64_t(elements))
    fail("%s holds %llu values, but shape %s needs %lld", typed,
         (unsigned long long)t.typedValues, dimsString(t.dims).c_str(),
         (long long)elements);
  if (!t.hasRaw && !typed && elements > 0)
    fail("it has no data (neither raw_data nor %s) for its %lld elements",
         typedField(mapping->field).name, (long long)elements);
}

//===--- Reading ----------------------------------------------------------===//

void OnnxInitializers::read(const OnnxTensor &t, void *dest,
                            size_t bytes) const {
  try {
    check(t);
    const uint64_t expected =
        uint64_t(numElements(t)) * uint64_t(dtypeSize(t.dtype));
    if (bytes != expected)
      fail("internal error: a destination of %zu bytes for %llu bytes of "
           "data",
           bytes, (unsigned long long)expected);
    if (t.dataLocation == 1)
      readExternal(t, dest, bytes);
    else if (t.hasRaw)
      std::memcpy(dest, data_ + t.rawBegin, bytes);
    else if (t.typedFields)
      readTyped(t, dest, bytes);
  } catch (Failure &f) {
    f.message =
        path_ + ": initializer " + quoted(t.name, 200) + ": " + f.message;
    throw;
  }
}

void OnnxInitializers::readExternal(const OnnxTensor &t, void *dest,
                                    size_t bytes) const {
  const size_t slash = path_.rfind('/');
  const std::string file =
      (slash == std::string::npos ? "" : path_.substr(0, slash + 1)) +
      t.externalData.at("location");
  auto offsetEntry = t.externalData.find("offset");
  const uint64_t offset = offsetEntry == t.externalData.end()
                              ? 0
                              : parseDecimal("offset", offsetEntry->second);
  try {
    InputFile in(file.c_str());
    // Without a length the data runs to the end of the file.
    const bool sized = t.externalData.count("length");
    if (offset > in.size() || bytes > in.size() - offset ||
        (!sized && in.size() - offset != bytes))
      fail("it is %llu bytes, but the initializer's %zu bytes are expected "
           "at offset %llu%s",
           (unsigned long long)in.size(), bytes, (unsigned long long)offset,
           sized ? "" : " up to the end of the file (no 'length' is given)");
    in.readAt(offset, dest, bytes);
  } catch (Failure &f) {
    f.message = "external data file " + file + ": " + f.message;
    throw;
  }
}

void OnnxInitializers::readTyped(const OnnxTensor &t, void *dest,
                                 size_t bytes) const {
  const TypedField &field = typedField(mappingOf(t.onnxType)->field);
  const size_t size = size_t(dtypeSize(t.dtype));
  const uint64_t wanted = bytes / size;
  char *out = static_cast<char *>(dest);
  uint64_t count = 0; // values seen; only the first WANTED are stored
  auto storeVarint = [&](uint64_t v) {
    if (count < wanted) {
      char *p = out + count * size;
      if (t.dtype == DTRAIN_RT_I64) {
        std::memcpy(p, &v, 8);
      } else if (t.dtype == DTRAIN_RT_I32) {
        const uint32_t v32 = uint32_t(v); // protobuf's int32 truncation
        std::memcpy(p, &v32, 4);
      } else { // f16/bf16: the bit pattern in the low 16 bits, as onnx reads it
        const uint16_t v16 = uint16_t(v);
        std::memcpy(p, &v16, 2);
      }
    }
    ++count;
  };

  Walker w(data_, t.begin, t.end, "initializer");
  while (!w.done()) {
    const Field f = w.next();
    if (f.number != uint64_t(field.number))
      continue;
    const uint64_t length = f.end - f.begin;
    if (field.wire == kVarint) {
      if (f.wireType == kVarint) {
        storeVarint(f.value);
      } else {
        Walker packed(data_, f.begin, f.end, field.name);
        while (!packed.done())
          storeVarint(packed.varint());
      }
      continue;
    }
    // float_data / double_data: little-endian values of the element size
    // (a whole number of them: valueCount checked).
    const uint64_t n = length / size;
    if (count < wanted)
      std::memcpy(out + count * size, data_ + f.begin,
                  size_t(std::min(n, wanted - count) * size));
    count += n;
  }
  if (count != wanted)
    fail("%s holds %llu values, but shape %s needs %llu", field.name,
         (unsigned long long)count, dimsString(t.dims).c_str(),
         (unsigned long long)wanted);
}
