#!/bin/sh
# usage: expect_failure.sh PATTERN COMMAND [ARG...]
#
# Runs COMMAND (stdin from /dev/null) and passes when it exits with a
# non-zero status other than 124 (timeout(1) fired: the job hung) and its
# stderr matches the grep basic regular expression PATTERN.

pattern=$1
shift
err=$(mktemp) || exit 2
trap 'rm -f "$err"' EXIT

"$@" </dev/null 2>"$err"
status=$?
echo "--- stderr of: $*"
cat "$err"
echo "--- exit status $status"

if [ "$status" -eq 0 ]; then
  echo "FAIL: expected a non-zero exit status"
  exit 1
fi
if [ "$status" -eq 124 ]; then
  echo "FAIL: timed out (the job hung instead of aborting)"
  exit 1
fi
if ! grep -q -e "$pattern" "$err"; then
  echo "FAIL: stderr does not match: $pattern"
  exit 1
fi
echo "PASS: exit status $status, stderr matches: $pattern"
