// RUN: dtrain-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(dtrain-copy-constant-globals))" -verify-diagnostics | FileCheck %s

// A constant global is read through one buffer of the function, however
// many places read it: allocated and filled at the entry, freed before
// every return.
// CHECK-LABEL: func.func @step
// CHECK-NEXT:  %[[G:.*]] = memref.get_global @table : memref<4xf32>
// CHECK-NEXT:  %[[B:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:  memref.copy %[[G]], %[[B]] : memref<4xf32> to memref<4xf32>
// CHECK-NOT:   memref.get_global
// CHECK-NOT:   memref.alloc
// CHECK:       scf.if
// CHECK:         memref.load %[[B]]
// CHECK:       memref.load %[[B]]
// CHECK:       memref.dealloc %[[B]]
// CHECK-NEXT:  return
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @step(%c: i1, %i: index, %out: memref<f32>) {
  scf.if %c {
    %t = memref.get_global @table : memref<4xf32>
    %v = memref.load %t[%i] : memref<4xf32>
    memref.store %v, %out[] : memref<f32>
  }
  %u = memref.get_global @table : memref<4xf32>
  %w = memref.load %u[%i] : memref<4xf32>
  memref.store %w, %out[] : memref<f32>
  return
}

// -----

// A mutable global has no single place for host and device.
memref.global "private" @state : memref<4xf32> = uninitialized
func.func @mutable(%i: index) -> f32 {
  // expected-error @+1 {{--dtrain-copy-constant-globals: global 'state' is not constant; the CUDA target keeps no mutable global state (its value would differ between host and device)}}
  %t = memref.get_global @state : memref<4xf32>
  %v = memref.load %t[%i] : memref<4xf32>
  return %v : f32
}
