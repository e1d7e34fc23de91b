#!/usr/bin/env python3
"""Put two TCP incast traces side by side and print where they first differ.

The traces are the lines `validation/ns3/incast_reference --trace` writes on stderr and `tensorpath incast --trace
FILE` writes: "tx|drop <ns> <sender> <segment>", "ack <ns> <sender> <segments acknowledged>", "state <ns> <sender>
<state>". Run both on the same configuration with the same deterministic start (--stagger, no jitter; the model with
--ns3-quirks --syn-bytes 56), e.g.

  build/validation/incast_reference --senders=4 --size=65536 --buffer=32768 --stagger=250 --trace 2> ns3.trace
  build/tensorpath incast -n 4 -s 65536 -b 32768 --stagger 250 --ns3-quirks --syn-bytes 56 -m tcp-incast \
      --trace model.trace
  validation/ns3/compare_incast_traces.py ns3.trace model.trace

For each sender and kind of event it compares the sequence of segments (not the times, which may differ by a
nanosecond of rounding); the earliest mismatch over all of them is where the two runs part, and the events around
it on both sides show why. Exit status 0 when the sequences agree, 1 when they differ, 2 on bad input.
"""
import signal
import sys
from collections import defaultdict

KINDS = ("tx", "drop", "ack", "state")


def load(path):
    events = defaultdict(list)
    everything = []
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                parts = line.split()
                if not parts or parts[0] not in KINDS:
                    continue  # ns-3 may print other lines on stderr
                if len(parts) != 4:
                    sys.exit(f"{path}:{number}: expected '<kind> <ns> <sender> <value>', got {line.strip()!r}")
                try:
                    t, sender = int(parts[1]), int(parts[2])
                except ValueError:
                    sys.exit(f"{path}:{number}: time and sender must be integers, got {line.strip()!r}")
                events[(parts[0], sender)].append((t, parts[3]))
                everything.append((t, parts[0], sender, parts[3]))
    except OSError as e:
        print(f"{path}: {e.strerror}", file=sys.stderr)
        sys.exit(2)
    everything.sort(key=lambda e: e[0])
    return events, everything


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    (a, all_a), (b, all_b) = load(sys.argv[1]), load(sys.argv[2])
    if not all_a or not all_b:
        print("one of the traces has no events", file=sys.stderr)
        return 2
    first = None
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key, []), b.get(key, [])
        for i in range(max(len(x), len(y))):
            if i >= len(x) or i >= len(y) or x[i][1] != y[i][1]:
                t = min(x[i][0] if i < len(x) else float("inf"), y[i][0] if i < len(y) else float("inf"))
                if first is None or t < first[0]:
                    first = (t, key, i)
                break
    total = sum(len(v) for v in a.values())
    if first is None:
        print(f"the traces agree: {total} events, the same segments in the same order for every sender and kind")
        return 0
    t, (kind, sender), i = first
    print(f"first difference at {t} ns: sender {sender}'s {kind} event #{i + 1}")
    for name, events in ((sys.argv[1], all_a), (sys.argv[2], all_b)):
        print(f"{name}:")
        for e in events:
            if t - 3000 <= e[0] <= t + 1500 and (e[2] == sender or e[1] == "drop"):
                print(f"  {e[1]:5} {e[0]:>14} sender {e[2]:>4} {e[3]}")
    return 1


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    sys.exit(main())
