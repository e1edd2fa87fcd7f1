#!/usr/bin/env python3
"""Gradient checks of --mpc-autodiff through the CPU reference backend.

For each case: a tiny f64 graph, loss = sum(op(params) * R) with R a fixed
random tensor, is compiled twice with mpc-compile: as a training step with
SGD at learning rate 1 (so one step moves each parameter by exactly its
gradient) and as the bare loss. The autodiff gradient (initial minus
updated parameters, read from safetensors checkpoints) is compared with
central finite differences of the loss (h = 1e-6, on up to 6 elements of
each parameter, chosen at random): |g - fd| <= 1e-6 + 1e-5 |fd|.

  gradcheck.py --mpc-compile PATH --work DIR [--seed S] [CASE ...]
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys
import zipfile

# name -> (params [(name, shape, low, high)], body, result, result shape)
# Params are f64 globals; the body may use %name for each; the result is
# the op's output.
T = "tensor<%sxf64>"
CASES = {
    "add_broadcast": ([("a", "3x4", -1, 1), ("b", "4", -1, 1)],
                      "%y = mpc.add %a, %b : tensor<3x4xf64>, tensor<4xf64>", "3x4"),
    "sub_broadcast": ([("a", "3x1", -1, 1), ("b", "3x4", -1, 1)],
                      "%y = mpc.sub %a, %b : tensor<3x1xf64>, tensor<3x4xf64>", "3x4"),
    "mul_broadcast": ([("a", "2x3x4", -1, 1), ("b", "3x1", -1, 1)],
                      "%y = mpc.mul %a, %b : tensor<2x3x4xf64>, tensor<3x1xf64>", "2x3x4"),
    "div": ([("a", "3x4", -1, 1), ("b", "3x4", 0.5, 2)],
            "%y = mpc.div %a, %b : tensor<3x4xf64>, tensor<3x4xf64>", "3x4"),
    "pow": ([("a", "3x4", 0.5, 2), ("b", "4", -1, 1)],
            "%y = mpc.pow %a, %b : tensor<3x4xf64>, tensor<4xf64>", "3x4"),
    # The mask from the parameters themselves (no gradient through it),
    # the values broadcast: each gets the gradient where it was chosen.
    "where_broadcast": ([("a", "3x4", -1, 1), ("b", "4", -1, 1)],
                        "%c = mpc.compare \"gt\", %a, %b : tensor<3x4xf64>, tensor<4xf64>\n"
                        "  %y = mpc.where %c, %a, %b : tensor<3x4xi1>, tensor<3x4xf64>, tensor<4xf64>",
                        "3x4"),
    "neg": ([("a", "5", -1, 1)], "%y = mpc.neg %a : tensor<5xf64>", "5"),
    "exp": ([("a", "5", -1, 1)], "%y = mpc.exp %a : tensor<5xf64>", "5"),
    "log": ([("a", "5", 0.5, 2)], "%y = mpc.log %a : tensor<5xf64>", "5"),
    "sqrt": ([("a", "5", 0.5, 2)], "%y = mpc.sqrt %a : tensor<5xf64>", "5"),
    "rsqrt": ([("a", "5", 0.5, 2)], "%y = mpc.rsqrt %a : tensor<5xf64>", "5"),
    "tanh": ([("a", "5", -2, 2)], "%y = mpc.tanh %a : tensor<5xf64>", "5"),
    "sigmoid": ([("a", "5", -2, 2)], "%y = mpc.sigmoid %a : tensor<5xf64>", "5"),
    "relu": ([("a", "8", -1, 1)], "%y = mpc.relu %a : tensor<8xf64>", "8"),
    "sin": ([("a", "8", -4, 4)], "%y = mpc.sin %a : tensor<8xf64>", "8"),
    "cos": ([("a", "8", -4, 4)], "%y = mpc.cos %a : tensor<8xf64>", "8"),
    "gelu": ([("a", "8", -2, 2)], "%y = mpc.gelu %a : tensor<8xf64>", "8"),
    "gelu_tanh": ([("a", "8", -2, 2)],
                  "%y = mpc.gelu %a {approximate} : tensor<8xf64>", "8"),
    "matmul": ([("a", "3x4", -1, 1), ("b", "4x5", -1, 1)],
               "%y = mpc.matmul %a, %b : tensor<3x4xf64>, tensor<4x5xf64>", "3x5"),
    "matmul_ta": ([("a", "4x3", -1, 1), ("b", "4x5", -1, 1)],
                  "%y = mpc.matmul %a, %b {transpose_a} : tensor<4x3xf64>, tensor<4x5xf64>", "3x5"),
    "matmul_tb": ([("a", "3x4", -1, 1), ("b", "5x4", -1, 1)],
                  "%y = mpc.matmul %a, %b {transpose_b} : tensor<3x4xf64>, tensor<5x4xf64>", "3x5"),
    "matmul_tab": ([("a", "4x3", -1, 1), ("b", "5x4", -1, 1)],
                   "%y = mpc.matmul %a, %b {transpose_a, transpose_b} : tensor<4x3xf64>, tensor<5x4xf64>", "3x5"),
    "matmul_batch_broadcast": ([("a", "2x3x4", -1, 1), ("b", "4x5", -1, 1)],
                               "%y = mpc.matmul %a, %b : tensor<2x3x4xf64>, tensor<4x5xf64>", "2x3x5"),
    # Hand-written fused products (f64 stays unfused by --mpc-fuse): the
    # bias, the activation and both operands differentiate as the parts.
    "fused_matmul": ([("a", "3x4", -1, 1), ("b", "4x5", -1, 1), ("c", "5", -1, 1)],
                     "%y = mpc.fused_matmul %a, %b, %c : tensor<3x4xf64>, tensor<4x5xf64>, tensor<5xf64> -> tensor<3x5xf64>", "3x5"),
    "fused_matmul_relu": ([("a", "2x3x4", -1, 1), ("b", "5x4", -1, 1), ("c", "5", -1, 1)],
                          "%y = mpc.fused_matmul %a, %b, %c {activation = \"relu\", transpose_b} : tensor<2x3x4xf64>, tensor<5x4xf64>, tensor<5xf64> -> tensor<2x3x5xf64>", "2x3x5"),
    "fused_matmul_gelu": ([("a", "4x3", -1, 1), ("b", "4x5", -1, 1), ("c", "5", -1, 1)],
                          "%y = mpc.fused_matmul %a, %b, %c {activation = \"gelu_tanh\", transpose_a} : tensor<4x3xf64>, tensor<4x5xf64>, tensor<5xf64> -> tensor<3x5xf64>", "3x5"),
    # A product accumulated into a tensor: the addend's gradient is the
    # output's, the operands' the matmul's.
    "matmul_add": ([("a", "2x3x4", -1, 1), ("b", "5x4", -1, 1), ("c", "2x3x5", -1, 1)],
                   "%y = mpc.matmul_add %a, %b, %c {transpose_b} : tensor<2x3x4xf64>, tensor<5x4xf64>, tensor<2x3x5xf64> -> tensor<2x3x5xf64>", "2x3x5"),
    # The pre-activation written beside the GELU (read by the VJP instead
    # of a second product) and read by the graph too: its own gradient
    # joins the GELU's.
    "fused_matmul_gelu_pre": ([("a", "3x4", -1, 1), ("b", "4x5", -1, 1), ("c", "5", -1, 1)],
                              "%h, %pre = mpc.fused_matmul %a, %b, %c {activation = \"gelu_tanh\"} : tensor<3x4xf64>, tensor<4x5xf64>, tensor<5xf64> -> tensor<3x5xf64>, tensor<3x5xf64>\n"
                              "  %y = mpc.mul %h, %pre : tensor<3x5xf64>, tensor<3x5xf64>", "3x5"),
    # Fused attention (hand-written, and as --mpc-fuse builds it from the
    # unfused graph): query, key and value, sq != sk, d != dv, with dropout
    # (the mask is a function of the seed and the step, the same in the
    # step and the loss evaluations).
    "attention": ([("q", "2x3x4", -1, 1), ("k", "2x5x4", -1, 1), ("v", "2x5x3", -1, 1)],
                  "%y, %lse = mpc.attention %q, %k, %v {scale = 0.7 : f64} : tensor<2x3x4xf64>, tensor<2x5x4xf64>, tensor<2x5x3xf64>", "2x3x3"),
    # An additive f32 bias of the scores (Hugging Face's padding bias: -1e4
    # on padding, here with other values too), broadcast over the queries;
    # no gradient of its own.
    "attention_bias": ([("q", "2x3x4", -1, 1), ("k", "2x5x4", -1, 1), ("v", "2x5x3", -1, 1)],
                       "%bias = mpc.constant dense<[[[0.0, -10000.0, 0.5, -1.5, 0.0]], [[2.0, 0.0, -10000.0, -10000.0, 0.25]]]> : tensor<2x1x5xf32>\n"
                       "  %y, %lse = mpc.attention %q, %k, %v bias(%bias : tensor<2x1x5xf32>) {scale = 0.7 : f64} : tensor<2x3x4xf64>, tensor<2x5x4xf64>, tensor<2x5x3xf64>", "2x3x3"),
    "attention_dropout": ([("q", "2x3x4", -1, 1), ("k", "2x5x4", -1, 1), ("v", "2x5x3", -1, 1)],
                          "%y, %lse = mpc.attention %q, %k, %v {scale = 0.7 : f64, dropout_p = 0.4 : f64, seed = 9 : i64} : tensor<2x3x4xf64>, tensor<2x5x4xf64>, tensor<2x5x3xf64>", "2x3x3"),
    "attention_from_parts": ([("q", "2x3x4", -1, 1), ("k", "2x5x4", -1, 1), ("v", "2x5x3", -1, 1)],
                             "%s = mpc.matmul %q, %k {transpose_b} : tensor<2x3x4xf64>, tensor<2x5x4xf64>\n"
                             "  %c = mpc.constant dense<0.7> : tensor<f64>\n"
                             "  %t = mpc.mul %s, %c : tensor<2x3x5xf64>, tensor<f64>\n"
                             "  %p = mpc.softmax %t : tensor<2x3x5xf64>\n"
                             "  %pd, %mask = mpc.dropout %p {p = 0.4, seed = 9} : tensor<2x3x5xf64>\n"
                             "  %y = mpc.matmul %pd, %v : tensor<2x3x5xf64>, tensor<2x5x3xf64>", "2x3x3"),
    "attention_masked": ([("q", "2x3x4", -1, 1), ("k", "2x5x4", -1, 1), ("v", "2x5x3", -1, 1)],
                         "%m = mpc.constant dense<[[[true, false, false, true, false]], [[false, false, true, false, false]]]> : tensor<2x1x5xi1>\n"
                         "  %y, %lse = mpc.attention %q, %k, %v mask(%m : tensor<2x1x5xi1>) {scale = 0.7 : f64, mask_value = -3.0 : f64, dropout_p = 0.2 : f64, seed = 4 : i64} : tensor<2x3x4xf64>, tensor<2x5x4xf64>, tensor<2x5x3xf64>", "2x3x3"),
    "attention_masked_from_parts": ([("q", "2x3x4", -1, 1), ("k", "2x5x4", -1, 1), ("v", "2x5x3", -1, 1)],
                                    "%s = mpc.matmul %q, %k {transpose_b} : tensor<2x3x4xf64>, tensor<2x5x4xf64>\n"
                                    "  %keep = mpc.constant dense<[true, false, true, true, false]> : tensor<5xi1>\n"
                                    "  %ninf = mpc.constant dense<-1.0e4> : tensor<f64>\n"
                                    "  %t = mpc.where %keep, %s, %ninf : tensor<5xi1>, tensor<2x3x5xf64>, tensor<f64>\n"
                                    "  %p = mpc.softmax %t : tensor<2x3x5xf64>\n"
                                    "  %y = mpc.matmul %p, %v : tensor<2x3x5xf64>, tensor<2x5x3xf64>", "2x3x3"),
    # The heads as the next-to-last dimension (layout "bshd"): written so,
    # and as --mpc-fuse folds the head transposes around the fused op.
    "attention_bshd": ([("q", "2x3x2x4", -1, 1), ("k", "2x5x2x4", -1, 1), ("v", "2x5x2x3", -1, 1)],
                       "%m = mpc.constant dense<[[[[true, false, false, true, false]]], [[[false, false, true, false, false]]]]> : tensor<2x1x1x5xi1>\n"
                       "  %y, %lse = mpc.attention %q, %k, %v mask(%m : tensor<2x1x1x5xi1>) {scale = 0.7 : f64, mask_value = -3.0 : f64, dropout_p = 0.2 : f64, seed = 4 : i64, layout = \"bshd\"} : tensor<2x3x2x4xf64>, tensor<2x5x2x4xf64>, tensor<2x5x2x3xf64>", "2x3x2x3"),
    "attention_heads_from_parts": ([("q", "2x3x2x4", -1, 1), ("k", "2x5x2x4", -1, 1), ("v", "2x5x2x3", -1, 1)],
                                   "%qt = mpc.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x2x4xf64>\n"
                                   "  %kt = mpc.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x2x4xf64>\n"
                                   "  %vt = mpc.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x5x2x3xf64>\n"
                                   "  %s = mpc.matmul %qt, %kt {transpose_b} : tensor<2x2x3x4xf64>, tensor<2x2x5x4xf64>\n"
                                   "  %c = mpc.constant dense<0.7> : tensor<f64>\n"
                                   "  %t = mpc.mul %s, %c : tensor<2x2x3x5xf64>, tensor<f64>\n"
                                   "  %p = mpc.softmax %t : tensor<2x2x3x5xf64>\n"
                                   "  %pd, %mask = mpc.dropout %p {p = 0.4, seed = 9} : tensor<2x2x3x5xf64>\n"
                                   "  %o = mpc.matmul %pd, %vt : tensor<2x2x3x5xf64>, tensor<2x2x5x3xf64>\n"
                                   "  %y = mpc.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x2x3x3xf64>", "2x3x2x3"),
    "conv2d": ([("x", "1x5x5x4", -1, 1), ("w", "6x3x3x2", -1, 1)],
               "%y = mpc.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2} : tensor<1x5x5x4xf64>, tensor<6x3x3x2xf64>", "1x3x3x6"),
    # A convolution adding to a tensor (the addend's gradient is the
    # output's); a concatenation of two 8-channel parts convolved, which
    # --mpc-fuse's concat-convs writes as the parts' convolutions (the
    # second adding to the first) and the filter gradient as theirs.
    "conv2d_addend": ([("x", "1x5x5x4", -1, 1), ("w", "6x3x3x4", -1, 1), ("a", "1x5x5x6", -1, 1)],
                      "%y = mpc.conv2d %x, %w addend(%a : tensor<1x5x5x6xf64>) {padding = array<i64: 1, 1>} : tensor<1x5x5x4xf64>, tensor<6x3x3x4xf64>", "1x5x5x6"),
    "conv2d_of_concat": ([("a", "1x4x4x8", -1, 1), ("b", "1x4x4x8", -1, 1), ("w", "3x3x3x16", -1, 1)],
                         "%c = mpc.concat %a, %b {axis = 3 : i64} : tensor<1x4x4x8xf64>, tensor<1x4x4x8xf64>\n"
                         "  %y = mpc.conv2d %c, %w {padding = array<i64: 1, 1>} : tensor<1x4x4x16xf64>, tensor<3x3x3x16xf64>", "1x4x4x3"),
    "conv_transpose2d": ([("x", "1x3x3x4", -1, 1), ("w", "4x3x3x2", -1, 1)],
                         "%y = mpc.conv_transpose2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<1x3x3x4xf64>, tensor<4x3x3x2xf64>", "1x5x5x2"),
    "reduce_sum": ([("a", "3x4x2", -1, 1)],
                   "%y = mpc.reduce_sum %a {dims = array<i64: 1>} : tensor<3x4x2xf64>", "3x2"),
    "reduce_max": ([("a", "3x4x2", -1, 1)],
                   "%y = mpc.reduce_max %a {dims = array<i64: 1>} : tensor<3x4x2xf64>", "3x2"),
    "reduce_mean_keep": ([("a", "3x4", -1, 1)],
                         "%y = mpc.reduce_mean %a {dims = array<i64: 0>, keep_dims} : tensor<3x4xf64>", "1x4"),
    "softmax": ([("a", "3x5", -2, 2)], "%y = mpc.softmax %a : tensor<3x5xf64>", "3x5"),
    "log_softmax": ([("a", "3x5", -2, 2)], "%y = mpc.log_softmax %a : tensor<3x5xf64>", "3x5"),
    "softmax_scaled": ([("a", "3x5", -2, 2)], "%y = mpc.softmax %a {scale = 0.3 : f64} : tensor<3x5xf64>", "3x5"),
    "log_softmax_scaled": ([("a", "3x5", -2, 2)], "%y = mpc.log_softmax %a {scale = -1.7 : f64} : tensor<3x5xf64>", "3x5"),
    "layer_norm": ([("x", "3x6", -1, 1), ("g", "6", 0.5, 1.5), ("b", "6", -1, 1)],
                   "%y, %m, %r = mpc.layer_norm %x, %g, %b : tensor<3x6xf64>, tensor<6xf64>", "3x6"),
    # Dropout + residual add + layer norm (hand-written, with the sum read
    # too, and as --mpc-fuse builds it from its parts).
    "add_layer_norm": ([("x", "3x6", -1, 1), ("s", "3x6", -1, 1), ("g", "6", 0.5, 1.5), ("b", "6", -1, 1)],
                       "%y, %sum, %m, %r = mpc.add_layer_norm %x, %s, %g, %b : tensor<3x6xf64>, tensor<6xf64>", "3x6"),
    "add_layer_norm_dropout_sum": ([("x", "3x6", -1, 1), ("s", "3x6", -1, 1), ("g", "6", 0.5, 1.5), ("b", "6", -1, 1)],
                                   "%n, %sum, %m, %r = mpc.add_layer_norm %x, %s, %g, %b {dropout_p = 0.4 : f64, seed = 9 : i64} : tensor<3x6xf64>, tensor<6xf64>\n"
                                   "  %y = mpc.mul %n, %sum : tensor<3x6xf64>, tensor<3x6xf64>", "3x6"),
    "add_layer_norm_from_parts": ([("x", "3x6", -1, 1), ("s", "3x6", -1, 1), ("g", "6", 0.5, 1.5), ("b", "6", -1, 1)],
                                  "%xd, %mask = mpc.dropout %x {p = 0.4, seed = 9} : tensor<3x6xf64>\n"
                                  "  %sum = mpc.add %s, %xd : tensor<3x6xf64>, tensor<3x6xf64>\n"
                                  "  %n, %m, %r = mpc.layer_norm %sum, %g, %b : tensor<3x6xf64>, tensor<6xf64>\n"
                                  "  %y = mpc.mul %n, %sum : tensor<3x6xf64>, tensor<3x6xf64>", "3x6"),
    # A residual broadcast over the leading dimension (BERT's position
    # embeddings): without dropout the layer norm's own backward, with it
    # the fused backward; the residual's gradient summed over the batch.
    "add_layer_norm_positions": ([("x", "2x3x6", -1, 1), ("p", "3x6", -1, 1), ("g", "6", 0.5, 1.5), ("b", "6", -1, 1)],
                                 "%n, %sum, %m, %r = mpc.add_layer_norm %x, %p, %g, %b : tensor<2x3x6xf64>, tensor<3x6xf64>, tensor<6xf64>\n"
                                 "  %y = mpc.mul %n, %sum : tensor<2x3x6xf64>, tensor<2x3x6xf64>", "2x3x6"),
    "add_layer_norm_positions_dropout": ([("x", "2x3x6", -1, 1), ("p", "6", -1, 1), ("g", "6", 0.5, 1.5), ("b", "6", -1, 1)],
                                         "%y, %sum, %m, %r = mpc.add_layer_norm %x, %p, %g, %b {dropout_p = 0.4 : f64, seed = 9 : i64} : tensor<2x3x6xf64>, tensor<6xf64>, tensor<6xf64>", "2x3x6"),
    "add_layer_norm_positions_from_parts": ([("x", "2x3x6", -1, 1), ("p", "3x6", -1, 1), ("g", "6", 0.5, 1.5), ("b", "6", -1, 1)],
                                            "%sum = mpc.add %p, %x : tensor<3x6xf64>, tensor<2x3x6xf64>\n"
                                            "  %y, %m, %r = mpc.layer_norm %sum, %g, %b : tensor<2x3x6xf64>, tensor<6xf64>", "2x3x6"),
    "dropout_add": ([("x", "3x6", -1, 1), ("s", "3x6", -1, 1)],
                    "%y = mpc.dropout_add %x, %s {p = 0.4 : f64, seed = 9 : i64} : tensor<3x6xf64>, tensor<3x6xf64>", "3x6"),
    # Fused by mpc-compile from its parts (the sum read twice: the
    # residual's gradient and the input's through the same bits).
    "dropout_add_from_parts": ([("x", "3x6", -1, 1), ("s", "3x6", -1, 1)],
                               "%xd, %mask = mpc.dropout %x {p = 0.4, seed = 9} : tensor<3x6xf64>\n"
                               "  %sum = mpc.add %s, %xd : tensor<3x6xf64>, tensor<3x6xf64>\n"
                               "  %y = mpc.mul %sum, %sum : tensor<3x6xf64>, tensor<3x6xf64>", "3x6"),
    "softmax_dropout": ([("a", "3x9", -2, 2)],
                        "%y = mpc.softmax_dropout %a {p = 0.4 : f64, scale = 0.7 : f64, seed = 9 : i64} : tensor<3x9xf64>", "3x9"),
    # Fused by mpc-compile from its parts (the dropped probabilities read
    # twice: the forward's and the backward's copy, computed again).
    "softmax_dropout_from_parts": ([("a", "3x9", -2, 2)],
                                   "%p = mpc.softmax %a {scale = 0.7 : f64} : tensor<3x9xf64>\n"
                                   "  %pd, %mask = mpc.dropout %p {p = 0.4, seed = 9} : tensor<3x9xf64>\n"
                                   "  %y = mpc.mul %pd, %pd : tensor<3x9xf64>, tensor<3x9xf64>", "3x9"),
    "reshape": ([("a", "3x4", -1, 1)],
                "%y = mpc.reshape %a : tensor<3x4xf64> -> tensor<2x6xf64>", "2x6"),
    "transpose": ([("a", "2x3x4", -1, 1)],
                  "%y = mpc.transpose %a {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf64>", "4x2x3"),
    "slice": ([("a", "4x6", -1, 1)],
              "%y = mpc.slice %a {offsets = array<i64: 1, 0>, sizes = array<i64: 2, 3>, strides = array<i64: 1, 2>} : tensor<4x6xf64>", "2x3"),
    "concat": ([("a", "2x3", -1, 1), ("b", "2x2", -1, 1)],
               "%y = mpc.concat %a, %b {axis = 1} : tensor<2x3xf64>, tensor<2x2xf64>", "2x5"),
    "broadcast_to": ([("a", "3x1", -1, 1)],
                     "%y = mpc.broadcast_to %a : tensor<3x1xf64> -> tensor<2x3x4xf64>", "2x3x4"),
    "embedding": ([("t", "5x3", -1, 1)],
                  "%ids = mpc.constant dense<[[0, 3], [3, 4]]> : tensor<2x2xi32>\n"
                  "  %y = mpc.embedding %t, %ids : tensor<5x3xf64>, tensor<2x2xi32>", "2x2x3"),
    "dropout": ([("a", "16", -1, 1)],
                "%y, %mask = mpc.dropout %a {p = 0.5, seed = 3} : tensor<16xf64>", "16"),
    "max_pool2d": ([("x", "1x4x4x2", -1, 1)],
                   "%y = mpc.max_pool2d %x {kernel = array<i64: 2, 2>} : tensor<1x4x4x2xf64>", "1x2x2x2"),
    "avg_pool2d": ([("x", "1x4x4x2", -1, 1)],
                   "%y = mpc.avg_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, count_include_pad = false} : tensor<1x4x4x2xf64>", "1x4x4x2"),
    "upsample": ([("x", "1x2x2x3", -1, 1)],
                 "%y = mpc.upsample_nearest2d %x {scale = array<i64: 2, 3>} : tensor<1x2x2x3xf64>", "1x4x6x3"),
    "cross_entropy": ([("a", "3x5", -2, 2)],
                      "%lab = mpc.constant dense<[1, 4, 0]> : tensor<3xi32>\n"
                      "  %y = mpc.cross_entropy %a, %lab : tensor<3x5xf64>, tensor<3xi32>", ""),
    "cross_entropy_ignored_smoothed": ([("a", "4x5", -2, 2)],
                                       "%lab = mpc.constant dense<[1, -100, 4, 0]> : tensor<4xi32>\n"
                                       "  %y = mpc.cross_entropy %a, %lab {ignore_index = -100, label_smoothing = 0.2} : tensor<4x5xf64>, tensor<4xi32>", ""),
    "mse": ([("a", "6", -1, 1), ("t", "6", -1, 1)],
            "%y = mpc.mse %a, %t : tensor<6xf64>, tensor<6xf64>", ""),
    "bce_with_logits": ([("a", "6", -2, 2)],
                        "%tg = mpc.constant dense<[0.0, 1.0, 0.3, 1.0, 0.0, 0.7]> : tensor<6xf64>\n"
                        "  %y = mpc.bce_with_logits %a, %tg : tensor<6xf64>, tensor<6xf64>", ""),
    "binary_cross_entropy": ([("a", "6", 0.1, 0.9)],
                             "%tg = mpc.constant dense<[0.0, 1.0, 0.3, 1.0, 0.0, 0.7]> : tensor<6xf64>\n"
                             "  %y = mpc.binary_cross_entropy %a, %tg : tensor<6xf64>, tensor<6xf64>", ""),
    "batch_norm": ([("x", "4x3", -1, 1), ("g", "3", 0.5, 1.5), ("b", "3", -1, 1)],
                   "%rm = mpc.constant dense<0.0> : tensor<3xf64>\n"
                   "  %rv = mpc.constant dense<1.0> : tensor<3xf64>\n"
                   "  %y, %nm, %nv, %sm, %si = mpc.batch_norm %x, %g, %b, %rm, %rv : tensor<4x3xf64>, tensor<3xf64>", "4x3"),
    # Batch norm + ReLU: fused by hand, and as mpc-compile fuses it from
    # its parts (the backward then forms the ReLU's gradient itself).
    "batch_norm_relu": ([("x", "6x3", -1, 1), ("g", "3", 0.5, 1.5), ("b", "3", -0.5, 0.5)],
                        "%rm = mpc.constant dense<0.0> : tensor<3xf64>\n"
                        "  %rv = mpc.constant dense<1.0> : tensor<3xf64>\n"
                        "  %y, %nm, %nv, %sm, %si = mpc.batch_norm %x, %g, %b, %rm, %rv {activation = \"relu\"} : tensor<6x3xf64>, tensor<3xf64>", "6x3"),
    "batch_norm_relu_from_parts": ([("x", "6x3", -1, 1), ("g", "3", 0.5, 1.5), ("b", "3", -0.5, 0.5)],
                                   "%rm = mpc.constant dense<0.0> : tensor<3xf64>\n"
                                   "  %rv = mpc.constant dense<1.0> : tensor<3xf64>\n"
                                   "  %n, %nm, %nv, %sm, %si = mpc.batch_norm %x, %g, %b, %rm, %rv : tensor<6x3xf64>, tensor<3xf64>\n"
                                   "  %y = mpc.relu %n : tensor<6x3xf64>", "6x3"),
    "chain_reuse": ([("a", "4", -1, 1), ("b", "4", -1, 1)],
                    "%0 = mpc.mul %a, %b : tensor<4xf64>, tensor<4xf64>\n"
                    "  %1 = mpc.tanh %0 : tensor<4xf64>\n"
                    "  %y = mpc.add %1, %a : tensor<4xf64>, tensor<4xf64>", "4"),
}


def tensor(shape):
    return "tensor<%sxf64>" % shape if shape else "tensor<f64>"


def graph(name, seed):
    params, body, shape = CASES[name]
    lines = []
    for i, (p, s, lo, hi) in enumerate(params):
        lines.append(
            "ml_program.global private mutable @p_%s(#mpc.init<uniform, "
            "seed = %d, low = %r, high = %r>) : %s" %
            (p, seed + i, float(lo), float(hi), tensor(s)))
    lines.append("ml_program.global private @r(#mpc.init<uniform, seed = %d, "
                 "low = -1.0, high = 1.0>) : %s" % (seed + 99, tensor(shape)))
    lines.append("func.func @loss(%d: tensor<1xf64>) -> tensor<f64> {")
    for p, s, _, _ in params:
        lines.append("  %%%s = ml_program.global_load @p_%s : %s" %
                     (p, p, tensor(s)))
    lines.append("  %rw = ml_program.global_load @r : " + tensor(shape))
    lines.append("  " + body)
    lines.append("  %%z = mpc.mul %%y, %%rw : %s, %s" % (tensor(shape),
                                                      tensor(shape)))
    rank = len(shape.split("x")) if shape else 0
    if rank:
        lines.append("  %%l = mpc.reduce_sum %%z {dims = array<i64: %s>} : %s"
                     % (", ".join(str(d) for d in range(rank)),
                        tensor(shape)))
    else:
        lines.append("  %l = mpc.neg %z : tensor<f64>")  # any scalar map
    lines.append("  return %l : tensor<f64>")
    lines.append("}")
    return "\n".join(lines) + "\n"


def npy_f64(shape, values):
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape))
    header = header.ljust(118) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + \
        header.encode("latin1") + struct.pack("<%dd" % len(values), *values)


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw = data[8 + n + b:8 + n + e]
        if t["dtype"] == "F64":
            out[name] = (t, list(struct.unpack("<%dd" % (len(raw) // 8), raw)))
        else:
            out[name] = (t, raw)
    return out


def write_safetensors(path, tensors):
    header, blobs, at = {}, [], 0
    for name, (shape, values) in tensors.items():
        raw = struct.pack("<%dd" % len(values), *values)
        header[name] = {"dtype": "F64", "shape": shape,
                        "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header)
    text += " " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text.encode() + b"".join(blobs))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("gradcheck.py: %s failed:\n%s%s" % (" ".join(cmd), r.stdout,
                                                     r.stderr))


def loss_of(exe, data, init, work):
    metrics = os.path.join(work, "fd.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    run([exe, "--data", data, "--steps", "1", "--init", init,
         "--metrics", metrics])
    with open(metrics) as f:
        return json.loads(f.readline())["loss"]


def check(name, a, rng):
    work = os.path.join(a.work, name)
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, "graph.mlir")
    with open(src, "w") as f:
        f.write(graph(name, rng.randrange(1000)))
    train, forward = os.path.join(work, "train"), os.path.join(work, "loss")
    run([a.mpc_compile, src, "--train", "--optimizer=kind=sgd lr=1", "-o",
         train])
    run([a.mpc_compile, src, "--entry=loss", "-o", forward])
    data = os.path.join(work, "d.npz")
    with zipfile.ZipFile(data, "w", zipfile.ZIP_STORED) as z:
        z.writestr("d.npy", npy_f64((1,), [0.0]))
    c0, c1 = os.path.join(work, "c0.st"), os.path.join(work, "c1.st")
    run([forward, "--data", data, "--steps", "0", "--checkpoint", c0])
    run([train, "--data", data, "--steps", "1", "--checkpoint", c1])
    state0, state1 = read_safetensors(c0), read_safetensors(c1)
    params = {k: v for k, v in state0.items() if k.startswith("p_")}
    worst = 0.0
    for p, (info, w0) in params.items():
        grad = [x - y for x, y in zip(w0, state1[p][1])]
        for i in rng.sample(range(len(w0)), min(6, len(w0))):
            loss = []
            for sign in (1, -1):
                h = 1e-6
                tensors = {k: (v[0]["shape"], list(v[1]))
                           for k, v in params.items()}
                tensors[p][1][i] = w0[i] + sign * h
                init = os.path.join(work, "init.st")
                write_safetensors(init, tensors)
                loss.append(loss_of(forward, data, init, work))
            fd = (loss[0] - loss[1]) / 2e-6
            err = abs(grad[i] - fd)
            worst = max(worst, err / (1e-6 + 1e-5 * abs(fd)))
            if err > 1e-6 + 1e-5 * abs(fd):
                print("%s: d loss / d %s[%d]: autodiff %r, finite "
                      "differences %r" % (name, p, i, grad[i], fd))
                return False
    print("%s: ok (worst error %.2g of the bound)" % (name, worst))
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpc-compile", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    print("seed %d" % seed)
    rng = random.Random(seed)
    names = a.cases or sorted(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        sys.exit("gradcheck.py: unknown cases %s" % unknown)
    failed = [n for n in names if not check(n, a, rng)]
    if failed:
        sys.exit("gradcheck.py: %d of %d failed: %s" %
                 (len(failed), len(names), ", ".join(failed)))
    print("all %d cases match" % len(names))


if __name__ == "__main__":
    main()
