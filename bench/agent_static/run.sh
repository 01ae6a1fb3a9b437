#!/usr/bin/env bash
# The static agent against the dynamically linked one it replaced (issue #35), same machine, same
# run, alternated: file size, start-up (`--version`, and a full start to the FERRY-AGENT line on
# a root), and a no-op `ferry sync` of a 2000-file tree on the local host (which starts the agent).
#   bench/agent_static/run.sh [RUNS]   (default 100; FERRY_BUILD_DIR picks the build, default build/;
#   FERRY_DYNAMIC_REV the commit whose dynamic agent is the baseline, default a9c0759)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
REV="${FERRY_DYNAMIC_REV:-a9c0759}"
RUNS="${1:-100}"
export XDG_CONFIG_HOME="$BUILD/test-config"   # its trust store trusts /dev/shm (docs/security.md)
cmake --build "$BUILD" --target ferry ferry-agent >&2

# The baseline: that commit's agent, built once from its own sources (torch and tests off).
OLD="$BUILD/bench-agent-dynamic"
# Laid out as a checkout with build/ inside, so ccache (when the build uses it) finds the objects
# the same sources compiled to before.
if [[ ! -x "$OLD/src/build/bin/ferry-agent" || "$(cat "$OLD/rev" 2>/dev/null)" != "$REV" ]]; then
  rm -rf "$OLD" && mkdir -p "$OLD/src"
  git -C "$ROOT" archive "$REV" | tar -x -C "$OLD/src"
  launcher=$(sed -n 's/^CMAKE_CXX_COMPILER_LAUNCHER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
  cmake -S "$OLD/src" -B "$OLD/src/build" -DCMAKE_BUILD_TYPE=Release -DFERRY_WITH_TORCH=OFF -DFERRY_TESTS=OFF \
    ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher} >&2
  CCACHE_BASEDIR="$OLD/src" cmake --build "$OLD/src/build" -j"$(nproc)" --target ferry-agent >&2
  echo "$REV" > "$OLD/rev"
fi
DYN="$OLD/src/build/bin/ferry-agent"
STATIC="$BUILD/bin/ferry-agent"
file -b "$DYN" "$STATIC" | cut -c1-60 >&2

WORK="$(mktemp -d /dev/shm/ferry-agent-bench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
python3 - "$RUNS" "$DYN" "$STATIC" "$BUILD/bin/ferry" "$WORK" <<'PY'
import os, shutil, statistics, subprocess, sys, time
runs, dyn, static, ferry, work = int(sys.argv[1]), *sys.argv[2:]
agents = {"dynamic": dyn, "static": static}

def stripped_size(path):
    out = os.path.join(work, "stripped")
    subprocess.run(["strip", "-o", out, path], check=True)
    return os.path.getsize(out)

def timed(cmd, env=None, cwd=None):
    t = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t) * 1000

def to_first_line(cmd, env=None, cwd=None):
    """Start to the FERRY-AGENT line (what a connect waits for); the exit is not timed."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = p.stdout.readline()
    ms = (time.perf_counter() - t) * 1000
    p.stdin.close()
    p.wait()
    assert line.startswith(b"FERRY-AGENT"), line
    return ms

def alternate(make_cmd, n, measure=None):
    samples = {k: [] for k in agents}
    for i in range(n):
        for k in (list(agents) if i % 2 == 0 else list(reversed(agents))):
            cmd, env, cwd = make_cmd(k)
            samples[k].append((measure or timed)(cmd, env, cwd))
    return {k: statistics.median(v) for k, v in samples.items()}

# A 2000-file project on the local host, one sandbox per agent (its own XDG_CACHE_HOME).
proj = os.path.join(work, "proj")
for d in range(20):
    os.makedirs(os.path.join(proj, f"pkg{d}"), exist_ok=True)
    for f in range(100):
        with open(os.path.join(proj, f"pkg{d}", f"m{f}.py"), "w") as out:
            out.write(f"# module {d}/{f}\n" + "x = 1\n" * 40)
with open(os.path.join(proj, "ferry.json"), "w") as out:
    out.write('{"name": "agentbench", "host": "local", "mappings": [{"local": ".", "remote": "~/proj"}]}\n')
def sync_env(k):
    env = dict(os.environ, FERRY_AGENT=agents[k], XDG_CACHE_HOME=os.path.join(work, "cache-" + k))
    return env
for k in agents:
    timed([ferry, "sync"], sync_env(k), proj)  # the first, full sync

root = os.path.join(work, "root")
os.makedirs(root, exist_ok=True)
version = alternate(lambda k: ([agents[k], "--version"], None, None), runs)
start = alternate(lambda k: ([agents[k], "--root", root], None, None), runs, to_first_line)
noop = alternate(lambda k: ([ferry, "sync"], sync_env(k), proj), runs)

print("| measurement | dynamic (before) | static (now) | static/dynamic |")
print("|---|---|---|---|")
sd, ss = os.path.getsize(dyn), os.path.getsize(static)
print(f"| file size | {sd/1e6:.2f} MB ({stripped_size(dyn)/1e6:.2f} MB stripped) | {ss/1e6:.2f} MB (stripped) | {ss/sd:.2f}x |")
for name, m in (("`--version`, median of %d" % runs, version), ("start to the FERRY-AGENT line, median of %d" % runs, start),
                ("no-op `ferry sync`, 2000 files, local host, median of %d" % runs, noop)):
    print(f"| {name} | {m['dynamic']:.1f} ms | {m['static']:.1f} ms | {m['static']/m['dynamic']:.2f}x |")
PY
