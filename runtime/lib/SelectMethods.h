//===- SelectMethods.h - names of the selection methods ----------*- C++ -*-===//
//
// The DTRAIN_RT_SELECT_* methods by name, for the messages of the CPU and
// CUDA selections (dtrain_rt_select_f32, dtrain_rt_cuda_select_f32).
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_SELECTMETHODS_H
#define DTRAIN_RUNTIME_SELECTMETHODS_H

// The C ABI keeps default visibility in the library, which is built with
// hidden visibility, whichever header includes it first.
#pragma GCC visibility push(default)
#include "dtrain_rt.h"
#pragma GCC visibility pop

namespace dtrain::rt {

/// METHOD's name, or nullptr for an unknown method.
inline const char *selectMethodName(int32_t method) {
  switch (method) {
  case DTRAIN_RT_SELECT_EXACT:
    return "exact";
  case DTRAIN_RT_SELECT_GAUSSIAN:
    return "gaussian";
  case DTRAIN_RT_SELECT_DGC:
    return "dgc";
  case DTRAIN_RT_SELECT_RANDOM:
    return "random";
  }
  return nullptr;
}

} // namespace dtrain::rt

#endif // DTRAIN_RUNTIME_SELECTMETHODS_H
