"""From PyTorch to what dtrain reads: an ONNX model and .npz data."""

import os

from .errors import DtrainError


def export(module, example_input, path, input_name="x", output_name="logits",
           opset=13, training=True):
    """Writes the torch.nn.Module MODULE to the ONNX file PATH as dtrain's
    importer takes it, and returns PATH.

    EXAMPLE_INPUT is a tensor of one batch's shape (any batch size: the
    batch dimension is exported symbolic, and dtrain-compile's
    batch_size fixes it). The graph is traced in training mode, so that
    batch norm and dropout are the training ops (for a trainer), or with
    TRAINING=False in evaluation mode (for dtrain-compile mode="infer":
    the running statistics, no dropout); without constant folding, so
    that every parameter stays an initializer. The module is left in the
    mode it was in."""
    import torch

    if not isinstance(module, torch.nn.Module):
        raise DtrainError("export: %r is not a torch.nn.Module" % (module, ))
    if not isinstance(example_input, torch.Tensor) or example_input.dim() < 1:
        raise DtrainError(
            "export: the example input must be a tensor whose first "
            "dimension is the batch")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise DtrainError("export: %s: no such directory" % directory)
    was_training = module.training
    try:
        mode = (torch.onnx.TrainingMode.TRAINING
                if training else torch.onnx.TrainingMode.EVAL)
        torch.onnx.export(module.train(training), example_input, path,
                          opset_version=opset, training=mode,
                          do_constant_folding=False, input_names=[input_name],
                          output_names=[output_name],
                          dynamic_axes={input_name: {0: "N"},
                                        output_name: {0: "N"}})
    finally:
        module.train(was_training)
    _mark_frozen(module, path)
    return path


def frozen_initializers(module, path):
    """The initializers of PATH, MODULE's ONNX export, that dtrain must keep
    constant (dtrain-compile --frozen): MODULE's float buffers (an
    attention mask), which ONNX stores as initializers like the weights.
    Batch norms' running statistics are left out: the trainer updates
    them."""
    import onnx
    import torch

    names = [
        (prefix + "." if prefix else "") + name
        for prefix, child in module.named_modules()
        if not isinstance(child, torch.nn.modules.batchnorm._BatchNorm)
        for name, buffer in child.named_buffers(recurse=False)
        if buffer.is_floating_point()
    ]
    if not names:
        return []
    initializers = {tensor.name for tensor in
                    onnx.load(path, load_external_data=False)
                    .graph.initializer}
    return [name for name in names if name in initializers]


def _mark_frozen(module, path):
    """Lists frozen_initializers in the ONNX file PATH's `dtrain.frozen`
    metadata, which dtrain's importer reads."""
    import onnx

    frozen = frozen_initializers(module, path)
    if not frozen:
        return
    model = onnx.load(path)
    entry = model.metadata_props.add()
    entry.key, entry.value = "dtrain.frozen", ",".join(frozen)
    onnx.save(model, path)


def _array(values, what):
    import numpy as np
    if hasattr(values, "detach"):  # a torch tensor
        values = values.detach().cpu().numpy()
    values = np.asarray(values)
    if values.ndim < 1 or values.shape[0] == 0:
        raise DtrainError("save_data: %s has no samples (shape %s)" %
                          (what, values.shape))
    return values


def save_data(path, x, y, x_key="x", y_key="y"):
    """Writes samples X (the first dimension the sample) and integer labels
    Y (numpy arrays or torch tensors) to the .npz file PATH that a
    trainer's --data or --val reads: X as float32, or as int64 where it
    holds integers (a language model's token ids), Y as int64 (a label per
    sample, or per position of a sequence). Returns PATH."""
    import numpy as np
    x = _array(x, "x")
    x = x.astype(np.int64 if np.issubdtype(x.dtype, np.integer) else
                 np.float32)
    y = _array(y, "y")
    if not np.issubdtype(y.dtype, np.integer):
        raise DtrainError("save_data: the labels must be integers (got %s)" %
                          y.dtype)
    if y.shape[0] != x.shape[0]:
        raise DtrainError("save_data: %d samples but %d labels" %
                          (x.shape[0], y.shape[0]))
    np.savez(path, **{x_key: x, y_key: y.astype(np.int64)})
    return path
