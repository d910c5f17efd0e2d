//===- Reduce.cpp - element types, local reductions, MPI ops --------------===//
//
// The single place that knows how each element type is reduced: the local
// kernels (used by the ring and by the user-defined MPI ops for 16-bit
// types), the MPI datatype/op choice, and MEAN's final division.
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "Internal.h"

#include <initializer_list>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace dtrain::rt;

namespace {

// Storage type of a buffer element and the type arithmetic happens in.
struct F32 {
  using Storage = float;
  using Compute = float;
  static Compute load(Storage x) { return x; }
  static Storage store(Compute x) { return x; }
};
struct F64 {
  using Storage = double;
  using Compute = double;
  static Compute load(Storage x) { return x; }
  static Storage store(Compute x) { return x; }
};
struct F16 {
  using Storage = uint16_t;
  using Compute = float;
  static Compute load(Storage x) { return f16ToF32(x); }
  static Storage store(Compute x) { return f32ToF16(x); }
};
struct BF16 {
  using Storage = uint16_t;
  using Compute = float;
  static Compute load(Storage x) { return bf16ToF32(x); }
  static Storage store(Compute x) { return f32ToBF16(x); }
};

// Calls FN with the element-type tag of a valid DTYPE.
template <class Fn> decltype(auto) withDType(int32_t dtype, Fn &&fn) {
  switch (dtype) {
  case DTRAIN_RT_F64:
    return fn(F64{});
  case DTRAIN_RT_F16:
    return fn(F16{});
  case DTRAIN_RT_BF16:
    return fn(BF16{});
  default:
    return fn(F32{});
  }
}

struct Sum {
  template <class T> static T apply(T a, T b) { return a + b; }
};
struct Max {
  // NaN-propagating (a NaN on any rank makes the result NaN).
  template <class T> static T apply(T a, T b) {
    return (a > b || a != a) ? a : b;
  }
};

template <class Type, class Op>
void reduceInto(void *inout, const void *in, int64_t n) {
  using S = typename Type::Storage;
  S *__restrict a = static_cast<S *>(inout);
  const S *__restrict b = static_cast<const S *>(in);
  for (int64_t i = 0; i < n; ++i)
    a[i] = Type::store(Op::apply(Type::load(a[i]), Type::load(b[i])));
}

#if defined(__x86_64__)
// f16 sums with the F16C conversions, 8 at a time: the scalar ones above
// cost more than a ring step's transfer on a busy core. Both round to
// nearest even, keep subnormals and quiet NaNs the same way, so the bits
// agree with the scalar loop (MXCSR is left at its default: no DAZ).
__attribute__((target("avx,f16c"))) void
sumF16WithF16C(uint16_t *inout, const uint16_t *in, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(inout + i)));
    __m256 b = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i)));
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(inout + i),
        _mm256_cvtps_ph(_mm256_add_ps(a, b), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i)
    inout[i] = f32ToF16(f16ToF32(inout[i]) + f16ToF32(in[i]));
}

// MEAN's division, likewise.
__attribute__((target("avx,f16c"))) void
divideF16WithF16C(uint16_t *a, int64_t n, float divisor) {
  const __m256 d = _mm256_set1_ps(divisor);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(a + i)));
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(a + i),
        _mm256_cvtps_ph(_mm256_div_ps(x, d), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i)
    a[i] = f32ToF16(f16ToF32(a[i]) / divisor);
}

bool hasF16C() {
  static const bool has =
      __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return has;
}

template <> void reduceInto<F16, Sum>(void *inout, const void *in, int64_t n) {
  uint16_t *a = static_cast<uint16_t *>(inout);
  const uint16_t *b = static_cast<const uint16_t *>(in);
  if (hasF16C())
    return sumF16WithF16C(a, b, n);
  for (int64_t i = 0; i < n; ++i)
    a[i] = f32ToF16(f16ToF32(a[i]) + f16ToF32(b[i]));
}
#endif

// MPI user-op signature: INOUT = IN op INOUT (ours are commutative).
template <class Type, class Op>
void mpiUserOp(void *in, void *inout, int *len, MPI_Datatype *) {
  reduceInto<Type, Op>(inout, in, *len);
}

struct {
  MPI_Op f16Sum = MPI_OP_NULL, f16Max = MPI_OP_NULL;
  MPI_Op bf16Sum = MPI_OP_NULL, bf16Max = MPI_OP_NULL;
} userOps;

} // namespace

const char *dtrain::rt::dtypeName(int64_t dtype) {
  switch (dtype) {
  case DTRAIN_RT_F32:
    return "f32";
  case DTRAIN_RT_F64:
    return "f64";
  case DTRAIN_RT_F16:
    return "f16";
  case DTRAIN_RT_BF16:
    return "bf16";
  case DTRAIN_RT_I64:
    return "i64";
  case DTRAIN_RT_I32:
    return "i32";
  case DTRAIN_RT_BOOL:
    return "bool";
  default:
    return "?";
  }
}

const char *dtrain::rt::reductionName(int64_t reduction) {
  switch (reduction) {
  case DTRAIN_RT_SUM:
    return "sum";
  case DTRAIN_RT_MEAN:
    return "mean";
  case DTRAIN_RT_MAX:
    return "max";
  default:
    return "?";
  }
}

const char *dtrain::rt::algorithmName(int64_t algorithm) {
  switch (algorithm) {
  case DTRAIN_RT_ALLREDUCE_DEFAULT:
    return "default";
  case DTRAIN_RT_ALLREDUCE_MPI:
    return "mpi";
  case DTRAIN_RT_ALLREDUCE_RING:
    return "ring";
  default:
    return "?";
  }
}

MPIReduction dtrain::rt::mpiReduction(int32_t dtype, int32_t reduction) {
  bool max = reduction == DTRAIN_RT_MAX;
  switch (dtype) {
  case DTRAIN_RT_F64:
    return {MPI_DOUBLE, max ? MPI_MAX : MPI_SUM};
  case DTRAIN_RT_F16:
    return {MPI_UINT16_T, max ? userOps.f16Max : userOps.f16Sum};
  case DTRAIN_RT_BF16:
    return {MPI_UINT16_T, max ? userOps.bf16Max : userOps.bf16Sum};
  default:
    return {MPI_FLOAT, max ? MPI_MAX : MPI_SUM};
  }
}

void dtrain::rt::reduceLocal(int32_t dtype, int32_t reduction, void *inout,
                             const void *in, int64_t n) {
  withDType(dtype, [&](auto type) {
    using Type = decltype(type);
    if (reduction == DTRAIN_RT_MAX)
      reduceInto<Type, Max>(inout, in, n);
    else
      reduceInto<Type, Sum>(inout, in, n);
  });
}

void dtrain::rt::finishReduction(int32_t dtype, int32_t reduction, void *buffer,
                                 int64_t n, int commSize) {
  if (reduction != DTRAIN_RT_MEAN || commSize == 1)
    return;
  withDType(dtype, [&](auto type) {
    using Type = decltype(type);
    auto *a = static_cast<typename Type::Storage *>(buffer);
    // Divide (not multiply by 1/size) so the quotient is correctly rounded;
    // for 16-bit types the f32 quotient rounds again, which is still
    // correctly rounded because f32 has more than 2p+2 bits.
    const typename Type::Compute divisor = commSize;
#if defined(__x86_64__)
    if constexpr (std::is_same_v<Type, F16>)
      if (hasF16C())
        return divideF16WithF16C(a, n, divisor);
#endif
    for (int64_t i = 0; i < n; ++i)
      a[i] = Type::store(Type::load(a[i]) / divisor);
  });
}

void dtrain::rt::createReductionOps(dtrain_rt_comm_t *comm) {
  DTRAIN_MPI_CALL(comm, MPI_Op_create, &mpiUserOp<F16, Sum>, 1,
                  &userOps.f16Sum);
  DTRAIN_MPI_CALL(comm, MPI_Op_create, &mpiUserOp<F16, Max>, 1,
                  &userOps.f16Max);
  DTRAIN_MPI_CALL(comm, MPI_Op_create, &mpiUserOp<BF16, Sum>, 1,
                  &userOps.bf16Sum);
  DTRAIN_MPI_CALL(comm, MPI_Op_create, &mpiUserOp<BF16, Max>, 1,
                  &userOps.bf16Max);
}

void dtrain::rt::freeReductionOps() {
  for (MPI_Op *op :
       {&userOps.f16Sum, &userOps.f16Max, &userOps.bf16Sum, &userOps.bf16Max})
    if (*op != MPI_OP_NULL)
      MPI_Op_free(op);
}
