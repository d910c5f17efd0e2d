"""Compares mixed-precision trainers with the f32 one.

usage: check_mixed_precision_accuracy.py F32_LOG [LABEL:LOG:BYTES ...]

Each LOG is a trainer's output; its final line has val_acc= and sent_MB=
(the megabytes each rank sent per step). BYTES is what the run should send
against the f32 run: 'half' (0.45 to 0.55 of it: sent_MB has 3 decimals)
or 'same'. Prints one line per run with its accuracy gap to the f32 run
and its bytes over the f32 run's, ending in OK when the gap is at most 0.5
points and the bytes are as expected, else MISMATCH.
"""
import sys

from trainer_log import final_fields


def main():
    base = final_fields(sys.argv[1])
    acc, sent = float(base["val_acc"]), float(base["sent_MB"])
    print("f32: val_acc %.4f sent_MB %.3f" % (acc, sent))
    for spec in sys.argv[2:]:
        label, path, bytes_expected = spec.split(":")
        fields = final_fields(path)
        gap = 100 * (acc - float(fields["val_acc"]))
        ratio = float(fields["sent_MB"]) / sent
        if bytes_expected == "half":
            bytes_ok = 0.45 <= ratio <= 0.55
        elif bytes_expected == "same":
            bytes_ok = ratio == 1.0
        else:
            sys.exit("unknown bytes expectation '%s'" % bytes_expected)
        ok = gap <= 0.5 and bytes_ok
        print("%s: val_acc %s, %.2f points below f32, bytes %.2f of f32: %s"
              % (label, fields["val_acc"], gap, ratio,
                 "OK" if ok else "MISMATCH"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
