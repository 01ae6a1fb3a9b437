#!/usr/bin/env python3
# A stand-in nvidia-smi for the agent's GPU tests (no GPU here): answers exactly the query-mode
# calls the agent makes (gpu_query.cpp) with two fixed devices, and refuses any other call so a
# changed query fails the tests. FAKE_GPU_PID names device 0's first process;
# FAKE_NVIDIA_SMI_FAIL makes it fail the way a machine without a working driver does.
import os
import sys

GPU_FIELDS = ("--query-gpu=index,uuid,name,utilization.gpu,memory.used,memory.total,power.draw,"
              "temperature.gpu,clocks.sm,clocks.mem")
FORMAT = "--format=csv,noheader,nounits"

if os.environ.get("FAKE_NVIDIA_SMI_FAIL"):
    print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    sys.exit(9)
args = sys.argv[1:]
if args == [GPU_FIELDS, FORMAT]:
    print("0, GPU-fake-0, Fake H200, 87, 19456, 144384, 412.34, 64, 1980, 3201")
    print("1, GPU-fake-1, Fake L4, 12, 20480, 144384, [N/A], 64, 2040, 3201")
elif args == ["--query-compute-apps=gpu_uuid,pid,used_memory", FORMAT]:
    print(f"GPU-fake-0, {os.environ.get('FAKE_GPU_PID', '4242')}, 3072")
    print("GPU-fake-0, 1, [N/A]")
elif args == ["--query-gpu=utilization.gpu", FORMAT]:
    print("87\n12")
else:
    print("fake nvidia-smi: unexpected arguments " + " ".join(args), file=sys.stderr)
    sys.exit(2)
