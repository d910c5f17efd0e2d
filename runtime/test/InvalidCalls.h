//===- InvalidCalls.h - the kernel tests' --invalid=CASE mode ---*- C++ -*-===//
//
// A kernel test program run as `PROGRAM --invalid=CASE` makes the one
// invalid call CASE, which must abort with the kernel's message
// (expect_failure.sh checks the message and the status); these say which
// case was asked for, and what to exit with when the call returned.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_TEST_INVALIDCALLS_H
#define DTRAIN_RUNTIME_TEST_INVALIDCALLS_H

#include <cstdio>
#include <cstring>
#include <string>

namespace dtrain::rt::test {

/// CASE where the command line is `PROGRAM --invalid=CASE`, else null.
inline const char *getInvalidCallCase(int argc, char **argv) {
  const char *prefix = "--invalid=";
  if (argc == 2 && !std::strncmp(argv[1], prefix, std::strlen(prefix)))
    return argv[1] + std::strlen(prefix);
  return nullptr;
}

/// The exit status (2) after the call of case NAME returned, or after no
/// call when the program does not know NAME (KNOWN false); says which.
inline int invalidCallReturned(const std::string &name, bool known) {
  std::fprintf(stderr,
               known ? "invalid call '%s' did not abort\n"
                     : "unknown invalid call '%s'\n",
               name.c_str());
  return 2;
}

} // namespace dtrain::rt::test

#endif // DTRAIN_RUNTIME_TEST_INVALIDCALLS_H
