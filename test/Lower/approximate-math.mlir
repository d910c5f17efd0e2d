// RUN: dtrain-opt %s --split-input-file --dtrain-approximate-math | FileCheck %s
// RUN: dtrain-opt %s --split-input-file --dtrain-approximate-math=ops=exp | FileCheck %s --check-prefix=EXP-ONLY
// RUN: not dtrain-opt %s --dtrain-approximate-math=ops=exp,sqrt 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// f32 erf, exp and tanh become arithmetic that vectorizes; no libm call
// is left to make. erf: a rational function whose coefficients are
// selected by interval (|x| < 0.8, < 2, < 3.75, else 1).
// CHECK-LABEL: func.func @defaults(
// CHECK-NOT:     math.erf
// CHECK-NOT:     math.exp
// CHECK-NOT:     math.tanh
// CHECK-DAG:     arith.constant 8.000000e-01 : f32
// CHECK-DAG:     arith.constant 3.750000e+00 : f32
// CHECK-DAG:     arith.divf
// exp: n = floor(x / log(2) + 1/2), then the polynomial, scaled by 2^n
// built in the exponent bits.
// CHECK-DAG:     arith.constant 1.44269502 : f32
// CHECK-DAG:     math.floor
// CHECK-DAG:     arith.shli
// CHECK-DAG:     math.fma
// CHECK:         return
// EXP-ONLY-LABEL: func.func @defaults(
// EXP-ONLY:        math.erf
// EXP-ONLY-NOT:    math.exp
// EXP-ONLY:        math.tanh
// EXP-ONLY:        return
func.func @defaults(%x: f32) -> (f32, f32, f32) {
  %e = math.erf %x : f32
  %x2 = math.exp %x : f32
  %t = math.tanh %x : f32
  return %e, %x2, %t : f32, f32, f32
}

// -----

// Vectors too, element by element in the same arithmetic.
// CHECK-LABEL: func.func @vector(
// CHECK-NOT:     math.exp
// CHECK:         math.floor %{{.*}} : vector<8xf32>
// CHECK:         return
func.func @vector(%x: vector<8xf32>) -> vector<8xf32> {
  %y = math.exp %x : vector<8xf32>
  return %y : vector<8xf32>
}

// -----

// f64, f16 and bf16 are left to their libm calls and f32 detours; log is
// no default.
// CHECK-LABEL: func.func @other_types(
// CHECK:         math.erf %{{.*}} : f64
// CHECK:         math.exp %{{.*}} : f16
// CHECK:         math.tanh %{{.*}} : bf16
// CHECK:         math.log %{{.*}} : f32
func.func @other_types(%a: f64, %b: f16, %c: bf16, %d: f32) -> (f64, f16, bf16, f32) {
  %e = math.erf %a : f64
  %x = math.exp %b : f16
  %t = math.tanh %c : bf16
  %l = math.log %d : f32
  return %e, %x, %t, %l : f64, f16, bf16, f32
}

// UNKNOWN: dtrain-approximate-math: 'sqrt' is not a math function MLIR approximates (ops takes: acos, asin, atan, atan2, cbrt, cos, erf, erfc, exp, expm1, log, log1p, log2, sin, tanh)
