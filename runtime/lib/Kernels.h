//===- Kernels.h - Shared by the heavy-op kernels ---------------*- C++ -*-===//
//
// Argument checks common to the kernels, and the test hook of their
// primitive cache.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_KERNELS_H
#define DTRAIN_RUNTIME_KERNELS_H

#include "Internal.h"

#include <climits>
#include <cstdint>

namespace dtrain::rt {

/// Every geometry scalar of a kernel (size, stride, padding, dilation,
/// groups) must lie in [MIN, INT_MAX]: BLAS takes int sizes, and with this
/// bound no window arithmetic on two scalars can overflow int64.
inline void checkKernelDim(const char *kernel, const char *name, int64_t value,
                           int64_t min) {
  if (__builtin_expect(value < min || value > INT_MAX, 0))
    fatal(nullptr, "%s: %s is %lld (accepted: %lld <= %s <= %d)", kernel, name,
          (long long)value, (long long)min, name, INT_MAX);
}

/// Aborts when a tensor pointer the kernel needs is NULL.
inline void checkKernelPointer(const char *kernel, const char *name,
                               const void *pointer) {
  if (__builtin_expect(!pointer, 0))
    fatal(nullptr, "%s: %s is NULL", kernel, name);
}

/// The number of kernel geometries (oneDNN primitives with their reorders
/// and buffers) created so far, all kernels together: a call with a
/// geometry seen before creates none.
DTRAIN_RT_TEST_API int64_t kernelGeometriesCreatedForTesting();

} // namespace dtrain::rt

#endif // DTRAIN_RUNTIME_KERNELS_H
