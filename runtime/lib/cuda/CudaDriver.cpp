//===- CudaDriver.cpp - the CUDA driver, loaded at first use --------------===//
//
// Loads libcuda.so.1, initializes it, picks the process's device and
// retains its primary context, once per process; reports why when any of
// that fails, as a fatal error (cuda()) or a return code
// (dtrain_rt_cuda_driver_status).
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"
#include "cuda/HostProfile.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace dtrain::rt::gpu;

namespace {

/// The driver once loaded, or why it could not be.
struct Loaded {
  Driver driver;
  std::string error;
};

#define DTRAIN_STRINGIFY(x) #x
/// The symbol of the driver function FN (after cuda.h's renaming).
#define DTRAIN_CUDA_SYMBOL(fn) DTRAIN_STRINGIFY(fn)

/// What the reports of a missing driver or device end with.
constexpr const char *kNeedGpu = ": --target=cuda trainers need an NVIDIA GPU";

/// "CUDA_ERROR_NAME (the driver's description)" of RC.
std::string describe(const Driver &driver, CUresult rc) {
  const char *name = nullptr, *text = nullptr;
  driver.cuGetErrorName(rc, &name);
  driver.cuGetErrorString(rc, &text);
  std::string result = name ? name : "CUresult " + std::to_string(int(rc));
  if (text)
    result += std::string(" (") + text + ")";
  return result;
}

/// Sets RANK to this process's rank among those of its node, from the
/// variables that the MPI launchers set (Open MPI, then MPICH and Intel
/// MPI), 0 when none is set; returns why not when one is not a rank. Read
/// from the environment rather than MPI because the kernel modules are
/// loaded by constructors that run before main, and so before MPI_Init.
std::string localRank(int &rank) {
  rank = 0;
  for (const char *variable :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}) {
    const char *value = std::getenv(variable);
    if (!value)
      continue;
    char *end = nullptr;
    errno = 0;
    const long parsed = std::strtol(value, &end, 10);
    if (end == value || *end || errno || parsed < 0 || parsed > 1 << 30)
      return std::string(variable) + "='" + value +
             "' is not a local rank (a number >= 0)";
    rank = int(parsed);
    return "";
  }
  return "";
}

/// Why a driver without SYMBOL cannot be used.
std::string missing(const char *symbol) {
  return std::string("libcuda.so.1 has no ") + symbol +
         ": the NVIDIA driver is older than the CUDA " +
         std::to_string(CUDA_VERSION / 1000) + "." +
         std::to_string(CUDA_VERSION % 1000 / 10) +
         " this runtime was built with (update the driver)";
}

/// Loads and initializes the driver into DRIVER and retains the primary
/// context of the process's device; returns "" or why that failed.
std::string load(Driver &driver) {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return std::string("no CUDA driver (libcuda.so.1 not found)") + kNeedGpu;
#define DTRAIN_CUDA_LOOKUP(fn)                                                 \
  driver.fn = reinterpret_cast<decltype(driver.fn)>(                           \
      dlsym(library, DTRAIN_CUDA_SYMBOL(fn)));                                 \
  if (!driver.fn)                                                              \
    return missing(DTRAIN_CUDA_SYMBOL(fn));
  DTRAIN_CUDA_DRIVER_FUNCTIONS(DTRAIN_CUDA_LOOKUP)
#undef DTRAIN_CUDA_LOOKUP

  CUresult rc = driver.cuInit(0);
  if (rc != CUDA_SUCCESS)
    return "cuInit failed: " + describe(driver, rc) + kNeedGpu;
  int count = 0;
  rc = driver.cuDeviceGetCount(&count);
  if (rc != CUDA_SUCCESS)
    return "cuDeviceGetCount failed: " + describe(driver, rc) + kNeedGpu;
  if (count == 0)
    return std::string("the CUDA driver finds no device") + kNeedGpu;

  int rank = 0;
  if (std::string error = localRank(rank); !error.empty())
    return error;
  driver.ordinal = rank % count;
  CUdevice device;
  rc = driver.cuDeviceGet(&device, driver.ordinal);
  if (rc == CUDA_SUCCESS)
    // Retained for the life of the process, never released.
    rc = driver.cuDevicePrimaryCtxRetain(&driver.context, device);
  if (rc != CUDA_SUCCESS)
    return "cannot open CUDA device " + std::to_string(driver.ordinal) +
           " (local rank " + std::to_string(rank) + " of " +
           std::to_string(count) + " devices): " + describe(driver, rc);
  return "";
}

const Loaded &loaded() {
  static const Loaded state = [] {
    Loaded state;
    state.error = load(state.driver);
    return state;
  }();
  return state;
}

} // namespace

const Driver &dtrain::rt::gpu::cuda() {
  const Loaded &state = loaded();
  if (!state.error.empty())
    fatal("%s", state.error.c_str());
  // The current context is per thread: set it on each thread's first call.
  thread_local bool current = false;
  if (!current) {
    DTRAIN_CU_CHECK(state.driver.cuCtxSetCurrent(state.driver.context),
                    "cuCtxSetCurrent (device %d)", state.driver.ordinal);
    current = true;
  }
  return state.driver;
}

const char *dtrain::rt::gpu::cudaUnavailable() {
  const Loaded &state = loaded();
  return state.error.empty() ? nullptr : state.error.c_str();
}

bool dtrain::rt::gpu::switchedOn(const char *variable, bool byDefault,
                                 const char *off, const char *on) {
  const char *value = std::getenv(variable);
  if (!value || !*value)
    return byDefault;
  if (!std::strcmp(value, "1"))
    return true;
  if (!std::strcmp(value, "0"))
    return false;
  fatal("%s='%s' is not valid (accepted: 0%s to %s, 1%s to %s)", variable,
        value, byDefault ? "" : " or unset", off, byDefault ? " or unset" : "",
        on);
}

HostProfile *dtrain::rt::gpu::hostProfile() {
  static HostProfile *const profile = [] {
    if (!switchedOn("DTRAIN_CUDA_HOST_PROFILE", false, "time nothing",
                    "print the host time of this library's calls at exit"))
      return static_cast<HostProfile *>(nullptr);
    // Never destroyed: other threads may still add to it at exit.
    auto *created = new HostProfile;
    std::atexit([] { hostProfile()->print(stderr); });
    return created;
  }();
  return profile;
}

void dtrain::rt::gpu::fatal(const char *format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  std::fflush(nullptr);
  std::fprintf(stderr, "dtrain-rt: %s\n", message);
  // Not exit(): the static destructors would unload kernel modules through
  // the driver that just failed.
  std::_Exit(1);
}

void dtrain::rt::gpu::fatalCuda(CUresult rc, const char *format, ...) {
  char call[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(call, sizeof call, format, args);
  va_end(args);
  fatal("%s failed: %s", call, describe(loaded().driver, rc).c_str());
}

int dtrain_rt_cuda_driver_status(void) {
  return guarded("dtrain_rt_cuda_driver_status", [] {
    if (const char *why = cudaUnavailable())
      fail(DTRAIN_RT_CUDA_CUDA_ERROR, "%s", why);
  });
}
