#!/usr/bin/env bash
# On the GPU machine: opens .carry/pack.tgz (made by scripts/gpu-pack.sh) into .carry/bin, lib and
# python, once. Sourced by scripts/gpu-run.sh and scripts/fla-run.sh.
if [ ! -d .carry/bin ]; then
  [ -f .carry/pack.tgz ] || { echo "gpu-unpack: no .carry/pack.tgz: run scripts/gpu-pack.sh first and carry .carry" >&2; exit 2; }
  tar -C .carry -xzf .carry/pack.tgz
fi
