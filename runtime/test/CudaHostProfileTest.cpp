//===- CudaHostProfileTest.cpp - DTRAIN_CUDA_HOST_PROFILE's table ---------===//
//
// The totals that a --target=cuda trainer prints at exit with
// DTRAIN_CUDA_HOST_PROFILE=1: calls and host time by name, largest total
// first, hand-computed. Needs no device.
//
//===----------------------------------------------------------------------===//

#include "cuda/HostProfile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using dtrain::rt::gpu::HostProfile;

namespace {

std::string printed(const HostProfile &profile) {
  char *text = nullptr;
  size_t size = 0;
  std::FILE *out = open_memstream(&text, &size);
  profile.print(out);
  std::fclose(out);
  std::string result(text, size);
  std::free(text);
  return result;
}

TEST(HostProfile, TotalsByNameLargestFirst) {
  HostProfile profile;
  profile.add("mgpuLaunchKernel", 1000);
  profile.add("dtrain_rt_cuda_conv2d_f32", 5'000'000);
  profile.add("mgpuLaunchKernel", 2000);
  // The same name from another string: one entry.
  const std::string launch = "mgpuLaunchKernel";
  profile.add(launch.c_str(), 3'000'000);
  EXPECT_EQ(printed(profile),
            "dtrain-rt: host time in the CUDA runtime's calls "
            "(DTRAIN_CUDA_HOST_PROFILE=1), largest first:\n"
            "    total_ms      calls    us/call  function\n"
            "       5.000          1   5000.000  dtrain_rt_cuda_conv2d_f32\n"
            "       3.003          3   1001.000  mgpuLaunchKernel\n");
}

TEST(HostProfile, EqualTotalsByName) {
  HostProfile profile;
  profile.add("b", 1500);
  profile.add("a", 1500);
  EXPECT_EQ(printed(profile),
            "dtrain-rt: host time in the CUDA runtime's calls "
            "(DTRAIN_CUDA_HOST_PROFILE=1), largest first:\n"
            "    total_ms      calls    us/call  function\n"
            "       0.002          1      1.500  a\n"
            "       0.002          1      1.500  b\n");
}

TEST(HostProfile, NothingTimed) {
  EXPECT_EQ(printed(HostProfile()),
            "dtrain-rt: host time in the CUDA runtime's calls "
            "(DTRAIN_CUDA_HOST_PROFILE=1), largest first:\n"
            "    total_ms      calls    us/call  function\n");
}

} // namespace
