#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every eBPF object builds for x86-64 and for arm64 (clang cross-compiles BPF; bpf/arch/ gives the
# other architecture's registers), and each makes a skeleton with bpftool.
#   tests/packaging/bpf_cross_build.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1
build=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
vmlinux="$build/generated/bpf"
[ -f "$vmlinux/vmlinux.h" ] || { echo "no vmlinux.h in $vmlinux (build first)"; exit 1; }
# <asm/errno.h> (usdt.bpf.h includes it) is the generic one on both: the host's serves.
multiarch="-I/usr/include/$(gcc -dumpmachine)"
for arch in x86 arm64; do
  extra=""
  [ "$arch" = arm64 ] && extra="-DPM_CROSS_ARCH_REGS -I$src/bpf/arch/arm64"
  for prog in scheduler block probe floor stacks; do
    # shellcheck disable=SC2086
    clang -target bpf -mcpu=v3 -g -O2 -Wall -Werror -D__TARGET_ARCH_$arch $extra $multiarch -I"$vmlinux" -I"$src/bpf" \
      -c "$src/bpf/$prog.bpf.c" -o "$out/$prog.$arch.o"
    bpftool gen skeleton "$out/$prog.$arch.o" name "${prog}_bpf" > "$out/$prog.$arch.skel.h"
    echo "$arch: $prog.bpf.o and its skeleton ($(wc -c < "$out/$prog.$arch.o") bytes)"
  done
done
