"""ferry's first remote run: prints to stdout and stderr and says what this box has for PyTorch.

`ferry run -- hello_gpu.py` runs it on the project's host with the configured interpreter;
`ferry demo` runs it on the local host.
"""
import os
import platform
import sys

print(f"hello from {platform.node()} ({platform.system()} {platform.machine()}), python {platform.python_version()}")
print(f"cwd {os.getcwd()}")
print("this line goes to stderr, kept apart from stdout", file=sys.stderr)
try:
    import torch
except ImportError:
    print("torch: not installed for this interpreter (" + sys.executable + ")")
else:
    print(f"torch {torch.__version__}")
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            print(f"cuda:{i} {p.name}, {p.total_memory / 2**30:.1f} GiB")
        x = torch.randn(1024, 1024, device="cuda")
        print(f"matmul on the GPU: checksum {float((x @ x).sum()):.3f}")
    else:
        print("CUDA: not available (CPU only)")
sys.exit(0)
