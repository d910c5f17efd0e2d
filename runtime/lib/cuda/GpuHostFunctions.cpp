//===- GpuHostFunctions.cpp - MLIR's GPU host functions over the driver ---===//
//
// The mgpu* functions of GpuHostFunctions.h over the CUDA driver API
// (CudaDriver.h). Their semantics are those of MLIR's gpu dialect: a
// !gpu.async.token is a stream or an event, work on one stream runs in
// order, and gpu.wait synchronizes streams and events. The streams are all
// one, the step stream, which orders more than the tokens ask for.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include "cuda/CudaDriver.h"
#include "cuda/GpuHostFunctions.h"
#include "cuda/HostProfile.h"
#include "cuda/StepStream.h"

#include <cinttypes>
#include <climits>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <string>
#include <utility>

using namespace dtrain::rt::gpu;

namespace {

/// A kernel image that mgpuModuleLoad or mgpuModuleLoadJIT was given,
/// loaded into the driver at the first function lookup. A trainer's global
/// constructors register its kernels before main: loading them there would
/// need a GPU before the trainer could print its --help or reject its
/// arguments. The image is copied, as the driver would have read it by
/// the time the eager load returned.
struct LazyModule {
  LazyModule(std::string image, int32_t jitOptLevel)
      : image(std::move(image)), jitOptLevel(jitOptLevel) {}
  std::string image;
  int32_t jitOptLevel; // < 0: a binary (cuModuleLoadData), else PTX
  std::once_flag loaded;
  CUmodule module = nullptr;
};

LazyModule *asModule(void *module) { return static_cast<LazyModule *>(module); }

CUmodule loadedModule(LazyModule &lazy) {
  std::call_once(lazy.loaded, [&] {
    const Driver &driver = cuda();
    if (lazy.jitOptLevel < 0) {
      DTRAIN_CU_CHECK(driver.cuModuleLoadData(&lazy.module, lazy.image.data()),
                      "cuModuleLoadData of a %zu-byte kernel binary",
                      lazy.image.size());
      return;
    }
    char log[4096] = "";
    CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL,
                              CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {reinterpret_cast<void *>(intptr_t(lazy.jitOptLevel)),
                      log, reinterpret_cast<void *>(uintptr_t(sizeof log))};
    DTRAIN_CU_CHECK(driver.cuModuleLoadDataEx(&lazy.module, lazy.image.c_str(),
                                              3, options, values),
                    "cuModuleLoadDataEx (the PTX JIT at -O%" PRId32
                    "; its log: %s)",
                    lazy.jitOptLevel, log);
  });
  return lazy.module;
}
CUfunction asFunction(void *function) {
  return static_cast<CUfunction>(function);
}
CUevent asEvent(void *event) { return static_cast<CUevent>(event); }
CUdeviceptr asDevicePtr(void *ptr) {
  return reinterpret_cast<CUdeviceptr>(ptr);
}

/// The launch dimension NAME, which is VALUE; exits when it is out of the
/// driver's range.
unsigned launchDim(intptr_t value, const char *name) {
  if (value < 0 || uintmax_t(value) > UINT_MAX)
    fatal("gpu.launch_func: %s is %" PRIdPTR " (accepted: 0 to %u)", name,
          value, UINT_MAX);
  return unsigned(value);
}

/// Whether any of the dimensions is 0: a launch of no threads, which the
/// driver rejects, and which (an empty tensor) has nothing to do.
bool isEmpty(std::initializer_list<unsigned> dims) {
  for (unsigned dim : dims)
    if (dim == 0)
      return true;
  return false;
}

/// Lets FUNCTION use SHARED_BYTES of dynamic shared memory: a kernel must
/// opt in to more than the default 48 KiB.
unsigned allowSharedMemory(CUfunction function, int32_t sharedBytes) {
  if (sharedBytes < 0)
    fatal("gpu.launch_func: dynamic shared memory is %" PRId32
          " bytes (accepted: >= 0)",
          sharedBytes);
  if (sharedBytes > 48 * 1024)
    DTRAIN_CU_CHECK(
        cuda().cuFuncSetAttribute(
            function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            sharedBytes),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = %" PRId32 ")",
        sharedBytes);
  return unsigned(sharedBytes);
}

/// The host buffer of a memref descriptor (see mgpuMemHostRegisterMemRef)
/// and its size in *BYTES; exits unless it is densely packed.
void *hostBuffer(int64_t rank, void *descriptor, int64_t elementBytes,
                 size_t *bytes) {
  char *const *pointers = static_cast<char *const *>(descriptor);
  const int64_t *fields = reinterpret_cast<const int64_t *>(pointers + 2);
  const int64_t offset = fields[0];
  const int64_t *sizes = fields + 1, *strides = fields + 1 + rank;
  int64_t elements = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    if (sizes[i] != 1 && strides[i] != elements)
      fatal("gpu.host_register: the memref is not densely packed: "
            "dimension %" PRId64 " has stride %" PRId64 ", not %" PRId64,
            i, strides[i], elements);
    elements *= sizes[i];
  }
  *bytes = size_t(elements * elementBytes);
  return pointers[1] + offset * elementBytes;
}

} // namespace

void *mgpuModuleLoad(void *data, size_t bytes) {
  const HostTimer timer(__func__);
  return new LazyModule(std::string(static_cast<const char *>(data), bytes), -1);
}

void *mgpuModuleLoadJIT(void *ptx, int32_t optLevel) {
  return new LazyModule(static_cast<const char *>(ptx),
                        optLevel < 0 ? 0 : optLevel);
}

void mgpuModuleUnload(void *module) {
  LazyModule *lazy = asModule(module);
  if (lazy->module) {
    const CUresult rc = cuda().cuModuleUnload(lazy->module);
    // Modules are unloaded by static destructors, which may run after the
    // driver has shut down, and then the module is gone with it.
    if (rc != CUDA_ERROR_DEINITIALIZED)
      DTRAIN_CU_CHECK(rc, "cuModuleUnload");
  }
  delete lazy;
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  const HostTimer timer(__func__);
  CUfunction function = nullptr;
  DTRAIN_CU_CHECK(
      cuda().cuModuleGetFunction(&function, loadedModule(*asModule(module)),
                                 name),
      "cuModuleGetFunction of kernel '%s'", name);
  return function;
}

// PARAM_COUNT is not needed: the driver knows the kernel's parameters.
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedBytes, void *stream,
                      void **params, void **extra, size_t /*paramCount*/) {
  const HostTimer timer(__func__);
  const unsigned grid[] = {launchDim(gridX, "grid x"),
                           launchDim(gridY, "grid y"),
                           launchDim(gridZ, "grid z")};
  const unsigned block[] = {launchDim(blockX, "block x"),
                            launchDim(blockY, "block y"),
                            launchDim(blockZ, "block z")};
  if (isEmpty({grid[0], grid[1], grid[2], block[0], block[1], block[2]}))
    return;
  const unsigned shared = allowSharedMemory(asFunction(function), sharedBytes);
  DTRAIN_CU(cuLaunchKernel, asFunction(function), grid[0], grid[1], grid[2],
            block[0], block[1], block[2], shared, asStream(stream), params,
            extra);
}

void mgpuLaunchClusterKernel(void *function, intptr_t clusterX,
                             intptr_t clusterY, intptr_t clusterZ,
                             intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                             intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                             int32_t sharedBytes, void *stream, void **params,
                             void **extra) {
  const HostTimer timer(__func__);
  CUlaunchAttribute cluster = {};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = launchDim(clusterX, "cluster x");
  cluster.value.clusterDim.y = launchDim(clusterY, "cluster y");
  cluster.value.clusterDim.z = launchDim(clusterZ, "cluster z");
  CUlaunchConfig config = {};
  config.gridDimX = launchDim(gridX, "grid x");
  config.gridDimY = launchDim(gridY, "grid y");
  config.gridDimZ = launchDim(gridZ, "grid z");
  config.blockDimX = launchDim(blockX, "block x");
  config.blockDimY = launchDim(blockY, "block y");
  config.blockDimZ = launchDim(blockZ, "block z");
  if (isEmpty({config.gridDimX, config.gridDimY, config.gridDimZ,
               config.blockDimX, config.blockDimY, config.blockDimZ}))
    return;
  config.sharedMemBytes = allowSharedMemory(asFunction(function), sharedBytes);
  config.hStream = asStream(stream);
  config.attrs = &cluster;
  config.numAttrs = 1;
  DTRAIN_CU(cuLaunchKernelEx, &config, asFunction(function), params, extra);
}

// Every stream is the step stream (StepStream.h): a trainer's launches,
// its heavy-op kernels and its waits are ordered on one stream, and no
// step creates or destroys one.
void *mgpuStreamCreate(void) { return stepStream(); }

void mgpuStreamSynchronize(void *stream) {
  const HostTimer timer(__func__);
  // While a step is captured as a graph, its final wait (the one wait of a
  // step that may be captured) waits for the graph's launch instead.
  if (asStream(stream) == stepStream()) {
    if (!capturingStepStream())
      synchronizeStepStream();
  } else {
    DTRAIN_CU(cuStreamSynchronize, asStream(stream));
  }
}

void mgpuStreamDestroy(void *stream) {
  if (asStream(stream) != stepStream())
    DTRAIN_CU(cuStreamDestroy, asStream(stream));
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  const HostTimer timer(__func__);
  DTRAIN_CU(cuStreamWaitEvent, asStream(stream), asEvent(event), 0);
}

void *mgpuEventCreate(void) {
  CUevent event = nullptr;
  // Events only order streams here; timing them would cost.
  DTRAIN_CU(cuEventCreate, &event, CU_EVENT_DISABLE_TIMING);
  return event;
}

void mgpuEventDestroy(void *event) {
  DTRAIN_CU(cuEventDestroy, asEvent(event));
}

void mgpuEventSynchronize(void *event) {
  const HostTimer timer(__func__);
  // Its events are recorded on the step stream: while a step is captured,
  // a wait for one is the step's end too (see mgpuStreamSynchronize).
  if (capturingStepStream())
    return;
  DTRAIN_CU(cuEventSynchronize, asEvent(event));
}

void mgpuEventRecord(void *event, void *stream) {
  const HostTimer timer(__func__);
  DTRAIN_CU(cuEventRecord, asEvent(event), asStream(stream));
}

// The memory is ready at once: no need to order it on the stream.
void *mgpuMemAlloc(uint64_t bytes, void * /*stream*/, int8_t hostShared) {
  const HostTimer timer(__func__);
  if (bytes == 0)
    return nullptr;
  CUdeviceptr ptr = 0;
  if (hostShared)
    DTRAIN_CU_CHECK(cuda().cuMemAllocManaged(&ptr, bytes, CU_MEM_ATTACH_GLOBAL),
                    "cuMemAllocManaged of %" PRIu64
                    " bytes (gpu.alloc host_shared)",
                    bytes);
  else
    DTRAIN_CU_CHECK(cuda().cuMemAlloc(&ptr, bytes),
                    "cuMemAlloc of %" PRIu64 " bytes (gpu.alloc)", bytes);
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, void *stream) {
  const HostTimer timer(__func__);
  if (!ptr)
    return;
  // gpu.dealloc frees once the work queued before it on STREAM is done.
  DTRAIN_CU(cuStreamSynchronize, asStream(stream));
  DTRAIN_CU(cuMemFree, asDevicePtr(ptr));
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  const HostTimer timer(__func__);
  if (bytes == 0)
    return;
  // Unified addressing: the driver tells host, device and managed memory
  // apart.
  DTRAIN_CU(cuMemcpyAsync, asDevicePtr(dst), asDevicePtr(src), bytes,
            asStream(stream));
}

void mgpuMemset32(void *dst, uint32_t value, size_t count, void *stream) {
  DTRAIN_CU(cuMemsetD32Async, asDevicePtr(dst), value, count, asStream(stream));
}

void mgpuMemset16(void *dst, uint16_t value, size_t count, void *stream) {
  DTRAIN_CU(cuMemsetD16Async, asDevicePtr(dst), value, count, asStream(stream));
}

void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elementBytes) {
  size_t bytes = 0;
  void *buffer = hostBuffer(rank, descriptor, elementBytes, &bytes);
  if (bytes != 0)
    DTRAIN_CU_CHECK(cuda().cuMemHostRegister(buffer, bytes, 0),
                    "cuMemHostRegister of %zu bytes at %p (gpu.host_register)",
                    bytes, buffer);
}

void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elementBytes) {
  size_t bytes = 0;
  void *buffer = hostBuffer(rank, descriptor, elementBytes, &bytes);
  if (bytes != 0)
    DTRAIN_CU_CHECK(cuda().cuMemHostUnregister(buffer),
                    "cuMemHostUnregister of %p (gpu.host_unregister)", buffer);
}

void mgpuSetDefaultDevice(int32_t device) {
  const int ordinal = cuda().ordinal;
  if (device != ordinal)
    fatal("gpu.set_default_device %" PRId32 ": this process drives CUDA "
          "device %d, the one of its local rank (one device per process)",
          device, ordinal);
}
