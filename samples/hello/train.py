"""The smallest remote run: prints where it runs and fits a line with plain Python.

ferry syncs this folder to the host in ../ferry.json and runs it there with the configured
interpreter; on the `local` host that is a sandbox under ~/.cache/ferry/local/.
"""
import os
import platform
import sys


def main() -> int:
    print(f"hello from {platform.node()} ({platform.system()} {platform.machine()}), "
          f"Python {platform.python_version()}")
    print(f"cwd: {os.getcwd()}")
    # Fit y = 3x + 1 by gradient descent, so there is a loss to watch.
    xs = [i / 10 for i in range(20)]
    ys = [3 * x + 1 for x in xs]
    w, b, lr = 0.0, 0.0, 0.1
    for step in range(1, 201):
        gw = sum(2 * (w * x + b - y) * x for x, y in zip(xs, ys)) / len(xs)
        gb = sum(2 * (w * x + b - y) for x, y in zip(xs, ys)) / len(xs)
        w, b = w - lr * gw, b - lr * gb
        if step % 50 == 0:
            loss = sum((w * x + b - y) ** 2 for x, y in zip(xs, ys)) / len(xs)
            print(f"step {step:3d}  loss {loss:.6f}  w {w:.3f}  b {b:.3f}", flush=True)
    return 0 if abs(w - 3) < 0.05 and abs(b - 1) < 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
