"""Writes a few TensorBoard scalars to runs/demo, so the recipe has something to show.

Needs torch (torch.utils.tensorboard) and the tensorboard package on the box.
"""
import math
import sys

try:
    from torch.utils.tensorboard import SummaryWriter
except ImportError as error:  # tell the user what is missing rather than a traceback
    sys.exit(f"write_scalars.py needs torch and tensorboard on the box: {error}")

writer = SummaryWriter(log_dir="runs/demo")
for step in range(200):
    writer.add_scalar("loss", math.exp(-step / 50) + 0.05 * math.sin(step), step)
    writer.add_scalar("lr", 1e-3 * 0.5 * (1 + math.cos(math.pi * step / 200)), step)
writer.close()
print("wrote runs/demo")
