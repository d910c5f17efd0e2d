//===- FloatTypes.h - the heavy ops' float types ----------------*- C++ -*-===//
//
// The element types of the CUDA runtime's own kernels (DTRAIN_RT_F32,
// _BF16, _F16) as template arguments: how an element is stored, widened
// and rounded, loaded WIDTH at a time as one access, and forFloatType,
// which picks the kernel of a type known at run time. Host and device
// code (CPU tests run what uses them).
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_CUDA_FLOATTYPES_H
#define DTRAIN_RUNTIME_CUDA_FLOATTYPES_H

#include "Float16.h"
#include "HostDevice.h"

#include <cstdint>
#include <type_traits>

namespace dtrain::rt::gpu {

/// How one element of the float type TYPE (DTRAIN_RT_F32, _BF16 or _F16)
/// is stored: a float, or the bits of a 16-bit float.
template <int32_t Type>
using ElementBits = std::conditional_t<Type == DTRAIN_RT_F32, float, uint16_t>;

template <int32_t Type>
DTRAIN_RT_HOST_DEVICE inline float widenElement(ElementBits<Type> element) {
  if constexpr (Type == DTRAIN_RT_BF16)
    return bf16ToF32(element);
  else if constexpr (Type == DTRAIN_RT_F16)
    return f16ToF32(element);
  else
    return element;
}

template <int32_t Type>
DTRAIN_RT_HOST_DEVICE inline ElementBits<Type> roundElement(float value) {
  if constexpr (Type == DTRAIN_RT_BF16)
    return f32ToBF16(value);
  else if constexpr (Type == DTRAIN_RT_F16)
    return f32ToF16(value);
  else
    return value;
}

/// WIDTH consecutive elements of TYPE, aligned to their size, so that the
/// GPU loads and stores them as one access.
template <int32_t Type, int Width>
struct alignas(sizeof(ElementBits<Type>) * Width) ElementUnit {
  ElementBits<Type> elements[Width];
};

/// The unit at OFFSET of WIDTH elements of TYPE at DATA, widened.
template <int32_t Type, int Width> struct WideUnit {
  float values[Width];

  DTRAIN_RT_HOST_DEVICE WideUnit(const void *data, int64_t offset) {
    const auto unit = *reinterpret_cast<const ElementUnit<Type, Width> *>(
        static_cast<const ElementBits<Type> *>(data) + offset);
    for (int i = 0; i < Width; ++i)
      values[i] = widenElement<Type>(unit.elements[i]);
  }
};

/// Calls LAUNCH with std::integral_constant<int32_t, TYPE>, TYPE one of the
/// heavy ops' float types: the kernel of that type, its loads and stores
/// resolved when it is compiled.
template <class Launch> void forFloatType(int32_t type, Launch launch) {
  switch (type) {
  case DTRAIN_RT_BF16:
    return launch(std::integral_constant<int32_t, DTRAIN_RT_BF16>());
  case DTRAIN_RT_F16:
    return launch(std::integral_constant<int32_t, DTRAIN_RT_F16>());
  }
  launch(std::integral_constant<int32_t, DTRAIN_RT_F32>());
}

} // namespace dtrain::rt::gpu

#endif // DTRAIN_RUNTIME_CUDA_FLOATTYPES_H
