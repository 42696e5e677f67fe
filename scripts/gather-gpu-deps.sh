#!/usr/bin/env bash
# Gathers, on the development machine, the headers and static libraries that
# the GPU machine lacks (it has no Debian packages: see shared/GPU.md) into
# .carry/deps (git-ignored), with pkg-config files that find them wherever the
# tree is copied. Pass `.carry` in the device run's `carry` list, then on the
# GPU machine:  PKG_CONFIG_PATH=$PWD/.carry/deps/lib/pkgconfig meson setup ...
# Carried: nlohmann-json, CLI11, GoogleTest, OpenSSL's libcrypto, PCRE2 (8-bit),
# utf8proc. Also scripts/pkgconfig_shim.py for a machine without pkg-config.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.carry/deps"
LIB=/usr/lib/x86_64-linux-gnu
rm -rf "$DEST"
mkdir -p "$DEST/include" "$DEST/lib/pkgconfig"
cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/gtest /usr/include/openssl "$DEST/include/"
cp /usr/include/pcre2.h /usr/include/utf8proc.h "$DEST/include/"
cp /usr/include/x86_64-linux-gnu/openssl/*.h "$DEST/include/openssl/" 2>/dev/null || true
cp "$LIB/libgtest.a" "$LIB/libgtest_main.a" "$LIB/libcrypto.a" "$LIB/libpcre2-8.a" "$LIB/libutf8proc.a" "$DEST/lib/"

pc() {  # name version libs
  cat > "$DEST/lib/pkgconfig/$1.pc" <<PC
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/lib
Name: $1
Description: $1 carried from the development machine
Version: $2
Cflags: -I\${includedir}
Libs: $3
PC
}
pc nlohmann_json "$(pkg-config --modversion nlohmann_json)" ""
pc CLI11 "$(pkg-config --modversion CLI11)" ""
pc gtest "$(pkg-config --modversion gtest)" "-L\${libdir} -lgtest -pthread"
pc gtest_main "$(pkg-config --modversion gtest_main)" "-L\${libdir} -lgtest_main -lgtest -pthread"
pc libcrypto "$(pkg-config --modversion libcrypto)" "-L\${libdir} -lcrypto -ldl -pthread"
pc libpcre2-8 "$(pkg-config --modversion libpcre2-8)" "-L\${libdir} -lpcre2-8"
pc libutf8proc "$(pkg-config --modversion libutf8proc)" "-L\${libdir} -lutf8proc"
echo "gather-gpu-deps: $(du -sh "$DEST" | cut -f1) in $DEST"
