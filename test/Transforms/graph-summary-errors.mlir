// RUN: not mpc-opt %s --mpc-graph-summary=output=%t.missing/summary.txt -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: mpc-graph-summary: cannot open report output: {{.*}}summary.txt
module {}
