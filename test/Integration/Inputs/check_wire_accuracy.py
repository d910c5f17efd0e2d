"""Compares trainers whose gradients travel in 16 bits with the f32 one.

usage: check_wire_accuracy.py F32_LOG [LABEL:LOG ...]

Each LOG is a trainer's output; its final line has val_acc= and sent_MB=
(the megabytes each rank sent per step). Prints one line per run with its
accuracy gap to the f32 run and its bytes over the f32 run's, ending in OK
when the gap is at most 0.5 points and the bytes are 0.45 to 0.55 of f32's
(sent_MB has 3 decimals), else MISMATCH.
"""
import re
import sys


def final_fields(path):
    with open(path) as f:
        finals = [l for l in f if l.startswith("final ")]
    if not finals:
        sys.exit("%s: no final line" % path)
    return dict(re.findall(r"(\S+)=(\S+)", finals[-1]))


def main():
    base = final_fields(sys.argv[1])
    acc, sent = float(base["val_acc"]), float(base["sent_MB"])
    print("f32: val_acc %.4f sent_MB %.3f" % (acc, sent))
    for spec in sys.argv[2:]:
        label, path = spec.split(":")
        fields = final_fields(path)
        gap = 100 * (acc - float(fields["val_acc"]))
        ratio = float(fields["sent_MB"]) / sent
        ok = gap <= 0.5 and 0.45 <= ratio <= 0.55
        print("%s: val_acc %s, %.2f points below f32, bytes %.2f of f32: %s"
              % (label, fields["val_acc"], gap, ratio,
                 "OK" if ok else "MISMATCH"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
