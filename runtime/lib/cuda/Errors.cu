//===- Errors.cu - error reporting of the CUDA runtime --------------------===//
//
// The thread's last error message, and the guard that every C ABI function
// of libdtrain_runtime_cuda runs its body through.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include <cstdarg>
#include <cstdio>
#include <exception>

using namespace dtrain::rt::gpu;

namespace {
thread_local std::string lastMessage;
} // namespace

void dtrain::rt::gpu::fail(int code, const char *format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  throw Failure{code, buffer};
}

int dtrain::rt::gpu::guardedImpl(const char *name, void (*body)(void *),
                                  void *context) {
  try {
    body(context);
    lastMessage.clear();
    return DTRAIN_RT_CUDA_SUCCESS;
  } catch (const Failure &failure) {
    lastMessage = std::string(name) + ": " + failure.message;
    return failure.code;
  } catch (const std::exception &e) { // std::bad_alloc of a host vector
    lastMessage = std::string(name) + ": " + e.what();
    return DTRAIN_RT_CUDA_CUDA_ERROR;
  }
}

const char *dtrain_rt_cuda_error_message(void) { return lastMessage.c_str(); }
