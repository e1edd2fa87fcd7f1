// RUN: mpc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'std' does not apply to a 'uniform' initializer}}
ml_program.global private mutable @w(#mpc.init<uniform, std = 1.0>) : tensor<4xf32>

// -----

// expected-error @+1 {{a 'constant' initializer needs 'value'}}
ml_program.global private mutable @w(#mpc.init<constant>) : tensor<4xf32>

// -----

// expected-error @+1 {{expects low < high, got [1.000000e+00, 1.000000e+00)}}
ml_program.global private mutable @w(#mpc.init<uniform, low = 1.0, high = 1.0>) : tensor<4xf32>

// -----

// expected-error @+1 {{expects std > 0, got -2.000000e+00}}
ml_program.global private mutable @w(#mpc.init<normal, std = -2.0>) : tensor<4xf32>

// -----

// expected-error @+1 {{expects gain > 0, got 0.000000e+00}}
ml_program.global private mutable @w(#mpc.init<xavier_normal, gain = 0.0>) : tensor<4x4xf32>

// -----

// expected-error @+2 {{expected one of [zeros, ones, constant, uniform, normal, xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal] for parameter initializer, got: glorot}}
// expected-error @+1 {{failed to parse MPC_InitAttr parameter 'kind'}}
ml_program.global private mutable @w(#mpc.init<glorot>) : tensor<4xf32>
