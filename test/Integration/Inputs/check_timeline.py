"""Checks a trainer's --timeline Chrome trace: valid JSON in the trace event
format, one process per rank, every step on every rank, and per step the
collectives a data-parallel step issues (their count and total bytes),
each on the communication thread, started after it was queued and waited
for inside its step, with a CPU time between 0 and its duration (one
thread's CPU time cannot exceed the wall time).

usage: check_timeline.py TRACE.json RANKS STEPS COLLECTIVES BYTES
"""
import collections
import json
import sys


def main():
    path, ranks, steps, per_step, payload = sys.argv[1:6]
    ranks, steps, per_step, payload = (int(ranks), int(steps),
                                       int(per_step), int(payload))
    events = json.load(open(path))["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert {e["pid"] for e in events} == set(range(ranks)), "ranks"
    problems = []
    for rank in range(ranks):
        mine = [e for e in spans if e["pid"] == rank]
        step_spans = [e for e in mine if e["name"].startswith("step ")]
        if len(step_spans) != steps:
            problems.append("rank %d: %d steps" % (rank, len(step_spans)))
        collectives = [e for e in mine if e["tid"] == 1]
        waits = [e for e in mine if e["name"].startswith("wait ")]
        for step in step_spans:
            begin, end = step["ts"], step["ts"] + step["dur"]
            inside = [c for c in collectives
                      if begin <= c["args"]["queued_us"] <= end]
            total = sum(c["args"]["bytes"] for c in inside)
            if len(inside) != per_step or total != payload:
                problems.append("rank %d %s: %d collectives, %d bytes" %
                                (rank, step["name"], len(inside), total))
            for c in inside:
                if not c["args"]["queued_us"] <= c["ts"] + 1e-3 or \
                        c["ts"] + c["dur"] > end + 1e-3:
                    problems.append("rank %d %s: %s outside its step" %
                                    (rank, step["name"], c["name"]))
                if not 0 <= c["args"]["cpu_us"] <= c["dur"] + 5:
                    problems.append("rank %d %s: %s took %g us of CPU time "
                                    "in %g us" % (rank, step["name"],
                                                  c["name"],
                                                  c["args"]["cpu_us"],
                                                  c["dur"]))
        if len(waits) != steps * per_step:
            problems.append("rank %d: %d waits" % (rank, len(waits)))
    names = collections.Counter(e["name"].split(" #")[0] for e in spans)
    print("ranks %d, steps %d, spans %s" % (ranks, steps,
                                            sorted(names.items())))
    for problem in problems[:10]:
        print("PROBLEM", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
