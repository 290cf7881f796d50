#!/usr/bin/env bash
# sim-fingerprint.sh REF...: whether a change leaves the chunked simulation's bits alone. Builds the
# simulation's libraries of each committed REF (scripts/kernel-dev/ref-build.sh), compiles scripts/kernel-dev/sim-fingerprint.cpp
# (this checkout's) against each REF's headers and libraries, and prints each REF's hash of the outputs on
# the named chunked cases; exits non-zero if any REF's hashes differ from the first's. The kernel's bits
# are the simulation's only where chunked_cuda_vs_sim_test says so, on the device.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -gt 0 ] || { echo "usage: scripts/kernel-dev/sim-fingerprint.sh REF..." >&2; exit 2; }
first="" status=0
for ref in "$@"; do
  build=$(bash scripts/kernel-dev/ref-build.sh "$ref" kda_kernels_sim kda_properties kda_reference | tail -n 1)
  src=$(dirname "$build")/src
  c++ -O2 -std=c++20 -fopenmp -I"$src/tests" -I"$src/reference/include" -I"$src/kernels/include" \
    -I"$src/properties/include" -isystem /usr/include/eigen3 scripts/kernel-dev/sim-fingerprint.cpp -o "$build/sim-fingerprint" \
    "$build/kernels/libkda_kernels_sim.a" "$build/properties/libkda_properties.a" \
    "$build/reference/libkda_reference.a" -lrapidcheck
  "$build/sim-fingerprint" >"$build/sim-fingerprint.txt"
  echo "== $ref"
  cat "$build/sim-fingerprint.txt"
  if [ -z "$first" ]; then
    first=$build/sim-fingerprint.txt
  elif ! cmp -s "$first" "$build/sim-fingerprint.txt"; then
    echo "sim-fingerprint: $ref differs from $1" >&2
    status=1
  fi
done
exit $status
