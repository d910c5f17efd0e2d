//===- InvalidCalls.h - the kernel tests' --invalid=CASE mode ---*- C++ -*-===//
//
// A kernel test program run as `PROGRAM --invalid=CASE` makes the one
// invalid call CASE, which must abort with the kernel's message
// (expect_failure.sh checks the message and the status).
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_TEST_INVALIDCALLS_H
#define DTRAIN_RUNTIME_TEST_INVALIDCALLS_H

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

namespace dtrain::rt::test {

/// With the command line `PROGRAM --invalid=CASE`: makes the invalid call
/// CASE through MAKE, which returns false where it does not know CASE; the
/// call must abort, so this says that it returned, or that CASE is
/// unknown, and returns the exit status, 2. Nullopt for any other command
/// line.
inline std::optional<int> runInvalidCall(int argc, char **argv,
                                         bool (*make)(const std::string &)) {
  const char *prefix = "--invalid=";
  if (argc != 2 || std::strncmp(argv[1], prefix, std::strlen(prefix)))
    return std::nullopt;
  const std::string name = argv[1] + std::strlen(prefix);
  std::fprintf(stderr,
               make(name) ? "invalid call '%s' did not abort\n"
                          : "unknown invalid call '%s'\n",
               name.c_str());
  return 2;
}

} // namespace dtrain::rt::test

#endif // DTRAIN_RUNTIME_TEST_INVALIDCALLS_H
