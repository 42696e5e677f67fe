#!/usr/bin/env bash
# Gathers, on the development machine, the headers, static libraries and
# pkg-config files that the GPU machine lacks (it has no Debian packages:
# ../shared/GPU.md) into .carry/, which the device tool carries along.
# The GPU-side build (scripts/gpu/build.sh) points PKG_CONFIG_PATH at it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
C="$ROOT/.carry"
rm -rf "$C"
mkdir -p "$C/include" "$C/lib/pkgconfig" "$C/bin"
ARCH_INC=/usr/include/x86_64-linux-gnu
ARCH_LIB=/usr/lib/x86_64-linux-gnu

# Headers.
cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/gtest /usr/include/gmock "$C/include/"
cp /usr/include/seccomp*.h /usr/include/pcre2.h /usr/include/utf8proc.h "$C/include/"
cp -r /usr/include/openssl "$C/include/"
cp "$ARCH_INC"/openssl/* "$C/include/openssl/"
cp -r "$ARCH_INC/curl" "$C/include/"

# Static libraries (C libraries and GoogleTest; libstdc++'s ABI is forward compatible).
for lib in libgtest.a libgtest_main.a libgmock.a libgmock_main.a libseccomp.a libpcre2-8.a libutf8proc.a libcrypto.a; do
  cp "$ARCH_LIB/$lib" "$C/lib/"
done

# pkg-config files, relocated to wherever .carry lands.
for pc in gtest gtest_main gmock gmock_main libseccomp libpcre2-8 libutf8proc libcrypto; do
  sed -e 's|^prefix=.*|prefix=${pcfiledir}/../..|' \
      -e 's|^libdir=.*|libdir=${prefix}/lib|' \
      -e 's|^includedir=.*|includedir=${prefix}/include|' \
      "$ARCH_LIB/pkgconfig/$pc.pc" > "$C/lib/pkgconfig/$pc.pc"
done
for pc in nlohmann_json CLI11; do
  sed -e 's|^prefix=.*|prefix=${pcfiledir}/../..|' \
      -e 's|^includedir=.*|includedir=${prefix}/include|' \
      "/usr/share/pkgconfig/$pc.pc" > "$C/lib/pkgconfig/$pc.pc"
done
# libcurl: the GPU machine's own libcurl.so.4 at run time (static curl needs a
# dozen more libraries); headers from here.
cat > "$C/lib/pkgconfig/libcurl.pc" <<'PC'
prefix=${pcfiledir}/../..
includedir=${prefix}/include
Name: libcurl
Description: libcurl headers from Debian, the GPU machine's libcurl.so.4
Version: 7.88.1
Libs: -l:libcurl.so.4
Cflags: -I${includedir}
PC
# jq for the scripts' summaries (binary plus its two libraries).
cp /usr/bin/jq "$C/bin/"
mkdir -p "$C/lib/so"
cp "$ARCH_LIB"/libjq.so.1 "$ARCH_LIB"/libonig.so.5 "$C/lib/so/"
# cpp-httplib (kbserve): Debian's shared library, built with OpenSSL, zlib and
# brotli, and the headers its httplib.h includes; found through an rpath.
cp /usr/include/httplib.h /usr/include/zlib.h /usr/include/zconf.h "$C/include/"
cp -r /usr/include/brotli "$C/include/"
cp "$ARCH_LIB"/libcpp-httplib.so.0.11 "$ARCH_LIB"/libbrotlicommon.so.1 "$ARCH_LIB"/libbrotlidec.so.1 \
   "$ARCH_LIB"/libbrotlienc.so.1 "$ARCH_LIB"/libssl.so.3 "$ARCH_LIB"/libcrypto.so.3 "$C/lib/so/"
cat > "$C/lib/pkgconfig/cpp-httplib.pc" <<'PC'
prefix=${pcfiledir}/../..
includedir=${prefix}/include
libdir=${prefix}/lib/so
Name: cpp-httplib
Description: Debian's cpp-httplib 0.11, carried
Version: 0.11.4
Libs: -L${libdir} -Wl,-rpath,${libdir} -l:libcpp-httplib.so.0.11
Cflags: -I${includedir} -DCPPHTTPLIB_OPENSSL_SUPPORT -DCPPHTTPLIB_ZLIB_SUPPORT -DCPPHTTPLIB_BROTLI_SUPPORT
PC
# Boost.Beast (kbserve's /ws): header-only, but Boost's tree is 150 MB, so
# only what lib/serve/websocket.cpp reaches (the compiler's dependency list,
# about 7 MB) and, whole, the Asio, Beast and config folders whose branches a
# different compiler there may take; boost-headers.pc lets meson find them
# (Debian's Boost has no pkg-config file).
(cd /usr/include &&
  { printf '#include <boost/%s>\n' asio/io_context.hpp asio/ip/tcp.hpp asio/post.hpp asio/steady_timer.hpp \
      beast/core.hpp beast/http.hpp beast/websocket.hpp version.hpp |
      c++ -std=c++20 -x c++ -M - | tr ' \\' '\n\n' | sed -n 's|^/usr/include/\(boost/.*\)|\1|p'
    find boost/asio boost/beast boost/config -type f; } |
  sort -u | xargs cp --parents -t "$C/include")
cat > "$C/lib/pkgconfig/boost-headers.pc" <<'PC'
prefix=${pcfiledir}/../..
includedir=${prefix}/include
Name: boost-headers
Description: Debian's Boost 1.74 headers that Boost.Beast needs, carried
Version: 1.74.0
Cflags: -I${includedir}
PC
# httpx and what it needs, pure Python, for scripts/bench/serve_load.py there.
VENV_SITE=$(/opt/kb-venv/bin/python -c 'import httpx, os; print(os.path.dirname(os.path.dirname(httpx.__file__)))' 2>/dev/null || true)
if [ -n "$VENV_SITE" ]; then
  mkdir -p "$C/py"
  for p in anyio certifi h11 httpcore httpx idna sniffio typing_extensions.py; do
    [ -e "$VENV_SITE/$p" ] && cp -r "$VENV_SITE/$p" "$C/py/"
  done
fi
du -sh "$C"
