#!/usr/bin/env bash
# The ROS message wheels' CMake exports hard-code the include paths of the manylinux
# machine that built them (/opt/python/...). Point them at this venv's Python and numpy.
# Idempotent; rerun after reinstalling message wheels.
set -euo pipefail
venv=${1:?usage: fix_ros_wheel_cmake.sh VENV}
py="$venv/bin/python"
py_inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
np_inc=$("$py" -c 'import numpy; print(numpy.get_include())')
mapfile -t files < <(grep -rlE '/opt/python/cp[0-9]+-cp[0-9]+' "$venv/share" --include='*.cmake' 2>/dev/null || true)
for f in "${files[@]}"; do
  sed -i -E \
    -e "s#/opt/python/cp[0-9]+-cp[0-9]+/include/python3\.[0-9]+#${py_inc}#g" \
    -e "s#/opt/python/cp[0-9]+-cp[0-9]+/lib/python3\.[0-9]+/site-packages/numpy/(_core|core)/include#${np_inc}#g" \
    "$f"
done
echo "fix_ros_wheel_cmake: patched ${#files[@]} file(s)"
