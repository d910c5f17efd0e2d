//===- BufferizableOpInterfaceImpl.h - comm op bufferization ----*- C++ -*-===//

#ifndef DTRAIN_DIALECT_COMM_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define DTRAIN_DIALECT_COMM_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace dtrain::comm {
/// Lets one-shot bufferization turn tensor collectives into their in-place
/// memref forms.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace dtrain::comm
} // namespace mlir

#endif // DTRAIN_DIALECT_COMM_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
