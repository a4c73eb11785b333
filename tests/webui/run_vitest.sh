#!/usr/bin/env bash
# CTest wrapper: the web UI's unit tests (vitest), skipped (exit 77) with a
# message when node or webui/node_modules is missing.
set -euo pipefail
cd "$(dirname "$0")/../../webui"
if ! command -v node >/dev/null 2>&1 || [ ! -x node_modules/.bin/vitest ]; then
  echo "SKIPPED: the web UI's unit tests need node and webui/node_modules (cd webui && npm ci)"
  exit 77
fi
exec node_modules/.bin/vitest run
