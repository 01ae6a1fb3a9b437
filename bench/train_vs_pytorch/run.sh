#!/usr/bin/env bash
# ferry-train vs Python PyTorch (the same LibTorch underneath) on CPU: samples/s of the benchmark MLP
# (784-1024-1024-10, batch 256, AdamW, fp32) and the small CNN (1x28x28, batch 128), same shapes,
# optimizer, in-memory data and thread count. Prints a markdown table with the ratios.
#   FERRY_TRAIN=path/to/ferry-train PYTHON=/usr/bin/python3 THREADS=2 STEPS=100 bench/train_vs_pytorch/run.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
train=${FERRY_TRAIN:-$root/build-traincore/remote-runtime/train/ferry-train}
py=${PYTHON:-/usr/bin/python3}
threads=${THREADS:-$(nproc)}
steps=${STEPS:-100}
device=${DEVICE:-cpu}
precision=${PRECISION:-fp32}
warmup=20
rounds=${ROUNDS:-2}
# Debian's OpenBLAS (pthreads) keeps its own pool that set_num_threads does not reach: pin it for both sides.
export OPENBLAS_NUM_THREADS=$threads
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -x "$train" ] || { echo "no ferry-train at $train (set FERRY_TRAIN)" >&2; exit 2; }

# ferry-train's samples/s: mean over the step windows after the first (warm-up) one.
ferry_rate() {  # model batch
  local model=$1 batch=$2 cfg=$work/$1.json
  "$py" - "$model" "$batch" "$cfg" "$threads" "$steps" "$warmup" "$device" "$precision" "$work/$1-out" <<'PY'
import json, sys
model, batch, cfg, threads, steps, warmup, device, precision, out = sys.argv[1:]
batch, threads, steps, warmup = int(batch), int(threads), int(steps), int(warmup)
m = {"mlp": {"kind": "mlp", "input_dim": 784, "hidden": [1024, 1024], "output_dim": 10},
     "cnn": {"kind": "cnn", "in_channels": 1, "image_size": 28, "width": 32, "blocks": 2, "output_dim": 10}}[model]
json.dump({"model": m,
           "data": {"source": "synthetic", "task": "classification", "samples": 16384, "workers": 0, "eval_fraction": 0.0},
           "optimizer": {"kind": "adamw", "lr": 0.001, "weight_decay": 0.01},
           "batch_size": batch, "max_steps": warmup + steps, "log_every_steps": warmup, "precision": precision,
           "device": device, "threads": threads, "output_dir": out}, open(cfg, "w"))
PY
  "$train" "$cfg" > "$work/$model.events"
  "$py" - "$work/$model.events" "$warmup" <<'PY'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"event":"step"' in l]
windows = [s for s in steps if s["step"] > int(sys.argv[2])]
# the windows are equal-length except possibly the last: weight by time
total_samples = sum(s["samples_per_s"] * s["step_time_s"] * 1 for s in windows)
total_time = sum(s["step_time_s"] for s in windows)
print(total_samples / total_time)
PY
}

peer_rate() {  # model batch
  "$py" "$root/bench/train_vs_pytorch/peer.py" --model "$1" --batch "$2" --steps "$steps" --warmup "$warmup" \
    --threads "$threads" --device "$device" --precision "$precision" | "$py" -c 'import json,sys;print(json.load(sys.stdin)["samples_per_s"])'
}

echo "| model | batch | ferry-train samples/s | PyTorch samples/s | ratio |"
echo "|---|---|---|---|---|"
for spec in "mlp 256" "cnn 128"; do
  set -- $spec
  # Alternate the two (A B A B) and keep each side's best, so drift in machine load hits both alike.
  f=0; p=0
  for round in $(seq "$rounds"); do
    f=$("$py" -c "print(max($f, $(ferry_rate "$1" "$2")))")
    p=$("$py" -c "print(max($p, $(peer_rate "$1" "$2")))")
  done
  "$py" -c "import sys; f,p=float('$f'),float('$p'); print(f'| $1 | $2 | {f:.0f} | {p:.0f} | {f/p:.2f}x |')"
done
echo
echo "best of $rounds alternating runs each; threads=$threads steps=$steps (after $warmup warm-up) device=$device precision=$precision; $("$train" --version); torch $("$py" -c 'import torch;print(torch.__version__)')"
