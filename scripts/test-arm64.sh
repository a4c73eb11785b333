#!/usr/bin/env bash
# Runs the ARM64 build's tests (scripts/build-arm64.sh) under QEMU's user-mode
# emulation (Debian's qemu-user), each kernel test on two emulated CPUs:
#   cortex-a53  ARMv8.0 NEON only: no dot product (sdot/udot), no fp16
#               arithmetic, so the plain NEON kernels and scalar fallbacks run;
#   neoverse-n1 ARMv8.2 (Graviton2's core): dotprod and fp16, so the sdot
#               kernels run (a real core's feature set, where QEMU's `max`
#               would add SVE and more that no kernel here uses).
# The engine reads the CPU's hwcaps (getauxval), which QEMU reports for the
# CPU it emulates, so one binary picks different kernels on each.
#
# The subset, and why (CI budget: this step should add at most ~15 minutes on
# 2 cores, and QEMU runs these binaries 10-40x slower than native):
#   kernel tests, both CPUs: every SIMD kernel against its scalar twin
#     (weights: test_legacy_types, test_kquant_dot, test_kquant_rows16,
#     test_float_types, test_kernels' GEMV/GEMM; attention rows and tiles:
#     test_row_kernels, test_tile_kernels; q2_0: test_q2_codec,
#     test_q2_codec_simd; test_core, which also checks that the engine saw
#     the emulated CPU's dot product or its absence);
#   once, on neoverse-n1: the forward pass against the NumPy reference on the tiny
#     models (test_forward_reference, test_layer_ops) and the fused attention
#     against the reference attention (test_fused_vs_reference), and a whole
#     forward pass on the scalar kernel table against NEON's (test_forward_isas).
# Left out: the server, tokenizer, grammar, chat and tool tests (no ARM code
# in them: they are plain C++ the x86 run covers) and the shared-data tests
# (real models, minutes each under emulation).
#
#   bash scripts/test-arm64.sh                 # all of the above
#   bash scripts/test-arm64.sh --list-targets  # the test binaries (for the build)
set -euo pipefail
cd "$(dirname "$0")/.."

KERNEL_TESTS=(test_legacy_types test_kquant_dot test_kquant_rows16 test_kquant_types test_float_types test_kernels
              test_row_kernels test_tile_kernels test_q2_codec test_q2_codec_simd test_core)
ONCE_TESTS=(test_fused_vs_reference test_forward_reference test_layer_ops test_forward_isas)

if [ "${1:-}" = --list-targets ]; then
  echo "${KERNEL_TESTS[@]}" "${ONCE_TESTS[@]}"
  exit 0
fi

QEMU="$(command -v qemu-aarch64 || command -v qemu-aarch64-static || true)"
if [ -z "$QEMU" ]; then
  echo "test-arm64: qemu-aarch64 missing: run bash scripts/setup-deps.sh --arm64" >&2
  exit 1
fi
# The arm64 loader and C/C++ libraries of the cross toolchain (GoogleTest is
# linked statically).
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu

# Jobs: "CPU TEST [GTEST_FILTER]". The fused attention test runs its q2_0
# and f16 cases (the NEON kernels' rows), the tiled prompt path and the
# semantics checks; its other cache types decode through the same generic
# C++ as on x86, and its paged case (90 s under QEMU) checks page tables,
# plain C++ too.
JOBS_LIST=()
for t in "${ONCE_TESTS[@]}"; do
  if [ "$t" = test_fused_vs_reference ]; then
    JOBS_LIST+=("neoverse-n1 $t *q2_0*:*f16_f16*:FusedVsReferenceQ2.*:FusedVsReferenceTiles.*:AttentionSemantics.*")
  else
    JOBS_LIST+=("neoverse-n1 $t")
  fi
done
for t in "${KERNEL_TESTS[@]}"; do JOBS_LIST+=("cortex-a53 $t" "neoverse-n1 $t"); done

run() {  # run CPU TEST [FILTER]: prints one line, and the log's tail on failure
  local cpu="$1" t="$2" filter="${3:-*}" start=$SECONDS log="build-arm64/$2.$1.log"
  # test_core checks that the engine saw the emulated CPU's dot product (or not).
  local dotprod=0
  [ "$cpu" = cortex-a53 ] || dotprod=1
  if OSCAR_EXPECT_ARM_DOTPROD=$dotprod QEMU_CPU="$cpu" "$QEMU" "build-arm64/tests/$t" --gtest_brief=1 --gtest_filter="$filter" > "$log" 2>&1; then
    echo "test-arm64: $t on $cpu: passed ($((SECONDS - start)) s)"
  else
    echo "test-arm64: $t on $cpu: FAILED ($((SECONDS - start)) s); log:"
    tail -n 60 "$log"
    return 1
  fi
}

# Two at a time (CI has 2 cores; each QEMU process runs one guest thread
# mostly), the longest (the fused attention test) first.
PAR="${JOBS:-$(nproc)}"
total=$SECONDS
status_dir="$(mktemp -d)"
trap 'rm -rf "$status_dir"' EXIT
i=0
for job in "${JOBS_LIST[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$PAR" ]; do wait -n || true; done
  # shellcheck disable=SC2086
  ( set -f; run $job || touch "$status_dir/failed.$i" ) &
  i=$((i + 1))
done
wait
echo "test-arm64: ${#JOBS_LIST[@]} runs in $((SECONDS - total)) s"
if compgen -G "$status_dir/failed.*" >/dev/null; then
  echo "test-arm64: some ARM64 tests failed (above)" >&2
  exit 1
fi
