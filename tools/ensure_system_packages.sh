#!/usr/bin/env bash
# System tools the set-up needs (usage: ensure_system_packages.sh [PYTHON]): Python headers, cmake and a C/C++ compiler (to build the vision_msgs interfaces
# into the venv) and Chromium (the report's browser test). Installs what is missing via apt-get
# when running as root; otherwise says what to install. Chromium is optional (its test says so).
set -euo pipefail
py=${1:-python3}
need=()
# The vision_msgs build compiles a Python C extension: it needs Python.h of the venv's interpreter.
"$py" -c 'import os, sys, sysconfig; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  || need+=(python3-dev)
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
optional=()
command -v chromium >/dev/null || optional+=(chromium)
if [ ${#need[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  if [ ${#need[@]} -gt 0 ]; then apt-get install -y -qq "${need[@]}" >/dev/null; fi
  if [ ${#optional[@]} -gt 0 ]; then
    apt-get install -y -qq --no-install-recommends "${optional[@]}" >/dev/null \
      || echo "ensure_system_packages: could not install ${optional[*]} (optional; the report browser test will be skipped)"
  fi
elif [ ${#need[@]} -gt 0 ]; then
  echo "ensure_system_packages: please install: ${need[*]}" >&2
  exit 1
else
  echo "ensure_system_packages: optional ${optional[*]} missing (not root: not installing)"
fi
