"""Compares the validation accuracy of sparsified trainers with a dense one.

usage: check_sparsified_accuracy.py DENSE_LOG [LABEL:LOG:EXPECT ...]

Each LOG is a trainer's output; its final line has val_acc=, density= and
compression=. EXPECT is one of
  near          within 1 point of the dense run (top-k with residuals)
  far           more than 1 point below the dense run
  above=L+N     at least N points above the run labelled L
  min=A         at least accuracy A
Prints one line per run, ending in OK or MISMATCH.
"""
import sys

from trainer_log import final_fields


def main():
    dense = float(final_fields(sys.argv[1])["val_acc"])
    print("dense: val_acc %.4f" % dense)
    accs = {}
    for spec in sys.argv[2:]:
        label, path, expect = spec.split(":")
        fields = final_fields(path)
        acc = accs[label] = float(fields["val_acc"])
        gap = 100 * (dense - acc)
        if expect == "near":
            ok = gap <= 1.0
        elif expect == "far":
            ok = gap > 1.0
        elif expect.startswith("above="):
            other, points = expect[len("above="):].split("+")
            ok = 100 * (acc - accs[other]) >= float(points)
        elif expect.startswith("min="):
            ok = acc >= float(expect[len("min="):])
        else:
            sys.exit("unknown expectation '%s'" % expect)
        print("%s: val_acc %.4f, %.2f points below dense, density %s, "
              "compression %s, expected %s: %s"
              % (label, acc, gap, fields["density"], fields["compression"],
                 expect, "OK" if ok else "MISMATCH"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
