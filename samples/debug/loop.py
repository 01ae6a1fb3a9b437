"""A small script to step through with a debugger: a loop, a few locals, an exit status.

Run it under ferry's debugger support:  ferry debug -- debug/loop.py 5
(then attach VS Code with the configuration ferry prints), or plainly: python3 debug/loop.py 5
"""
import sys


def accumulate(n):
    total = 0
    for i in range(n):
        square = i * i
        total += square  # ferry-test: breakpoint
    return total


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 5
    result = accumulate(n)
    print(f"sum of squares below {n}: {result}", flush=True)
    return 0 if result == sum(i * i for i in range(n)) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
