#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: the lit
# regression tests (check-dtrain) and the ctest tests (runtime unit tests
# under mpirun with 1-4 ranks, failure scenarios, docs freshness). Prints
# the wall time and one summary line; exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$(date +%s)

./scripts/setup.sh || { echo "test: setup/build failed"; exit 1; }

lit_log=$(mktemp)
ctest_log=$(mktemp)
trap 'rm -f "$lit_log" "$ctest_log"' EXIT

echo "== lit: build/test"
/usr/lib/llvm-22/bin/lit -sv build/test 2>&1 | tee "$lit_log"
echo "== ctest"
# --timeout is a backstop: every MPI test also runs under `timeout`.
ctest --test-dir build --output-on-failure --timeout 600 2>&1 | tee "$ctest_log"

# lit: "  Passed: N (..%)", "  Failed: N", "  Unresolved: N", "  Timed Out: N".
lit_count() {
  sed -nE "s/^  $1 *: +([0-9]+).*/\1/p" "$lit_log" | head -n1
}
lit_passed=$(( $(lit_count Passed || true) + 0 ))
lit_failed=0
for kind in Failed Unresolved "Timed Out" "Unexpectedly Passed"; do
  lit_failed=$(( lit_failed + $(lit_count "$kind" || true) + 0 ))
done
# ctest: "100% tests passed, 0 tests failed out of N".
ctest_line=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$ctest_log" | tail -n1)
ctest_failed=$(sed -nE 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/p' <<<"$ctest_line")
ctest_total=$(sed -nE 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/p' <<<"$ctest_line")
if [ -z "$ctest_total" ]; then
  echo "test: ctest printed no summary"
  ctest_failed=1
  ctest_total=1
fi
ctest_passed=$(( ctest_total - ctest_failed ))

passed=$(( lit_passed + ctest_passed ))
failed=$(( lit_failed + ctest_failed ))
if [ "$lit_passed" -eq 0 ]; then
  echo "test: lit ran no test"
  failed=$(( failed + 1 ))
fi
echo "test: wall time $(( $(date +%s) - start )) s (lit: $lit_passed passed, $lit_failed failed; ctest: $ctest_passed passed, $ctest_failed failed)"
echo "dtrain: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
