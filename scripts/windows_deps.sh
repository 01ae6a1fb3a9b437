#!/usr/bin/env bash
# Builds the static libraries ferry.exe (Windows, MinGW-w64) links, for x86_64-w64-mingw32 with the
# -posix cross compilers, from Debian's own source packages, into
# ${XDG_CACHE_HOME:-~/.cache}/ferry/cross/x86_64-w64-mingw32/{include,lib,lib/pkgconfig}:
#   zstd     libzstd.a (single-threaded)
#   openssl  libcrypto.a only: libssh2's crypto backend (ed25519, ECDSA, RSA keys)
#   libssh2  libssh2.a, OpenSSL backend, no zlib
#   curl     libcurl.a, HTTP and HTTPS only, TLS by Windows' Schannel (Windows' own CA store);
#            its users define CURL_STATICLIB (libcurl.pc's Cflags say so)
# Each library is keyed by the source version of the host's -dev package (libzstd-dev, libssl-dev,
# libssh2-1-dev, libcurl4-openssl-dev) and a recipe number (RECIPE below) in its own stamp
# (<lib>.version), so a change rebuilds only that one; quiet when everything is up to date. The
# .pc files are relocatable (${pcfiledir}) and name in Libs.private what a static link needs. Sources come from the Debian mirror the machine's
# apt already uses, through the private apt configuration of scripts/lib/debian_source.sh (shared
# with scripts/cross_deps.sh, under the same lock).
set -euo pipefail
# shellcheck source=scripts/lib/debian_source.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian_source.sh"

TRIPLE=x86_64-w64-mingw32
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ferry/cross"
PREFIX="$CACHE/$TRIPLE"
DS_LABEL="ferry windows deps"
DS_CACHE="$CACHE"

NAMES=(zstd openssl libssh2 curl) # in build order: libssh2 compiles against openssl's headers
declare -A SOURCE=([zstd]=libzstd [openssl]=openssl [libssh2]=libssh2 [curl]=curl)
declare -A DEV=([zstd]=libzstd-dev [openssl]=libssl-dev [libssh2]=libssh2-1-dev [curl]=libcurl4-openssl-dev)
declare -A PRODUCTS=(
  [zstd]="lib/libzstd.a include/zstd.h lib/pkgconfig/libzstd.pc"
  [openssl]="lib/libcrypto.a include/openssl/opensslv.h lib/pkgconfig/libcrypto.pc"
  [libssh2]="lib/libssh2.a include/libssh2.h lib/pkgconfig/libssh2.pc"
  [curl]="lib/libcurl.a include/curl/curl.h lib/pkgconfig/libcurl.pc"
)
# What each static library needs from Windows at link time (its .pc's Libs.private; from its
# undefined symbols: advapi32, user32 and kernel32 are among MinGW's default libraries anyway).
declare -A WINLIBS=(
  [zstd]=""
  [openssl]="-lws2_32 -luser32 -ladvapi32"
  [libssh2]="-lws2_32"
  [curl]="-lws2_32 -lcrypt32 -ladvapi32 -lbcrypt"
)
# Bump a library's recipe when its build below changes, so that caches built the old way are redone.
declare -A RECIPE=([zstd]=1 [openssl]=1 [libssh2]=1 [curl]=1)

# The version each library is keyed on; without the -dev package, whatever is cached will do.
declare -A WANT
for lib in "${NAMES[@]}"; do
  WANT[$lib]="$(dpkg-query -W -f='${source:Version}' "${DEV[$lib]}" 2>/dev/null || true)"
done
cached() {
  local lib="$1" stamp="$PREFIX/$1.version" p
  [[ -f "$stamp" ]] || return 1
  for p in ${PRODUCTS[$lib]}; do [[ -f "$PREFIX/$p" ]] || return 1; done
  [[ "$(sed -n 's/^recipe=//p' "$stamp")" == "${RECIPE[$lib]}" ]] || return 1
  [[ -z "${WANT[$lib]}" ]] || [[ "$(sed -n 's/^key=//p' "$stamp")" == "${WANT[$lib]}" ]]
}
stale() {
  STALE=()
  for lib in "${NAMES[@]}"; do cached "$lib" || STALE+=("$lib"); done
  ((${#STALE[@]}))
}
stale || exit 0

for tool in gcc-posix g++-posix ar ranlib windres; do
  command -v "$TRIPLE-$tool" >/dev/null ||
    fail "$TRIPLE-$tool not found: install g++-mingw-w64-x86-64-posix (scripts/setup.sh does)"
done
for tool in cmake make perl dpkg-source; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/setup.sh installs it)"
done

mkdir -p "$CACHE"
# One builder at a time; the same lock as scripts/cross_deps.sh (the private apt configuration).
exec 9>"$CACHE/lock"
flock 9
stale || exit 0

WORK="$(mktemp -d "$CACHE/work.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
JOBS="$(nproc)"
# The host's compiler settings are not for this target, and no host .pc file may answer for it.
unset CC CXX CPP CFLAGS CXXFLAGS CPPFLAGS LDFLAGS LIBS
export PKG_CONFIG_LIBDIR="$PREFIX/lib/pkgconfig" PKG_CONFIG_PATH="" PKG_CONFIG_SYSROOT_DIR=""
mkdir -p "$PREFIX/include" "$PREFIX/lib/pkgconfig"

# A CMake toolchain for the CMake-built libraries (libssh2, curl): the -posix compilers, and
# nothing found outside the prefix.
cat >"$WORK/toolchain.cmake" <<EOF
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER $TRIPLE-gcc-posix)
set(CMAKE_CXX_COMPILER $TRIPLE-g++-posix)
set(CMAKE_RC_COMPILER $TRIPLE-windres)
set(CMAKE_AR $TRIPLE-ar CACHE FILEPATH "")
set(CMAKE_RANLIB $TRIPLE-ranlib CACHE FILEPATH "")
set(CMAKE_FIND_ROOT_PATH "$PREFIX")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
EOF
cmake_build() { # SRC BUILD TARGET CMAKE-ARGS...
  local src="$1" dir="$2" target="$3"
  shift 3
  cmake -S "$src" -B "$dir" -DCMAKE_TOOLCHAIN_FILE="$WORK/toolchain.cmake" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF "$@" >>"$DS_LOG" 2>&1 ||
    step_failed "configuring $(basename "$src") with CMake failed"
  cmake --build "$dir" -j"$JOBS" --target "$target" >>"$DS_LOG" 2>&1 ||
    step_failed "building $(basename "$src") failed"
}

# write_pc NAME DESCRIPTION VERSION LIBS LIBS.PRIVATE [CFLAGS-EXTRA [REQUIRES.PRIVATE]]
write_pc() {
  cat >"$PREFIX/lib/pkgconfig/$1.pc" <<EOF
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $1
Description: $2 (static, $TRIPLE, from Debian's source package)
Version: $3
Requires.private: ${7:-}
Libs: -L\${libdir} $4
Libs.private: $5
Cflags: -I\${includedir}${6:+ $6}
EOF
}

upstream() { # a Debian version's upstream part: 1:3.0.20-1~deb12u2 -> 3.0.20
  local v="${1#*:}"
  v="${v%-*}"
  echo "${v%%+*}"
}

build_zstd() { # lib/Makefile's libzstd.a: the static library alone, single-threaded
  make -C "$DS_SRC/lib" -j"$JOBS" libzstd.a CC="$TRIPLE-gcc-posix" AR="$TRIPLE-ar" >>"$DS_LOG" 2>&1 ||
    step_failed "building libzstd.a with $TRIPLE-gcc-posix failed"
  install -m 644 "$DS_SRC/lib/zstd.h" "$DS_SRC/lib/zdict.h" "$DS_SRC/lib/zstd_errors.h" "$PREFIX/include/"
  install -m 644 "$DS_SRC/lib/libzstd.a" "$PREFIX/lib/"
  write_pc libzstd "fast lossless compression algorithm library" "$(upstream "$1")" -lzstd ""
}

# libcrypto alone, static, with no config file loaded at start-up and none of the algorithms and
# formats SSH never uses (they only cost build time): libssh2 keeps RSA, DSA, ECDSA, ed25519,
# DH, AES, 3DES, Blowfish, CAST, RC4, MD5, RIPEMD-160, SHA-1/2. The mingw64 target's assembler
# code stays in. OPENSSLDIR keeps the target's default (C:/Program Files/Common Files/SSL); nothing
# is installed there and, with no-autoload-config, nothing is read from it.
OPENSSL_OPTIONS=(
  no-shared no-module no-legacy no-tests no-autoload-config no-engine no-ui-console
  no-aria no-camellia no-cmp no-cms no-comp no-ct no-ec2m no-gost no-idea no-md4 no-mdc2 no-ocb
  no-ocsp no-rc2 no-rc5 no-rfc3779 no-scrypt no-seed no-siphash no-siv no-sm2 no-sm3 no-sm4 no-srp
  no-ts no-whirlpool
)
build_openssl() {
  # CC without the prefix: Configure puts --cross-compile-prefix before CC, AR, RANLIB and RC.
  (cd "$DS_SRC" && CC=gcc-posix ./Configure mingw64 "${OPENSSL_OPTIONS[@]}" --cross-compile-prefix="$TRIPLE-") \
    >>"$DS_LOG" 2>&1 || step_failed "OpenSSL's Configure mingw64 failed"
  make -C "$DS_SRC" -j"$JOBS" build_generated >>"$DS_LOG" 2>&1 || step_failed "OpenSSL's generated headers failed"
  make -C "$DS_SRC" -j"$JOBS" libcrypto.a >>"$DS_LOG" 2>&1 || step_failed "building OpenSSL's libcrypto.a failed"
  rm -rf "$PREFIX/include/openssl"
  mkdir -p "$PREFIX/include/openssl"
  install -m 644 "$DS_SRC"/include/openssl/*.h "$PREFIX/include/openssl/"
  install -m 644 "$DS_SRC/libcrypto.a" "$PREFIX/lib/"
  write_pc libcrypto "OpenSSL cryptography library" "$(upstream "$1")" -lcrypto "${WINLIBS[openssl]}"
}

build_libssh2() {
  # FindOpenSSL wants libssl on MinGW too (SSL_EAY), which libssh2 does not use: it is pointed at
  # libcrypto. EVP_aes_128_ctr's link check would fail for want of libcrypto's Windows libraries;
  # OpenSSL 3 has it.
  cmake_build "$DS_SRC" "$WORK/build-libssh2" libssh2 \
    -DCRYPTO_BACKEND=OpenSSL -DENABLE_ZLIB_COMPRESSION=OFF -DBUILD_EXAMPLES=OFF \
    -DOPENSSL_ROOT_DIR="$PREFIX" -DOPENSSL_INCLUDE_DIR="$PREFIX/include" \
    -DLIB_EAY="$PREFIX/lib/libcrypto.a" -DSSL_EAY="$PREFIX/lib/libcrypto.a" -DHAVE_EVP_AES_128_CTR=ON \
    -DCMAKE_EXPORT_NO_PACKAGE_REGISTRY=ON
  install -m 644 "$DS_SRC"/include/libssh2.h "$DS_SRC"/include/libssh2_publickey.h \
    "$DS_SRC"/include/libssh2_sftp.h "$PREFIX/include/"
  install -m 644 "$WORK/build-libssh2/src/libssh2.a" "$PREFIX/lib/"
  write_pc libssh2 "library for SSH-based communication" "$(upstream "$1")" -lssh2 "${WINLIBS[libssh2]}" "" libcrypto
}

build_curl() {
  # HTTP (and HTTPS by Schannel) only; every optional dependency off.
  cmake_build "$DS_SRC" "$WORK/build-curl" libcurl \
    -DBUILD_CURL_EXE=OFF -DENABLE_MANUAL=OFF -DCURL_ENABLE_EXPORT_TARGET=OFF -DPICKY_COMPILER=OFF \
    -DCURL_USE_SCHANNEL=ON -DCURL_USE_OPENSSL=OFF -DHTTP_ONLY=ON -DCURL_DISABLE_LDAP=ON -DCURL_DISABLE_LDAPS=ON \
    -DCURL_USE_LIBPSL=OFF -DCURL_USE_LIBSSH2=OFF -DCURL_ZLIB=OFF -DCURL_BROTLI=OFF -DCURL_ZSTD=OFF \
    -DUSE_LIBIDN2=OFF -DUSE_NGHTTP2=OFF
  rm -rf "$PREFIX/include/curl"
  mkdir -p "$PREFIX/include/curl"
  install -m 644 "$DS_SRC"/include/curl/*.h "$PREFIX/include/curl/"
  install -m 644 "$WORK/build-curl/lib/libcurl.a" "$PREFIX/lib/"
  write_pc libcurl "library for transferring data with URLs (HTTP/HTTPS, Schannel)" "$(upstream "$1")" \
    -lcurl "${WINLIBS[curl]}" -DCURL_STATICLIB
}

note "building ${STALE[*]} for $TRIPLE from Debian's source packages, into $PREFIX (logs: $CACHE/$TRIPLE-<lib>.log)"
for lib in "${STALE[@]}"; do
  started=$SECONDS
  DS_LOG="$CACHE/$TRIPLE-$lib.log"
  : >"$DS_LOG"
  rm -f "$PREFIX/$lib.version"
  debian_source_fetch "${SOURCE[$lib]}" "${WANT[$lib]}" "$WORK/src-$lib"
  "build_$lib" "$DS_VERSION"
  # Written last: a build cut short leaves no stamp and is redone.
  printf 'key=%s\nrecipe=%s\nsource=%s %s\n' "${WANT[$lib]:-$DS_VERSION}" "${RECIPE[$lib]}" "${SOURCE[$lib]}" "$DS_VERSION" \
    >"$PREFIX/$lib.version"
  rm -rf "$WORK/src-$lib" "$WORK/build-$lib"
  note "$lib ${DS_VERSION} built in $((SECONDS - started)) s"
done
