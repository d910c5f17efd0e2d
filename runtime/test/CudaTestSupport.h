//===- CudaTestSupport.h - what the CUDA runtime's tests share ---*- C++
//-*-===//
//
// Device buffers for the tests of libdtrain_runtime_cuda, the patterns of
// its fatal lines, and their main: run the tests that need a device where
// there is one; where there is none, print one line and exit 77 (ctest's
// "skipped"), or run only the WithoutDevice tests when asked to
// (--without-device, which itself skips with 77 where there is a device).
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_TEST_CUDATESTSUPPORT_H
#define DTRAIN_RUNTIME_TEST_CUDATESTSUPPORT_H

#include "dtrain_rt_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtrain::rt::test {

/// What a fatal error of the runtime ends with when there is no GPU.
inline constexpr const char *kNeedGpu =
    ": --target=cuda trainers need an NVIDIA GPU";

/// Throws (a test failure) naming CALL when a CUDA call failed.
inline void check(cudaError_t rc, const char *call) {
  if (rc != cudaSuccess)
    throw std::runtime_error(std::string(call) +
                             " failed: " + cudaGetErrorString(rc));
}

/// N elements of T on the device.
template <class T> class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t n) : n(n) {
    check(cudaMalloc(&data, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  }
  explicit DeviceBuffer(const std::vector<T> &host)
      : DeviceBuffer(host.size()) {
    check(cudaMemcpy(data, host.data(), n * sizeof(T), cudaMemcpyHostToDevice),
          "cudaMemcpy to the device");
    // The kernels run on non-blocking streams, which the legacy stream of
    // cudaMemcpy does not order: the copy must be done when they start.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { cudaFree(data); }

  T *get() const { return data; }
  /// Sets every byte to BYTE (0xff: float NaNs, so that an element that a
  /// kernel does not write shows).
  void fill(unsigned char byte) {
    check(cudaMemset(data, byte, n * sizeof(T)), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  /// The first COUNT elements (all by default), once the device is idle.
  std::vector<T> read(size_t count = size_t(-1)) const {
    std::vector<T> host(std::min(count, n));
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(cudaMemcpy(host.data(), data, host.size() * sizeof(T),
                     cudaMemcpyDeviceToHost),
          "cudaMemcpy to the host");
    return host;
  }

private:
  T *data = nullptr;
  size_t n;
};

/// TEXT as a POSIX extended regular expression matching it literally.
inline std::string literal(const std::string &text) {
  std::string result;
  for (char c : text) {
    if (std::strchr("\\.[](){}*+?|^$", c))
      result += '\\';
    result += c;
  }
  return result;
}

/// The line that the runtime prints before exiting, as a death test
/// pattern: WHAT, alone on stderr.
inline std::string fatalLine(const std::string &what) {
  return "^dtrain-rt: " + literal(what) + "\n$";
}

/// Why there is no GPU, as dtrain_rt_cuda_driver_status says it ("" when
/// there is one).
inline std::string whyNoGpu() {
  if (dtrain_rt_cuda_driver_status() == DTRAIN_RT_CUDA_SUCCESS)
    return "";
  const std::string prefix = "dtrain_rt_cuda_driver_status: ";
  const std::string message = dtrain_rt_cuda_error_message();
  return message.compare(0, prefix.size(), prefix) == 0
             ? message.substr(prefix.size())
             : message;
}

/// Adds PATTERN to the negative patterns of --gtest_filter.
inline void excludeTests(const std::string &pattern) {
  std::string filter = GTEST_FLAG_GET(filter);
  filter += filter.find('-') == std::string::npos ? "-" : ":";
  GTEST_FLAG_SET(filter, filter + pattern);
}

/// The number of tests in suites other than WithoutDevice.
inline int deviceTestCount() {
  const ::testing::UnitTest &unit = *::testing::UnitTest::GetInstance();
  int count = 0;
  for (int i = 0; i < unit.total_test_suite_count(); ++i)
    if (std::strcmp(unit.GetTestSuite(i)->name(), "WithoutDevice") != 0)
      count += unit.GetTestSuite(i)->total_test_count();
  return count;
}

/// The main of a CUDA test program, after ::testing::InitGoogleTest: with a
/// device, every test but the WithoutDevice suite's; without one, 77 (or,
/// WITHOUTDEVICE, only the WithoutDevice suite, and 77 with a device). The
/// death tests run in a fresh process: a CUDA context does not survive
/// fork().
inline int runCudaTests(bool withoutDevice) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string why = whyNoGpu();
  if (withoutDevice) {
    if (why.empty()) {
      std::printf("a CUDA device is present: skipped (the checks without "
                  "one need a machine without one)\n");
      return 77;
    }
    const ::testing::UnitTest &unit = *::testing::UnitTest::GetInstance();
    for (int i = 0; i < unit.total_test_suite_count(); ++i)
      if (std::strcmp(unit.GetTestSuite(i)->name(), "WithoutDevice") != 0)
        excludeTests(std::string(unit.GetTestSuite(i)->name()) + ".*");
    return RUN_ALL_TESTS();
  }
  if (!why.empty()) {
    std::printf("no CUDA device: skipped (%d checks need a GPU)\n(%s)\n",
                deviceTestCount(), why.c_str());
    return 77;
  }
  excludeTests("WithoutDevice.*");
  return RUN_ALL_TESTS();
}

} // namespace dtrain::rt::test

#endif // DTRAIN_RUNTIME_TEST_CUDATESTSUPPORT_H
