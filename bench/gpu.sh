#!/usr/bin/env bash
# ferry-train on an NVIDIA GPU box that has only CMake, a compiler and a CUDA PyTorch (`python3`):
# build, CUDA smoke test, MLP/CNN throughput vs Python PyTorch (fp32 and bf16), auto batch size vs the
# true maximum found with real steps, and transformer bf16 throughput as a fraction of peak.
#   FERRY_JSON_INCLUDE=/dir/with/nlohmann bench/gpu.sh [PEAK_BF16_FLOPS]   (default 989e12: H100/H200 SXM dense)
# Writes $OUT/gpu.md when OUT is set, else prints the report. Budget: < 8 minutes on an H200.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
peak=${1:-989e12}
py=${PYTHON:-python3}
json_inc=${FERRY_JSON_INCLUDE:-$root/.gpu-deps/include}
jobs=${JOBS:-16}
build=${BUILD_DIR:-$root/build-gpu}
work=$(mktemp -d)
report=${OUT:+$OUT/gpu.md}
report=${report:-$work/report.md}
: > "$report"
trap 'rm -rf "$work"' EXIT
say() { echo "$*" | tee -a "$report" >&2; }
section() { say ""; say "## $*"; say ""; }

say "# ferry-train on GPU"
say ""
say "- date: $(date -u +%Y-%m-%dT%H:%MZ), host: $(hostname)"
say "- gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
say "- torch: $($py -c 'import torch;print(torch.__version__, "cuda", torch.version.cuda)' 2>&1)"
say "- compiler: $(c++ --version | head -1); cmake: $(cmake --version | head -1)"

section "Build"
torch_prefix=$($py -c 'import torch;print(torch.utils.cmake_prefix_path)')
t0=$(date +%s)
if ! timeout 300 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFERRY_TRAIN_ONLY=ON -DFERRY_TESTS=OFF \
      -DFERRY_JSON_INCLUDE="$json_inc" -DCMAKE_PREFIX_PATH="$torch_prefix" -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
      > "$work/configure.log" 2>&1; then
  say "configure failed:"; say '```'; tail -30 "$work/configure.log" | tee -a "$report" >&2; say '```'
  exit 1
fi
if ! timeout 400 cmake --build "$build" -j"$jobs" --target ferry-train > "$work/build.log" 2>&1; then
  say "build failed:"; say '```'; grep -E -A4 "error:|Error " "$work/build.log" | head -60 | tee -a "$report" >&2; say '```'
  exit 1
fi
train=$build/remote-runtime/train/ferry-train
say "built in $(( $(date +%s) - t0 )) s: $($train --version)"

# PHASES picks sections (default all): smoke dist ratios auto mfu.
phases=" ${PHASES:-smoke dist ratios auto mfu} "
want() { [[ "$phases" == *" $1 "* ]]; }

want dist && {
section "torch.distributed on CUDA (c10d backends of this build; 2 ranks with NCCL where the box has 2 GPUs)"
version=$($train --version)
say "ferry-train: $version"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [[ "$version" != *nccl* ]]; then
  say "no NCCL in this build: nccl.h was not found (the nvidia-nccl wheel next to torch, or FERRY_NCCL_INCLUDE_DIR); see $work/build.log"
elif [ "${ngpu:-0}" -lt 2 ]; then
  say "NCCL built in; a 2-rank job needs 2 GPUs and this box has ${ngpu:-0}"
elif timeout 120 "$train" "$root/samples/train/quick.json" --device cuda --nproc 2 --output "$work/dist2" > "$work/dist2.events" 2> "$work/dist2.err"; then
  say "2 ranks: ok, $(grep '"event":"start"' "$work/dist2.events" | $py -c 'import json,sys;e=json.load(sys.stdin);print("world_size", e.get("world_size"), "device", e["device"])')"
else
  say "2-rank job FAILED (rc=$?):"; say '```'; tail -5 "$work/dist2.events" "$work/dist2.err" | tee -a "$report" >&2; say '```'
fi
}

want smoke && {
section "CUDA smoke test (samples/train/quick.json on cuda:0)"
if timeout 60 "$train" "$root/samples/train/quick.json" --device cuda:0 --output "$work/quick" > "$work/quick.events" 2> "$work/quick.err"; then
  say "ok: $(grep '"event":"start"' "$work/quick.events" | $py -c 'import json,sys;e=json.load(sys.stdin);print("device", e["device"], "backend", e["backend"])'), $(grep '"event":"done"' "$work/quick.events" | $py -c 'import json,sys;e=json.load(sys.stdin);print("steps", e["step"], "final loss", round(e["final_loss"],4), "eval loss", round(e.get("eval_loss",float("nan")),4))')"
  gpu_fields=$(grep -c '"gpus"' "$work/quick.events")
  say "step events with NVML gpu fields: $gpu_fields"
else
  say "FAILED (rc=$?):"; say '```'; tail -5 "$work/quick.events" "$work/quick.err" | tee -a "$report" >&2; say '```'
fi

}

want ratios && {
section "MLP and CNN vs Python PyTorch on cuda:0"
for prec in fp32 bf16; do
  say "precision $prec:"
  say ""
  DEVICE=cuda:0 PRECISION=$prec STEPS=${GPU_STEPS:-100} ROUNDS=${GPU_ROUNDS:-1} THREADS=4 FERRY_TRAIN=$train PYTHON=$py \
    timeout 120 "$root/bench/train_vs_pytorch/run.sh" 2>&1 | tee -a "$report" >&2 || say "(run.sh failed or timed out)"
done

}

want auto && {
section "Auto batch size (transformer) vs the true maximum"
# Small enough that the true maximum is found in seconds, big enough to be memory-bound.
cat > "$work/auto.json" <<JSON
{"model": {"kind": "transformer", "vocab_size": 256, "context": 256, "d_model": 512, "layers": 4, "heads": 8},
 "data": {"source": "synthetic", "task": "language_model", "samples": 131072, "workers": 2},
 "optimizer": {"kind": "adamw", "lr": 0.0003},
 "batch_size": "auto", "auto_batch": {"max": 1048576, "memory_fraction": 0.95},
 "max_steps": 2, "precision": "bf16", "device": "cuda:0", "log_every_steps": 1, "output_dir": "$work/auto"}
JSON
t0=$(date +%s)
if timeout 150 "$train" "$work/auto.json" > "$work/auto.events" 2> "$work/auto.err"; then :; fi
auto=$(grep '"event":"auto_batch"' "$work/auto.events" | $py -c 'import json,sys;e=json.load(sys.stdin)["result"];print(e["batch_size"], len(e["probes"]), e["budget_bytes"])' 2>/dev/null)
if [ -z "$auto" ]; then
  say "auto batch failed:"; say '```'; tail -5 "$work/auto.events" "$work/auto.err" | tee -a "$report" >&2; say '```'
else
  set -- $auto
  auto_batch=$1; probes=$2; budget=$3
  say "ferry-train auto batch: $auto_batch ($probes probes, budget $budget bytes = 0.95 x free, $(( $(date +%s) - t0 )) s incl. 2 steps)"
  # The true maximum of ferry-train itself: real runs (2 optimizer steps each) at fixed batch sizes,
  # growing 10% from the chosen batch until one runs out of memory, then bisecting to a multiple of 8.
  fits() {
    sed -e 's/"batch_size": "auto", "auto_batch": {[^}]*}/"batch_size": '"$1"'/' "$work/auto.json" > "$work/fixed.json"
    timeout 60 "$train" "$work/fixed.json" --output "$work/fixed" > "$work/fixed.events" 2> "$work/fixed.err"
  }
  search_start=$(date +%s)
  lo=$auto_batch; hi=$auto_batch
  if fits "$lo"; then
    while :; do
      hi=$(( (hi * 11 / 10) / 8 * 8 + 8 ))
      fits "$hi" || break
      lo=$hi
      (( $(date +%s) - search_start > 150 )) && break
    done
  else
    say "(the chosen batch $auto_batch itself failed with fixed-size runs: $(tail -c 300 "$work/fixed.events"))"
    lo=0
  fi
  while (( hi - lo > 8 )) && (( $(date +%s) - search_start < 200 )); do
    mid=$(( (lo + hi) / 16 * 8 ))
    if fits "$mid"; then lo=$mid; else hi=$mid; fi
  done
  true_max=$lo
  if [ "$true_max" -gt 0 ]; then
    say "true maximum of ferry-train (fixed-batch runs of 2 steps, grow 10% then bisect to 8; $(( $(date +%s) - search_start )) s): $true_max"
    say "auto / true max: $($py -c "print(round($auto_batch/$true_max, 3))")"
  else
    say "true-maximum search failed or timed out"
  fi
fi

}

want mfu && {
section "Transformer bf16 throughput vs peak ($peak FLOP/s)"
cat > "$work/mfu.json" <<JSON
{"model": {"kind": "transformer", "vocab_size": 32768, "context": 1024, "d_model": 1024, "layers": 12, "heads": 16},
 "data": {"source": "synthetic", "task": "language_model", "samples": 2048, "workers": 4},
 "optimizer": {"kind": "adamw", "lr": 0.0003},
 "batch_size": 16, "max_steps": 40, "precision": "bf16", "device": "cuda:0", "log_every_steps": 10, "output_dir": "$work/mfu"}
JSON
if timeout 180 "$train" "$work/mfu.json" > "$work/mfu.events" 2> "$work/mfu.err"; then
  $py - "$work/mfu.events" "$peak" <<'PY' | tee -a "$report" >&2
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
start = next(e for e in ev if e["event"] == "start")
steps = [e for e in ev if e["event"] == "step" and e["step"] > 10]
P = start["parameters"]; m = start["config"]["model"]; T = m["context"]; L = m["layers"]; d = m["d_model"]
tok_s = sum(e["samples_per_s"] for e in steps) / len(steps) * T
flops_per_token = 6 * P + 12 * L * d * T   # dense matmuls fwd+bwd, plus attention scores and values
achieved = flops_per_token * tok_s
print(f"params {P/1e6:.1f} M, context {T}, batch {start['batch_size']}: {tok_s:,.0f} tokens/s, "
      f"{achieved/1e12:.1f} TFLOP/s = {100*achieved/float(sys.argv[2]):.1f}% of peak bf16")
PY
else
  say "transformer run failed:"; say '```'; tail -5 "$work/mfu.events" "$work/mfu.err" | tee -a "$report" >&2; say '```'
fi
}

[ -n "${OUT:-}" ] || cat "$report"
