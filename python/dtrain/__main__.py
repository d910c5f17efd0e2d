"""python3 -m dtrain plot LOG -o OUT.png [--keys loss,acc]: the training
curves of a trainer's saved output (./trainer ... > LOG)."""

import argparse
import sys

from . import DtrainError, plot


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m dtrain",
        description="dtrain's Python front end from the command line.")
    commands = parser.add_subparsers(dest="command", required=True)
    plotting = commands.add_parser(
        "plot", help="draw the training curves of a trainer's output",
        description="Draws each key of a trainer's progress lines against "
        "the step (and the validation accuracy, where the run validated) "
        "to an image whose extension picks its format.")
    plotting.add_argument("log", help="the trainer's output, saved to a file")
    plotting.add_argument("-o", "--output", required=True,
                          help="the image to write (.png, .svg, .pdf)")
    plotting.add_argument("--keys",
                          help="the progress keys to draw, comma-separated "
                          "(default: loss, and acc where the run has it)")
    args = parser.parse_args(argv)
    try:
        plot(args.log, args.output,
             keys=args.keys.split(",") if args.keys else None)
    except DtrainError as e:
        print("dtrain: error: %s" % e, file=sys.stderr)
        return 1
    except OSError as e:
        print("dtrain: error: %s: %s" % (e.filename, e.strerror),
              file=sys.stderr)
        return 1
    print("wrote %s" % args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
