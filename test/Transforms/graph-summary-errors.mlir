// RUN: not mpc-opt %s --mpc-graph-summary=output=%t.missing/summary.txt -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: cannot open summary output: {{.*}}summary.txt
module {}
