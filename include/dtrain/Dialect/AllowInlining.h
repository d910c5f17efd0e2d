//===- AllowInlining.h - inliner interface of dtrain's dialects -*- C++ -*-===//
//
// Every dtrain op may be inlined: none depends on the function it is in
// (compiled models inline @forward into their entry point).
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_DIALECT_ALLOWINLINING_H
#define DTRAIN_DIALECT_ALLOWINLINING_H

#include "mlir/Transforms/InliningUtils.h"

namespace mlir::dtrain {

struct AllowInliningInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Operation *, bool) const final {
    return true;
  }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final {
    return true;
  }
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};

} // namespace mlir::dtrain

#endif // DTRAIN_DIALECT_ALLOWINLINING_H
