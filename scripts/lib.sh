# SPDX-License-Identifier: GPL-2.0
# Shared settings for rxe_sr's scripts: cache locations and the kernel toolchain.
# Sourced, not run.

RXE_SR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${RXE_SR_CACHE:-$HOME/.cache/rxe_sr}
KSRC_TARBALL=/usr/src/linux-source-6.12.tar.xz
KSRC_PKG=linux-source-6.12

# Debian's rustc (1.96, with rust-src) builds the kernel; the rustup rustc first in PATH has
# no library source, so every Rust tool is named explicitly.
KMAKE_VARS=(
  LLVM=-19
  RUSTC=/usr/bin/rustc
  HOSTRUSTC=/usr/bin/rustc
  RUSTDOC=/usr/bin/rustdoc
  BINDGEN="$CACHE/tools/bin/bindgen"
)
export LIBCLANG_PATH=/usr/lib/llvm-19/lib

# kdir_make_vars KDIR: sets the array KDIR_VARS to the make variables that build an
# out-of-tree Rust module against the kernel build (or headers) directory KDIR with the
# toolchain that built it, read from its .config: clang (LLVM=-NN, or LLVM=1 when clang is
# that version), the rustc of CONFIG_RUSTC_VERSION_TEXT (a Rust module's metadata must come
# from the kernel's own compiler) with its rustdoc, a bindgen of CONFIG_BINDGEN_VERSION_TEXT
# (or any bindgen, named in a warning), and LIBCLANG_PATH. Fails, saying why, on a kernel
# without CONFIG_RUST or when a tool it needs is missing.
kdir_make_vars() {
  local kdir=$1 cfg=$1/.config want r b clangv major bg
  # A headers package may carry only the configuration's resolved form.
  [ -f "$cfg" ] || cfg=$kdir/include/config/auto.conf
  [ -f "$cfg" ] || { log "error: $kdir has neither .config nor include/config/auto.conf: not a kernel build or headers directory"; return 1; }
  grep -qx 'CONFIG_RUST=y' "$cfg" || { log "error: the kernel of $kdir has no CONFIG_RUST: it cannot load Rust modules (Documentation/install.md: Rust-enabled kernels)"; return 1; }
  KDIR_VARS=()
  if grep -qx 'CONFIG_CC_IS_CLANG=y' "$cfg"; then
    clangv=$(sed -n 's/^CONFIG_CLANG_VERSION=//p' "$cfg"); major=$((clangv / 10000))
    if command -v "clang-$major" > /dev/null; then KDIR_VARS+=("LLVM=-$major")
    elif clang --version 2> /dev/null | grep -q "clang version $major\."; then KDIR_VARS+=(LLVM=1)
    else log "error: $kdir was built with clang $major: install clang-$major, lld-$major and llvm-$major"; return 1
    fi
    export LIBCLANG_PATH=/usr/lib/llvm-$major/lib
  fi
  # (Quoted in .config, bare in auto.conf.)
  want=$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT=//p' "$cfg" | sed 's/^"//; s/"$//')
  for r in /usr/bin/rustc "$(command -v rustc 2> /dev/null)" "$HOME"/.cargo/bin/rustc; do
    [ -x "$r" ] && [ "$("$r" --version 2> /dev/null)" = "$want" ] && break
    r=
  done
  [ -n "$r" ] || { log "error: $kdir was built with $want; no such rustc here (/usr/bin, PATH)"; return 1; }
  KDIR_VARS+=("RUSTC=$r" "HOSTRUSTC=$r" "RUSTDOC=$(dirname "$r")/rustdoc")
  want=$(sed -n 's/^CONFIG_BINDGEN_VERSION_TEXT=//p' "$cfg" | sed 's/^"//; s/"$//')
  bg=
  for b in "$(command -v bindgen 2> /dev/null)" "$CACHE/tools/bin/bindgen"; do
    [ -x "$b" ] || continue
    [ -z "$bg" ] && bg=$b
    [ "$("$b" --version 2> /dev/null)" = "$want" ] && { bg=$b; break; }
  done
  [ -n "$bg" ] || { log "error: no bindgen (cargo install bindgen-cli; the kernel used $want)"; return 1; }
  [ "$("$bg" --version)" = "$want" ] || log "warning: $bg is $("$bg" --version), the kernel used $want"
  KDIR_VARS+=("BINDGEN=$bg")
}

log() { printf '%s: %s\n' "${LOG_TAG:-rxe_sr}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# wait_for PID SECS: true once process PID has ended (its status is left for `wait`), false
# if it still runs after SECS seconds.
wait_for() {
  local i
  for ((i = 0; i < $2; i++)); do
    kill -0 "$1" 2> /dev/null || return 0
    sleep 1
  done
  ! kill -0 "$1" 2> /dev/null
}

# bench_incomplete LAUNCH_RC SHARE: prints, loudly, why a benchmark run's results are
# partial (the launcher failed: 124 a timeout, 125 a guest crashed; or a guest's benchmark
# script exited non-zero) and returns 1; returns 0, silent, for a complete run.
bench_incomplete() {
  local launch_rc=$1 share=$2 why=() g rc
  [ "$launch_rc" = 0 ] || why+=("the guests' launcher exited $launch_rc (124: timeout, 125: a guest crashed)")
  for g in 1 2; do
    rc=$(cat "$share/out/g$g/run.rc" 2>/dev/null || echo none)
    [ "$rc" = 0 ] || why+=("guest $g's benchmark script exited $rc")
  done
  [ ${#why[@]} = 0 ] && return 0
  printf '\n%s\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
  printf '!! PARTIAL RESULTS: %s\n' "${why[@]}"
  printf '!! The figures are from the runs that finished; a missing cell was not measured.\n'
  printf '%s\n\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
  return 1
}

# run_logged LOG CMD...: runs CMD with its output appended to LOG; when it fails, prints the
# compiler's errors and warnings from LOG (or, with none, its last lines) and its path, and
# returns CMD's status.
run_logged() {
  local logf=$1 rc=0
  shift
  "$@" >> "$logf" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    if grep -qE '^(error|warning)' "$logf"; then
      grep -E -A12 '^(error|warning)' "$logf" | head -60 >&2
    else
      tail -15 "$logf" >&2
    fi
    log "failed ($rc): $* (full output: $logf)"
  fi
  return "$rc"
}

# A benchmark command's results file: results/DAY-NAME-REV.md, its CSV and PNG files in the
# directory results/DAY-NAME-REV/ (DAY in UTC; REV the commit measured, with -dirty when the
# tree has changes outside results/). The outermost benchmark command opens and closes it;
# one it runs adds its sections to the same file. RXE_SR_RESULTS=0 writes none.

# result_open NAME TITLE: opens the file, with a header saying what was run, unless one is
# open already.
result_open() {
  [ "${RXE_SR_RESULTS:-1}" != 0 ] && [ -z "${RXE_SR_RESULT:-}" ] || return 0
  local day rev stem n=1 settings kver
  day=$(date -u +%F)
  rev=$(git -C "$RXE_SR_ROOT" rev-parse --short=7 HEAD 2> /dev/null) || rev=nogit
  [ -z "$(git -C "$RXE_SR_ROOT" status --porcelain -- . ':!results' 2> /dev/null)" ] || rev+=-dirty
  stem=$RXE_SR_ROOT/results/$day-$1-$rev
  while [ -e "$stem.md" ] || [ -e "$stem" ]; do
    n=$((n + 1))
    stem=$RXE_SR_ROOT/results/$day-$1-$rev-$n
  done
  mkdir -p "$stem"
  export RXE_SR_RESULT=$stem.md
  RESULT_OWNER=1 RESULT_START=$SECONDS
  settings=$(env | grep -E '^(BENCH_[A-Z_]*|WAN_[A-Z_]*|RUN_QP_SWEEP|LAT_ITERS)=' | sort | sed 's/.*/`&`/' | paste -sd' ' || true)
  if [ -n "${RXE_SR_KERNEL_DEB:-}" ]; then kver=$(deb_kernel_release)
  else kver=$(make -s -C "$(kernel_dir "${VARIANT:-default}")" kernelrelease 2> /dev/null || echo unknown)
  fi
  {
    printf '# %s (%s)\n\n' "$2" "$day"
    printf 'Run by `%s`, started at %s UTC.\n\n' "${RESULT_COMMAND:-bash scripts/$(basename "$0")}" \
      "$(date -u +%H:%M)"
    printf -- '- Tree: %s\n' "$rev"
    printf -- '- Guests: two QEMU guests under TCG, one vCPU and 1 GiB each, kernel %s (%s)\n' \
      "$kver" "${VARIANT:-default}"
    printf -- '- Host: %s cores, %s\n' "$(nproc)" \
      "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
    printf -- '- Settings: %s\n' "${settings:-the defaults}"
    printf -- '- Outcome: did not finish (the command was stopped)\n\n'
    printf 'How to read it: [benchmarking.md](../Documentation/benchmarking.md). TCG guests: compare\n'
    printf 'rows of one run, not across runs.\n'
  } > "$RXE_SR_RESULT"
}

# result_section TITLE REPORT [FILE NAME]...: adds a section to the open results file: the
# text of REPORT as printed, then each FILE copied into the results directory as NAME, a
# PNG shown, anything else linked.
result_section() {
  [ -n "${RXE_SR_RESULT:-}" ] || return 0
  local dir=${RXE_SR_RESULT%.md}
  {
    printf '\n## %s\n\n```text\n' "$1"
    # Less the title line (the heading) and the run directory's plot paths (shown below).
    grep -vxF "=== $1 ===" "$2" | grep -v '^plot: ' || true
    printf '```\n'
  } >> "$RXE_SR_RESULT"
  shift 2
  while [ $# -ge 2 ]; do
    if [ -f "$1" ]; then
      cp "$1" "$dir/$2"
      case $2 in
        *.png) printf '\n![%s](%s/%s)\n' "$2" "$(basename "$dir")" "$2" ;;
        *) printf '\nData: [%s](%s/%s)\n' "$2" "$(basename "$dir")" "$2" ;;
      esac >> "$RXE_SR_RESULT"
    fi
    shift 2
  done
}

# result_close STATUS: the opener's last step: records the outcome (STATUS 0: every run
# finished) and the time taken, and prints where the file is.
result_close() {
  [ -n "${RESULT_OWNER:-}" ] || return 0
  local outcome mins=$(((SECONDS - RESULT_START + 30) / 60))
  if [ "$1" = 0 ]; then outcome="every run finished, in $mins minutes"
  else outcome="PARTIAL: some runs failed or did not run (marked in the sections below); $mins minutes"
  fi
  sed -i "s/^- Outcome: .*/- Outcome: $outcome/" "$RXE_SR_RESULT"
  log "results: ${RXE_SR_RESULT#"$RXE_SR_ROOT"/} and ${RXE_SR_RESULT%.md}/ (commit them when a document cites them)"
  unset RXE_SR_RESULT RESULT_OWNER
}

# Short content hash of the given strings and files.
cache_key() {
  local f
  {
    for f in "$@"; do
      if [ -f "$f" ]; then cat "$f"; else printf '%s\n' "$f"; fi
    done
  } | sha256sum | cut -c1-16
}

ksrc_version() { dpkg-query -W -f='${Version}' "$KSRC_PKG"; }

# Version of scripts/build-kernel's build steps: bump it when a change to them changes what
# they produce (the cache key also covers the source, fragments and toolchain).
KERNEL_RECIPE=1

# ksrc_tree: Debian's linux-source-6.12 unpacked in the cache (once); prints its path.
ksrc_tree() {
  local ver src
  [ -f "$KSRC_TARBALL" ] || die "$KSRC_TARBALL missing: run scripts/setup"
  ver=$(ksrc_version)
  src="$CACHE/src/$KSRC_PKG-$ver"
  if [ ! -f "$src/.done" ]; then
    log "unpacking $KSRC_TARBALL ($ver)"
    rm -rf "$src" "$src.tmp"; mkdir -p "$src.tmp"
    tar -C "$src.tmp" -xf "$KSRC_TARBALL" --strip-components=1
    mv "$src.tmp" "$src"; touch "$src/.done"
  fi
  printf '%s\n' "$src"
}

# The config fragments (over tinyconfig) of a kernel variant: default (the tests'), debug
# (KASAN, lockdep, kmemleak) or bench (make bench's); prints their paths, one per line.
kernel_frags() {
  case ${1:-default} in
    default) printf '%s\n' "$RXE_SR_ROOT/qemu/kernel.config" ;;
    debug) printf '%s\n' "$RXE_SR_ROOT/qemu/kernel.config" "$RXE_SR_ROOT/qemu/kernel-debug.config" ;;
    bench) printf '%s\n' "$RXE_SR_ROOT/qemu/kernel.config" "$RXE_SR_ROOT/qemu/kernel-bench.config" ;;
    *) die "VARIANT=$1: unknown kernel variant; use default, debug or bench" ;;
  esac
}

# make bench's scripts measure on the bench kernel (both drivers, as distributions build
# them); BENCH_VARIANT=default measures on the test kernel instead, for a comparison.
bench_variant() {
  export VARIANT=${BENCH_VARIANT:-bench}
  kernel_frags "$VARIANT" > /dev/null
}

# The kernel build directory for a variant; prints the path.
kernel_dir() {
  local variant=${1:-default} frags key list
  list=$(kernel_frags "$variant") || exit 1
  mapfile -t frags <<< "$list"
  key=$(cache_key "$(ksrc_version)" "${frags[@]}" "$(/usr/bin/rustc --version)" \
        "$(clang-19 --version | head -1)" "$("$CACHE/tools/bin/bindgen" --version)" \
        "recipe $KERNEL_RECIPE")
  printf '%s/kernel/%s-%s\n' "$CACHE" "$variant" "$key"
}

# The guest image for the current package list and init stub; prints the path.
image_path() {
  local key
  key=$(cache_key "$RXE_SR_ROOT/scripts/build-image" "$RXE_SR_ROOT/qemu/image-init")
  printf '%s/image/%s/rootfs.ext4\n' "$CACHE" "$key"
}

# share_kernel SHARE VARIANT KODIR: puts into SHARE what a guest booting VARIANT's kernel
# loads: the kernel's modules (SHARE/modules/KVER) and, from KODIR (a directory holding
# rxe_sr.ko and the selftests' rxe_sr_ulp_test.ko built against that kernel), the
# out-of-tree ones (SHARE/ko/KVER/). guest-init and the tests pick them by `uname -r`.
share_kernel() {
  local share=$1 kdir kver
  kdir=$(kernel_dir "$2")
  kver=$(make -s -C "$kdir" kernelrelease 2>/dev/null)
  [ -n "$kver" ] || die "no kernel release for the $2 kernel"
  mkdir -p "$share/modules" "$share/ko/$kver"
  cp -a "$kdir/modinst/lib/modules/$kver" "$share/modules/"
  rm -f "$share/modules/$kver/build" "$share/modules/$kver/source"
  if compgen -G "$3/*.ko" > /dev/null; then cp "$3"/*.ko "$share/ko/$kver/"; fi
}

# deb_kernel_release: the release of the kernel unpacked in RXE_SR_KERNEL_DEB (make
# kernel-deb's image and headers packages, extracted: boot/vmlinuz-REL, lib/modules/REL,
# usr/src/linux-headers-REL, as scripts/test-kernel-deb leaves them).
deb_kernel_release() {
  local v
  v=$(cd "$RXE_SR_KERNEL_DEB/lib/modules" 2> /dev/null && ls | head -1)
  [ -n "$v" ] && [ -f "$RXE_SR_KERNEL_DEB/boot/vmlinuz-$v" ] || die "no kernel unpacked in RXE_SR_KERNEL_DEB=$RXE_SR_KERNEL_DEB"
  printf '%s\n' "$v"
}

# share_deb_kernel SHARE KO_DIR: as share_kernel, for the kernel of RXE_SR_KERNEL_DEB.
share_deb_kernel() {
  local kver
  kver=$(deb_kernel_release)
  mkdir -p "$1/modules" "$1/ko/$kver"
  cp -a "$RXE_SR_KERNEL_DEB/lib/modules/$kver" "$1/modules/"
  rm -f "$1/modules/$kver/build" "$1/modules/$kver/source"
  if compgen -G "$2/*.ko" > /dev/null; then cp "$2"/*.ko "$1/ko/$kver/"; fi
}

# stash_module DIR: copies the module and the selftests' test module, as build-module last
# built them, to DIR.
stash_module() {
  local f
  mkdir -p "$1"
  for f in "$RXE_SR_ROOT/rxe_sr.ko" "$RXE_SR_ROOT/selftests/kmod/rxe_sr_ulp_test.ko"; do
    if [ -f "$f" ]; then cp "$f" "$1/"; fi
  done
}

# prepare_share [TEST.sh ...]: a fresh run directory whose share/ holds what the guests need
# (guest-init, the test kernel's modules, rxe_sr.ko, the selftests, the Wireshark
# dissector in tools/, the test list). The modules are those built for VARIANT's kernel
# (the tree's); with RXE_SR_PEER_VARIANT, the peers' kernel's too, from PEER_KO (see
# vm-test).
# Prints the run directory.
prepare_share() {
  local run share
  run="$CACHE/runs/$(date +%Y%m%d-%H%M%S)-$$"
  share="$run/share"
  mkdir -p "$share/out"
  install -m 0755 "$RXE_SR_ROOT/qemu/guest-init" "$share/guest-init"
  stash_module "$run/ko"
  if [ -n "${RXE_SR_KERNEL_DEB:-}" ]; then share_deb_kernel "$share" "$run/ko"
  else share_kernel "$share" "${VARIANT:-default}" "$run/ko"
  fi
  if [ -n "${RXE_SR_PEER_VARIANT:-}" ] && [ "$RXE_SR_PEER_VARIANT" != "${VARIANT:-default}" ]; then
    [ -f "${PEER_KO:-}/rxe_sr.ko" ] || die "RXE_SR_PEER_VARIANT needs the peer's rxe_sr.ko in PEER_KO (scripts/vm-test builds it)"
    share_kernel "$share" "$RXE_SR_PEER_VARIANT" "$PEER_KO"
  fi
  cp -a "$RXE_SR_ROOT/selftests" "$share/selftests"
  cp -a "$RXE_SR_ROOT/tools" "$share/tools"
  # Named tests, or every test of selftests/tests.list but those in RXE_SR_SKIP_TESTS.
  if [ $# -gt 0 ]; then printf '%s\n' "$@" > "$share/tests.list"
  else
    grep -v '^#' "$RXE_SR_ROOT/selftests/tests.list" | grep . |
      grep -vxF -f <(printf '%s\n' ${RXE_SR_SKIP_TESTS:-}) > "$share/tests.list"
  fi
  printf '#!/bin/bash\nexec bash "$HOST_SHARE/selftests/lib/runner.sh"\n' > "$share/run.sh"
  # Settings the tests read (selftests/lib/lib.sh): RXE_SR_QUICK=1 shortens the long ones.
  printf 'RXE_SR_QUICK=%s\n' "${RXE_SR_QUICK:-0}" > "$share/settings"
  # The long modes (roce_fuzz.sh's packets a scheme and seed, soak.sh's seconds,
  # qp_churn.sh's rounds, rdma_cm_churn.sh's connections a round), and RXE_SR_LEAKS=1: the
  # tests that check for leaks fail if the kernel has no kmemleak running.
  local v
  for v in RXE_SR_FUZZ_PACKETS RXE_SR_FUZZ_SCHEMES RXE_SR_FUZZ_SEED RXE_SR_SOAK_SECS RXE_SR_CHURN_ROUNDS RXE_SR_CM_CONNS \
    RXE_SR_LEAKS; do
    if [ -n "${!v:-}" ]; then printf '%s=%q\n' "$v" "${!v}" >> "$share/settings"; fi
  done
  chmod +x "$share/run.sh"
  # Keep the last few runs only.
  ls -1dt "$CACHE"/runs/*/ 2>/dev/null | tail -n +6 | xargs -r rm -rf
  printf '%s\n' "$run"
}
