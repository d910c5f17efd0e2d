//===- ElementAccess.h - typed element access for runtime tests -*- C++ -*-===//
//
// Reads and writes element I of a buffer of any DTRAIN_RT_* dtype as a
// double, so that tests compare values in one type whatever they store.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RT_TEST_ELEMENTACCESS_H
#define DTRAIN_RT_TEST_ELEMENTACCESS_H

#include "Float16.h"
#include "Internal.h"
#include "dtrain_rt.h"

#include <cstdint>
#include <cstring>

namespace dtrain::rt::test {

template <typename T> inline T loadAs(const char *p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

template <typename T> inline void storeAs(char *p, T value) {
  std::memcpy(p, &value, sizeof(T));
}

/// Element I of BASE as a double (16-bit floats decoded).
inline double loadElement(const void *base, int32_t dtype, int64_t i) {
  const char *p = static_cast<const char *>(base) + i * dtypeSize(dtype);
  switch (dtype) {
  case DTRAIN_RT_F32:
    return loadAs<float>(p);
  case DTRAIN_RT_F64:
    return loadAs<double>(p);
  case DTRAIN_RT_F16:
    return f16ToF32(loadAs<uint16_t>(p));
  case DTRAIN_RT_BF16:
    return bf16ToF32(loadAs<uint16_t>(p));
  case DTRAIN_RT_I64:
    return double(loadAs<int64_t>(p));
  case DTRAIN_RT_BOOL:
    return loadAs<uint8_t>(p);
  default:
    return loadAs<int32_t>(p);
  }
}

/// Stores V, rounded to the element type, as element I of BASE.
inline void storeElement(void *base, int32_t dtype, int64_t i, double v) {
  char *p = static_cast<char *>(base) + i * dtypeSize(dtype);
  switch (dtype) {
  case DTRAIN_RT_F32:
    return storeAs(p, float(v));
  case DTRAIN_RT_F64:
    return storeAs(p, v);
  case DTRAIN_RT_F16:
    return storeAs(p, f32ToF16(float(v)));
  case DTRAIN_RT_BF16:
    return storeAs(p, f32ToBF16(float(v)));
  case DTRAIN_RT_I64:
    return storeAs(p, int64_t(v));
  case DTRAIN_RT_BOOL:
    return storeAs(p, uint8_t(v != 0));
  default:
    return storeAs(p, int32_t(v));
  }
}

} // namespace dtrain::rt::test

#endif // DTRAIN_RT_TEST_ELEMENTACCESS_H
