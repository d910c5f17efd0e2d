//===- Embedding.h - the row that an embedding index picks ------*- C++ -*-===//
//
// nn.embedding's rule for an index (ONNX Gather's wrap of a negative index,
// then a clamp into the table), in one place for the embedding-gradient
// kernels of the CPU (ReferenceKernels.cpp) and of the GPU
// (cuda/Embedding.cu), so that both add a row's gradient where the forward
// lookup read the row.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_EMBEDDING_H
#define DTRAIN_RUNTIME_EMBEDDING_H

#include "HostDevice.h"

#include <cstdint>

namespace dtrain::rt {

/// The row of a table of ROWS >= 1 rows that INDEX picks: INDEX + ROWS for
/// a negative INDEX, then clamped into [0, ROWS).
DTRAIN_RT_HOST_DEVICE inline int64_t embeddingRow(int64_t index, int64_t rows) {
  if (index < 0)
    index += rows;
  return index < 0 ? 0 : (index >= rows ? rows - 1 : index);
}

} // namespace dtrain::rt

#endif // DTRAIN_RUNTIME_EMBEDDING_H
