//===- HostTensor.h - host tensors of the kernels' float types --*- C++ -*-===//
//
// The data of a tensor in f32, bf16 or f16 on the host, for the CPU tests
// that run the CUDA kernels' arithmetic (BatchNormSplitsTest.cpp,
// PoolKernelsTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_TEST_HOSTTENSOR_H
#define DTRAIN_RUNTIME_TEST_HOSTTENSOR_H

#include "Float16.h"
#include "dtrain_rt.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace dtrain::rt::test {

/// Tensor data on the host in one of the float types (DTRAIN_RT_F32,
/// _BF16, _F16), as the kernels take it.
class HostTensor {
public:
  /// VALUES rounded to TYPE, in place too: the CPU kernels then read what
  /// the emulated GPU kernels do.
  HostTensor(int32_t type, std::vector<float> &values) : type(type) {
    resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      storeFromFloat(data(), type, int64_t(i), values[i]);
      values[i] = loadAsFloat(data(), type, int64_t(i));
    }
  }
  /// N elements, all NaN.
  HostTensor(int32_t type, size_t n) : type(type) {
    resize(n);
    for (size_t i = 0; i < n; ++i)
      storeFromFloat(data(), type, int64_t(i),
                     std::numeric_limits<float>::quiet_NaN());
  }

  void *data() {
    return type == DTRAIN_RT_F32 ? static_cast<void *>(wide.data())
                                 : static_cast<void *>(narrow.data());
  }
  std::vector<float> read() {
    std::vector<float> values(size);
    for (size_t i = 0; i < size; ++i)
      values[i] = loadAsFloat(data(), type, int64_t(i));
    return values;
  }

private:
  void resize(size_t n) {
    size = n;
    (type == DTRAIN_RT_F32 ? wide.resize(n) : narrow.resize(n));
  }

  int32_t type;
  size_t size = 0;
  std::vector<float> wide;
  std::vector<uint16_t> narrow;
};

} // namespace dtrain::rt::test

#endif // DTRAIN_RUNTIME_TEST_HOSTTENSOR_H
