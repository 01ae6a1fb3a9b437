#!/usr/bin/env bash
# ctest's entry to the extension's node tests:  ctest.sh unit | integration
# Installs the npm packages first when package-lock.json changed (npm-ci.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/npm-ci.sh
case "${1:-unit}" in
  unit) npm run --silent typecheck && exec npm test --silent ;;
  integration) exec npm run --silent test:integration ;;
  *) echo "ctest.sh: unit or integration" >&2; exit 2 ;;
esac
