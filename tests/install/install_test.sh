#!/bin/sh
# The install as a user meets it (docs/install.md): `cmake --install` into a scratch prefix,
# then, from / and without TETHER_BUILD_DIR, the installed tether names its package and its
# helpers, runs the default scenario, checks every shipped scenario, makes a folder with
# `tether init` whose scenario and rebuilt firmware run; then `cpack` makes the .deb, whose
# dependencies name Debian's library packages, and its unpacked tree runs the default scenario.
# Usage: install_test.sh BUILD_DIR
set -eu
build=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/tether_install_test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }
unset TETHER_BUILD_DIR
cd /

cmake --install "$build" --prefix "$work/prefix" >/dev/null
t="$work/prefix/bin/tether"
[ -x "$t" ] || fail "no bin/tether after the install"
for p in tether-vehicle tether-ardupilot; do [ -x "$work/prefix/bin/$p" ] || fail "no bin/$p"; done
[ -x "$work/prefix/lib/tether/firmware/host/depth_heading_hold" ] || fail "no host firmware in lib/tether"
version=$("$t" --version)
echo "$version"
echo "$version" | grep -q "package tether" || fail "--version names no package"
echo "$version" | grep -q "helpers and firmware: $work/prefix/lib/tether\$" || fail "helpers not from the installed tree"
echo "$version" | grep -q "shipped scenarios: $work/prefix/share/tether/config/scenarios\$" || fail "scenarios not from share/"

scenarios="$work/prefix/share/tether/config/scenarios"
"$t" run "$scenarios/default.yaml" --rtf 0 --out "$work/run" >"$work/run.log" 2>&1 || { cat "$work/run.log"; fail "the installed default scenario failed"; }
grep -q '"outcome": "completed"' "$work/run/summary.json" || fail "the default scenario did not complete"
n=0 lacking=""
for f in "$scenarios"/*.yaml; do
  n=$((n + 1))
  "$t" check "$f" >"$work/check.log" 2>&1 && continue
  # the Cortex-M3 images are installed only when built (scripts/build_firmware.sh cortex_m3):
  # a qemu scenario may say that its image is missing, and nothing else
  case "$(basename "$f")" in
    qemu_*)
      if grep -q "firmware image .* does not exist" "$work/check.log" && [ "$(grep -c error "$work/check.log")" -le 1 ]; then
        lacking="$lacking $(basename "$f")"
        continue
      fi ;;
  esac
  cat "$work/check.log"
  fail "tether check $(basename "$f") failed"
done
[ "$n" -ge 10 ] || fail "only $n shipped scenarios"
echo "install_test: the default scenario ran and $n shipped scenarios checked from $work/prefix" \
  "(without their Cortex-M3 image:${lacking:- none})"

# a user's own folder, anywhere, its firmware rebuilt from the installed shim
"$t" init "$work/mine" >/dev/null
sh "$work/mine/firmware/build.sh" >/dev/null
sed -i 's#command: \["${TETHER_BUILD_DIR:-../../build}/firmware/host/depth_heading_hold"\]#command: ["firmware/depth_heading_hold"]#' \
  "$work/mine/mine.yaml"
grep -q 'command: \["firmware/depth_heading_hold"\]' "$work/mine/mine.yaml" || fail "init's scenario has no firmware command to point at the rebuilt firmware"
"$t" run "$work/mine/mine.yaml" --rtf 0 --out "$work/run_mine" >"$work/mine.log" 2>&1 || { cat "$work/mine.log"; fail "the init folder's scenario with its rebuilt firmware failed"; }
"$t" init "$work/mine" 2>/dev/null && fail "init wrote into a folder that is not empty"
echo "install_test: tether init's folder ran with its own build of the firmware"

# the package
(cd "$build" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack failed"; }
deb=$(ls "$work"/pkg/tether_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
echo "install_test: $(basename "$deb"), Depends: $depends"
for lib in libyaml-cpp libserialport libpaho-mqttpp; do
  echo "$depends" | grep -q "$lib" || fail "the package does not depend on $lib"
done
dpkg-deb -x "$deb" "$work/root"
r="$work/root/usr/bin/tether"
"$r" --version | grep -q "helpers and firmware: $work/root/usr/lib/tether\$" || fail "the unpacked package's helpers are not its own"
"$r" run "$work/root/usr/share/tether/config/scenarios/default.yaml" --rtf 0 --out "$work/run_deb" >"$work/deb.log" 2>&1 ||
  { cat "$work/deb.log"; fail "the default scenario from the unpacked package failed"; }
echo "install_test: the package's tree ran the default scenario"
