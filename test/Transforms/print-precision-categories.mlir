// The default category of every op of the dialect (DESIGN §3), over a file
// that uses each op once or more.
// RUN: mpc-opt %S/../Dialect/MPC/round-trip.mlir --mpc-print-precision-categories -o /dev/null 2>&1 | FileCheck %s

// lowp
// CHECK-DAG: remark: precision category of 'mpc.matmul': lowp
// CHECK-DAG: remark: precision category of 'mpc.conv2d': lowp
// CHECK-DAG: remark: precision category of 'mpc.conv2d_backward_data': lowp
// CHECK-DAG: remark: precision category of 'mpc.conv2d_backward_filter': lowp
// CHECK-DAG: remark: precision category of 'mpc.conv_transpose2d': lowp
// CHECK-DAG: remark: precision category of 'mpc.fused_matmul': lowp
// CHECK-DAG: remark: precision category of 'mpc.matmul_bias_grad': lowp
// CHECK-DAG: remark: precision category of 'mpc.matmul_activation_grad': lowp
// CHECK-DAG: remark: precision category of 'mpc.matmul_add': lowp
// CHECK-DAG: remark: precision category of 'mpc.dropout_add': promote
// CHECK-DAG: remark: precision category of 'mpc.attention': lowp
// fp32
// CHECK-DAG: remark: precision category of 'mpc.exp': fp32
// CHECK-DAG: remark: precision category of 'mpc.sin': fp32
// CHECK-DAG: remark: precision category of 'mpc.cos': fp32
// CHECK-DAG: remark: precision category of 'mpc.log': fp32
// CHECK-DAG: remark: precision category of 'mpc.rsqrt': fp32
// CHECK-DAG: remark: precision category of 'mpc.pow': fp32
// CHECK-DAG: remark: precision category of 'mpc.softmax': fp32
// CHECK-DAG: remark: precision category of 'mpc.log_softmax': fp32
// CHECK-DAG: remark: precision category of 'mpc.softmax_backward': fp32
// CHECK-DAG: remark: precision category of 'mpc.log_softmax_backward': fp32
// CHECK-DAG: remark: precision category of 'mpc.layer_norm': fp32
// CHECK-DAG: remark: precision category of 'mpc.accuracy': fp32
// CHECK-DAG: remark: precision category of 'mpc.layer_norm_backward': fp32
// CHECK-DAG: remark: precision category of 'mpc.batch_norm': fp32
// CHECK-DAG: remark: precision category of 'mpc.batch_norm_inference': fp32
// CHECK-DAG: remark: precision category of 'mpc.batch_norm_backward': fp32
// CHECK-DAG: remark: precision category of 'mpc.reduce_sum': fp32
// CHECK-DAG: remark: precision category of 'mpc.reduce_mean': fp32
// CHECK-DAG: remark: precision category of 'mpc.cross_entropy': fp32
// CHECK-DAG: remark: precision category of 'mpc.cross_entropy_backward': fp32
// CHECK-DAG: remark: precision category of 'mpc.mse': fp32
// CHECK-DAG: remark: precision category of 'mpc.mse_backward': fp32
// CHECK-DAG: remark: precision category of 'mpc.bce_with_logits': fp32
// CHECK-DAG: remark: precision category of 'mpc.bce_with_logits_backward': fp32
// CHECK-DAG: remark: precision category of 'mpc.binary_cross_entropy': fp32
// CHECK-DAG: remark: precision category of 'mpc.binary_cross_entropy_backward': fp32
// CHECK-DAG: remark: precision category of 'mpc.scale_loss': fp32
// CHECK-DAG: remark: precision category of 'mpc.increment': follow
// CHECK-DAG: remark: precision category of 'mpc.lr_schedule': fp32
// CHECK-DAG: remark: precision category of 'mpc.reduce_max_backward': follow
// CHECK-DAG: remark: precision category of 'mpc.unscale_and_check': fp32
// CHECK-DAG: remark: precision category of 'mpc.clip_grad_norm': fp32
// CHECK-DAG: remark: precision category of 'mpc.update_loss_scale': fp32
// CHECK-DAG: remark: precision category of 'mpc.grad_stats': fp32
// CHECK-DAG: remark: precision category of 'mpc.sgd_update': fp32
// CHECK-DAG: remark: precision category of 'mpc.adam_update': fp32
// promote
// CHECK-DAG: remark: precision category of 'mpc.add': promote
// CHECK-DAG: remark: precision category of 'mpc.sub': promote
// CHECK-DAG: remark: precision category of 'mpc.mul': promote
// CHECK-DAG: remark: precision category of 'mpc.div': promote
// CHECK-DAG: remark: precision category of 'mpc.concat': promote
// follow
// CHECK-DAG: remark: precision category of 'mpc.constant': follow
// CHECK-DAG: remark: precision category of 'mpc.cast': follow
// CHECK-DAG: remark: precision category of 'mpc.neg': follow
// CHECK-DAG: remark: precision category of 'mpc.sqrt': follow
// CHECK-DAG: remark: precision category of 'mpc.tanh': follow
// CHECK-DAG: remark: precision category of 'mpc.sigmoid': follow
// CHECK-DAG: remark: precision category of 'mpc.relu': follow
// CHECK-DAG: remark: precision category of 'mpc.gelu': follow
// CHECK-DAG: remark: precision category of 'mpc.relu_grad': follow
// CHECK-DAG: remark: precision category of 'mpc.gelu_grad': follow
// CHECK-DAG: remark: precision category of 'mpc.tanh_grad': follow
// CHECK-DAG: remark: precision category of 'mpc.sigmoid_grad': follow
// CHECK-DAG: remark: precision category of 'mpc.reduce_max': follow
// CHECK-DAG: remark: precision category of 'mpc.reshape': follow
// CHECK-DAG: remark: precision category of 'mpc.transpose': follow
// CHECK-DAG: remark: precision category of 'mpc.slice': follow
// CHECK-DAG: remark: precision category of 'mpc.slice_backward': follow
// CHECK-DAG: remark: precision category of 'mpc.broadcast_to': follow
// CHECK-DAG: remark: precision category of 'mpc.embedding': follow
// CHECK-DAG: remark: precision category of 'mpc.embedding_backward': follow
// CHECK-DAG: remark: precision category of 'mpc.max_pool2d': follow
// CHECK-DAG: remark: precision category of 'mpc.max_pool2d_backward': follow
// CHECK-DAG: remark: precision category of 'mpc.avg_pool2d': follow
// CHECK-DAG: remark: precision category of 'mpc.avg_pool2d_backward': follow
// CHECK-DAG: remark: precision category of 'mpc.upsample_nearest2d': follow
// CHECK-DAG: remark: precision category of 'mpc.upsample_nearest2d_backward': follow
// CHECK-DAG: remark: precision category of 'mpc.dropout': follow
// CHECK-DAG: remark: precision category of 'mpc.all_reduce': follow
// CHECK-DAG: remark: precision category of 'mpc.add_layer_norm': promote
// CHECK-DAG: remark: precision category of 'mpc.add_layer_norm_backward': promote
// CHECK-DAG: remark: precision category of 'mpc.compare': follow
// CHECK-DAG: remark: precision category of 'mpc.where': promote
// CHECK-DAG: remark: precision category of 'mpc.dropout_backward': follow
// CHECK-DAG: remark: precision category of 'mpc.check_numerics': follow
// CHECK-DAG: remark: precision category of 'mpc.numerics_begin': follow
// CHECK-DAG: remark: precision category of 'mpc.numerics_end': follow

// RUN: mpc-opt %S/../Dialect/MPC/round-trip.mlir --mpc-print-precision-categories -o /dev/null 2>&1 | grep -o "category of '[a-z_.0-9]*'" | sort -u | count 89
