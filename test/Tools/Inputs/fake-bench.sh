#!/bin/sh
# Stands in for mpc-bench-kernels where a stand-in ncu runs nothing.
exit 0
