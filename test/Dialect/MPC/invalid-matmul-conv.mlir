// RUN: mpc-opt %s -split-input-file -verify-diagnostics

func.func @matmul_rank(%a: tensor<4xf16>, %b: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.matmul' op expects operands of rank >= 2, got 'tensor<4xf16>' and 'tensor<4x8xf16>'}}
  %0 = mpc.matmul %a, %b : tensor<4xf16>, tensor<4x8xf16>
  return
}

// -----

func.func @matmul_k(%a: tensor<4x5xf16>, %b: tensor<6x8xf16>) {
  // expected-error @+1 {{'mpc.matmul' op expects equal contracting dimensions, got K = 5 for a and 6 for b}}
  %0 = mpc.matmul %a, %b : tensor<4x5xf16>, tensor<6x8xf16>
  return
}

// -----

func.func @matmul_transpose(%a: tensor<4x5xf16>, %b: tensor<5x8xf16>) {
  // expected-error @+1 {{'mpc.matmul' op expects equal contracting dimensions, got K = 5 for a and 8 for b}}
  %0 = mpc.matmul %a, %b {transpose_b} : tensor<4x5xf16>, tensor<5x8xf16>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x5xf16>, %b: tensor<3x5x8xf16>) {
  // expected-error @+1 {{'mpc.matmul' op expects broadcast-compatible batch dimensions, got [2] and [3]}}
  %0 = mpc.matmul %a, %b : tensor<2x4x5xf16>, tensor<3x5x8xf16>
  return
}

// -----

func.func @matmul_types(%a: tensor<4x5xf16>, %b: tensor<5x8xbf16>) {
  // expected-error @+1 {{'mpc.matmul' op expects a and b of the same element type, got 'f16' and 'bf16'}}
  %0 = mpc.matmul %a, %b : tensor<4x5xf16>, tensor<5x8xbf16>
  return
}

// -----

func.func @fused_activation(%a: tensor<4x5xf16>, %b: tensor<5x8xf16>, %c: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.fused_matmul' op unknown activation 'gelu' (expected none, relu or gelu_tanh)}}
  %0 = mpc.fused_matmul %a, %b, %c {activation = "gelu"} : tensor<4x5xf16>, tensor<5x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
  return
}

// -----

func.func @fused_k(%a: tensor<4x5xf16>, %b: tensor<6x8xf16>, %c: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.fused_matmul' op expects equal contracting dimensions, got K = 5 for a and 6 for b}}
  %0 = mpc.fused_matmul %a, %b, %c : tensor<4x5xf16>, tensor<6x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
  return
}

// -----

func.func @fused_result_shape(%a: tensor<4x5xf16>, %b: tensor<5x8xf16>, %c: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.fused_matmul' op expects a result of the product's shape [4, 8], got [8, 4]}}
  %0 = mpc.fused_matmul %a, %b, %c : tensor<4x5xf16>, tensor<5x8xf16>, tensor<8xf16> -> tensor<8x4xf16>
  return
}

// -----

func.func @fused_result_type(%a: tensor<4x5xf32>, %b: tensor<5x8xf32>, %c: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.fused_matmul' op expects a result of the operands' element type, or f32 for f16/bf16 operands, got 'f16' for 'f32' operands}}
  %0 = mpc.fused_matmul %a, %b, %c : tensor<4x5xf32>, tensor<5x8xf32>, tensor<8xf16> -> tensor<4x8xf16>
  return
}

// -----

func.func @fused_bias_shape(%a: tensor<4x5xf16>, %b: tensor<5x8xf16>, %c: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.fused_matmul' op expects a bias of shape [8] (the result's last dimension), got [4, 8]}}
  %0 = mpc.fused_matmul %a, %b, %c : tensor<4x5xf16>, tensor<5x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  return
}

// -----

func.func @fused_bias_type(%a: tensor<4x5xf16>, %b: tensor<5x8xf16>, %c: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.fused_matmul' op expects a bias of the result's element type 'f32', got 'f16'}}
  %0 = mpc.fused_matmul %a, %b, %c : tensor<4x5xf16>, tensor<5x8xf16>, tensor<8xf16> -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_pre_without_activation(%a: tensor<4x5xf16>, %b: tensor<5x8xf16>, %c: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.fused_matmul' op has a pre_activation result but no activation (the result is the pre-activation)}}
  %0:2 = mpc.fused_matmul %a, %b, %c : tensor<4x5xf16>, tensor<5x8xf16>, tensor<8xf16> -> tensor<4x8xf16>, tensor<4x8xf16>
  return
}

// -----

func.func @fused_pre_type(%a: tensor<4x5xf16>, %b: tensor<5x8xf16>, %c: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.fused_matmul' op expects a pre_activation of the result's type 'tensor<4x8xf16>', got 'tensor<4x8xf32>'}}
  %0:2 = mpc.fused_matmul %a, %b, %c {activation = "gelu_tanh"} : tensor<4x5xf16>, tensor<5x8xf16>, tensor<8xf16> -> tensor<4x8xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @activation_grad_kind(%a: tensor<4x5xf16>, %b: tensor<5x8xf16>, %s: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.matmul_activation_grad' op unknown activation 'gelu' (expected relu or gelu_tanh)}}
  %0 = mpc.matmul_activation_grad %a, %b, %s {activation = "gelu"} : tensor<4x5xf16>, tensor<5x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  return
}

// -----

func.func @activation_grad_k(%a: tensor<4x5xf16>, %b: tensor<6x8xf16>, %s: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.matmul_activation_grad' op expects equal contracting dimensions, got K = 5 for a and 6 for b}}
  %0 = mpc.matmul_activation_grad %a, %b, %s {activation = "relu"} : tensor<4x5xf16>, tensor<6x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  return
}

// -----

func.func @activation_grad_result(%a: tensor<4x5xf16>, %b: tensor<5x8xf16>, %s: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.matmul_activation_grad' op expects a result of the product's shape [4, 8], got [8, 4]}}
  %0 = mpc.matmul_activation_grad %a, %b, %s {activation = "relu"} : tensor<4x5xf16>, tensor<5x8xf16>, tensor<4x8xf16> -> tensor<8x4xf16>
  return
}

// -----

func.func @activation_grad_type(%a: tensor<4x5xf32>, %b: tensor<5x8xf32>, %s: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.matmul_activation_grad' op expects a result of the operands' element type, or f32 for f16/bf16 operands, got 'f16' for 'f32' operands}}
  %0 = mpc.matmul_activation_grad %a, %b, %s {activation = "relu"} : tensor<4x5xf32>, tensor<5x8xf32>, tensor<4x8xf16> -> tensor<4x8xf16>
  return
}

// -----

func.func @activation_grad_saved(%a: tensor<4x5xf16>, %b: tensor<5x8xf16>, %s: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.matmul_activation_grad' op expects a saved value of the result's type 'tensor<4x8xf32>', got 'tensor<4x8xf16>'}}
  %0 = mpc.matmul_activation_grad %a, %b, %s {activation = "gelu_tanh"} : tensor<4x5xf16>, tensor<5x8xf16>, tensor<4x8xf16> -> tensor<4x8xf32>
  return
}

// -----

func.func @attention_head(%q: tensor<2x4x8xf16>, %k: tensor<2x6x16xf16>, %v: tensor<2x6x8xf16>) {
  // expected-error @+1 {{'mpc.attention' op expects query and key of one head size, got 8 and 16}}
  %o, %l = mpc.attention %q, %k, %v {scale = 1.0 : f64} : tensor<2x4x8xf16>, tensor<2x6x16xf16>, tensor<2x6x8xf16>
  return
}

// -----

func.func @attention_length(%q: tensor<2x4x8xf16>, %k: tensor<2x6x8xf16>, %v: tensor<2x5x8xf16>) {
  // expected-error @+1 {{'mpc.attention' op expects key and value of one sequence length, got 6 and 5}}
  %o, %l = mpc.attention %q, %k, %v {scale = 1.0 : f64} : tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x5x8xf16>
  return
}

// -----

func.func @attention_leading(%q: tensor<2x4x8xf16>, %k: tensor<3x6x8xf16>, %v: tensor<3x6x8xf16>) {
  // expected-error @+1 {{'mpc.attention' op expects query, key and value with the same leading dimensions, got [2], [3] and [3]}}
  %o, %l = mpc.attention %q, %k, %v {scale = 1.0 : f64} : tensor<2x4x8xf16>, tensor<3x6x8xf16>, tensor<3x6x8xf16>
  return
}

// -----

func.func @attention_rank(%q: tensor<8xf16>, %k: tensor<8xf16>, %v: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.attention' op expects query, key and value of one rank >= 2, got 'tensor<8xf16>', 'tensor<8xf16>' and 'tensor<8xf16>'}}
  %o, %l = mpc.attention %q, %k, %v {scale = 1.0 : f64} : tensor<8xf16>, tensor<8xf16>, tensor<8xf16>
  return
}

// -----

func.func @attention_types(%q: tensor<2x4x8xf16>, %k: tensor<2x6x8xbf16>, %v: tensor<2x6x8xf16>) {
  // expected-error @+1 {{'mpc.attention' op expects query and key of the same element type, got 'f16' and 'bf16'}}
  %o, %l = mpc.attention %q, %k, %v {scale = 1.0 : f64} : tensor<2x4x8xf16>, tensor<2x6x8xbf16>, tensor<2x6x8xf16>
  return
}

// -----

func.func @attention_dropout(%q: tensor<2x4x8xf16>, %k: tensor<2x6x8xf16>, %v: tensor<2x6x8xf16>) {
  // expected-error @+1 {{'mpc.attention' op expects dropout_p in [0, 1), got 1.0}}
  %o, %l = mpc.attention %q, %k, %v {scale = 1.0 : f64, dropout_p = 1.0 : f64} : tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x6x8xf16>
  return
}

// -----

func.func @attention_scale(%q: tensor<2x4x8xf16>, %k: tensor<2x6x8xf16>, %v: tensor<2x6x8xf16>) {
  // expected-error @+1 {{'mpc.attention' op expects a finite scale, got INF}}
  %o, %l = mpc.attention %q, %k, %v {scale = 0x7FF0000000000000 : f64} : tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x6x8xf16>
  return
}

// -----

func.func @attention_mask_shape(%q: tensor<2x4x8xf16>, %k: tensor<2x6x8xf16>, %v: tensor<2x6x8xf16>, %m: tensor<2x4x4xi1>) {
  // expected-error @+1 {{'mpc.attention' op expects a mask of the scores' rank whose dimensions are 1 or the scores' [2, 4, 6], got [2, 4, 4]}}
  %o, %l = mpc.attention %q, %k, %v mask(%m : tensor<2x4x4xi1>) {scale = 1.0 : f64, mask_value = -1.0e4 : f64} : tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x6x8xf16>
  return
}

// -----

func.func @attention_layout(%q: tensor<2x4x8xf16>, %k: tensor<2x6x8xf16>, %v: tensor<2x6x8xf16>) {
  // expected-error @+1 {{'mpc.attention' op expects layout "bhsd" or "bshd", got "sbhd"}}
  %o, %l = mpc.attention %q, %k, %v {scale = 1.0 : f64, layout = "sbhd"} : tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x6x8xf16>
  return
}

// -----

func.func @attention_bshd_rank(%q: tensor<4x8xf16>, %k: tensor<6x8xf16>, %v: tensor<6x8xf16>) {
  // expected-error @+1 {{'mpc.attention' op expects query, key and value of one rank >= 3 (layout "bshd"), got 'tensor<4x8xf16>', 'tensor<6x8xf16>' and 'tensor<6x8xf16>'}}
  %o, %l = mpc.attention %q, %k, %v {scale = 1.0 : f64, layout = "bshd"} : tensor<4x8xf16>, tensor<6x8xf16>, tensor<6x8xf16>
  return
}

// -----

// With layout "bshd" the heads are dimension -2: here 3 against 5.
func.func @attention_bshd_heads(%q: tensor<2x4x3x8xf16>, %k: tensor<2x6x5x8xf16>, %v: tensor<2x6x5x8xf16>) {
  // expected-error @+1 {{'mpc.attention' op expects query, key and value with the same leading dimensions, got [2, 3], [2, 5] and [2, 5]}}
  %o, %l = mpc.attention %q, %k, %v {scale = 1.0 : f64, layout = "bshd"} : tensor<2x4x3x8xf16>, tensor<2x6x5x8xf16>, tensor<2x6x5x8xf16>
  return
}

// -----

// The scores of layout "bshd" are [..., H, Sq, Sk], as the default's.
func.func @attention_bshd_mask(%q: tensor<2x4x3x8xf16>, %k: tensor<2x6x3x8xf16>, %v: tensor<2x6x3x8xf16>, %m: tensor<2x1x6x1xi1>) {
  // expected-error @+1 {{'mpc.attention' op expects a mask of the scores' rank whose dimensions are 1 or the scores' [2, 3, 4, 6], got [2, 1, 6, 1]}}
  %o, %l = mpc.attention %q, %k, %v mask(%m : tensor<2x1x6x1xi1>) {scale = 1.0 : f64, mask_value = -1.0e4 : f64, layout = "bshd"} : tensor<2x4x3x8xf16>, tensor<2x6x3x8xf16>, tensor<2x6x3x8xf16>
  return
}

// -----

func.func @attention_bshd_backward(%g: tensor<2x3x4x8xf16>, %q: tensor<2x4x3x8xf16>, %k: tensor<2x6x3x8xf16>, %v: tensor<2x6x3x8xf16>, %o: tensor<2x3x4x8xf16>, %l: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'mpc.attention_backward' op expects grad of type 'tensor<2x4x3x8xf16>', got 'tensor<2x3x4x8xf16>'}}
  %dq, %dk, %dv = mpc.attention_backward %g, %q, %k, %v, %o, %l {scale = 1.0 : f64, layout = "bshd"} : tensor<2x3x4x8xf16>, tensor<2x4x3x8xf16>, tensor<2x6x3x8xf16>, tensor<2x6x3x8xf16>, tensor<2x3x4x8xf16>, tensor<2x3x4xf32>
  return
}

// -----

func.func @attention_mask_value(%q: tensor<2x4x8xf16>, %k: tensor<2x6x8xf16>, %v: tensor<2x6x8xf16>, %m: tensor<2x1x6xi1>) {
  // expected-error @+1 {{'mpc.attention' op expects a mask_value with a mask}}
  %o, %l = mpc.attention %q, %k, %v mask(%m : tensor<2x1x6xi1>) {scale = 1.0 : f64} : tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x6x8xf16>
  return
}

// -----

func.func @attention_mask_value_alone(%q: tensor<2x4x8xf16>, %k: tensor<2x6x8xf16>, %v: tensor<2x6x8xf16>) {
  // expected-error @+1 {{'mpc.attention' op has a mask_value but no mask}}
  %o, %l = mpc.attention %q, %k, %v {scale = 1.0 : f64, mask_value = -1.0e4 : f64} : tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x6x8xf16>
  return
}

// -----

func.func @attention_mask_nan(%q: tensor<2x4x8xf16>, %k: tensor<2x6x8xf16>, %v: tensor<2x6x8xf16>, %m: tensor<2x1x6xi1>) {
  // expected-error @+1 {{'mpc.attention' op expects a mask_value that is not NaN}}
  %o, %l = mpc.attention %q, %k, %v mask(%m : tensor<2x1x6xi1>) {scale = 1.0 : f64, mask_value = 0x7FF8000000000000 : f64} : tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x6x8xf16>
  return
}

// -----

func.func @attention_backward_stats(%g: tensor<2x4x8xf16>, %q: tensor<2x4x8xf16>, %k: tensor<2x6x8xf16>, %v: tensor<2x6x8xf16>, %lse: tensor<2x4xf16>) {
  // expected-error @+1 {{'mpc.attention_backward' op expects logsumexp of type 'tensor<2x4xf32>', got 'tensor<2x4xf16>'}}
  %dq, %dk, %dv = mpc.attention_backward %g, %q, %k, %v, %g, %lse {scale = 1.0 : f64} : tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x6x8xf16>, tensor<2x4x8xf16>, tensor<2x4xf16>
  return
}

// -----

func.func @conv_rank(%x: tensor<2x8x8xf32>, %w: tensor<4x3x3x8xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects an NHWC input of rank 4, got 'tensor<2x8x8xf32>'}}
  %0 = mpc.conv2d %x, %w : tensor<2x8x8xf32>, tensor<4x3x3x8xf32>
  return
}

// -----

func.func @conv_filter_rank(%x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects an OHWI filter of rank 4, got 'tensor<4x3x3xf32>'}}
  %0 = mpc.conv2d %x, %w : tensor<2x8x8x3xf32>, tensor<4x3x3xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x4xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects filter input channels (4) to equal input channels / groups (3)}}
  %0 = mpc.conv2d %x, %w : tensor<2x8x8x3xf32>, tensor<4x3x3x4xf32>
  return
}

// -----

func.func @conv_groups(%x: tensor<2x8x8x6xf32>, %w: tensor<5x3x3x3xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects input channels (6) and output channels (5) divisible by groups (2)}}
  %0 = mpc.conv2d %x, %w {groups = 2} : tensor<2x8x8x6xf32>, tensor<5x3x3x3xf32>
  return
}

// -----

func.func @conv_groups_zero(%x: tensor<2x8x8x6xf32>, %w: tensor<6x3x3x6xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects groups >= 1, got 0}}
  %0 = mpc.conv2d %x, %w {groups = 0} : tensor<2x8x8x6xf32>, tensor<6x3x3x6xf32>
  return
}

// -----

func.func @conv_addend(%x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %a: tensor<2x8x8x3xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects an addend of the result's type 'tensor<2x6x6x4xf32>', got 'tensor<2x8x8x3xf32>'}}
  %0 = mpc.conv2d %x, %w addend(%a : tensor<2x8x8x3xf32>) : tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv_addend_type(%x: tensor<2x8x8x3xf16>, %w: tensor<4x3x3x3xf16>, %a: tensor<2x6x6x4xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects an addend of the result's type 'tensor<2x6x6x4xf16>', got 'tensor<2x6x6x4xf32>'}}
  %0 = mpc.conv2d %x, %w addend(%a : tensor<2x6x6x4xf32>) : tensor<2x8x8x3xf16>, tensor<4x3x3x3xf16>
  return
}

// -----

func.func @conv_stride(%x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects 'stride' elements >= 1, got [0, 1]}}
  %0 = mpc.conv2d %x, %w {stride = array<i64: 0, 1>} : tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv_stride_count(%x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects 'stride' to have 2 elements [h, w], got 3}}
  %0 = mpc.conv2d %x, %w {stride = array<i64: 1, 1, 1>} : tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv_padding(%x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects 'padding' elements >= 0, got [-1, 0]}}
  %0 = mpc.conv2d %x, %w {padding = array<i64: -1, 0>} : tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv_dilation(%x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects 'dilation' elements >= 1, got [1, 0]}}
  %0 = mpc.conv2d %x, %w {dilation = array<i64: 1, 0>} : tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv_kernel_too_big(%x: tensor<2x4x4x3xf32>, %w: tensor<4x5x5x3xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects the dilated kernel (5 with dilation 1) to fit the padded input (4 + 2*0)}}
  %0 = mpc.conv2d %x, %w : tensor<2x4x4x3xf32>, tensor<4x5x5x3xf32>
  return
}

// -----

func.func @conv_types(%x: tensor<2x8x8x3xf16>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'mpc.conv2d' op expects input and filter of the same element type, got 'f16' and 'f32'}}
  %0 = mpc.conv2d %x, %w : tensor<2x8x8x3xf16>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv_bwd_data(%dy: tensor<2x8x8x4xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'mpc.conv2d_backward_data' op expects grad of the forward output's shape [2, 6, 6, 4], got [2, 8, 8, 4]}}
  %0 = mpc.conv2d_backward_data %dy, %w : tensor<2x8x8x4xf32>, tensor<4x3x3x3xf32> -> tensor<2x8x8x3xf32>
  return
}

// -----

func.func @conv_bwd_data_types(%dy: tensor<2x6x6x4xf16>, %w: tensor<4x3x3x3xf16>) {
  // expected-error @+1 {{'mpc.conv2d_backward_data' op expects grad and input of the same element type, got 'f16' and 'f32'}}
  %0 = mpc.conv2d_backward_data %dy, %w : tensor<2x6x6x4xf16>, tensor<4x3x3x3xf16> -> tensor<2x8x8x3xf32>
  return
}

// -----

func.func @conv_bwd_filter(%dy: tensor<2x6x6x4xf32>, %x: tensor<2x8x8x3xf32>) {
  // expected-error @+1 {{'mpc.conv2d_backward_filter' op expects grad of the forward output's shape [2, 4, 4, 4], got [2, 6, 6, 4]}}
  %0 = mpc.conv2d_backward_filter %dy, %x : tensor<2x6x6x4xf32>, tensor<2x8x8x3xf32> -> tensor<4x5x5x3xf32>
  return
}

// -----

func.func @conv_transpose_channels(%x: tensor<2x4x4x8xf32>, %w: tensor<4x2x2x3xf32>) {
  // expected-error @+1 {{'mpc.conv_transpose2d' op expects filter input channels (4) to equal input channels (8)}}
  %0 = mpc.conv_transpose2d %x, %w : tensor<2x4x4x8xf32>, tensor<4x2x2x3xf32>
  return
}

// -----

func.func @conv_transpose_output_padding(%x: tensor<2x4x4x8xf32>, %w: tensor<8x2x2x3xf32>) {
  // expected-error @+1 {{'mpc.conv_transpose2d' op expects output_padding smaller than stride or dilation, got [1, 1]}}
  %0 = mpc.conv_transpose2d %x, %w {output_padding = array<i64: 1, 1>} : tensor<2x4x4x8xf32>, tensor<8x2x2x3xf32>
  return
}

// -----

func.func @conv_transpose_empty(%x: tensor<2x1x1x8xf32>, %w: tensor<8x1x1x3xf32>) {
  // expected-error @+1 {{'mpc.conv_transpose2d' op expects a non-empty output, got size -1}}
  %0 = mpc.conv_transpose2d %x, %w {padding = array<i64: 1, 1>} : tensor<2x1x1x8xf32>, tensor<8x1x1x3xf32>
  return
}

// -----

func.func @conv_transpose_rank(%x: tensor<2x4x4x8xf32>, %w: tensor<8x2x2xf32>) {
  // expected-error @+1 {{'mpc.conv_transpose2d' op expects an IHWO filter of rank 4, got 'tensor<8x2x2xf32>'}}
  %0 = mpc.conv_transpose2d %x, %w : tensor<2x4x4x8xf32>, tensor<8x2x2xf32>
  return
}

// -----

func.func @column_sums_none() {
  // expected-error @+2 {{'mpc.column_sums' op expects at least one matrix}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "mpc.column_sums"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> tensor<4xf32>
  return
}

// -----

func.func @column_sums_rank(%a: tensor<2x4x5xf16>) {
  // expected-error @+1 {{'mpc.column_sums' op expects matrices of rank 2, got 'tensor<2x4x5xf16>'}}
  %0 = mpc.column_sums %a : tensor<2x4x5xf16>
  return
}

// -----

func.func @column_sums_types(%a: tensor<4x5xf16>, %b: tensor<4x6xf16>) {
  // expected-error @+1 {{'mpc.column_sums' op expects matrices of one type, got 'tensor<4x5xf16>' and 'tensor<4x6xf16>'}}
  %0:2 = mpc.column_sums %a, %b : tensor<4x5xf16>, tensor<4x6xf16>
  return
}

// -----

func.func @column_sums_result_type(%a: tensor<4x5xf16>) {
  // expected-error @+2 {{'mpc.column_sums' op inferred type(s) 'tensor<5xf32>' are incompatible with return type(s) of operation 'tensor<5xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "mpc.column_sums"(%a) <{operandSegmentSizes = array<i32: 1, 0>}> : (tensor<4x5xf16>) -> tensor<5xf16>
  return
}

// -----

func.func @column_sums_addend_count(%a: tensor<4x5xf16>, %b: tensor<4x5xf16>, %s: tensor<5xf32>) {
  // expected-error @+1 {{'mpc.column_sums' op expects an addend for each matrix or none, got 1 for 2}}
  %0:2 = mpc.column_sums %a, %b addends(%s) : tensor<4x5xf16>, tensor<4x5xf16> addends(tensor<5xf32>)
  return
}

// -----

func.func @column_sums_addend_type(%a: tensor<4x5xf16>, %s: tensor<5xf16>) {
  // expected-error @+1 {{'mpc.column_sums' op expects addends of the sums' type 'tensor<5xf32>', got 'tensor<5xf16>'}}
  %0 = mpc.column_sums %a addends(%s) : tensor<4x5xf16> addends(tensor<5xf16>)
  return
}

// -----

func.func @column_sums_dynamic(%a: tensor<?x5xf16>) {
  // expected-error @+1 {{'mpc.column_sums' op expects inputs to have a static shape (dynamic shapes are not supported), got 'tensor<?x5xf16>'}}
  %0 = mpc.column_sums %a : tensor<?x5xf16>
  return
}

// -----

func.func @bias_grad_rank(%a: tensor<2x4x5xf16>, %b: tensor<2x4x8xf16>) {
  // expected-error @+1 {{'mpc.matmul_bias_grad' op expects two matrices (the bias gradient sums b's rows), got 'tensor<2x4x5xf16>' and 'tensor<2x4x8xf16>'}}
  %0:2 = mpc.matmul_bias_grad %a, %b {transpose_a} : tensor<2x4x5xf16>, tensor<2x4x8xf16>
  return
}

// -----

func.func @bias_grad_of_a_not_transposed(%a: tensor<5x4xf16>, %b: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.matmul_bias_grad' op expects transpose_a with bias_of_a (the sums of a over the contraction dimension, its rows)}}
  %0:2 = mpc.matmul_bias_grad %a, %b {bias_of_a} : tensor<5x4xf16>, tensor<4x8xf16>
  return
}

// -----

func.func @bias_grad_of_a_addend(%a: tensor<4x5xf16>, %b: tensor<4x8xf16>, %bacc: tensor<8xf32>) {
  // expected-error @+1 {{'mpc.matmul_bias_grad' op expects a bias_addend of the bias gradient's type 'tensor<5xf32>', got 'tensor<8xf32>'}}
  %0:2 = mpc.matmul_bias_grad %a, %b bias(%bacc) {bias_of_a, transpose_a} : tensor<4x5xf16>, tensor<4x8xf16> bias(tensor<8xf32>)
  return
}

// -----

func.func @bias_grad_k(%a: tensor<4x5xf16>, %b: tensor<6x8xf16>) {
  // expected-error @+1 {{'mpc.matmul_bias_grad' op expects equal contracting dimensions, got K = 4 for a and 6 for b}}
  %0:2 = mpc.matmul_bias_grad %a, %b {transpose_a} : tensor<4x5xf16>, tensor<6x8xf16>
  return
}

// -----

func.func @bias_grad_types(%a: tensor<4x5xf16>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'mpc.matmul_bias_grad' op expects a and b of the same element type, got 'f16' and 'f32'}}
  %0:2 = mpc.matmul_bias_grad %a, %b {transpose_a} : tensor<4x5xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @bias_grad_addend_shape(%a: tensor<4x5xf16>, %b: tensor<4x8xf16>, %c: tensor<8x5xf32>) {
  // expected-error @+1 {{'mpc.matmul_bias_grad' op expects an addend of the product's shape [5, 8] and its element type (or f32 for f16/bf16 operands), got 'tensor<8x5xf32>'}}
  %0:2 = mpc.matmul_bias_grad %a, %b, %c {transpose_a} : tensor<4x5xf16>, tensor<4x8xf16>, tensor<8x5xf32>
  return
}

// -----

func.func @bias_grad_addend_type(%a: tensor<4x5xf32>, %b: tensor<4x8xf32>, %c: tensor<5x8xf16>) {
  // expected-error @+1 {{'mpc.matmul_bias_grad' op expects an addend of the product's shape [5, 8] and its element type (or f32 for f16/bf16 operands), got 'tensor<5x8xf16>'}}
  %0:2 = mpc.matmul_bias_grad %a, %b, %c {transpose_a} : tensor<4x5xf32>, tensor<4x8xf32>, tensor<5x8xf16>
  return
}

// -----

func.func @bias_grad_bias_addend_type(%a: tensor<4x5xf16>, %b: tensor<4x8xf16>, %c: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.matmul_bias_grad' op expects a bias_addend of the bias gradient's type 'tensor<8xf32>', got 'tensor<8xf16>'}}
  %0:2 = mpc.matmul_bias_grad %a, %b bias(%c) {transpose_a} : tensor<4x5xf16>, tensor<4x8xf16> bias(tensor<8xf16>)
  return
}

// -----

func.func @matmul_add_k(%a: tensor<4x5xf16>, %b: tensor<6x8xf16>, %c: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.matmul_add' op expects equal contracting dimensions, got K = 5 for a and 6 for b}}
  %0 = mpc.matmul_add %a, %b, %c : tensor<4x5xf16>, tensor<6x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  return
}

// -----

func.func @matmul_add_result(%a: tensor<4x5xbf16>, %b: tensor<5x8xbf16>, %c: tensor<4x8xf16>) {
  // expected-error @+1 {{'mpc.matmul_add' op expects a result of the operands' element type, or f32 for f16/bf16 operands, got 'f16' for 'bf16' operands}}
  %0 = mpc.matmul_add %a, %b, %c : tensor<4x5xbf16>, tensor<5x8xbf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  return
}

// -----

func.func @matmul_add_addend(%a: tensor<4x5xf16>, %b: tensor<5x8xf16>, %c: tensor<8xf16>) {
  // expected-error @+1 {{'mpc.matmul_add' op expects an addend of the result's type 'tensor<4x8xf16>', got 'tensor<8xf16>'}}
  %0 = mpc.matmul_add %a, %b, %c : tensor<4x5xf16>, tensor<5x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
  return
}

// -----

func.func @attention_bias_shape(%q: tensor<2x4x8xf16>, %k: tensor<2x6x8xf16>, %v: tensor<2x6x8xf16>, %b: tensor<2x1x4xf32>) {
  // expected-error @+1 {{'mpc.attention' op expects a bias of the scores' rank whose dimensions are 1 or the scores' [2, 4, 6], got [2, 1, 4]}}
  %o, %l = mpc.attention %q, %k, %v bias(%b : tensor<2x1x4xf32>) {scale = 1.0 : f64} : tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x6x8xf16>
  return
}

// -----

func.func @attention_bias_type(%q: tensor<2x4x8xf16>, %k: tensor<2x6x8xf16>, %v: tensor<2x6x8xf16>, %b: tensor<2x1x6xf16>) {
  // expected-error @+1 {{'mpc.attention' op operand #3 must be statically shaped tensor of 32-bit float values with no zero-sized dimension and at most 2^48 bytes, but got 'tensor<2x1x6xf16>'}}
  %o, %l = mpc.attention %q, %k, %v bias(%b : tensor<2x1x6xf16>) {scale = 1.0 : f64} : tensor<2x4x8xf16>, tensor<2x6x8xf16>, tensor<2x6x8xf16>
  return
}

// -----

func.func @heads_matmul_rank(%a: tensor<6x3x4xf16>, %b: tensor<2x3x4x6xf16>) {
  // expected-error @+1 {{'mpc.heads_matmul' op expects a of rank 4, got 'tensor<6x3x4xf16>'}}
  %0 = mpc.heads_matmul %a, %b : tensor<6x3x4xf16>, tensor<2x3x4x6xf16> -> tensor<2x3x6x6xf16>
  return
}

// -----

func.func @heads_matmul_types(%a: tensor<2x3x6x4xf16>, %b: tensor<2x3x4x6xf32>) {
  // expected-error @+1 {{'mpc.heads_matmul' op expects a and b of the same element type, got 'f16' and 'f32'}}
  %0 = mpc.heads_matmul %a, %b : tensor<2x3x6x4xf16>, tensor<2x3x4x6xf32> -> tensor<2x3x6x6xf16>
  return
}

// -----

func.func @heads_matmul_k(%a: tensor<2x6x3x4xf16>, %b: tensor<2x3x5x6xf16>) {
  // expected-error @+1 {{'mpc.heads_matmul' op expects equal contracting dimensions, got K = 4 for a and 5 for b}}
  %0 = mpc.heads_matmul %a, %b {a_bshd} : tensor<2x6x3x4xf16>, tensor<2x3x5x6xf16> -> tensor<2x3x6x6xf16>
  return
}

// -----

// Read in order, a [2, 6, 3, 4] operand's batch is [2, 6], not the
// result's [2, 3]: its flag is missing.
func.func @heads_matmul_batch(%a: tensor<2x6x3x4xf16>, %b: tensor<2x3x4x6xf16>) {
  // expected-error @+1 {{'mpc.heads_matmul' op expects the batch dimensions [B, H] of a ([2, 6]), b ([2, 3]) and the result ([2, 3]) to be equal, as read in their layouts}}
  %0 = mpc.heads_matmul %a, %b : tensor<2x6x3x4xf16>, tensor<2x3x4x6xf16> -> tensor<2x3x3x6xf16>
  return
}

// -----

func.func @heads_matmul_result(%a: tensor<2x6x3x4xf16>, %b: tensor<2x3x4x5xf16>) {
  // expected-error @+1 {{'mpc.heads_matmul' op expects a result of 6 x 5 matrices (as read in its layout), got 3 x 5}}
  %0 = mpc.heads_matmul %a, %b {a_bshd, result_bshd} : tensor<2x6x3x4xf16>, tensor<2x3x4x5xf16> -> tensor<2x3x3x5xf16>
  return
}
