#!/usr/bin/env bash
# Loopback A/B: pull and push of one new 1 GiB file with two (or more) ferry builds and scp,
# alternated round by round against one sshd, so a change is measured against the build before it
# and against scp in the same minutes (single bench_wan runs on a shared 2-core VM vary by 20 %).
# Prints one line per transfer: round, build, op, wall seconds, busy core-seconds of the whole
# machine (/proc/stat: user+nice+system+irq+softirq), and DIFFERS if the copy is not byte-exact.
#   bench/wan/loopback_ab.sh ROUNDS NAME=BUILD_DIR [NAME=BUILD_DIR ...]
#   e.g. bench/wan/loopback_ab.sh 3 old=/work/old/build new=build
# FERRY_AB_MB (1024), FERRY_AB_OPS ("pull push"), FERRY_AB_DIR (/dev/shm/ferry-ab), FERRY_AB_PORT (2299).
set -euo pipefail
rounds="${1:?usage: loopback_ab.sh ROUNDS NAME=BUILD_DIR...}"
shift
W="${FERRY_AB_DIR:-/dev/shm/ferry-ab}"
# A trust store of its own that trusts the bench's tree, for builds that ask (docs/security.md).
export XDG_CONFIG_HOME="$W.config"
mkdir -p "$XDG_CONFIG_HOME/ferry/trust"
printf '{"folders": ["%s"]}\n' "$W" > "$XDG_CONFIG_HOME/ferry/trust/folders.json"
PORT="${FERRY_AB_PORT:-2299}"
rm -rf "$W" && mkdir -p "$W/keys" "$W/home" "$W/remote/pull" "$W/remote/push"
trap '[[ -f $W/sshd.pid ]] && kill "$(cat "$W/sshd.pid")" 2>/dev/null; rm -rf "$W"' EXIT

ssh-keygen -q -t ed25519 -N '' -f "$W/keys/host"
ssh-keygen -q -t ed25519 -N '' -f "$W/keys/user"
cp "$W/keys/user.pub" "$W/keys/authorized_keys"
cat > "$W/sshd_config" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $W/keys/host
PidFile $W/sshd.pid
AuthorizedKeysFile $W/keys/authorized_keys
PasswordAuthentication no
StrictModes no
UsePAM no
SetEnv HOME=$W/home
Subsystem sftp internal-sftp
EOF
echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$W/keys/host.pub")" > "$W/known_hosts"
cat > "$W/ssh_config" <<EOF
Host abhost
  HostName 127.0.0.1
  Port $PORT
  User $(id -un)
  IdentityFile $W/keys/user
  IdentitiesOnly yes
  UserKnownHostsFile $W/known_hosts
  GlobalKnownHostsFile none
EOF
mkdir -p /run/sshd
/usr/sbin/sshd -f "$W/sshd_config"
for _ in $(seq 50); do ssh -F "$W/ssh_config" -o BatchMode=yes abhost true 2>/dev/null && break; sleep 0.1; done
head -c "$(( ${FERRY_AB_MB:-1024} << 20 ))" /dev/urandom > "$W/src.bin"
ln "$W/src.bin" "$W/remote/pull/big.bin"

busy() {  # CMD...: "wall busy" of CMD
  local a b t0 t1
  read -r _ u n s _ _ irq sirq _ < /proc/stat; a=$((u + n + s + irq + sirq))
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1 || echo "FAILED: $*" >&2
  t1=$(date +%s%N)
  read -r _ u n s _ _ irq sirq _ < /proc/stat; b=$((u + n + s + irq + sirq))
  awk -v w=$((t1 - t0)) -v c=$((b - a)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f %.2f", w / 1e9, c / hz }'
}

project() {  # DIR REMOTE
  rm -rf "$1" && mkdir -p "$1"
  printf '{"name":"ab","host":"abhost","sshConfig":"%s","mappings":[{"local":".","remote":"%s"}]}\n' "$W/ssh_config" "$2" > "$1/ferry.json"
}

for r in $(seq "$rounds"); do
  for nb in "$@" scp=; do
    name="${nb%%=*}" b="${nb#*=}"
    [[ -z "$b" || "$b" = /* ]] || b="$PWD/$b"
    for op in ${FERRY_AB_OPS:-pull push}; do
      rm -rf "$W/remote/push" "$W/p" && mkdir -p "$W/remote/push" "$W/p"
      if [[ $op == pull ]]; then
        out="$W/p/big.bin"
        if [[ $name == scp ]]; then res=$(busy scp -q -F "$W/ssh_config" "abhost:$W/remote/pull/big.bin" "$W/p/")
        else project "$W/p" "$W/remote/pull"; res=$(FERRY_AGENT="$b/bin/ferry-agent" busy "$b/bin/ferry" --project "$W/p" pull --json big.bin); fi
      else
        out="$W/remote/push/big.bin"
        if [[ $name == scp ]]; then res=$(busy scp -q -F "$W/ssh_config" "$W/src.bin" "abhost:$out")
        else
          project "$W/p" "$W/remote/push"; ln "$W/src.bin" "$W/p/big.bin"
          res=$(FERRY_AGENT="$b/bin/ferry-agent" busy "$b/bin/ferry" --project "$W/p" sync --yes --json)
        fi
      fi
      cmp -s "$out" "$W/src.bin" || res="$res DIFFERS"
      echo "$r $name $op $res"
    done
  done
done
