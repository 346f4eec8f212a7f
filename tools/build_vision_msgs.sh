#!/usr/bin/env bash
# Build the bundled vision_msgs 2D interfaces (interfaces/vision_msgs) into a venv made from
# the PyPI ROS wheels, with system cmake/gcc. Not used on a real ROS install (the distro's
# vision_msgs is used there). Usage: build_vision_msgs.sh VENV BUILD_DIR
set -euo pipefail
venv=$(cd "${1:?usage: build_vision_msgs.sh VENV BUILD_DIR}" && pwd)
build=${2:?usage: build_vision_msgs.sh VENV BUILD_DIR}
mkdir -p "$build"
src=$(cd "$(dirname "$0")/../interfaces/vision_msgs" && pwd)
command -v cmake >/dev/null || { echo "build_vision_msgs: cmake not found (apt-get install cmake g++)" >&2; exit 1; }
"$(dirname "$0")/fix_ros_wheel_cmake.sh" "$venv"
export AMENT_PREFIX_PATH="$venv"
cmake -S "$src" -B "$build" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$venv" -DCMAKE_PREFIX_PATH="$venv" \
  -DPython3_EXECUTABLE="$venv/bin/python" >"$build.log" 2>&1 || { tail -30 "$build.log" >&2; exit 1; }
cmake --build "$build" -j"$(nproc)" >>"$build.log" 2>&1 || { tail -30 "$build.log" >&2; exit 1; }
cmake --install "$build" >>"$build.log" 2>&1 || { tail -30 "$build.log" >&2; exit 1; }
"$venv/bin/python" -c "from vision_msgs.msg import Detection2DArray" \
  || { echo "build_vision_msgs: built, but 'from vision_msgs.msg import Detection2DArray' fails" >&2; exit 1; }
echo "build_vision_msgs: vision_msgs installed into $venv"
