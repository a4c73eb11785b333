#!/usr/bin/env bash
# Installs the Debian 12 packages oscar.cpp needs to build and test.
# Safe to run repeatedly; uses sudo only when not already root.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
PKGS=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libpcre2-dev libutf8proc-dev nlohmann-json3-dev libcpp-httplib-dev libssl-dev openssl
  libeigen3-dev libzip-dev libcli11-dev zlib1g-dev
  python3 python3-numpy python3-jinja2 python3-torch python3-jsonschema
  haproxy lua5.3 curl
  chromium
)
# --arm64: also the cross toolchain for the ARM64 build and QEMU to run its
# tests (scripts/build-arm64.sh, scripts/test-arm64.sh); scripts/test.sh asks
# for it, so CI has it. GoogleTest comes as the arm64 package through multiarch.
if [ "${1:-}" = --arm64 ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "setup-deps: adding the arm64 architecture (multiarch)"
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -qq
  fi
  PKGS+=(g++-aarch64-linux-gnu qemu-user libgtest-dev:arm64)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup-deps: all packages present"
fi

# oscar-server's client tests use the official `openai` npm package. Debian's
# nodejs/npm are installed only when node or npm is missing: installing
# Debian's npm next to a nodesource node (which bundles npm) conflicts.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "setup-deps: installing nodejs npm"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
JS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/server/js"
if [ -f "$JS_DIR/package-lock.json" ] && { [ ! -d "$JS_DIR/node_modules/openai" ] || [ ! -d "$JS_DIR/node_modules/@anthropic-ai/sdk" ]; }; then
  echo "setup-deps: npm ci in tests/server/js"
  (cd "$JS_DIR" && npm ci --no-audit --no-fund)
fi
# The web UI (webui/): its bundler, libraries and test tools; the build then
# compiles the chat page into oscar-server. Reinstalled when the lockfile is
# newer than what npm last installed.
WEBUI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/webui"
if [ -f "$WEBUI_DIR/package-lock.json" ] && { [ ! -f "$WEBUI_DIR/node_modules/.package-lock.json" ] ||
     [ "$WEBUI_DIR/package-lock.json" -nt "$WEBUI_DIR/node_modules/.package-lock.json" ]; }; then
  echo "setup-deps: npm ci in webui"
  (cd "$WEBUI_DIR" && npm ci --no-audit --no-fund)
fi
