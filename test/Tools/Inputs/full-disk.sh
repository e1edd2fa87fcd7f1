#!/usr/bin/env bash
# full-disk.sh DIR SIZE COMMAND...: runs COMMAND with a tmpfs of SIZE
# mounted at DIR (a disk that fills), prints its exit status (a signal as
# 128 + its number) and what it left in DIR, and unmounts DIR whatever
# happened.
set -u
dir=$1 size=$2
shift 2
mkdir -p "$dir"
mount -t tmpfs -o "size=$size" tmpfs "$dir" || exit 2
trap 'umount "$dir"' EXIT
"$@"
echo "exit $?"
echo "left: $(cd "$dir" && ls -A | tr '\n' ' ')"
