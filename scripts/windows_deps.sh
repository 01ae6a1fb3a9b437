#!/usr/bin/env bash
# Builds the static libraries ferry.exe (Windows, MinGW-w64) links, for x86_64-w64-mingw32 with the
# -posix cross compilers, from Debian's own source packages, into
# ${XDG_CACHE_HOME:-~/.cache}/ferry/cross/x86_64-w64-mingw32/{include,lib,lib/pkgconfig}:
#   zstd     libzstd.a (single-threaded)
#   openssl  libcrypto.a only: libssh2's crypto backend (ed25519, ECDSA, RSA keys)
#   libssh2  libssh2.a, OpenSSL backend, no zlib
#   curl     libcurl.a, HTTP and HTTPS only, TLS by Windows' Schannel (Windows' own CA store);
#            its users define CURL_STATICLIB (libcurl.pc's Cflags say so)
#   boost_filesystem  libboost_filesystem.a (Boost.Process needs its compiled part), from the
#            boost1.NN source package behind the host's libboost-filesystem-dev, compiled against
#            the host's own Boost headers (users define BOOST_FILESYSTEM_STATIC_LINK; no .pc file)
# Each library is keyed by the source version of the host's -dev package (libzstd-dev, libssl-dev,
# libssh2-1-dev, libcurl4-openssl-dev, libboost-filesystem1.NN-dev) and a recipe number (RECIPE below) in its own stamp
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

NAMES=(zstd openssl libssh2 curl boost_filesystem) # in build order: libssh2 compiles against openssl's headers
declare -A SOURCE=([zstd]=libzstd [openssl]=openssl [libssh2]=libssh2 [curl]=curl)
declare -A DEV=([zstd]=libzstd-dev [openssl]=libssl-dev [libssh2]=libssh2-1-dev [curl]=libcurl4-openssl-dev)
# Boost.Filesystem must match the headers in /usr/include/boost: Debian's boost-defaults makes
# libboost-filesystem-dev depend on libboost-filesystem1.NN-dev, whose source package (boost1.NN)
# and version are what is built (1.74 when the host has none: whatever is cached will do).
DEV[boost_filesystem]="$(dpkg-query -W -f='${Depends}' libboost-filesystem-dev 2>/dev/null |
  grep -o 'libboost-filesystem1\.[0-9]*-dev' | head -n 1 || true)"
DEV[boost_filesystem]="${DEV[boost_filesystem]:-libboost-filesystem1.74-dev}"
SOURCE[boost_filesystem]="$(dpkg-query -W -f='${source:Package}' "${DEV[boost_filesystem]}" 2>/dev/null || echo boost1.74)"
declare -A PRODUCTS=(
  [zstd]="lib/libzstd.a include/zstd.h lib/pkgconfig/libzstd.pc"
  [openssl]="lib/libcrypto.a include/openssl/opensslv.h lib/pkgconfig/libcrypto.pc"
  [libssh2]="lib/libssh2.a include/libssh2.h lib/pkgconfig/libssh2.pc"
  [curl]="lib/libcurl.a include/curl/curl.h lib/pkgconfig/libcurl.pc"
  [boost_filesystem]="lib/libboost_filesystem.a"
)
# What each static library needs from Windows at link time (its .pc's Libs.private; from its
# undefined symbols: advapi32, user32 and kernel32 are among MinGW's default libraries anyway).
declare -A WINLIBS=(
  [zstd]=""
  [openssl]="-lws2_32 -luser32 -ladvapi32"
  [libssh2]="-lws2_32"
  [curl]="-lws2_32 -lcrypt32 -ladvapi32 -lbcrypt"
  [boost_filesystem]="-ladvapi32"
)
# Bump a library's recipe when its build below changes, so that caches built the old way are redone.
declare -A RECIPE=([zstd]=1 [openssl]=1 [libssh2]=1 [curl]=1 [boost_filesystem]=1)

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
for tool in cmake make perl dpkg-source patch; do
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

# debian_source_fetch for boost1.NN, downloading only: its orig tarball (~60 MB) unpacks to some
# 600 MB, of which Boost.Filesystem's sources are 300 KB. Extracts libs/filesystem/src alone and
# applies those of Debian's patches (debian/patches/series, in order) that touch it. The host's
# version first, then the mirror's, newest first. Sets DS_VERSION and DS_SRC as debian_source_fetch
# does (DS_SRC holds libs/filesystem/src).
fetch_boost_filesystem() { # PACKAGE WANT DIR
  local pkg="$1" want="$2" dir="$3" v p versions=()
  debian_source_update "$pkg source package"
  [[ -z "$want" ]] || versions=("$want")
  while read -r v; do
    [[ -z "$v" || "$v" == "$want" ]] || versions+=("$v")
  done < <(apt-cache "${DS_APT_OPTS[@]}" showsrc "$pkg" 2>>"$DS_LOG" | sed -n 's/^Version: //p' | sort -u -r -V)
  ((${#versions[@]})) || step_failed "the machine's Debian mirror lists no $pkg source package"
  DS_VERSION=""
  for v in "${versions[@]}"; do
    rm -rf "$dir" && mkdir -p "$dir"
    if (cd "$dir" && apt-get "${DS_APT_OPTS[@]}" -q source --download-only "$pkg=$v") >>"$DS_LOG" 2>&1; then
      DS_VERSION="$v"
      break
    fi
  done
  [[ -n "$DS_VERSION" ]] || step_failed "apt-get source --download-only $pkg failed for every listed version (${versions[*]})"
  [[ "$DS_VERSION" == "$want" || -z "$want" ]] || note "$pkg $want is not served by the mirror; building $DS_VERSION"
  DS_SRC="$dir/src"
  mkdir -p "$DS_SRC"
  tar -xf "$dir/"*.orig.tar.* -C "$DS_SRC" --strip-components=1 --wildcards '*/libs/filesystem/src/*' >>"$DS_LOG" 2>&1 ||
    step_failed "extracting libs/filesystem/src from $pkg's orig tarball failed"
  tar -xf "$dir/"*.debian.tar.* -C "$DS_SRC" debian/patches >>"$DS_LOG" 2>&1 ||
    step_failed "extracting debian/patches from $pkg's Debian tarball failed"
  while read -r p _; do
    [[ -n "$p" && "$p" != \#* ]] || continue
    # The patch's sections for libs/filesystem/src/ files, hunk lengths counted (a removed line
    # reading "--- " is no file header).
    awk '
      o > 0 || n > 0 { c = substr($0, 1, 1); if (c != "\\") { if (c != "+") o--; if (c != "-") n-- }; if (keep) print; next }
      /^\\/ { if (keep) print; next }
      /^--- / { old = $0; next }
      /^\+\+\+ / { keep = ($2 ~ /^[^\/]+\/libs\/filesystem\/src\//); if (keep) { print old; print }; next }
      /^@@ / { o = split($2, a, ",") > 1 ? a[2] + 0 : 1; n = split($3, b, ",") > 1 ? b[2] + 0 : 1; if (keep) print }
    ' "$DS_SRC/debian/patches/$p" >"$dir/filesystem.patch"
    [[ -s "$dir/filesystem.patch" ]] || continue
    patch -d "$DS_SRC" -p1 --batch --quiet --no-backup-if-mismatch <"$dir/filesystem.patch" >>"$DS_LOG" 2>&1 ||
      step_failed "Debian's patch $p does not apply to libs/filesystem/src"
    echo "applied $p to libs/filesystem/src" >>"$DS_LOG"
  done <"$DS_SRC/debian/patches/series"
}

# libboost_filesystem.a: every libs/filesystem/src/*.cpp, compiled against the host's Boost headers
# (through a folder holding one link, so nothing else of /usr/include is seen) as Debian builds it
# (gnu++17, -O2), static: users define BOOST_FILESYSTEM_STATIC_LINK (windows_shape.cmake does).
build_boost_filesystem() {
  [[ -d /usr/include/boost ]] || fail "/usr/include/boost is missing (scripts/setup.sh installs libboost-dev)"
  local src="$DS_SRC/libs/filesystem/src" obj="$WORK/build-boost_filesystem"
  mkdir -p "$obj/include"
  ln -sfn /usr/include/boost "$obj/include/boost"
  # shellcheck disable=SC2016 # $0..$3 are sh -c's
  find "$src" -name '*.cpp' -print0 |
    xargs -0 -P"$JOBS" -I{} sh -c '"$0" -std=gnu++17 -O2 -DNDEBUG -D_WIN32_WINNT=0x0A00 -DBOOST_FILESYSTEM_STATIC_LINK \
      -DBOOST_ALL_NO_LIB -isystem "$1" -c "$2" -o "$3/$(basename "$2" .cpp).o"' \
      "$TRIPLE-g++-posix" "$obj/include" {} "$obj" >>"$DS_LOG" 2>&1 ||
    step_failed "compiling Boost.Filesystem with $TRIPLE-g++-posix failed"
  rm -f "$obj/libboost_filesystem.a"
  "$TRIPLE-ar" rcs "$obj/libboost_filesystem.a" "$obj"/*.o || step_failed "archiving libboost_filesystem.a failed"
  install -m 644 "$obj/libboost_filesystem.a" "$PREFIX/lib/"
}

note "building ${STALE[*]} for $TRIPLE from Debian's source packages, into $PREFIX (logs: $CACHE/$TRIPLE-<lib>.log)"
for lib in "${STALE[@]}"; do
  started=$SECONDS
  DS_LOG="$CACHE/$TRIPLE-$lib.log"
  : >"$DS_LOG"
  rm -f "$PREFIX/$lib.version"
  if declare -F "fetch_$lib" >/dev/null; then
    "fetch_$lib" "${SOURCE[$lib]}" "${WANT[$lib]}" "$WORK/src-$lib"
  else
    debian_source_fetch "${SOURCE[$lib]}" "${WANT[$lib]}" "$WORK/src-$lib"
  fi
  "build_$lib" "$DS_VERSION"
  # Written last: a build cut short leaves no stamp and is redone.
  printf 'key=%s\nrecipe=%s\nsource=%s %s\n' "${WANT[$lib]:-$DS_VERSION}" "${RECIPE[$lib]}" "${SOURCE[$lib]}" "$DS_VERSION" \
    >"$PREFIX/$lib.version"
  rm -rf "$WORK/src-$lib" "$WORK/build-$lib"
  note "$lib ${DS_VERSION} built in $((SECONDS - started)) s"
done
