"""The training-step benchmark of a GPU bundle (scripts/gpu-bundle.sh), in
three parts, so that the GPU machine needs no dtrain-compile:

  gpu_bundle_steps.py export DIR BATCH MODEL...
      (here, Debian's torch) exports each torchvision MODEL for training at
      BATCH (3x224x224, 1000 classes, dropout ratio 0) to DIR/MODEL.onnx with
      its weights as external data, then deletes the data: the graph alone
      travels (resnet50's weights are 100 MB, more than a bundle holds).
  gpu_bundle_steps.py weights DIR MODEL...
      (there) writes each MODEL.onnx's external data file: every float
      initializer random (He-scaled for weights of rank > 1, 0 for biases
      and running means, 1 for batch-norm scales and running variances),
      and MODEL-x.npy and MODEL-labels.npy: a random batch.
  gpu_bundle_steps.py torch DIR MODEL PRECISION SECONDS
      (there) times PyTorch's eager training step of the same torchvision
      MODEL on CUDA on that batch (bench/torch_steps.py: momentum SGD as
      the compiled step, under torch.autocast(bfloat16) for PRECISION bf16)
      for about SECONDS and prints 'torch=<version> device=cuda
      torch_min_ms=<min> runs=<N>'.

The weights need not equal between the two: the benchmark compares times.
"""
import os
import sys

import numpy as np

# torch_steps.py: bench/'s, beside this file in a bundle.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "bench")]

SHAPE = (3, 224, 224)
CLASSES = 1000


def build(name):
    import torchvision
    return getattr(torchvision.models, name)(num_classes=CLASSES)


def export(directory, batch, names):
    import onnx
    import torch
    from torch_steps import export_for_training
    for name in names:
        torch.manual_seed(0)
        path = os.path.join(directory, name + ".onnx")
        export_for_training(build(name).train(), torch.randn(batch, *SHAPE),
                            path)
        proto = onnx.load(path)
        onnx.save_model(proto, path, save_as_external_data=True,
                        all_tensors_to_one_file=True,
                        location=name + ".weights", size_threshold=0)
        print("%s: %d initializers" % (path, len(proto.graph.initializer)))


def external_data(tensor):
    info = {entry.key: entry.value for entry in tensor.external_data}
    return info["location"], int(info.get("offset", 0)), int(info["length"])


# ONNX's TensorProto data types that the exported models' initializers use.
NUMPY_TYPES = {1: np.float32, 6: np.int32, 7: np.int64, 11: np.float64}


def initial_values(tensor, rng):
    if tensor.data_type not in NUMPY_TYPES:
        sys.exit("initializer %s: ONNX data type %d is not handled" % (
            tensor.name, tensor.data_type))
    dtype = NUMPY_TYPES[tensor.data_type]
    dims = tuple(tensor.dims)
    name = tensor.name
    if not np.issubdtype(dtype, np.floating):
        return np.zeros(dims, dtype)
    if len(dims) > 1:
        fan_in = int(np.prod(dims[1:]))
        return (rng.standard_normal(dims) * np.sqrt(2.0 / fan_in)).astype(dtype)
    # Rank 1: batch-norm scales (the only 1-D weights) and running
    # variances 1, biases and running means 0.
    if name.endswith("weight") or name.endswith("running_var"):
        return np.ones(dims, dtype)
    return np.zeros(dims, dtype)


def weights(directory, names):
    import onnx
    rng = np.random.default_rng(0)
    for name in names:
        path = os.path.join(directory, name + ".onnx")
        proto = onnx.load(path, load_external_data=False)
        files = {}
        for tensor in proto.graph.initializer:
            location, offset, length = external_data(tensor)
            data = initial_values(tensor, rng).tobytes()
            if len(data) != length:
                sys.exit("%s: %s has %d bytes, the graph says %d" % (
                    path, tensor.name, len(data), length))
            files.setdefault(location, []).append((offset, data))
        for location, pieces in files.items():
            with open(os.path.join(directory, location), "wb") as out:
                for offset, data in sorted(pieces, key=lambda p: p[0]):
                    out.seek(offset)
                    out.write(data)
        batch = [d.dim_value for d in
                 proto.graph.input[0].type.tensor_type.shape.dim][0]
        np.save(os.path.join(directory, name + "-x.npy"),
                rng.standard_normal((batch,) + SHAPE).astype(np.float32))
        np.save(os.path.join(directory, name + "-labels.npy"),
                rng.integers(0, CLASSES, batch).astype(np.int64))
        print("%s: %d initializers written, batch %d" % (
            path, len(proto.graph.initializer), batch))


def time_torch(directory, name, precision, seconds):
    import torch
    from torch_steps import make_step, time_step
    x = torch.from_numpy(np.load(os.path.join(directory, name + "-x.npy")))
    y = torch.from_numpy(np.load(os.path.join(directory,
                                              name + "-labels.npy")))
    # CUDA; the CPU only where torch has none (to try this script there).
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = build(name).train().to(device)
    step = make_step(model, x.to(device), y.to(device), device, precision)
    times = time_step(step, lambda probe: int(min(2000, max(
        5, seconds * 1000.0 / max(probe, 1e-3)))))
    print("torch=%s device=%s torch_min_ms=%f runs=%d" % (
        torch.__version__, device.type, min(times), len(times)))


def main(argv):
    if len(argv) >= 4 and argv[1] == "export":
        export(argv[2], int(argv[3]), argv[4:])
    elif len(argv) >= 3 and argv[1] == "weights":
        weights(argv[2], argv[3:])
    elif len(argv) == 6 and argv[1] == "torch":
        time_torch(argv[2], argv[3], argv[4], float(argv[5]))
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
