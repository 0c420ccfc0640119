#!/usr/bin/env bash
# Makes sure a headless-capable Chromium is installed for the browser
# tests (test/e2e board tests drive it with chromedp): installs Debian's
# chromium package when missing. Prints where it is.
set -euo pipefail

find_chromium() { command -v chromium || command -v chromium-browser || true; }

bin=$(find_chromium)
if [ -z "$bin" ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "chromium: not installed and cannot install it here (needs root and apt-get); the browser tests will skip" >&2
    exit 0
  fi
  echo "chromium: installing Debian's chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
  bin=$(find_chromium)
fi
echo "chromium: $bin ($("$bin" --version 2>/dev/null || echo 'version unknown'))"
