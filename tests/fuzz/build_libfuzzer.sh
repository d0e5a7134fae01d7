#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the fuzz targets of tests/fuzz with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer (the test suite builds them with g++ and fuzz_driver.cpp instead).
#
#   tests/fuzz/build_libfuzzer.sh [OUT_DIR]      # from the repository root; default build/fuzz
#   build/fuzz/scenario_parser_fuzz -dict=tests/fuzz/scenario.dict -runs=10000000 \
#     build/fuzz/corpus/scenario_parser tests/fuzz/corpus/scenario_parser
#
# Each target is linked from the sources it needs (not the whole CMake libraries), compiled
# once into OUT_DIR/obj. JOBS (default 1) compiles that many sources at a time. The targets
# and their invariants: docs/reliability.md, "What is fuzzed".
# shellcheck disable=SC2046,SC2086 # the source and flag lists are meant to split into words
set -eu
out=${1:-build/fuzz}
jobs=${JOBS:-1}
cc=${CC:-clang}
cxx=${CXX:-clang++}
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
common="-g -O1 $san -fsanitize=fuzzer-no-link -Wall -Wextra"
inc="-Ifirmware_shim/include -Ihal/include -Iruntime/physics/include -Iruntime/scenario/include
     -Iruntime/recording/include -Iruntime/feedback/include -Iruntime/loop/include
     -Iadapters/mqtt/include -Iadapters/mavlink/include -Iadapters/ardupilot/include
     -Iadapters/ardupilot/standin/include -I/usr/include/eigen3"
headers="firmware_shim/include hal/include runtime/physics/include runtime/scenario/include
         runtime/recording/include runtime/feedback/include runtime/loop/include adapters/mqtt/include adapters/mavlink/include
         adapters/ardupilot/include adapters/ardupilot/standin/include"
mkdir -p "$out/obj"

# the objects of SOURCE... in $out/obj
objects() {
  for src in "$@"; do
    obj="$out/obj/$(echo "$src" | tr '/' '_').o"
    echo "$obj"
  done
}
# compiles SOURCE... into $out/obj: again when the source or any header of the project is
# newer than its object
compile() {
  pids=""
  n=0
  for src in "$@"; do
    obj="$out/obj/$(echo "$src" | tr '/' '_').o"
    if [ ! -f "$obj" ] || [ -n "$(find "$src" $headers -newer "$obj" -name '*.[ch]*' | head -n 1)" ]; then
      case "$src" in
        *.c) $cc -std=c99 $common $inc -c "$src" -o "$obj" & ;;
        *) $cxx -std=c++20 $common $inc -c "$src" -o "$obj" & ;;
      esac
      pids="$pids $!"
      n=$((n + 1))
      if [ "$n" -ge "$jobs" ]; then
        for p in $pids; do wait "$p"; done
        pids=""
        n=0
      fi
    fi
  done
  for p in $pids; do wait "$p"; done
}
# an archive of compiled SOURCE...: the linker takes only the members a target needs
archive() {
  name=$1
  shift
  rm -f "$out/obj/lib$name.a"
  ar rcs "$out/obj/lib$name.a" $(objects "$@")
  echo "$out/obj/lib$name.a"
}
link() {
  name=$1
  shift
  $cxx $san -fsanitize=fuzzer "$@" -o "$out/$name"
  echo "built $out/$name"
}

shim=$(ls firmware_shim/src/*.c)
hal=$(ls hal/src/*.cpp)
physics=$(ls runtime/physics/src/*.cpp)
scenario=$(ls runtime/scenario/src/*.cpp)
mcap="runtime/recording/src/mcap_reader.cpp runtime/recording/src/mcap_scan.cpp runtime/recording/src/mcap_format.cpp"
mqtt="adapters/mqtt/src/mqtt_messages.cpp adapters/mqtt/src/mqtt_protobuf.cpp runtime/recording/src/protobuf.cpp"
ardupilot="adapters/ardupilot/src/ardupilot_json.cpp adapters/ardupilot/standin/src/ardupilot_standin.cpp"
mavlink="adapters/mavlink/src/mavlink.cpp adapters/mavlink/src/mavlink_messages.cpp"

compile tests/fuzz/frame_decoder_fuzz.c $shim
link frame_decoder_fuzz $(objects tests/fuzz/frame_decoder_fuzz.c $shim)

compile tests/fuzz/mcap_reader_fuzz.cpp $mcap
link mcap_reader_fuzz $(objects tests/fuzz/mcap_reader_fuzz.cpp $mcap) -lzstd

compile tests/fuzz/scenario_parser_fuzz.cpp $scenario $physics $hal
libs=$(archive scenario $scenario $physics $hal $shim)
link scenario_parser_fuzz $(objects tests/fuzz/scenario_parser_fuzz.cpp) "$libs" -lyaml-cpp

compile tests/fuzz/mqtt_messages_fuzz.cpp $mqtt
link mqtt_messages_fuzz $(objects tests/fuzz/mqtt_messages_fuzz.cpp $mqtt) "$libs" -lyaml-cpp

compile tests/fuzz/mavlink_decoder_fuzz.cpp $mavlink
link mavlink_decoder_fuzz $(objects tests/fuzz/mavlink_decoder_fuzz.cpp $mavlink)

compile tests/fuzz/ardupilot_json_fuzz.cpp $ardupilot
link ardupilot_json_fuzz $(objects tests/fuzz/ardupilot_json_fuzz.cpp $ardupilot) "$libs" -lyaml-cpp

for t in frame_decoder mcap_reader scenario_parser mqtt_messages mavlink_decoder ardupilot_json; do mkdir -p "$out/corpus/$t"; done
