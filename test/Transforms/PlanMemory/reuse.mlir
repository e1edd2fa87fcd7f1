// RUN: mpc-opt %s -split-input-file --mpc-plan-memory | FileCheck %s
// Without reuse every value has its own bytes (the first case: five
// 16 KiB values, 80 KiB, none in place).
// RUN: mpc-opt %s -split-input-file --mpc-plan-memory=reuse=false | FileCheck %s --check-prefix=NOREUSE
// NOREUSE-LABEL: func @chain
// NOREUSE-SAME: attributes {mpc.arena_bytes = 81920 : i64}
// NOREUSE: %[[A:.*]] = mpc.matmul {{.*}} {mpc.offsets = array<i64: [[O1:[0-9]+]]>}
// NOREUSE-NOT: array<i64: [[O1]]>
// NOREUSE: return

// Elementwise ops write in place into a dying operand; a buffer is reused
// once its value is dead. Two 16 KiB buffers suffice for five values.
// CHECK-LABEL: func @chain
// CHECK-SAME: attributes {mpc.arena_bytes = 32768 : i64}
// CHECK: %[[A:.*]] = mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: mpc.relu %[[A]] {mpc.offsets = array<i64: 0>}
// CHECK: mpc.matmul {{.*}} {mpc.offsets = array<i64: 16384>}
// CHECK: mpc.exp {{.*}} {mpc.offsets = array<i64: 16384>}
// CHECK: mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
func.func @chain(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = mpc.matmul %x, %w : tensor<64x64xf32>, tensor<64x64xf32>
  %1 = mpc.relu %0 : tensor<64x64xf32>
  %2 = mpc.matmul %1, %w : tensor<64x64xf32>, tensor<64x64xf32>
  %3 = mpc.exp %2 : tensor<64x64xf32>
  %4 = mpc.matmul %3, %w : tensor<64x64xf32>, tensor<64x64xf32>
  return %4 : tensor<64x64xf32>
}

// -----

// No in place when the operand is still needed later, or for ops that are
// not elementwise (matmul), or when sizes differ (a cast).
// CHECK-LABEL: func @no_in_place
// CHECK: %[[A:.*]] = mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: mpc.relu %[[A]] {mpc.offsets = array<i64: 16384>}
// CHECK: mpc.cast {{.*}} {mpc.offsets = array<i64: 0>}
func.func @no_in_place(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf16>) {
  %0 = mpc.matmul %x, %w : tensor<64x64xf32>, tensor<64x64xf32>
  %1 = mpc.relu %0 : tensor<64x64xf32>
  %2 = mpc.add %1, %0 : tensor<64x64xf32>, tensor<64x64xf32>
  %3 = mpc.cast %2 : tensor<64x64xf32> -> tensor<64x64xf16>
  return %2, %3 : tensor<64x64xf32>, tensor<64x64xf16>
}

// -----

// Arguments, constants and globals are not in the arena (-1 marks a result
// outside it); returned values live to the end.
// CHECK-LABEL: func @outside
// CHECK: mpc.constant
// CHECK-NOT: mpc.offsets
// CHECK: ml_program.global_load
// CHECK-NOT: mpc.offsets
// CHECK: mpc.add {{.*}} {mpc.offsets = array<i64: 0>}
ml_program.global private mutable @b(#mpc.init<zeros>) : tensor<8xf32>
func.func @outside(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = mpc.constant dense<1.0> : tensor<8xf32>
  %b = ml_program.global_load @b : tensor<8xf32>
  %0 = mpc.add %x, %b : tensor<8xf32>, tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A reshape is a view: its result shares its operand's buffer (the same
// offset), and the buffer lives as long as either; an elementwise op after
// it writes in place only into a buffer that both have finished with. A
// reshape of a function argument (outside the arena) gets its own buffer.
// CHECK-LABEL: func @reshape_view
// CHECK-SAME: attributes {mpc.arena_bytes = 49152 : i64}
// CHECK: %[[A:.*]] = mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: %[[V:.*]] = mpc.reshape %[[A]] {mpc.offsets = array<i64: 0>}
// The relu reads the matmul's result, which the view keeps alive: no in place.
// CHECK: mpc.relu %[[A]] {mpc.offsets = array<i64: 16384>}
// CHECK: mpc.exp %[[V]] {mpc.offsets = array<i64: 0>}
// CHECK: mpc.reshape %arg0 {mpc.offsets = array<i64: 32768>}
func.func @reshape_view(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<4096xf32>, tensor<4096xf32>) {
  %0 = mpc.matmul %x, %w : tensor<64x64xf32>, tensor<64x64xf32>
  %1 = mpc.reshape %0 : tensor<64x64xf32> -> tensor<4096xf32>
  %2 = mpc.relu %0 : tensor<64x64xf32>
  %3 = mpc.exp %1 : tensor<4096xf32>
  %4 = mpc.reshape %x : tensor<64x64xf32> -> tensor<4096xf32>
  return %2, %3, %4 : tensor<64x64xf32>, tensor<4096xf32>, tensor<4096xf32>
}

// -----

// A long chain of views and in-place ops: the plan's value-to-buffer map
// grows at some reshape's insertion (its entry is read before inserting;
// the sanitized test run checks it). One buffer holds every value.
// CHECK-LABEL: func @many_views
// CHECK-SAME: attributes {mpc.arena_bytes = 128 : i64}
func.func @many_views(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %v0 = mpc.neg %x : tensor<4x8xf32>
  %v1 = mpc.reshape %v0 : tensor<4x8xf32> -> tensor<32xf32>
  %v2 = mpc.neg %v1 : tensor<32xf32>
  %v3 = mpc.reshape %v2 : tensor<32xf32> -> tensor<4x8xf32>
  %v4 = mpc.neg %v3 : tensor<4x8xf32>
  %v5 = mpc.reshape %v4 : tensor<4x8xf32> -> tensor<32xf32>
  %v6 = mpc.neg %v5 : tensor<32xf32>
  %v7 = mpc.reshape %v6 : tensor<32xf32> -> tensor<4x8xf32>
  %v8 = mpc.neg %v7 : tensor<4x8xf32>
  %v9 = mpc.reshape %v8 : tensor<4x8xf32> -> tensor<32xf32>
  %v10 = mpc.neg %v9 : tensor<32xf32>
  %v11 = mpc.reshape %v10 : tensor<32xf32> -> tensor<4x8xf32>
  %v12 = mpc.neg %v11 : tensor<4x8xf32>
  %v13 = mpc.reshape %v12 : tensor<4x8xf32> -> tensor<32xf32>
  %v14 = mpc.neg %v13 : tensor<32xf32>
  %v15 = mpc.reshape %v14 : tensor<32xf32> -> tensor<4x8xf32>
  %v16 = mpc.neg %v15 : tensor<4x8xf32>
  %v17 = mpc.reshape %v16 : tensor<4x8xf32> -> tensor<32xf32>
  %v18 = mpc.neg %v17 : tensor<32xf32>
  %v19 = mpc.reshape %v18 : tensor<32xf32> -> tensor<4x8xf32>
  %v20 = mpc.neg %v19 : tensor<4x8xf32>
  %v21 = mpc.reshape %v20 : tensor<4x8xf32> -> tensor<32xf32>
  %v22 = mpc.neg %v21 : tensor<32xf32>
  %v23 = mpc.reshape %v22 : tensor<32xf32> -> tensor<4x8xf32>
  %v24 = mpc.neg %v23 : tensor<4x8xf32>
  %v25 = mpc.reshape %v24 : tensor<4x8xf32> -> tensor<32xf32>
  %v26 = mpc.neg %v25 : tensor<32xf32>
  %v27 = mpc.reshape %v26 : tensor<32xf32> -> tensor<4x8xf32>
  %v28 = mpc.neg %v27 : tensor<4x8xf32>
  %v29 = mpc.reshape %v28 : tensor<4x8xf32> -> tensor<32xf32>
  %v30 = mpc.neg %v29 : tensor<32xf32>
  %v31 = mpc.reshape %v30 : tensor<32xf32> -> tensor<4x8xf32>
  %v32 = mpc.neg %v31 : tensor<4x8xf32>
  %v33 = mpc.reshape %v32 : tensor<4x8xf32> -> tensor<32xf32>
  %v34 = mpc.neg %v33 : tensor<32xf32>
  %v35 = mpc.reshape %v34 : tensor<32xf32> -> tensor<4x8xf32>
  %v36 = mpc.neg %v35 : tensor<4x8xf32>
  %v37 = mpc.reshape %v36 : tensor<4x8xf32> -> tensor<32xf32>
  %v38 = mpc.neg %v37 : tensor<32xf32>
  %v39 = mpc.reshape %v38 : tensor<32xf32> -> tensor<4x8xf32>
  %v40 = mpc.neg %v39 : tensor<4x8xf32>
  %v41 = mpc.reshape %v40 : tensor<4x8xf32> -> tensor<32xf32>
  %v42 = mpc.neg %v41 : tensor<32xf32>
  %v43 = mpc.reshape %v42 : tensor<32xf32> -> tensor<4x8xf32>
  %v44 = mpc.neg %v43 : tensor<4x8xf32>
  %v45 = mpc.reshape %v44 : tensor<4x8xf32> -> tensor<32xf32>
  %v46 = mpc.neg %v45 : tensor<32xf32>
  %v47 = mpc.reshape %v46 : tensor<32xf32> -> tensor<4x8xf32>
  %v48 = mpc.neg %v47 : tensor<4x8xf32>
  %v49 = mpc.reshape %v48 : tensor<4x8xf32> -> tensor<32xf32>
  %v50 = mpc.neg %v49 : tensor<32xf32>
  %v51 = mpc.reshape %v50 : tensor<32xf32> -> tensor<4x8xf32>
  %v52 = mpc.neg %v51 : tensor<4x8xf32>
  %v53 = mpc.reshape %v52 : tensor<4x8xf32> -> tensor<32xf32>
  %v54 = mpc.neg %v53 : tensor<32xf32>
  %v55 = mpc.reshape %v54 : tensor<32xf32> -> tensor<4x8xf32>
  %v56 = mpc.neg %v55 : tensor<4x8xf32>
  %v57 = mpc.reshape %v56 : tensor<4x8xf32> -> tensor<32xf32>
  %v58 = mpc.neg %v57 : tensor<32xf32>
  %v59 = mpc.reshape %v58 : tensor<32xf32> -> tensor<4x8xf32>
  %v60 = mpc.neg %v59 : tensor<4x8xf32>
  %v61 = mpc.reshape %v60 : tensor<4x8xf32> -> tensor<32xf32>
  %v62 = mpc.neg %v61 : tensor<32xf32>
  %v63 = mpc.reshape %v62 : tensor<32xf32> -> tensor<4x8xf32>
  %v64 = mpc.neg %v63 : tensor<4x8xf32>
  %v65 = mpc.reshape %v64 : tensor<4x8xf32> -> tensor<32xf32>
  %v66 = mpc.neg %v65 : tensor<32xf32>
  %v67 = mpc.reshape %v66 : tensor<32xf32> -> tensor<4x8xf32>
  %v68 = mpc.neg %v67 : tensor<4x8xf32>
  %v69 = mpc.reshape %v68 : tensor<4x8xf32> -> tensor<32xf32>
  %v70 = mpc.neg %v69 : tensor<32xf32>
  %v71 = mpc.reshape %v70 : tensor<32xf32> -> tensor<4x8xf32>
  %v72 = mpc.neg %v71 : tensor<4x8xf32>
  %v73 = mpc.reshape %v72 : tensor<4x8xf32> -> tensor<32xf32>
  %v74 = mpc.neg %v73 : tensor<32xf32>
  %v75 = mpc.reshape %v74 : tensor<32xf32> -> tensor<4x8xf32>
  %v76 = mpc.neg %v75 : tensor<4x8xf32>
  %v77 = mpc.reshape %v76 : tensor<4x8xf32> -> tensor<32xf32>
  %v78 = mpc.neg %v77 : tensor<32xf32>
  %v79 = mpc.reshape %v78 : tensor<32xf32> -> tensor<4x8xf32>
  %v80 = mpc.neg %v79 : tensor<4x8xf32>
  %v81 = mpc.reshape %v80 : tensor<4x8xf32> -> tensor<32xf32>
  %v82 = mpc.neg %v81 : tensor<32xf32>
  %v83 = mpc.reshape %v82 : tensor<32xf32> -> tensor<4x8xf32>
  %v84 = mpc.neg %v83 : tensor<4x8xf32>
  %v85 = mpc.reshape %v84 : tensor<4x8xf32> -> tensor<32xf32>
  %v86 = mpc.neg %v85 : tensor<32xf32>
  %v87 = mpc.reshape %v86 : tensor<32xf32> -> tensor<4x8xf32>
  %v88 = mpc.neg %v87 : tensor<4x8xf32>
  %v89 = mpc.reshape %v88 : tensor<4x8xf32> -> tensor<32xf32>
  %v90 = mpc.neg %v89 : tensor<32xf32>
  %v91 = mpc.reshape %v90 : tensor<32xf32> -> tensor<4x8xf32>
  %v92 = mpc.neg %v91 : tensor<4x8xf32>
  %v93 = mpc.reshape %v92 : tensor<4x8xf32> -> tensor<32xf32>
  %v94 = mpc.neg %v93 : tensor<32xf32>
  %v95 = mpc.reshape %v94 : tensor<32xf32> -> tensor<4x8xf32>
  %v96 = mpc.neg %v95 : tensor<4x8xf32>
  %v97 = mpc.reshape %v96 : tensor<4x8xf32> -> tensor<32xf32>
  %v98 = mpc.neg %v97 : tensor<32xf32>
  %v99 = mpc.reshape %v98 : tensor<32xf32> -> tensor<4x8xf32>
  %v100 = mpc.neg %v99 : tensor<4x8xf32>
  %v101 = mpc.reshape %v100 : tensor<4x8xf32> -> tensor<32xf32>
  %v102 = mpc.neg %v101 : tensor<32xf32>
  %v103 = mpc.reshape %v102 : tensor<32xf32> -> tensor<4x8xf32>
  %v104 = mpc.neg %v103 : tensor<4x8xf32>
  %v105 = mpc.reshape %v104 : tensor<4x8xf32> -> tensor<32xf32>
  %v106 = mpc.neg %v105 : tensor<32xf32>
  %v107 = mpc.reshape %v106 : tensor<32xf32> -> tensor<4x8xf32>
  %v108 = mpc.neg %v107 : tensor<4x8xf32>
  %v109 = mpc.reshape %v108 : tensor<4x8xf32> -> tensor<32xf32>
  %v110 = mpc.neg %v109 : tensor<32xf32>
  %v111 = mpc.reshape %v110 : tensor<32xf32> -> tensor<4x8xf32>
  %v112 = mpc.neg %v111 : tensor<4x8xf32>
  %v113 = mpc.reshape %v112 : tensor<4x8xf32> -> tensor<32xf32>
  %v114 = mpc.neg %v113 : tensor<32xf32>
  %v115 = mpc.reshape %v114 : tensor<32xf32> -> tensor<4x8xf32>
  %v116 = mpc.neg %v115 : tensor<4x8xf32>
  %v117 = mpc.reshape %v116 : tensor<4x8xf32> -> tensor<32xf32>
  %v118 = mpc.neg %v117 : tensor<32xf32>
  %v119 = mpc.reshape %v118 : tensor<32xf32> -> tensor<4x8xf32>
  %v120 = mpc.neg %v119 : tensor<4x8xf32>
  %v121 = mpc.reshape %v120 : tensor<4x8xf32> -> tensor<32xf32>
  %v122 = mpc.neg %v121 : tensor<32xf32>
  %v123 = mpc.reshape %v122 : tensor<32xf32> -> tensor<4x8xf32>
  %v124 = mpc.neg %v123 : tensor<4x8xf32>
  %v125 = mpc.reshape %v124 : tensor<4x8xf32> -> tensor<32xf32>
  %v126 = mpc.neg %v125 : tensor<32xf32>
  %v127 = mpc.reshape %v126 : tensor<32xf32> -> tensor<4x8xf32>
  %v128 = mpc.neg %v127 : tensor<4x8xf32>
  %v129 = mpc.reshape %v128 : tensor<4x8xf32> -> tensor<32xf32>
  %v130 = mpc.neg %v129 : tensor<32xf32>
  %v131 = mpc.reshape %v130 : tensor<32xf32> -> tensor<4x8xf32>
  %v132 = mpc.neg %v131 : tensor<4x8xf32>
  %v133 = mpc.reshape %v132 : tensor<4x8xf32> -> tensor<32xf32>
  %v134 = mpc.neg %v133 : tensor<32xf32>
  %v135 = mpc.reshape %v134 : tensor<32xf32> -> tensor<4x8xf32>
  %v136 = mpc.neg %v135 : tensor<4x8xf32>
  %v137 = mpc.reshape %v136 : tensor<4x8xf32> -> tensor<32xf32>
  %v138 = mpc.neg %v137 : tensor<32xf32>
  %v139 = mpc.reshape %v138 : tensor<32xf32> -> tensor<4x8xf32>
  %v140 = mpc.neg %v139 : tensor<4x8xf32>
  %v141 = mpc.reshape %v140 : tensor<4x8xf32> -> tensor<32xf32>
  %v142 = mpc.neg %v141 : tensor<32xf32>
  %v143 = mpc.reshape %v142 : tensor<32xf32> -> tensor<4x8xf32>
  %v144 = mpc.neg %v143 : tensor<4x8xf32>
  %v145 = mpc.reshape %v144 : tensor<4x8xf32> -> tensor<32xf32>
  %v146 = mpc.neg %v145 : tensor<32xf32>
  %v147 = mpc.reshape %v146 : tensor<32xf32> -> tensor<4x8xf32>
  %v148 = mpc.neg %v147 : tensor<4x8xf32>
  %v149 = mpc.reshape %v148 : tensor<4x8xf32> -> tensor<32xf32>
  %v150 = mpc.neg %v149 : tensor<32xf32>
  %v151 = mpc.reshape %v150 : tensor<32xf32> -> tensor<4x8xf32>
  %v152 = mpc.neg %v151 : tensor<4x8xf32>
  %v153 = mpc.reshape %v152 : tensor<4x8xf32> -> tensor<32xf32>
  %v154 = mpc.neg %v153 : tensor<32xf32>
  %v155 = mpc.reshape %v154 : tensor<32xf32> -> tensor<4x8xf32>
  %v156 = mpc.neg %v155 : tensor<4x8xf32>
  %v157 = mpc.reshape %v156 : tensor<4x8xf32> -> tensor<32xf32>
  %v158 = mpc.neg %v157 : tensor<32xf32>
  %v159 = mpc.reshape %v158 : tensor<32xf32> -> tensor<4x8xf32>
  %v160 = mpc.neg %v159 : tensor<4x8xf32>
  %v161 = mpc.reshape %v160 : tensor<4x8xf32> -> tensor<32xf32>
  %v162 = mpc.neg %v161 : tensor<32xf32>
  %v163 = mpc.reshape %v162 : tensor<32xf32> -> tensor<4x8xf32>
  %v164 = mpc.neg %v163 : tensor<4x8xf32>
  %v165 = mpc.reshape %v164 : tensor<4x8xf32> -> tensor<32xf32>
  %v166 = mpc.neg %v165 : tensor<32xf32>
  %v167 = mpc.reshape %v166 : tensor<32xf32> -> tensor<4x8xf32>
  %v168 = mpc.neg %v167 : tensor<4x8xf32>
  %v169 = mpc.reshape %v168 : tensor<4x8xf32> -> tensor<32xf32>
  %v170 = mpc.neg %v169 : tensor<32xf32>
  %v171 = mpc.reshape %v170 : tensor<32xf32> -> tensor<4x8xf32>
  %v172 = mpc.neg %v171 : tensor<4x8xf32>
  %v173 = mpc.reshape %v172 : tensor<4x8xf32> -> tensor<32xf32>
  %v174 = mpc.neg %v173 : tensor<32xf32>
  %v175 = mpc.reshape %v174 : tensor<32xf32> -> tensor<4x8xf32>
  %v176 = mpc.neg %v175 : tensor<4x8xf32>
  %v177 = mpc.reshape %v176 : tensor<4x8xf32> -> tensor<32xf32>
  %v178 = mpc.neg %v177 : tensor<32xf32>
  %v179 = mpc.reshape %v178 : tensor<32xf32> -> tensor<4x8xf32>
  %v180 = mpc.neg %v179 : tensor<4x8xf32>
  %v181 = mpc.reshape %v180 : tensor<4x8xf32> -> tensor<32xf32>
  %v182 = mpc.neg %v181 : tensor<32xf32>
  %v183 = mpc.reshape %v182 : tensor<32xf32> -> tensor<4x8xf32>
  %v184 = mpc.neg %v183 : tensor<4x8xf32>
  %v185 = mpc.reshape %v184 : tensor<4x8xf32> -> tensor<32xf32>
  %v186 = mpc.neg %v185 : tensor<32xf32>
  %v187 = mpc.reshape %v186 : tensor<32xf32> -> tensor<4x8xf32>
  %v188 = mpc.neg %v187 : tensor<4x8xf32>
  %v189 = mpc.reshape %v188 : tensor<4x8xf32> -> tensor<32xf32>
  %v190 = mpc.neg %v189 : tensor<32xf32>
  %v191 = mpc.reshape %v190 : tensor<32xf32> -> tensor<4x8xf32>
  %v192 = mpc.neg %v191 : tensor<4x8xf32>
  %v193 = mpc.reshape %v192 : tensor<4x8xf32> -> tensor<32xf32>
  %v194 = mpc.neg %v193 : tensor<32xf32>
  %v195 = mpc.reshape %v194 : tensor<32xf32> -> tensor<4x8xf32>
  %v196 = mpc.neg %v195 : tensor<4x8xf32>
  %v197 = mpc.reshape %v196 : tensor<4x8xf32> -> tensor<32xf32>
  %v198 = mpc.neg %v197 : tensor<32xf32>
  %v199 = mpc.reshape %v198 : tensor<32xf32> -> tensor<4x8xf32>
  %v200 = mpc.neg %v199 : tensor<4x8xf32>
  %v201 = mpc.reshape %v200 : tensor<4x8xf32> -> tensor<32xf32>
  %v202 = mpc.neg %v201 : tensor<32xf32>
  %v203 = mpc.reshape %v202 : tensor<32xf32> -> tensor<4x8xf32>
  %v204 = mpc.neg %v203 : tensor<4x8xf32>
  %v205 = mpc.reshape %v204 : tensor<4x8xf32> -> tensor<32xf32>
  %v206 = mpc.neg %v205 : tensor<32xf32>
  %v207 = mpc.reshape %v206 : tensor<32xf32> -> tensor<4x8xf32>
  %v208 = mpc.neg %v207 : tensor<4x8xf32>
  %v209 = mpc.reshape %v208 : tensor<4x8xf32> -> tensor<32xf32>
  %v210 = mpc.neg %v209 : tensor<32xf32>
  %v211 = mpc.reshape %v210 : tensor<32xf32> -> tensor<4x8xf32>
  %v212 = mpc.neg %v211 : tensor<4x8xf32>
  %v213 = mpc.reshape %v212 : tensor<4x8xf32> -> tensor<32xf32>
  %v214 = mpc.neg %v213 : tensor<32xf32>
  %v215 = mpc.reshape %v214 : tensor<32xf32> -> tensor<4x8xf32>
  %v216 = mpc.neg %v215 : tensor<4x8xf32>
  %v217 = mpc.reshape %v216 : tensor<4x8xf32> -> tensor<32xf32>
  %v218 = mpc.neg %v217 : tensor<32xf32>
  %v219 = mpc.reshape %v218 : tensor<32xf32> -> tensor<4x8xf32>
  %v220 = mpc.neg %v219 : tensor<4x8xf32>
  %v221 = mpc.reshape %v220 : tensor<4x8xf32> -> tensor<32xf32>
  %v222 = mpc.neg %v221 : tensor<32xf32>
  %v223 = mpc.reshape %v222 : tensor<32xf32> -> tensor<4x8xf32>
  %v224 = mpc.neg %v223 : tensor<4x8xf32>
  %v225 = mpc.reshape %v224 : tensor<4x8xf32> -> tensor<32xf32>
  %v226 = mpc.neg %v225 : tensor<32xf32>
  %v227 = mpc.reshape %v226 : tensor<32xf32> -> tensor<4x8xf32>
  %v228 = mpc.neg %v227 : tensor<4x8xf32>
  %v229 = mpc.reshape %v228 : tensor<4x8xf32> -> tensor<32xf32>
  %v230 = mpc.neg %v229 : tensor<32xf32>
  %v231 = mpc.reshape %v230 : tensor<32xf32> -> tensor<4x8xf32>
  %v232 = mpc.neg %v231 : tensor<4x8xf32>
  %v233 = mpc.reshape %v232 : tensor<4x8xf32> -> tensor<32xf32>
  %v234 = mpc.neg %v233 : tensor<32xf32>
  %v235 = mpc.reshape %v234 : tensor<32xf32> -> tensor<4x8xf32>
  %v236 = mpc.neg %v235 : tensor<4x8xf32>
  %v237 = mpc.reshape %v236 : tensor<4x8xf32> -> tensor<32xf32>
  %v238 = mpc.neg %v237 : tensor<32xf32>
  %v239 = mpc.reshape %v238 : tensor<32xf32> -> tensor<4x8xf32>
  %v240 = mpc.neg %v239 : tensor<4x8xf32>
  %v241 = mpc.reshape %v240 : tensor<4x8xf32> -> tensor<32xf32>
  %v242 = mpc.neg %v241 : tensor<32xf32>
  %v243 = mpc.reshape %v242 : tensor<32xf32> -> tensor<4x8xf32>
  %v244 = mpc.neg %v243 : tensor<4x8xf32>
  %v245 = mpc.reshape %v244 : tensor<4x8xf32> -> tensor<32xf32>
  %v246 = mpc.neg %v245 : tensor<32xf32>
  %v247 = mpc.reshape %v246 : tensor<32xf32> -> tensor<4x8xf32>
  %v248 = mpc.neg %v247 : tensor<4x8xf32>
  %v249 = mpc.reshape %v248 : tensor<4x8xf32> -> tensor<32xf32>
  %v250 = mpc.neg %v249 : tensor<32xf32>
  %v251 = mpc.reshape %v250 : tensor<32xf32> -> tensor<4x8xf32>
  %v252 = mpc.neg %v251 : tensor<4x8xf32>
  %v253 = mpc.reshape %v252 : tensor<4x8xf32> -> tensor<32xf32>
  %v254 = mpc.neg %v253 : tensor<32xf32>
  %v255 = mpc.reshape %v254 : tensor<32xf32> -> tensor<4x8xf32>
  %v256 = mpc.neg %v255 : tensor<4x8xf32>
  %v257 = mpc.reshape %v256 : tensor<4x8xf32> -> tensor<32xf32>
  %v258 = mpc.neg %v257 : tensor<32xf32>
  %v259 = mpc.reshape %v258 : tensor<32xf32> -> tensor<4x8xf32>
  %v260 = mpc.neg %v259 : tensor<4x8xf32>
  %v261 = mpc.reshape %v260 : tensor<4x8xf32> -> tensor<32xf32>
  %v262 = mpc.neg %v261 : tensor<32xf32>
  %v263 = mpc.reshape %v262 : tensor<32xf32> -> tensor<4x8xf32>
  %v264 = mpc.neg %v263 : tensor<4x8xf32>
  %v265 = mpc.reshape %v264 : tensor<4x8xf32> -> tensor<32xf32>
  %v266 = mpc.neg %v265 : tensor<32xf32>
  %v267 = mpc.reshape %v266 : tensor<32xf32> -> tensor<4x8xf32>
  %v268 = mpc.neg %v267 : tensor<4x8xf32>
  %v269 = mpc.reshape %v268 : tensor<4x8xf32> -> tensor<32xf32>
  %v270 = mpc.neg %v269 : tensor<32xf32>
  %v271 = mpc.reshape %v270 : tensor<32xf32> -> tensor<4x8xf32>
  %v272 = mpc.neg %v271 : tensor<4x8xf32>
  %v273 = mpc.reshape %v272 : tensor<4x8xf32> -> tensor<32xf32>
  %v274 = mpc.neg %v273 : tensor<32xf32>
  %v275 = mpc.reshape %v274 : tensor<32xf32> -> tensor<4x8xf32>
  %v276 = mpc.neg %v275 : tensor<4x8xf32>
  %v277 = mpc.reshape %v276 : tensor<4x8xf32> -> tensor<32xf32>
  %v278 = mpc.neg %v277 : tensor<32xf32>
  %v279 = mpc.reshape %v278 : tensor<32xf32> -> tensor<4x8xf32>
  %v280 = mpc.neg %v279 : tensor<4x8xf32>
  %v281 = mpc.reshape %v280 : tensor<4x8xf32> -> tensor<32xf32>
  %v282 = mpc.neg %v281 : tensor<32xf32>
  %v283 = mpc.reshape %v282 : tensor<32xf32> -> tensor<4x8xf32>
  %v284 = mpc.neg %v283 : tensor<4x8xf32>
  %v285 = mpc.reshape %v284 : tensor<4x8xf32> -> tensor<32xf32>
  %v286 = mpc.neg %v285 : tensor<32xf32>
  %v287 = mpc.reshape %v286 : tensor<32xf32> -> tensor<4x8xf32>
  %v288 = mpc.neg %v287 : tensor<4x8xf32>
  %v289 = mpc.reshape %v288 : tensor<4x8xf32> -> tensor<32xf32>
  %v290 = mpc.neg %v289 : tensor<32xf32>
  %v291 = mpc.reshape %v290 : tensor<32xf32> -> tensor<4x8xf32>
  %v292 = mpc.neg %v291 : tensor<4x8xf32>
  %v293 = mpc.reshape %v292 : tensor<4x8xf32> -> tensor<32xf32>
  %v294 = mpc.neg %v293 : tensor<32xf32>
  %v295 = mpc.reshape %v294 : tensor<32xf32> -> tensor<4x8xf32>
  %v296 = mpc.neg %v295 : tensor<4x8xf32>
  %v297 = mpc.reshape %v296 : tensor<4x8xf32> -> tensor<32xf32>
  %v298 = mpc.neg %v297 : tensor<32xf32>
  %v299 = mpc.reshape %v298 : tensor<32xf32> -> tensor<4x8xf32>
  %v300 = mpc.neg %v299 : tensor<4x8xf32>
  return %v300 : tensor<4x8xf32>
}

// -----

// mpc.matmul_add accumulates in place into its addend where the addend dies
// there (a chain of residual gradients is one buffer), never into its
// product's operands; an addend read later gets a buffer of its own.
// CHECK-LABEL: func @matmul_add_in_place
// CHECK: %[[G:.*]] = mpc.exp {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: %[[A:.*]] = mpc.matmul_add %{{.*}}, %{{.*}}, %[[G]] {{.*}}mpc.offsets = array<i64: 0>
// CHECK: %[[B:.*]] = mpc.matmul_add %{{.*}}, %{{.*}}, %[[A]] {{.*}}mpc.offsets = array<i64: 0>
// CHECK: mpc.matmul_add %{{.*}}, %{{.*}}, %[[B]] {{.*}}mpc.offsets = array<i64: 16384>
func.func @matmul_add_in_place(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %g = mpc.exp %x : tensor<64x64xf32>
  %0 = mpc.matmul_add %x, %w, %g : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %1 = mpc.matmul_add %x, %w, %0 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %2 = mpc.matmul_add %x, %w, %1 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %1, %2 : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// mpc.softmax_dropout_backward writes the scores' gradient over the
// probabilities' gradient where that dies there and the types match (each
// row is read whole before its row of the result is written); its dropped
// probabilities take a buffer of their own.
// CHECK-LABEL: func @softmax_dropout_backward_in_place
// CHECK: mpc.matmul {{.*}} {mpc.offsets = array<i64: 0>}
// CHECK: mpc.softmax_dropout_backward {{.*}} {mpc.offsets = array<i64: 0, 8192>
func.func @softmax_dropout_backward_in_place(%x: tensor<64x64xf16>, %w: tensor<64x64xf16>, %s: tensor<64x64xf16>) -> (tensor<64x64xf16>, tensor<64x64xf16>) {
  %g = mpc.matmul %x, %w : tensor<64x64xf16>, tensor<64x64xf16>
  %ds, %pd = mpc.softmax_dropout_backward %g, %s {p = 0.1 : f64, seed = 3 : i64} : tensor<64x64xf16> dropped tensor<64x64xf16>
  return %ds, %pd : tensor<64x64xf16>, tensor<64x64xf16>
}

// -----

// Not over a gradient of another type, nor over one read later.
// CHECK-LABEL: func @softmax_dropout_backward_apart
// CHECK: mpc.matmul {{.*}} {mpc.offsets = array<i64: 16384>}
// CHECK: mpc.softmax_dropout_backward {{.*}} {mpc.offsets = array<i64: 0>
// CHECK: mpc.matmul {{.*}} {mpc.offsets = array<i64: 16384>}
// CHECK: mpc.softmax_dropout_backward {{.*}} {mpc.offsets = array<i64: 24576>
func.func @softmax_dropout_backward_apart(%x: tensor<64x64xf16>, %w: tensor<64x64xf16>, %s: tensor<64x64xf16>) -> (tensor<64x64xf32>, tensor<64x64xf16>, tensor<64x64xf16>) {
  %g = mpc.matmul %x, %w : tensor<64x64xf16>, tensor<64x64xf16>
  %ds = mpc.softmax_dropout_backward %g, %s {p = 0.1 : f64, seed = 3 : i64} : tensor<64x64xf16> -> tensor<64x64xf32>
  %h = mpc.matmul %x, %w : tensor<64x64xf16>, tensor<64x64xf16>
  %dt = mpc.softmax_dropout_backward %h, %s {p = 0.1 : f64, seed = 3 : i64} : tensor<64x64xf16>
  return %ds, %h, %dt : tensor<64x64xf32>, tensor<64x64xf16>, tensor<64x64xf16>
}

// -----

// An add-layer-norm backward's input or residual gradient nobody reads
// takes no buffer (-1: the kernel does not write it), but for an input
// gradient whose sums it computes (input_sums), which it reads back.
// CHECK-LABEL: func @add_layer_norm_backward_unread
// CHECK: mpc.add_layer_norm_backward {{.*}} {mpc.offsets = array<i64: 0, -1, {{[0-9]+}}, {{[0-9]+}}>}
// CHECK: mpc.add_layer_norm_backward {{.*}}, mpc.offsets = array<i64: -1, {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}>}
// CHECK: mpc.add_layer_norm_backward {{.*}} {input_sums, mpc.offsets = array<i64: {{[0-9]+}}, -1, {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}>}
func.func @add_layer_norm_backward_unread(%dy: tensor<4x8xf16>, %x: tensor<4x8xf16>, %mean: tensor<4xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf16>, tensor<8xf32>, tensor<4x8xf16>, tensor<8xf32>, tensor<8xf32>) {
  %a:4 = mpc.add_layer_norm_backward %dy, %x, %mean, %mean, %g : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  %b:4 = mpc.add_layer_norm_backward %dy, %x, %mean, %mean, %g {dropout_p = 0.1 : f64} : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  %c:5 = mpc.add_layer_norm_backward %dy, %x, %mean, %mean, %g {input_sums} : tensor<4x8xf16>, tensor<4xf32>, tensor<8xf32>
  return %a#0, %a#2, %b#1, %b#3, %c#4 : tensor<4x8xf16>, tensor<8xf32>, tensor<4x8xf16>, tensor<8xf32>, tensor<8xf32>
}
