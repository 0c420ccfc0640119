#!/usr/bin/env bash
# Makes sure Prometheus and promtool are installed for the monitoring
# tests (manifests/monitoring: promtool check/test rules; test/e2e
# TestMonitoringMetrics runs prometheus against a federation): installs
# Debian's prometheus package when promtool is missing. Prints the version.
set -euo pipefail

if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "prometheus: not installed and cannot install it here (needs root and apt-get); the monitoring tests will fail" >&2
    exit 1
  fi
  echo "prometheus: installing Debian's prometheus package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
echo "prometheus: $(command -v promtool) ($(promtool --version 2>&1 | head -n 1))"
