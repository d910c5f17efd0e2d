//===- CudaHostTest.cpp - MLIR's GPU host functions and managed memory ----===//
//
// The mgpu* functions of lib/cuda/GpuHostFunctions.h and the managed memory
// of dtrain_rt_cuda.h, as compiled trainers call them: a hand-written PTX
// kernel (cuda_host_kernel.ptx) JIT-compiled through mgpuModuleLoadJIT and,
// as a fatbin that the build makes, loaded through mgpuModuleLoad; launches
// plain and in clusters, round trips through device memory, fills of 32 and
// 16 bits, events ordering two streams, host_shared memory, host
// registration, the device of the local rank, the step stream (every
// stream of the generated code; heavy ops queued after its kernels), the
// managed pool (host and kernel on one block, reuse of freed blocks: by
// the freeing thread at once, by others once the step stream is done with
// them; nothing beyond the device's memory), steps replayed as CUDA
// graphs (dtrain_rt_cuda_call_run: captured once per buffer table, their
// temporaries their own), and the fatal errors.
//
// Without a CUDA driver or device it runs nothing: it prints one line
// saying so and exits 77, which ctest reports as skipped. With
// --without-device it runs the other way round: the checks of what a
// trainer does on a machine without one (one line, exit status 1), skipped
// (77) where there is a device.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "cuda/GpuHostFunctions.h"
#include "dtrain_rt_cuda.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace dtrain::rt::test;

namespace {

std::string readFile(const char *path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(std::string("cannot read ") + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

//===--- Without a device -------------------------------------------------===//

TEST(WithoutDevice, StatusSaysWhy) {
  EXPECT_EQ(dtrain_rt_cuda_driver_status(), DTRAIN_RT_CUDA_CUDA_ERROR);
  const std::string message = dtrain_rt_cuda_error_message();
  // The reason is found once and kept.
  EXPECT_EQ(dtrain_rt_cuda_driver_status(), DTRAIN_RT_CUDA_CUDA_ERROR);
  EXPECT_EQ(dtrain_rt_cuda_error_message(), message);
  if (void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
    // A driver without a device (or the toolkit's stub): the call that
    // failed and the driver's error.
    EXPECT_TRUE(message.rfind("dtrain_rt_cuda_driver_status: cuInit failed: ",
                              0) == 0 ||
                message.rfind("dtrain_rt_cuda_driver_status: "
                              "cuDeviceGetCount failed: ",
                              0) == 0 ||
                message == std::string("dtrain_rt_cuda_driver_status: the "
                                       "CUDA driver finds no device") +
                               kNeedGpu)
        << message;
    ASSERT_GT(message.size(), std::strlen(kNeedGpu));
    EXPECT_EQ(message.substr(message.size() - std::strlen(kNeedGpu)), kNeedGpu);
  } else {
    EXPECT_EQ(message, std::string("dtrain_rt_cuda_driver_status: no CUDA "
                                   "driver (libcuda.so.1 not found)") +
                           kNeedGpu);
  }
}

TEST(WithoutDevice, FirstCallPrintsWhyAndExits) {
  const std::string line = fatalLine(whyNoGpu());
  // Modules load at their first function lookup: registering them (as a
  // trainer's constructors do) needs no GPU.
  void *ptx = mgpuModuleLoadJIT(const_cast<char *>(""), 2);
  EXPECT_EXIT(mgpuModuleGetFunction(ptx, "k"), ::testing::ExitedWithCode(1),
              line);
  mgpuModuleUnload(ptx);
  char binary[16] = {};
  void *fatbin = mgpuModuleLoad(binary, sizeof binary);
  EXPECT_EXIT(mgpuModuleGetFunction(fatbin, "k"),
              ::testing::ExitedWithCode(1), line);
  mgpuModuleUnload(fatbin);
  EXPECT_EXIT(mgpuStreamCreate(), ::testing::ExitedWithCode(1), line);
  EXPECT_EXIT(mgpuMemAlloc(64, nullptr, 0), ::testing::ExitedWithCode(1), line);
  EXPECT_EXIT(dtrain_rt_cuda_alloc_managed(64), ::testing::ExitedWithCode(1),
              line);
}

//===--- With a device ----------------------------------------------------===//

constexpr unsigned kBlock = 128;

/// The file of the environment variable VARIABLE where it is set (a
/// copy of the test elsewhere: scripts/gpu-bundle.sh), else BUILT (the
/// path the build gave).
const char *kernelFile(const char *variable, const char *built) {
  const char *path = std::getenv(variable);
  return path && *path ? path : built;
}

/// The add_one kernel, from its PTX or its fatbin.
class Kernel {
public:
  enum Source { Ptx, Fatbin };
  explicit Kernel(Source source) {
    if (source == Ptx) {
      const std::string ptx = readFile(
          kernelFile("DTRAIN_TEST_KERNEL_PTX", DTRAIN_TEST_KERNEL_PTX));
      module = mgpuModuleLoadJIT(const_cast<char *>(ptx.c_str()), 2);
    } else {
      std::string fatbin = readFile(
          kernelFile("DTRAIN_TEST_KERNEL_FATBIN", DTRAIN_TEST_KERNEL_FATBIN));
      module = mgpuModuleLoad(fatbin.data(), fatbin.size());
    }
    function = mgpuModuleGetFunction(module, "add_one");
  }
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;
  ~Kernel() { mgpuModuleUnload(module); }

  /// Queues DATA[i] += 1 for i < N on STREAM.
  void launch(float *data, uint32_t n, void *stream) const {
    void *params[] = {&data, &n};
    mgpuLaunchKernel(function, (n + kBlock - 1) / kBlock, 1, 1, kBlock, 1, 1, 0,
                     stream, params, nullptr, 2);
  }

  void *module = nullptr;
  void *function = nullptr;
};

std::vector<float> iota(size_t n) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i)
    values[i] = 0.5f * float(i) - 100.0f;
  return values;
}

/// Copies N floats to device memory, runs KERNEL on them and copies them
/// back, through the mgpu* functions; the words past N must stay as
/// mgpuMemset32 set them.
void expectRoundTrip(const Kernel &kernel) {
  const uint32_t n = 1000; // not a multiple of the block: the bound holds
  const size_t padding = 64;
  const uint32_t sentinel = 0x7fa5a5a5u;
  const std::vector<float> input = iota(n);
  std::vector<float> output(n + padding);

  void *stream = mgpuStreamCreate();
  auto *device = static_cast<float *>(
      mgpuMemAlloc((n + padding) * sizeof(float), stream, 0));
  ASSERT_NE(device, nullptr);
  mgpuMemset32(device, sentinel, n + padding, stream);
  mgpuMemcpy(device, const_cast<float *>(input.data()), n * sizeof(float),
             stream);
  kernel.launch(device, n, stream);
  mgpuMemcpy(output.data(), device, output.size() * sizeof(float), stream);
  mgpuStreamSynchronize(stream);
  mgpuMemFree(device, stream);
  mgpuStreamDestroy(stream);

  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(output[i], input[i] + 1.0f) << "at " << i;
  for (size_t i = n; i < output.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &output[i], sizeof bits);
    ASSERT_EQ(bits, sentinel) << "past the end, at " << i;
  }
}

TEST(GpuHost, PtxModuleRoundTrip) { expectRoundTrip(Kernel(Kernel::Ptx)); }

TEST(GpuHost, FatbinModuleRoundTrip) {
  expectRoundTrip(Kernel(Kernel::Fatbin));
}

TEST(GpuHost, ClusterLaunch) {
  const Kernel kernel(Kernel::Ptx);
  const uint32_t n = 4 * kBlock;
  const std::vector<float> input = iota(n);
  void *stream = mgpuStreamCreate();
  auto *device =
      static_cast<float *>(mgpuMemAlloc(n * sizeof(float), stream, 0));
  mgpuMemcpy(device, const_cast<float *>(input.data()), n * sizeof(float),
             stream);
  float *data = device;
  uint32_t count = n;
  void *params[] = {&data, &count};
  // 4 blocks in clusters of 2.
  mgpuLaunchClusterKernel(kernel.function, 2, 1, 1, 4, 1, 1, kBlock, 1, 1, 0,
                          stream, params, nullptr);
  std::vector<float> output(n);
  mgpuMemcpy(output.data(), device, n * sizeof(float), stream);
  mgpuStreamSynchronize(stream);
  mgpuMemFree(device, stream);
  mgpuStreamDestroy(stream);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(output[i], input[i] + 1.0f) << "at " << i;
}

/// Launches 3 blocks in clusters of 2, which the driver refuses.
void launchUnevenClusters() {
  const Kernel kernel(Kernel::Ptx);
  float *data = nullptr;
  uint32_t count = 0;
  void *params[] = {&data, &count};
  mgpuLaunchClusterKernel(kernel.function, 2, 1, 1, 3, 1, 1, kBlock, 1, 1, 0,
                          nullptr, params, nullptr);
  mgpuStreamSynchronize(nullptr);
}

TEST(GpuHost, ClusterNotDividingTheGridIsFatal) {
  EXPECT_EXIT(launchUnevenClusters(), ::testing::ExitedWithCode(1),
              "^dtrain-rt: cuLaunchKernelEx failed: CUDA_ERROR_[A-Z_]+");
}

TEST(GpuHost, Memset32And16) {
  void *stream = mgpuStreamCreate();
  auto *device = static_cast<uint32_t *>(mgpuMemAlloc(64, stream, 0));
  mgpuMemset32(device, 0x01020304u, 16, stream);
  // Four 16-bit words from byte 8: 32-bit words 2 and 3.
  mgpuMemset16(device + 2, 0xabcd, 4, stream);
  uint32_t words[16];
  mgpuMemcpy(words, device, sizeof words, stream);
  mgpuStreamSynchronize(stream);
  mgpuMemFree(device, stream);
  mgpuStreamDestroy(stream);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(words[i], i == 2 || i == 3 ? 0xabcdabcdu : 0x01020304u)
        << "word " << i;
}

TEST(GpuHost, EventsOrderStreams) {
  const Kernel kernel(Kernel::Ptx);
  const uint32_t n = 1 << 22;
  const int launches = 20; // long enough for an unordered copy to see it
  const std::vector<float> input = iota(n);
  // The generated code's streams are all the step stream: the consumer is
  // another stream, made by the CUDA runtime.
  void *producer = mgpuStreamCreate();
  cudaStream_t other = nullptr;
  check(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags");
  void *consumer = other;
  auto *device =
      static_cast<float *>(mgpuMemAlloc(n * sizeof(float), producer, 0));
  mgpuMemcpy(device, const_cast<float *>(input.data()), n * sizeof(float),
             producer);
  for (int i = 0; i < launches; ++i)
    kernel.launch(device, n, producer);
  void *done = mgpuEventCreate();
  mgpuEventRecord(done, producer);
  mgpuStreamWaitEvent(consumer, done);
  std::vector<float> output(n);
  mgpuMemcpy(output.data(), device, n * sizeof(float), consumer);
  mgpuStreamSynchronize(consumer);
  mgpuEventSynchronize(done);
  mgpuEventDestroy(done);
  mgpuMemFree(device, producer);
  mgpuStreamDestroy(producer);
  mgpuStreamDestroy(consumer);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(output[i], input[i] + float(launches)) << "at " << i;
}

TEST(GpuHost, HostSharedAllocation) {
  const Kernel kernel(Kernel::Ptx);
  const uint32_t n = 3000;
  void *stream = mgpuStreamCreate();
  auto *shared =
      static_cast<float *>(mgpuMemAlloc(n * sizeof(float), stream, 1));
  const std::vector<float> input = iota(n);
  std::copy(input.begin(), input.end(), shared);
  kernel.launch(shared, n, stream);
  mgpuStreamSynchronize(stream);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(shared[i], input[i] + 1.0f) << "at " << i;
  mgpuMemFree(shared, stream);
  mgpuStreamDestroy(stream);
  EXPECT_EQ(mgpuMemAlloc(0, nullptr, 0), nullptr);
  mgpuMemFree(nullptr, nullptr);
}

/// A rank-1 memref descriptor, as MLIR lays it out.
struct MemRef1D {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
};

cudaMemoryType memoryType(const void *ptr) {
  cudaPointerAttributes attributes;
  EXPECT_EQ(cudaPointerGetAttributes(&attributes, ptr), cudaSuccess);
  return attributes.type;
}

TEST(GpuHost, HostRegisterMemRef) {
  std::vector<float> host(4096, 1.0f);
  MemRef1D memref{host.data(), host.data(), 16, {4000}, {1}};
  const float *first = host.data() + 16;
  mgpuStreamSynchronize(nullptr); // the device's context, for cudart
  EXPECT_EQ(memoryType(first), cudaMemoryTypeUnregistered);
  mgpuMemHostRegisterMemRef(1, &memref, sizeof(float));
  EXPECT_EQ(memoryType(first), cudaMemoryTypeHost);
  EXPECT_EQ(memoryType(first + 3999), cudaMemoryTypeHost);
  mgpuMemHostUnregisterMemRef(1, &memref, sizeof(float));
  EXPECT_EQ(memoryType(first), cudaMemoryTypeUnregistered);

  MemRef1D strided{host.data(), host.data(), 0, {100}, {2}};
  EXPECT_EXIT(mgpuMemHostRegisterMemRef(1, &strided, sizeof(float)),
              ::testing::ExitedWithCode(1),
              fatalLine("gpu.host_register: the memref is not densely "
                        "packed: dimension 0 has stride 2, not 1"));
}

/// The device that CudaDriver.h documents for this process.
int expectedDevice() {
  int rank = 0;
  for (const char *variable : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"})
    if (const char *value = std::getenv(variable)) {
      rank = std::atoi(value);
      break;
    }
  int count = 0;
  EXPECT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  return count > 0 ? rank % count : -1;
}

TEST(GpuHost, DeviceOfTheLocalRank) {
  mgpuStreamSynchronize(nullptr); // makes the device's context current
  int device = -1;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  const int expected = expectedDevice();
  EXPECT_EQ(device, expected);
  mgpuSetDefaultDevice(expected); // the same device: nothing to do
  EXPECT_EXIT(mgpuSetDefaultDevice(expected + 1), ::testing::ExitedWithCode(1),
              fatalLine("gpu.set_default_device " +
                        std::to_string(expected + 1) +
                        ": this process drives CUDA device " +
                        std::to_string(expected) +
                        ", the one of its local rank (one device per "
                        "process)"));
}

TEST(StepStream, EveryStreamIsTheStepStream) {
  void *first = mgpuStreamCreate();
  void *second = mgpuStreamCreate();
  EXPECT_EQ(first, second);
  mgpuStreamDestroy(first); // keeps it: it serves the next launch
  const Kernel kernel(Kernel::Ptx);
  const uint32_t n = 1000;
  auto *data =
      static_cast<float *>(dtrain_rt_cuda_alloc_managed(n * sizeof(float)));
  std::fill(data, data + n, 1.0f);
  kernel.launch(data, n, second);
  mgpuStreamSynchronize(second);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(data[i], 2.0f) << "at " << i;
  dtrain_rt_cuda_free(data);
}

// A trainer queues a heavy op after kernels that write its operand, and
// waits for neither: the heavy op must read what the kernels wrote.
TEST(StepStream, HeavyOpsRunAfterQueuedKernels) {
  const Kernel kernel(Kernel::Ptx);
  const uint32_t n = 1 << 22;
  const int launches = 20; // long enough for an unordered product to see it
  const std::vector<float> input = iota(n);
  auto *a = static_cast<float *>(dtrain_rt_cuda_alloc_managed(n * 4));
  auto *b = static_cast<float *>(dtrain_rt_cuda_alloc_managed(4));
  auto *c = static_cast<float *>(dtrain_rt_cuda_alloc_managed(n * 4));
  std::copy(input.begin(), input.end(), a);
  *b = 2.0f;
  void *stream = mgpuStreamCreate();
  for (int i = 0; i < launches; ++i)
    kernel.launch(a, n, stream);
  // C (n x 1) = A (n x 1) B (1 x 1): 2 (input + 20), exact in f32.
  dtrain_rt_cuda_matmul_f32(a, b, c, n, 1, 1, 0, 0, 0.0f);
  dtrain_rt_cuda_synchronize();
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(c[i], 2.0f * (input[i] + float(launches))) << "at " << i;
  for (float *p : {a, b, c})
    dtrain_rt_cuda_free(p);
}

TEST(ManagedPool, HostAndKernelShareABlock) {
  const Kernel kernel(Kernel::Ptx);
  const uint32_t n = 100000;
  auto *data =
      static_cast<float *>(dtrain_rt_cuda_alloc_managed(n * sizeof(float)));
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 256, 0u);
  const std::vector<float> input = iota(n);
  std::copy(input.begin(), input.end(), data);
  void *stream = mgpuStreamCreate();
  kernel.launch(data, n, stream);
  kernel.launch(data, n, stream);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(data[i], input[i] + 2.0f) << "at " << i;
  dtrain_rt_cuda_free(data);
}

TEST(ManagedPool, ReusesFreedBlocks) {
  void *first = dtrain_rt_cuda_alloc_managed(1000);
  void *second = dtrain_rt_cuda_alloc_managed(1000);
  EXPECT_NE(first, second);
  dtrain_rt_cuda_free(first);
  // Work queued on the step stream may still use a freed block: another
  // thread gets it only after the stream's next synchronization.
  void *elsewhere = nullptr;
  std::thread([&] { elsewhere = dtrain_rt_cuda_alloc_managed(1000); }).join();
  EXPECT_NE(elsewhere, first);
  // The freeing thread gets it at once: 900 and 1000 bytes are one size
  // class (1024).
  void *again = dtrain_rt_cuda_alloc_managed(900);
  EXPECT_EQ(again, first);
  dtrain_rt_cuda_free(elsewhere);
  dtrain_rt_cuda_synchronize();
  void *synchronized = nullptr;
  std::thread([&] { synchronized = dtrain_rt_cuda_alloc_managed(1000); })
      .join();
  EXPECT_EQ(synchronized, elsewhere);
  dtrain_rt_cuda_free(synchronized);
  // 3000 bytes is another class: a new block, not the freed one.
  dtrain_rt_cuda_free(second);
  void *larger = dtrain_rt_cuda_alloc_managed(3000);
  EXPECT_NE(larger, second);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(larger) % 256, 0u);
  void *empty = dtrain_rt_cuda_alloc_managed(0);
  EXPECT_NE(empty, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(empty) % 256, 0u);
  dtrain_rt_cuda_free(nullptr);
  for (void *block : {again, larger, empty})
    dtrain_rt_cuda_free(block);
}

void freeTwice() {
  void *block = dtrain_rt_cuda_alloc_managed(64);
  dtrain_rt_cuda_free(block);
  dtrain_rt_cuda_free(block);
}

TEST(ManagedPool, FreeingTwiceIsFatal) {
  EXPECT_EXIT(freeTwice(), ::testing::ExitedWithCode(1),
              "^dtrain-rt: dtrain_rt_cuda_free: 0x[0-9a-f]+ was not allocated "
              "by dtrain_rt_cuda_alloc_managed, or was freed already\n$");
}

// Buffers beyond the device's memory are refused, before any is made:
// managed memory would page them between host and device.
TEST(ManagedPool, MoreThanTheDeviceHasIsFatal) {
  size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EXIT(dtrain_rt_cuda_alloc_managed(total), ::testing::ExitedWithCode(1),
              "^dtrain-rt: out of GPU memory: [0-9]+ more bytes of buffers "
              "would make [0-9.]+ GiB, more than the [0-9.]+ GiB that the "
              "device leaves them \\(a smaller batch needs less\\)\n$");
}

//===--- Steps replayed as CUDA graphs ------------------------------------===//

/// A step as the runtime sees a compiled one: a temporary from the pool,
/// kernels and a heavy op on the step stream, waits at its end.
/// BUFFERS: A (kStepElements floats, 2 added a step), B (2 A after it), and
/// the 1 x 1 matrix 2.
constexpr uint32_t kStepElements = 4096;
const Kernel *stepKernel = nullptr;
int stepCalls = 0;
void *capturedTemporary = nullptr; // the second call's: the first capture's

void graphStep(void **buffers) {
  ++stepCalls;
  void *stream = mgpuStreamCreate();
  auto *a = static_cast<float *>(buffers[0]);
  auto *temporary = static_cast<float *>(
      dtrain_rt_cuda_alloc_managed(kStepElements * sizeof(float)));
  if (stepCalls == 2)
    capturedTemporary = temporary;
  // A temporary that a kernel works on (its values unread), then A += 1
  // twice.
  stepKernel->launch(temporary, kStepElements, stream);
  stepKernel->launch(a, kStepElements, stream);
  stepKernel->launch(a, kStepElements, stream);
  dtrain_rt_cuda_free(temporary);
  dtrain_rt_cuda_matmul_f32(a, static_cast<float *>(buffers[2]),
                            static_cast<float *>(buffers[1]), kStepElements, 1,
                            1, 0, 0, 0.0f);
  // Its end as MLIR's lowering may make it: a wait for an event, then for
  // the stream.
  void *event = mgpuEventCreate();
  mgpuEventRecord(event, stream);
  mgpuEventSynchronize(event);
  mgpuEventDestroy(event);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

/// Buffers for graphStep: A = iota, B = 0, the matrix 2.
std::vector<float *> stepBuffers(float *two) {
  std::vector<float *> buffers;
  for (int i = 0; i < 2; ++i)
    buffers.push_back(static_cast<float *>(
        dtrain_rt_cuda_alloc_managed(kStepElements * sizeof(float))));
  const std::vector<float> input = iota(kStepElements);
  std::copy(input.begin(), input.end(), buffers[0]);
  std::fill(buffers[1], buffers[1] + kStepElements, 0.0f);
  buffers.push_back(two);
  return buffers;
}

/// Whether graphStep's buffers hold what STEPS steps make.
void expectSteps(const std::vector<float *> &buffers, int steps) {
  const std::vector<float> input = iota(kStepElements);
  for (uint32_t i = 0; i < kStepElements; ++i) {
    const float a = input[i] + 2.0f * float(steps);
    ASSERT_EQ(buffers[0][i], a) << "A at " << i << " after " << steps;
    ASSERT_EQ(buffers[1][i], 2.0f * a) << "B at " << i << " after " << steps;
  }
}

// The first run runs the step as it is, each buffer table's first later
// run captures it, and the rest launch the graphs: the step function
// itself runs 3 times for 7 steps, and every step's work is done.
TEST(StepGraphs, ReplaysTheStepOfEachBufferTable) {
  const Kernel kernel(Kernel::Ptx);
  stepKernel = &kernel;
  stepCalls = 0;
  auto *two = static_cast<float *>(dtrain_rt_cuda_alloc_managed(4));
  *two = 2.0f;
  std::vector<float *> first = stepBuffers(two), second = stepBuffers(two);
  dtrain_rt_cuda_set_graph_step(graphStep, nullptr, 0);
  auto call = [](std::vector<float *> &buffers) {
    dtrain_rt_cuda_call_run(
        graphStep, reinterpret_cast<void **>(buffers.data()), buffers.size());
  };
  for (int i = 0; i < 3; ++i)
    call(first);
  expectSteps(first, 3);
  for (int i = 0; i < 2; ++i)
    call(second);
  call(first);
  expectSteps(first, 4);
  expectSteps(second, 2);
  EXPECT_EQ(stepCalls, 3);
  // The graph's temporary is the graphs' own: no allocation gets it.
  ASSERT_NE(capturedTemporary, nullptr);
  std::vector<void *> taken;
  for (int i = 0; i < 8; ++i) {
    taken.push_back(dtrain_rt_cuda_alloc_managed(kStepElements * 4));
    EXPECT_NE(taken.back(), capturedTemporary);
  }
  call(first);
  expectSteps(first, 5);
  EXPECT_EQ(stepCalls, 3);
  for (void *block : taken)
    dtrain_rt_cuda_free(block);
  for (float *buffer : {first[0], first[1], second[0], second[1], two})
    dtrain_rt_cuda_free(buffer);
}

// A function that may not be captured runs as it is every time, and the
// reason is printed once.
TEST(StepGraphs, RunsOthersAsTheyAre) {
  const Kernel kernel(Kernel::Ptx);
  stepKernel = &kernel;
  stepCalls = 0;
  auto *two = static_cast<float *>(dtrain_rt_cuda_alloc_managed(4));
  *two = 2.0f;
  std::vector<float *> buffers = stepBuffers(two);
  // A function of its own: the registry is per function.
  static void (*const uncapturable)(void **) = [](void **b) { graphStep(b); };
  dtrain_rt_cuda_set_graph_step(uncapturable, "it calls @collective", 0);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i)
    dtrain_rt_cuda_call_run(uncapturable,
                            reinterpret_cast<void **>(buffers.data()),
                            buffers.size());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "dtrain-rt: DTRAIN_CUDA_GRAPH=1: running without a CUDA graph: "
            "it calls @collective\n");
  expectSteps(buffers, 3);
  EXPECT_EQ(stepCalls, 3);
  for (float *buffer : {buffers[0], buffers[1], two})
    dtrain_rt_cuda_free(buffer);
}

TEST(StepGraphs, NullFunctionIsFatal) {
  EXPECT_EXIT(dtrain_rt_cuda_set_graph_step(nullptr, nullptr, 0),
              ::testing::ExitedWithCode(1),
              "^dtrain-rt: dtrain_rt_cuda_set_graph_step: RUN is NULL\n$");
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return runCudaTests(argc > 1 &&
                      std::strcmp(argv[1], "--without-device") == 0);
}
