//===- Passes.td - mpc dialect passes ----------------------*- tablegen -*-===//

#ifndef MPC_DIALECT_MPC_TRANSFORMS_PASSES
#define MPC_DIALECT_MPC_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def AssignPrecisionPass : Pass<"mpc-assign-precision", "ModuleOp"> {
  let summary = "Automatic mixed precision: op categories to dtypes, casts, "
                "master weights";
  let description = [{
    Decides, at compile time, the precision every op of every function runs
    in, from its category (`lowp`, `fp32`, `promote`, `follow`; see
    docs/MixedPrecision.md), the level and the overrides, and inserts the
    casts that follow. Works on forward graphs and on full training steps.

    Levels (Apex's): `O0` all f32; `O1` per category, weights stay f32 and
    each weight is cast once per step, the cast shared by forward and
    backward; `O2` `lowp`/`promote`/`follow` ops in low precision, `fp32` ops
    in f32 (BatchNorm with f32 parameters and statistics), persistent
    low-precision weight copies as new
    globals written by the optimizer ops from the f32 masters; `O3` pure low
    precision without masters (a speed baseline; warns).

    Function signatures are kept: arguments are cast where they are used,
    results are cast back to their declared types.

    ```
    mpc-opt --mpc-assign-precision="level=O2 dtype=bf16" model.mlir
    mpc-opt --mpc-assign-precision="level=O1 fp32-ops=mpc.gelu report=-" model.mlir
    ```
  }];
  let options = [
    Option<"level", "level", "std::string", /*default=*/"\"O1\"",
           "Optimization level: O0, O1, O2 or O3">,
    Option<"dtype", "dtype", "std::string", /*default=*/"\"f16\"",
           "Low-precision type: f16 or bf16">,
    Option<"keepBatchNormFp32", "keep-batchnorm-fp32", "std::string",
           /*default=*/"\"auto\"",
           "At O2/O3, keep batch_norm parameters and statistics in f32 "
           "(activations stay low): true, false or auto (true below O3)">,
    ListOption<"lowpOps", "lowp-ops", "std::string",
               "Ops moved to the lowp category (e.g. mpc.softmax)">,
    ListOption<"fp32Ops", "fp32-ops", "std::string",
               "Ops moved to the fp32 category">,
    ListOption<"promoteOps", "promote-ops", "std::string",
               "Ops moved to the promote category">,
    ListOption<"followOps", "follow-ops", "std::string",
               "Ops moved to the follow category">,
    Option<"policy", "policy", "std::string", /*default=*/"\"\"",
           "JSON policy file: {\"lowp\": [ops], \"fp32\": [...], ...}">,
    Option<"allowUnsafe", "allow-unsafe", "bool", /*default=*/"false",
           "Allow overrides that put a loss or a large reduction in low "
           "precision">,
    Option<"alignmentRemarks", "alignment-remarks", "bool", /*default=*/"true",
           "Remark on low-precision GEMM/conv dimensions that are not "
           "multiples of 8">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write the precision report to this file ('-' for stdout); "
           "also --mpc-precision-report">,
    Option<"reportFormat", "report-format", "std::string",
           /*default=*/"\"auto\"",
           "Report format: json, table, or auto (a table on a terminal)">,
  ];
  let dependentDialects = ["::mlir::mpc::MPCDialect",
                           "::mlir::ml_program::MLProgramDialect"];
}

def AutodiffPass : Pass<"mpc-autodiff", "ModuleOp"> {
  let summary = "Builds a training step (loss and gradients) from a loss function";
  let description = [{
    Reverse-mode automatic differentiation. From the function `loss` (its
    first result is the scalar loss; it reads trainable
    `ml_program.global`s), builds the function `name` that returns the
    loss, then the gradient of every trainable global (declaration order),
    each result marked `{mpc.grad_of = @global}`. Each op builds its own
    vector-Jacobian product (VJPOpInterface); gradients of values used
    several times are summed; broadcasting is undone by reductions.
    Trainable: mutable float globals the loss reads and does not write
    (BatchNorm running statistics are written: not trainable), unless marked
    `mpc.frozen`. Labels, indices and masks get no gradient. An op on the
    path from a trainable global to the loss without a VJP is an error
    naming it. The loss function stays as it was.

    ```
    $ mpc-opt model.mlir --mpc-autodiff="loss=loss name=train_step"
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"loss\"",
           "The function to differentiate (first result: the loss)">,
    Option<"name", "name", "std::string", /*default=*/"\"train_step\"",
           "The name of the training step to build">,
  ];
  let dependentDialects = ["::mlir::mpc::MPCDialect"];
}

def AccumulateGradientsPass : Pass<"mpc-accumulate-gradients", "ModuleOp"> {
  let summary = "Gradient accumulation: one optimizer step per K micro-batches";
  let description = [{
    Runs after `--mpc-autodiff` and before `--mpc-optimizer`, on the
    training step `func` (its results: the loss, then the gradients marked
    `mpc.grad_of`). With `steps=K` above 1:

    - a second function `@<func>_accumulate` (marked
      `mpc.accumulates = @<func>`) runs the forward and backward passes of a
      micro-batch and adds each gradient to its f32 accumulator, the global
      `@<param>_grad_accum`, and the loss to `@<func>_loss_accum`; it
      returns the micro-batch's loss;
    - `@<func>` (marked `mpc.accumulate_steps = K`) runs the last
      micro-batch: its gradients are its own plus the accumulators', which
      it zeroes (whether or not the step is then skipped); it returns the
      mean loss of the K micro-batches;
    - both backward passes start from `1/K` (the gradient seed
      `mpc.loss_seed`): the loss is divided by K, as in PyTorch's
      accumulation recipe, so the sum is the gradient of the mean loss.
      `--mpc-loss-scaling` multiplies the seeds of both functions by the
      scale, and its one check, scale update and skip then act on the
      accumulated gradients once per K micro-batches.

    The training executable calls `@<func>_accumulate` K-1 times and
    `@<func>` once per optimizer step. Accumulators stay f32 at every level
    (O3 included) and are declared together after the module's other
    globals (then the loss's), so that the state holds them in one run
    and the lowering zeroes them in one call. `steps=1` changes nothing.

    ```
    $ mpc-opt model.mlir --mpc-autodiff --mpc-accumulate-gradients=steps=4 \
        --mpc-optimizer
    ```
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"train_step\"",
           "The training step (built by --mpc-autodiff)">,
    Option<"steps", "steps", "int64_t", /*default=*/"1",
           "Micro-batches per optimizer step (K)">,
  ];
  let dependentDialects = ["::mlir::mpc::MPCDialect",
                           "::mlir::ml_program::MLProgramDialect"];
}

def CheckNumericsPass : Pass<"mpc-check-numerics", "ModuleOp"> {
  let summary = "Device-side checks of every floating-point result";
  let description = [{
    Debug instrumentation, run last before `--mpc-plan-memory`: after every
    op of the training step `func` (and of its accumulation micro-step)
    with a floating-point result that is read, an `mpc.check_numerics`
    records the result's largest finite `|x|`, how many values were not
    finite, and how many fell below f16's smallest normal and subnormal;
    the step records the first op, in program order, that held an inf or
    NaN, and which step it was. Each checked op is numbered; the module
    attribute `mpc.numerics_ops` lists them (op, location, phase, result
    type, the numbers of the ops that produced its operands) for the
    training executable, which reports
    `step 17 skipped: first non-finite value in mpc.exp at bert.mlir:212:9
    (forward)` with its inputs' ranges, and writes the per-op table of
    `--numerics-report`.

    Checks share an op, and a launch on a GPU, while their values are still
    live: the values made since the last check are checked together right
    before the first op that is the last reader of one of them, writes
    memory, or sums in place (an all-reduce), and before the step returns.
    The check of a value therefore comes before any op that could
    overwrite it, no value lives longer than without the checks, and the
    memory plan is the same. `group=false` checks each value right after
    its op instead.

    Phases: `state` (global loads), `optimizer` (from the first unscale,
    clip, statistics or update op on), and before that `forward` (what the
    loss and the stored state are computed from) and `backward` (every
    other op); `eval`, the whole evaluation step (`mpc.eval`, from
    `--mpc-eval-step`), numbered after the training step's ops. `phases=`
    checks only some (comma-separated). Without the pass nothing is
    emitted.

    ```
    $ mpc-opt step.mlir --mpc-check-numerics="phases=forward,backward"
    ```
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"train_step\"",
           "The training step">,
    Option<"phases", "phases", "std::string",
           /*default=*/"\"state,forward,backward,optimizer,eval\"",
           "The phases to check (comma-separated)">,
    Option<"group", "group", "bool", /*default=*/"true",
           "Check the values still live together, before the first op that "
           "could overwrite one of them (false: each right after its op)">,
  ];
  let dependentDialects = ["::mlir::mpc::MPCDialect",
                           "::mlir::ml_program::MLProgramDialect"];
}

def EvalStepPass : Pass<"mpc-eval-step", "ModuleOp"> {
  let summary = "Builds an evaluation step from the loss function";
  let description = [{
    Clones the loss function `loss` into `name` (marked `mpc.eval`), the
    evaluation step the training executable runs on validation data:

    - forward and loss only, no gradients, and no state written (every
      `ml_program.global_store` goes);
    - dropout off (its result is its input);
    - batch norm in inference mode, on its running statistics: each
      `mpc.batch_norm` becomes `mpc.batch_norm_inference` (with its fused
      ReLU, if any), one pass over the activation;
    - when the loss is an `mpc.cross_entropy`, a second result, the top-1
      `mpc.accuracy` of its logits and labels.

    The loss it reports is the function's first result, or the op marked
    `mpc.eval_loss` (one, of a scalar result of the loss's type) where
    there is one: the main head's of a loss summed over several heads
    (`mpc-import-onnx --loss-output`), as PyTorch evaluates GoogLeNet on its
    main logits alone. What only the other heads read is not computed.

    `precision=f32` (the default, PyTorch's advice to evaluate without
    autocast) marks the step `mpc.keep_f32`: `--mpc-assign-precision` leaves
    it in f32, reading the f32 master weights (at O3, which has none, the
    f16 weights cast up). `precision=amp` leaves the step to
    `--mpc-assign-precision` like any other function: it runs at the
    training level (at O2 on the low-precision weight copies).

    ```
    $ mpc-opt model.mlir --mpc-eval-step="loss=loss name=eval_step"
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"loss\"",
           "The loss function (first result: the loss)">,
    Option<"name", "name", "std::string", /*default=*/"\"eval_step\"",
           "The name of the evaluation step to build">,
    Option<"precision", "precision", "std::string", /*default=*/"\"f32\"",
           "f32 (f32 master weights, f32 compute) or amp (the training "
           "level)">,
  ];
  let dependentDialects = ["::mlir::mpc::MPCDialect"];
}

def GraphSummaryPass : Pass<"mpc-graph-summary", "ModuleOp"> {
  let summary = "Prints a summary of each graph: ops by kind and parameters";
  let description = [{
    Writes, for the module, its trainable parameters (what an optimizer
    update updates, a mutable global no op writes, a low-precision copy of
    a master weight: count, elements, bytes, by element type), its state
    (every other global the graph writes: the updates' optimizer state,
    listed apart, and e.g. BatchNorm running statistics) and its constants
    (immutable globals), then for each function its op counts by name. The
    IR is unchanged.

    ```
    $ mpc-opt --mpc-graph-summary examples/mlp.mlir -o /dev/null
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' for stdout)">,
  ];
}

def DataParallelPass : Pass<"mpc-data-parallel", "ModuleOp"> {
  let summary = "Data-parallel training: gradients summed over every rank "
                "in contiguous buckets";
  let description = [{
    Runs after `--mpc-optimizer` and `--mpc-assign-precision`, before
    `--mpc-loss-scaling`, on the training step `func`. Every rank of the job
    runs the same step on its own samples; this pass makes their updates
    identical:

    - the gradients the optimizer updates read are gathered, in the order
      the backward pass produces them (the last layers first), into
      buckets of one element type of about `bucket-bytes` each (a gradient
      larger than that is a bucket of its own);
    - each bucket is one `mpc.all_reduce`, placed right after its last
      gradient is computed, so that its collective runs while the backward
      pass goes on; the memory plan lays each bucket out contiguously and
      the sums overwrite the gradients in place;
    - the mean over ranks is folded into the gradient seed: the backward
      pass starts from `1/N` times the seed (`N` the world size, read from
      the global `@data_parallel_inverse_size`, which the training
      executable sets at start-up), so the sum of the ranks' gradients is
      the gradient of the mean loss, and low-precision gradients are not
      N times larger before they are summed. With gradient accumulation
      both the step and its micro-step start from the folded seed and only
      the step reduces (the accumulated sum, once per optimizer step);
    - f16 and f32 gradients are summed in their type; bf16 gradients are
      converted to f32 and summed in f32 (`bf16-reduce=f32`, the default;
      `bf16-reduce=bf16` sums them in bf16); every sum is accumulated in f32
      and rounded once;
    - `--mpc-loss-scaling` then checks the reduced gradients: every rank
      sees the same `found_inf` and takes the same skip and scale decision
      with no further collective;
    - the globals batch norm's running statistics are stored in are marked
      `mpc.rank_mean`: the executable averages them over the ranks when it
      writes a checkpoint;
    - `sync-batch-norm=true` (PyTorch's `SyncBatchNorm`): every
      `mpc.batch_norm` of the step (and of its accumulation micro-step)
      and its `mpc.batch_norm_backward` get `sync`, normalising with the
      statistics of all ranks' samples together. Their running statistics
      are then the same on every rank and are not marked `mpc.rank_mean`;
      a step without a batch norm gets a warning.

    Gradients that are constants (a parameter the loss does not depend on)
    are the same on every rank and are not reduced.

    ```
    $ mpc-opt model.mlir --mpc-autodiff --mpc-optimizer \
        --mpc-assign-precision=level=O2 --mpc-data-parallel \
        --mpc-loss-scaling
    ```
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"train_step\"",
           "The training step">,
    Option<"bucketBytes", "bucket-bytes", "int64_t",
           /*default=*/"25 << 20",
           "Bytes of gradients per bucket (default 25 MiB, as PyTorch DDP)">,
    Option<"bf16Reduce", "bf16-reduce", "std::string", /*default=*/"\"f32\"",
           "The type bf16 gradients are summed in: f32 or bf16">,
    Option<"syncBatchNorm", "sync-batch-norm", "bool", /*default=*/"false",
           "Batch norms normalise with the statistics of every rank's "
           "samples (PyTorch's SyncBatchNorm)">,
  ];
  let dependentDialects = ["::mlir::mpc::MPCDialect",
                           "::mlir::ml_program::MLProgramDialect"];
}

def LossScalingPass : Pass<"mpc-loss-scaling", "ModuleOp"> {
  let summary = "Loss scaling with GradScaler semantics, on the device";
  let description = [{
    Runs after `--mpc-autodiff`, `--mpc-optimizer` and
    `--mpc-assign-precision`, on the training step `func`:

    - the backward pass starts from the loss scale instead of 1 (the
      gradient seed `--mpc-autodiff` marks `mpc.loss_seed`): every gradient
      is the gradient of `loss * scale`, while the step still returns the
      loss itself;
    - one `mpc.unscale_and_check` before the first optimizer update
      multiplies all gradients by `1/scale` (in f32) and computes
      `found_inf`; every optimizer update takes the unscaled gradient and
      `found_inf`, and leaves parameters and state untouched when it is set;
    - `mode=dynamic`: `mpc.update_loss_scale` after the updates, with
      PyTorch GradScaler's rule (`growth-factor`, `backoff-factor`,
      `growth-interval`), `min-scale`/`max-scale` clamps and DeepSpeed-style
      `hysteresis`; `mode=static`: the scale stays `init-scale` (overflowing
      steps are still skipped); `mode=none`: nothing. `mode=auto` (default)
      is dynamic when the step computes in f16 and none otherwise (bf16 and
      f32 have f32's range).

    The scale, the growth and hysteresis counters and whether the last step
    was skipped are globals (`@loss_scale`, `@loss_scale_growth_tracker`,
    `@loss_scale_hysteresis_tracker`, `@loss_scale_skipped`): checkpointed
    with the model and read by the runner's metrics.

    `clip-grad-norm=MAX` clips the gradients' global 2-norm, PyTorch's
    `clip_grad_norm_` after `GradScaler.unscale_`: `mpc.clip_grad_norm`
    takes the place of `mpc.unscale_and_check`, computing the norm of the
    unscaled gradients and the inf/NaN check in one pass, and the clip
    coefficient `min(1, MAX / (norm + 1e-6))` goes into the `1/scale`
    factor the updates already apply, so scaled gradients are never
    clipped; a non-finite norm skips the step (and backs the scale off).
    The norm is stored in `@grad_norm` (the runner's metrics). With
    `mode=none` (f32 and bf16 steps) clipping still adds the check: a step
    with a non-finite gradient is skipped, not applied.
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"train_step\"",
           "The training step">,
    Option<"mode", "mode", "std::string", /*default=*/"\"auto\"",
           "auto, dynamic, static or none">,
    Option<"initScale", "init-scale", "double", /*default=*/"65536.0",
           "Initial (or static) loss scale">,
    Option<"growthFactor", "growth-factor", "double", /*default=*/"2.0",
           "Factor of growth after growth-interval clean steps">,
    Option<"backoffFactor", "backoff-factor", "double", /*default=*/"0.5",
           "Factor of backoff on overflow">,
    Option<"growthInterval", "growth-interval", "int64_t",
           /*default=*/"2000", "Clean steps before the scale grows">,
    Option<"hysteresis", "hysteresis", "int64_t", /*default=*/"1",
           "Overflowing steps before the scale backs off">,
    Option<"minScale", "min-scale", "double", /*default=*/"0.0",
           "Lower clamp of the scale (0: none)">,
    Option<"maxScale", "max-scale", "double", /*default=*/"0.0",
           "Upper clamp of the scale (0: none)">,
    Option<"clipGradNorm", "clip-grad-norm", "double", /*default=*/"0.0",
           "Clip the unscaled gradients' global 2-norm to this (0: off)">,
  ];
  let dependentDialects = ["::mlir::mpc::MPCDialect",
                           "::mlir::ml_program::MLProgramDialect"];
}

def PadForTensorCoresPass : Pass<"mpc-pad-for-tensor-cores", "ModuleOp"> {
  let summary = "Pads low-precision matmuls and convolutions to Tensor "
                "Core multiples of 8";
  let description = [{
    Runs after `--mpc-assign-precision` (in `mpc-compile`, after
    `--mpc-fuse`). Every `mpc.matmul` and `mpc.fused_matmul` in f16 or bf16
    whose M, N or K (after transposes) is not a multiple of 8 is computed
    on operands padded with zeros to the next multiple of 8 (an
    `mpc.concat` with a zero constant along each padded dimension; a fused
    product's bias gets zeros for the extra columns), and its result is
    sliced back (`mpc.slice`): zeros add nothing to the products and the
    extra rows and columns are dropped, so the values are those of the
    unpadded product. Convolutions (`mpc.conv2d` and its backward ops,
    ungrouped) have their input and output channels padded the same way
    (zero input channels, zero filters). A remark names what was padded.

    It pads only where the padded product is at most `max-extra-work` more
    multiply-adds than the original (default 1.0: at most twice the work):
    cuBLASLt runs misaligned f16/bf16 shapes on slower non-Tensor-Core or
    narrow-vector kernels, commonly several times slower, but a tiny
    dimension padded far (3 to 8) may still cost more than it saves. The
    threshold has not been measured on a GPU yet. Grouped and transposed
    convolutions are not padded.

    ```
    $ mpc-opt model.mlir --mpc-assign-precision=level=O2 \
        --mpc-pad-for-tensor-cores
    ```
  }];
  let options = [
    Option<"maxExtraWork", "max-extra-work", "double", /*default=*/"1.0",
           "The most extra work padding may add, as a fraction of the "
           "product's multiply-adds">,
  ];
  let dependentDialects = ["::mlir::mpc::MPCDialect"];
}

def FusePass : Pass<"mpc-fuse", "ModuleOp"> {
  let summary = "Fuses linear layers' bias and activation into the GEMM";
  let description = [{
    Runs after precision assignment, loss scaling and cast clean-up, before
    `--mpc-check-numerics` and memory planning. Each `mpc.add` of a bias
    vector (`[N]`, the result's last dimension) to an `mpc.matmul` of a
    row-major activation and one `[K, N]` (or transposed) weight matrix
    becomes one `mpc.fused_matmul`, which adds the bias and applies the
    activation in the GEMM's epilogue (cuBLASLt `BIAS`, `RELU_BIAS`,
    `GELU_BIAS`); the product and the sum are never written. It fuses:

    - the product in f16, bf16 or f32, read only by the `add` (at O1, an
      f16/bf16 product widened to f32 by an `mpc.cast` read only by the
      `add`: the fused op then takes f16 operands and an f32 bias);
    - an `mpc.relu` that is the sum's only reader besides ReLU gradients,
      which then read the ReLU's output (positive exactly where its input
      is, so the gradients are unchanged);
    - an `mpc.gelu {approximate}` that is the sum's only reader besides
      tanh-GELU gradients, which then read the pre-activation the fused op
      writes beside its result (`GELU_AUX_BIAS`); cuBLASLt's GELU is the
      tanh form, so exact GELU stays a separate op reading the sum.

    It does not fuse a product or sum read elsewhere, a batched weight, a
    transposed activation, a bias that is not a vector of the result's
    element type, or f64.

    In the backward pass, the `mpc.reduce_sum` over every dimension but
    the last of a gradient `g` (or of `g` widened from f16/bf16 to f32 by
    an `mpc.cast`) and the first weight-gradient product
    `mpc.matmul(x, g2) {transpose_a}` whose right operand is `g` or `g`
    reshaped to `[rows, N]` become one `mpc.matmul_bias_grad` (cuBLASLt
    `BGRADA`) at the later of the two, where that place can take both;
    an f16/bf16 reduction gets the f32 sums cast to its type. It does not
    fuse an f32 sum of values the product reads rounded to f16. An
    `mpc.relu_grad` or `mpc.gelu_grad {approximate}` whose gradient is a
    product (as above: one rank-2 weight, at O1 through its widening cast,
    read only by it) becomes one `mpc.matmul_activation_grad`, the
    derivative applied to the f32 product (cuBLASLt `DRELU` / `DGELU`). An
    `mpc.add` of such a product and a tensor of the sum's type (a residual
    gradient plus a data gradient) becomes one `mpc.matmul_add`, the GEMM
    with the tensor as its C matrix.

    With `norm-bias-grads` (and `epilogues`), such a reduction of an
    f16/bf16 gradient widened to f32 whose gradient is the input gradient
    of an `mpc.add_layer_norm_backward` (the linear layer's output feeds
    the residual norm, as in a transformer's attention output and second
    feed-forward layer) becomes that op's `input_sums` result instead: its
    column reduction for `gamma` and `beta` reads the gradient it has just
    written and sums it too, in the order a reduction of its own would, so
    the values are the same; the weight gradient stays a plain product.

    With `sibling-bias-grads` (and `epilogues`), the f32 bias gradients
    of `mpc.matmul_bias_grad` ops with f16/bf16 operands of one type
    whose weight gradients read the same layer input (an attention's
    query, key and value projections), all added to accumulators (their
    `bias_addend`s) or none, are taken by one `mpc.column_sums` (with the
    accumulators as its `addends`), placed before the last of them; each
    op becomes its weight gradient's product alone (`mpc.matmul`, or
    `mpc.matmul_add` with an addend). A sum read before that place stays
    with its op. The values are the same: each column is summed as its
    own reduction sums it.

    With `weight-grad-sums` (and `epilogues`), in gradient accumulation's
    micro-batch step: a weight gradient's product added to its f32
    accumulator (through the widening cast) becomes that `mpc.matmul_add`,
    placed where the product was (the accumulator's load moves up to it
    where no store of the global lies between); an `mpc.matmul_bias_grad`
    whose bias sums are added to an accumulator takes it as its
    `bias_addend`; and a layer norm's gamma and beta gradients
    (`mpc.layer_norm_backward`, `mpc.add_layer_norm_backward`) and an
    embedding's table gradient (`mpc.embedding_backward`), each read only
    by an `mpc.add` with an accumulator of its type, take the accumulator
    as their addend. Those sums are bit for bit the adds' (an embedding
    row nothing hits keeps the accumulator's -0 where the add gave +0);
    the memory plan computes them in the accumulators' globals, so an
    embedding's accumulator gets only the rows the batch hits, and no
    table-sized gradient is zeroed, written or added.

    With `row-transposes`, first: an `mpc.transpose` of rank 3 or more
    that keeps the innermost dimension (a batch-first model's `[B, S, E]`
    to `[S, B, E]`, as `nn.MultiheadAttention` with `batch_first=True`
    exports it) moves down through the row-wise ops that read it (an
    `mpc.matmul` by one rank-2 weight, an add, sub, mul or div of a vector
    along the innermost axis, an `mpc.cast`, an `mpc.slice` of the
    innermost axis only) where every path it takes there ends at another
    transpose, directly or through a reshape; or up through such ops, and
    the reshapes of leading dimensions between them (each read only by
    the next), that make its input from a transpose or a reshape of one.
    Then each transpose of a chain of reshapes of a transpose (each read
    only by the next) becomes one transpose between reshapes, over the
    common refinement of the two middle shapes: the batch transpose and a
    head transpose (`[S, B H, D]` to `[B H, S, D]`) compose into `[B, S,
    H, D]` to `[B, H, S, D]`, as a BERT-style model writes it. With
    `transposed-operands` (next, before attention), a product operand
    that is a reshape of a transpose moving the innermost dimension (the
    keys `[B, S, H D]` to `[B, H D, S]`, viewed as `[B H, D, S]`) is read
    with the last two dimensions swapped where that is a transpose keeping
    the innermost dimension between reshapes, its flag flipped. Each op
    computes what it did on the same rows, but a product now takes them
    in another order (a weight gradient sums them so) and ops the
    transposes stood between may fuse (a residual add taken into its
    GEMM), so the values agree to rounding, not bit for bit. Where a path
    ends elsewhere (a return, an
    op that is not row-wise, an add that varies along a leading dimension)
    or an intermediate has another reader, the transpose stays.

    With `attention-layout` (and `attention`): an `mpc.attention` whose
    query, key and value are each an `mpc.transpose` from `[..., S, H, D]`
    to `[..., H, S, D]` read by nothing else, whose log-sum-exp is unread
    (a forward graph, before autodiff) and whose result is read only by
    transposes back to `[..., S, H, Dv]`, becomes one `mpc.attention
    {layout = "bshd"}` on the transposes' inputs (a multi-head attention's
    reshaped projections), its result replacing the transposes': the
    heads' transposes, four each way per layer, are no kernels of their
    own. The same where each operand is such a transpose's result viewed
    with the batch and the heads merged (`[B, H, S, D]` as `[B H, S, D]`,
    as `row-transposes` leaves a batch-first import's heads) and the
    result is viewed back before its transpose, with no mask or bias: the
    fused op takes the unmerged `[B, S, H, D]` operands. Before it, with
    `scales`, an attention's query that is a one-element constant's
    product or quotient read only by it (the queries divided by
    `sqrt(d)`, as `nn.MultiheadAttention` exports them) is replaced by
    the unscaled tensor and the constant joins the attention's `scale`
    (exact for a power of two). The values are the same bit for bit.
    Partial cases (one operand not transposed, a transpose read
    elsewhere, a result read untransposed) keep their transposes.

    With `decomposed-norms`, before the norms: a layer norm over the last
    axis written out of its steps, as ONNX exports `nn.LayerNorm` before
    opset 17 (`d = x - reduce_mean(x)`, `v = reduce_mean(d^2)` by `pow(d,
    2)` or `d * d`, `n = d / sqrt(v + eps)` or `d * rsqrt(v + eps)`, then
    optionally `n * gamma + beta` with `[C]` vectors), each intermediate
    read only by the next step (the mean kept as `[..., 1]`, `eps` and the
    exponent constants), becomes one `mpc.layer_norm` with that epsilon
    (gamma ones and beta zeros where the chain has none), which the norms
    below may then fuse with a residual add. Its forward values differ
    from the chain's by rounding only; its gradient is the norm's one
    backward instead of the chain's dozen ops.

    With `norms`, in forward graphs (before autodiff, with attention):
    `mpc.layer_norm` over the last axis, its statistics unread, of an
    `mpc.add` of two tensors of its type (one side optionally an
    `mpc.dropout` read only by the add, its mask unread) becomes one
    `mpc.add_layer_norm`, whose sum replaces the add for its other
    readers (which must follow the norm); and an `mpc.batch_norm` whose
    result only an `mpc.relu` reads (and, after autodiff, ReLU gradients
    that read it as their saved value, which then read the fused output)
    takes the ReLU (`activation = "relu"`), an `mpc.batch_norm_backward`
    of it whose gradient is such a ReLU gradient read by nothing else
    taking that gradient too (`result(...)`); an
    `mpc.batch_norm_inference` whose result only an `mpc.relu` reads takes
    the ReLU likewise. With `relu-mask-from-input`, after the norms: such
    a backward (fused here or written so), of f16, bf16 or f32, takes its
    forward's beta instead of the fused output (`beta(...)`) and forms the
    ReLU's mask from the input, the saved statistics, gamma and beta as
    the forward rounded its result: the same bits, one tensor fewer read
    in each of its two passes. With `residuals`, after the
    norms: an `mpc.dropout` whose mask nothing reads, read only by an
    `mpc.add` of a tensor of its type, becomes one `mpc.dropout_add` (no
    mask is kept; the backward draws the bits again). The fused op's
    location fuses those of its parts.

    With `pool-grad-sums`: an `mpc.add` of an `mpc.max_pool2d_backward`
    (no addend yet, read only by the add) and another tensor of its type
    (a U-Net's skip connection: the pooled encoder output's gradient and
    its concatenation's) becomes the pool's backward with that tensor as
    its `addend`, placed at the add: the pool's gradient is never written
    alone. The values are the add's bit for bit. The addend may be a view
    of its operand's buffer whose positions lie evenly apart (a channel
    slice of the concatenation's gradient), read where it lies.

    With `concat-convs`: an `mpc.concat` of NHWC tensors along their
    channels (each part's a multiple of 8), read only as the input of
    `mpc.conv2d` (no addend) and `mpc.conv2d_backward_filter` (one group
    each; a U-Net's skip connection), is never written: each convolution
    becomes a convolution of each part with its slice of the filter, each
    after the first adding to the one before (its `addend`), and each
    filter gradient the concatenation of the parts' filter gradients. The
    same products; between the parts one rounding of a partial sum to the
    result's type.

    With `casts`, last: an `mpc.cast` between f16, bf16 and f32 is folded
    into the softmax, log-softmax, their gradients and dropout, which may
    read and write those types directly (computing in f32 and rounding
    once). A widening cast (f16/bf16 to f32) read only by such ops (any
    operand of the softmaxes and their gradients, dropout's input) is
    replaced by its input; a narrowing cast (f32 to f16/bf16) that is the
    only reader of such an op's result becomes that op's result type. Both
    give the values of the unfused ops bit for bit, and save a kernel and
    a round trip of the wider tensor each: the f32 islands that precision
    assignment puts around a softmax (an attention's probabilities, a
    classifier's loss) read and write f16/bf16 at their edges. Casts
    between f16 and bf16, of f64, or widening a result or narrowing an
    operand (each would change a value) are kept.

    With `scales`, after the casts: an `mpc.mul` of a tensor by a
    one-element constant that only a softmax or log-softmax reads becomes
    the softmax's `scale` (the constant times any scale it had), and an
    `mpc.mul` by a constant of a softmax gradient's result that nothing
    else reads becomes the gradient's `scale`: an unfused attention's
    `1/sqrt(d)`, forward and backward, is no kernel of its own. The
    product is no longer rounded to the tensor's type before the softmax
    (nor the gradient before it is scaled): with a power-of-two scale
    (head sizes 16, 64, 256) the values are the same bit for bit, with
    another they differ by that one rounding.

    With `scale-moves`, after the scales: an `mpc.mul` or `mpc.div` of a
    chain of `mpc.reshape` and `mpc.transpose` ops (each read only by the
    next, the last only by the scaling) by an `mpc.constant` of one
    element scales the chain's input instead, the chain moving the scaled
    values (the same values): a query that `nn.MultiheadAttention`
    divides by `sqrt(d)` after its heads' transpose, where no softmax
    takes the scale (a masked attention), then meets its product with its
    transpose, which `head-products` reads in place.

    With `softmax-dropout`, after the scales: an `mpc.softmax` over the
    last axis whose result is not rounded (f32; f64 for f64), read only by
    an `mpc.dropout` and by `mpc.softmax_backward` ops of its scale whose
    gradient is an `mpc.dropout_backward` through that dropout's mask read
    by nothing else, becomes one `mpc.softmax_dropout`, and each such pair
    of gradients one `mpc.softmax_dropout_backward`, which computes the
    probabilities and the keep bits again from the softmax's input: an
    unfused attention keeps its f16 scores for the backward pass instead
    of its f32 probabilities and its mask, bit for bit the same values. In
    forward graphs (before autodiff) the dropout's mask is unread and the
    softmax's only reader is the dropout. Without a dropout, an f32
    softmax result read by one cast to f16/bf16 (for the products) and by
    such gradients becomes an `mpc.softmax_dropout` with `p = 0` writing
    the cast's type, the gradients its backward. A softmax over another
    axis, or one whose result is rounded (an f16 softmax at O3), is not
    fused.

    With `recompute`, last: an `mpc.softmax_dropout` whose result is read
    after its first reader (the backward pass's product with the dropped
    probabilities) is copied, marked `recompute`, before the first later
    reader, which with every later one reads the copy: the dropped
    probabilities die at the forward's product, and the backward computes
    them again from the input it keeps anyway, for one more pass over it.
    With `recompute-in-backward` too, that pass is not made either: where
    an `mpc.softmax_dropout_backward` of the same input, scale, p and seed
    in the copy's block has the copy's element type throughout, it writes
    the dropped probabilities as its `dropped` result, which the copy's
    readers read instead; those readers (the product for the values'
    gradient) and what reads them before it move just after it, unless
    the backward depends on them. The same values bit for bit.

    With `recompute-moves`, last: an op that only moves or converts
    elements (`mpc.concat`, `mpc.upsample_nearest2d`, `mpc.transpose`,
    `mpc.slice`, `mpc.broadcast_to`, `mpc.cast`) whose result is kept
    across the peak of its block's live tensor bytes (each result counted
    from its op to its last reader) only
    to be read again after it, such as a UNet's skip concatenation read by
    a convolution and again by that convolution's filter gradient, is
    copied, marked `mpc.recomputed`, just before the reader after the
    widest gap between its readers (wider than one op), which with every
    later reader reads the copy, provided every operand is kept until
    that reader anyway (a block argument, or read there or later) or the
    operands that are not take fewer bytes than the result (kept until
    the copy instead, where no position between their last reads and the
    gap, nor the later reader, then reaches the peak; one such copy per
    round). The result then dies before the peak, and the copy costs one
    more pass over it; moves that would not lower the peak are left
    alone. Where the widest gap comes before the first reader (a move
    read only after the peak, such as the f32 cast of a fused norm's sum
    that only the norm's f32 backward reads), the op itself moves down to
    that reader, unmarked: computed once, later. Rounds repeat while the peak moves to another such gap (at most
    16). The values are the same bit for bit.

    With `remarks` each fusion is reported where it happened; `report`
    writes every fused op of the module as JSON (the ops it replaced are
    the metadata of its fused location). A hand-written fused op is listed
    with no parts.

    ```
    $ mpc-opt step.mlir --mpc-fuse
    ```
  }];
  let options = [
    Option<"epilogues", "epilogues", "bool", /*default=*/"true",
           "Fuse linear layers' bias and activation into their GEMMs">,
    Option<"weightGradSums", "weight-grad-sums", "bool",
           /*default=*/"true",
           "With `epilogues`: sum a weight gradient into its f32 gradient "
           "accumulator (or another gradient of the weight) in its GEMM, "
           "mpc.matmul_add or mpc.matmul_bias_grad with an addend; the f16 "
           "weight gradient is then never rounded, nor does it overflow; "
           "bias, layer-norm and embedding gradients are added to their "
           "accumulators by the ops that compute them">,
    Option<"normBiasGrads", "norm-bias-grads", "bool", /*default=*/"true",
           "With `epilogues`: take the f32 sums of an f16/bf16 "
           "mpc.add_layer_norm_backward's input gradient (the bias "
           "gradient of the linear layer before the norm) in the norm's "
           "column reduction (its `input_sums`), not in a reduction of "
           "their own">,
    Option<"siblingBiasGrads", "sibling-bias-grads", "bool",
           /*default=*/"true",
           "With `epilogues`: sum the f32 bias gradients of f16/bf16 "
           "linear layers that read one input (an attention's query, key "
           "and value projections) in one mpc.column_sums, not one "
           "reduction each">,
    Option<"rowTransposes", "row-transposes", "bool", /*default=*/"true",
           "Move a transpose that keeps the innermost dimension through the "
           "row-wise ops that read it or make its input (products by one "
           "weight matrix, adds of a row vector, casts, slices of the "
           "rows) to a transpose it composes with, and compose transposes "
           "of reshapes of transposes into one">,
    Option<"attention", "attention", "bool", /*default=*/"true",
           "Fuse scaled dot-product attention into mpc.attention">,
    Option<"attentionLayout", "attention-layout", "bool",
           /*default=*/"true",
           "With `attention`: fold the head transposes around an "
           "mpc.attention into its layout \"bshd\"">,
    Option<"decomposedNorms", "decomposed-norms", "bool",
           /*default=*/"true",
           "Make a layer norm written out of reduce_mean, sub, pow (or "
           "mul), add, sqrt (or rsqrt), div (or mul) and its affine one "
           "mpc.layer_norm">,
    Option<"norms", "norms", "bool", /*default=*/"true",
           "Fuse dropout + residual add + layer norm into "
           "mpc.add_layer_norm, and batch norm + ReLU">,
    Option<"residuals", "residuals", "bool", /*default=*/"true",
           "Fuse dropout + residual add with no norm after it into "
           "mpc.dropout_add">,
    Option<"transposedOperands", "transposed-operands", "bool",
           /*default=*/"true",
           "Read a matmul operand made by a transpose of its last two "
           "dimensions untransposed, with transpose_a/transpose_b flipped; "
           "split a transpose read only by matmuls that makes the "
           "innermost dimension the second innermost into their flags and "
           "a transpose that keeps it innermost">,
    Option<"headProducts", "head-products", "bool", /*default=*/"true",
           "Read and write the heads' transposes (mpc.transpose [0, 2, 1, 3] "
           "of rank 4) around rank-4 products in place, as "
           "mpc.heads_matmul, instead of copying them (after "
           "differentiation: mpc.heads_matmul has no gradient); rank-3 "
           "products over the batch and heads merged are split into "
           "[B, H] first">,
    Option<"scaleMoves", "scale-moves", "bool", /*default=*/"true",
           "Move a multiplication or division by a one-element constant "
           "of reshapes and transposes (each read only by the next) "
           "before them (an attention's queries scaled after their heads' "
           "transpose); the same values">,
    Option<"sliceGrads", "slice-grads", "bool", /*default=*/"true",
           "Make a sum of slices' gradients (mpc.slice_backward) whose "
           "slices tile their input along one axis one mpc.concat of the "
           "gradients">,
    Option<"poolGradSums", "pool-grad-sums", "bool", /*default=*/"true",
           "Add a gradient summed with a max pool's input gradient (a skip "
           "connection's other gradient) in the pool's backward, as its "
           "addend">,
    Option<"concatConvs", "concat-convs", "bool", /*default=*/"true",
           "Convolve a channel concatenation's parts instead of the "
           "concatenation (mpc.conv2d with an addend), which is then never "
           "written">,
    Option<"casts", "casts", "bool", /*default=*/"true",
           "Fold f16/bf16 <-> f32 casts into the softmaxes, their "
           "gradients and dropout">,
    Option<"scales", "scales", "bool", /*default=*/"true",
           "Fold a constant scale of a softmax's input and of its "
           "gradient into the softmax's `scale`">,
    Option<"softmaxDropout", "softmax-dropout", "bool", /*default=*/"true",
           "Fuse a softmax and the dropout of its probabilities, and their "
           "gradients, into mpc.softmax_dropout(_backward)">,
    Option<"recompute", "recompute", "bool", /*default=*/"true",
           "Compute an mpc.softmax_dropout again for its readers after the "
           "first (the backward pass) instead of keeping its result">,
    Option<"recomputeInBackward", "recompute-in-backward", "bool",
           /*default=*/"true",
           "With `recompute`: have the mpc.softmax_dropout_backward of the "
           "same input write the dropped probabilities (its `dropped` "
           "result) instead of a copy of the forward computing them, its "
           "readers moved after it">,
    Option<"recomputeMoves", "recompute-moves", "bool", /*default=*/"true",
           "Compute a concatenation, upsampling, transpose, slice, "
           "broadcast or cast again for its readers after the widest gap "
           "(the backward pass), or move it down to its first reader "
           "where the gap comes before that one, where that lowers the "
           "peak of live bytes and its operands are kept anyway or take "
           "fewer bytes, instead of keeping its result">,
    Option<"reluMaskFromInput", "relu-mask-from-input", "bool",
           /*default=*/"true",
           "A batch norm + ReLU's backward forms the ReLU's mask from its "
           "input, statistics, gamma and beta instead of reading the "
           "fused output">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Report each fusion as a remark at the fused op">,
    Option<"report", "report", "std::string", /*default=*/"",
           "Write every fused op of the module (function, kind, location, "
           "the ops it replaced) as JSON to this file ('-': stdout)">,
  ];
  let dependentDialects = ["::mlir::mpc::MPCDialect"];
}

def GradStatsPass : Pass<"mpc-grad-stats", "ModuleOp"> {
  let summary = "Gradient diagnostics: zero, f16-underflowing, non-finite";
  let description = [{
    Runs last of the training passes (after `--mpc-loss-scaling` when it
    runs): one `mpc.grad_stats` over the gradients every optimizer update of
    `func` reads, stored to the global `@grad_stats`
    (`[elements, zero, underflow, nonfinite]`, `tensor<4xi64>`). The scale
    is the one the step's `mpc.unscale_and_check` divides by, 1 without loss
    scaling, so `underflow` counts the gradients whose true value rounds to
    zero in f16: what an f16 backward pass without the scale would lose.
    The training executable adds the fractions to every metrics line.
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"train_step\"",
           "The training step">,
  ];
  let dependentDialects = ["::mlir::mpc::MPCDialect",
                           "::mlir::ml_program::MLProgramDialect"];
}

def OptimizerPass : Pass<"mpc-optimizer", "ModuleOp"> {
  let summary = "Adds optimizer updates for the gradients a training step returns";
  let description = [{
    For every result of `func` marked `{mpc.grad_of = @w}` (what
    `--mpc-autodiff` builds), adds the update of `@w` at the end of the
    step, stores the new values and drops the gradient from the results.
    State is created as globals named after the parameter
    (`@w_momentum`, `@w_exp_avg`, `@w_exp_avg_sq`), the learning rate as
    `@<func>_lr`, Adam's step count as `@<func>_step` (incremented once per
    step, before the updates). `kind=sgd` is plain SGD, `kind=momentum` SGD
    with a momentum buffer (`momentum`, `nesterov`), `kind=adam` and
    `kind=adamw` PyTorch's Adam and AdamW (`beta1`, `beta2`, `eps`,
    `bias-correction`); `weight-decay` is L2 decay, decoupled for AdamW.
    `kind=lamb` is Apex's FusedLAMB (Adam's options, `adam-w-mode`):
    `mpc.adam_update {lamb}`, a per-tensor trust ratio on Adam's update.
    `schedule=linear-warmup|cosine` (`warmup-steps`, `total-steps`,
    `min-lr`) computes the rate from a step count with
    `mpc.lr_schedule` (`lr` is the peak) instead of the `@<func>_lr`
    global; so do PyTorch's `schedule=one-cycle` (`OneCycleLR`: `lr` is
    `max_lr`, `total-steps`, `pct-start`, `div-factor`,
    `final-div-factor`, `three-phase`), `schedule=step` (`StepLR`:
    `step-size`, `gamma`) and `schedule=exponential` (`ExponentialLR`:
    `gamma`). The schedule has its own counter `@<func>_lr_step`, which
    by default advances on a step that loss scaling skips, as a PyTorch
    scheduler does (`schedule-on-skip=advance`; `hold` keeps it with the
    optimizer's own count).

    Parameter groups, by glob patterns on the parameters' global names:
    `no-decay=*bias,*norm*` sets their weight decay to 0 (the usual recipe:
    no decay on biases and normalisation parameters); `lr-groups=embed*:0.1`
    multiplies their learning rate by 0.1 (the first matching pattern wins;
    with a schedule the group's whole schedule is scaled, as PyTorch's
    schedulers scale each group's initial rate). A pattern that matches no
    parameter is an error.

    ```
    $ mpc-opt model.mlir --mpc-autodiff \
        --mpc-optimizer="kind=momentum lr=0.01 momentum=0.9"
    ```
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"train_step\"",
           "The training step to extend">,
    Option<"kind", "kind", "std::string", /*default=*/"\"sgd\"",
           "sgd, momentum, adam, adamw or lamb">,
    Option<"lr", "lr", "double", /*default=*/"0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9",
           "Momentum (kind=momentum)">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "Weight decay (L2 for sgd/momentum/adam, decoupled for adamw)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam's beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam's beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "Adam's epsilon">,
    Option<"lambDecoupled", "adam-w-mode", "bool", /*default=*/"true",
           "LAMB: decay added to the update (Apex's adam_w_mode), not to "
           "the gradient">,
    Option<"biasCorrection", "bias-correction", "bool", /*default=*/"true",
           "Adam's bias correction">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"constant\"",
           "Learning-rate schedule: constant, linear-warmup, cosine, "
           "one-cycle, step or exponential">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Steps of linear warm-up (linear-warmup, cosine)">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"0",
           "Step at which the cosine reaches min-lr">,
    Option<"minLr", "min-lr", "double", /*default=*/"0.0",
           "Final learning rate of the cosine schedule">,
    Option<"gamma", "gamma", "double", /*default=*/"0.1",
           "Decay factor (step: every step-size updates; exponential: "
           "every update)">,
    Option<"stepSize", "step-size", "int64_t", /*default=*/"0",
           "Updates between decays of the step schedule">,
    Option<"pctStart", "pct-start", "double", /*default=*/"0.3",
           "one-cycle: the fraction of total-steps spent rising">,
    Option<"divFactor", "div-factor", "double", /*default=*/"25.0",
           "one-cycle: the initial rate is lr / div-factor">,
    Option<"finalDivFactor", "final-div-factor", "double",
           /*default=*/"1e4",
           "one-cycle: the final rate is the initial / final-div-factor">,
    Option<"threePhase", "three-phase", "bool", /*default=*/"false",
           "one-cycle: rise, fall back to the initial rate, then anneal">,
    ListOption<"noDecay", "no-decay", "std::string",
               "Glob patterns of parameter names that get no weight decay "
               "(e.g. *bias,*norm*)">,
    ListOption<"lrGroups", "lr-groups", "std::string",
               "Learning-rate multipliers by parameter name, PATTERN:FACTOR "
               "(e.g. embed*:0.1); the first matching pattern wins">,
    Option<"scheduleOnSkip", "schedule-on-skip", "std::string",
           /*default=*/"\"advance\"",
           "Whether a step skipped by loss scaling advances the schedule "
           "(advance, as PyTorch) or not (hold)">,
  ];
  let dependentDialects = ["::mlir::mpc::MPCDialect",
                           "::mlir::ml_program::MLProgramDialect"];
}

def PlanMemoryPass : Pass<"mpc-plan-memory", "ModuleOp"> {
  let summary = "Plans one static arena per function: offsets by liveness";
  let description = [{
    Gives every tensor a function computes a byte offset in one arena per
    function, so peak memory is known before anything runs. Arguments,
    constants and globals live elsewhere, and the results of the optimizer
    and loss-scale updates are written in place into their globals:

    - a value lives from its definition to its last use (to the end when it
      is returned);
    - an elementwise op whose operand of the same size dies at that op
      writes its result in place, into the operand's buffer;
    - a reshape is a view of its operand's buffer, and so is a slice
      whose every reader takes its operands through strides (add, sub,
      mul, div, pow, scale_loss, compare, where, and the strided copies
      of transpose, slice and broadcast_to) or is a reshape whose strides
      compose (a dimension split, or merged dimensions evenly apart) read
      so in turn, or a reshape read only by transposes that take the view
      as one loop over the shapes' common refinement: those readers get the operand's pointer at the slice's
      offset with its strides, no copy (`slice_views` in the report); the
      buffer then lives as long as its last reader through either, and
      nothing is written in place into a slice view;
    - a transpose whose one reader is a concat (through reshapes, each
      read once, where the operand's and the transpose's shapes have a
      common refinement) is written into the concatenation's buffer: the transpose
      scatters its input straight into its window and the concat copies
      only its other operands (`concat_windows` in the report); the
      concatenation's buffer then lives from the first such transpose;
    - a result computed from a global's load (a gradient accumulator's
      `acc + g`, a GEMM's addend, a batch norm's running statistics) is
      computed in the global itself (`mpc.in_globals`) where the global's
      old value is not read again and the global is next written by the
      result's store or after the result's last reader; stores of
      constants that nothing reads after them (a step's resets of its
      accumulators) move to the end of the function first, and each
      add of a gradient to its accumulator (a global marked
      `mpc.grad_accumulator`) moves up to where the gradient is computed,
      so the gradient dies there;
    - buffers are placed greedily, largest first, at the lowest offset
      aligned to `alignment` bytes (256: Tensor Core kernels) that overlaps
      no buffer live at the same time.

    `reuse=false` gives every value a buffer of its own: no in-place
    writes, no views, no sums written into their globals, no op moved.
    A step planned
    so must compute bit for bit what the reusing plan computes, which
    checks the plan (`test/e2e/plan-reuse.test`).

    Each op gets `mpc.offsets` (one offset per result, -1 where not in the
    arena) and each function `mpc.arena_bytes`. `report=FILE|-` (or
    `--mpc-memory-report`) writes the peak split into parameters,
    optimizer state, other state, constants (as `--mpc-graph-summary`
    sorts globals), gradients and activations, by dtype.

    `guard=N` (`mpc-compile --arena-guards`) places every buffer with N
    bytes after its end that no other buffer takes during the whole
    function (buffers then share no bytes; in place and views stay), and
    lists them on the function as `mpc.arena_guards` (offset, bytes, and
    the op and location of the buffer's first value); the module gets
    `mpc.state_guard = N`, which gives every global of the state buffer N
    bytes after it too. The runner fills the arena with 0xFF before each
    call and stops with the op (or global) named when a kernel has
    written into a guard: a kernel that writes past its result, or a
    result typed smaller than what its kernel writes, which the alignment
    of the plan otherwise hides. A read of bytes nothing wrote reads NaN
    (or -1).
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"256",
           "Byte alignment of every buffer (a power of two)">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write the memory report to this file ('-' for stdout)">,
    Option<"reuse", "reuse", "bool", /*default=*/"true",
           "Share bytes between values (false: every value its own "
           "buffer, nothing in place, no views, no sums written into "
           "their globals, no op moved; a plan to check the reusing "
           "one against)">,
    Option<"guard", "guard", "int64_t", /*default=*/"0",
           "Leave this many bytes after every buffer and global, "
           "belonging to none (the function's mpc.arena_guards, the "
           "module's mpc.state_guard; the runner fills them and checks "
           "them after each call)">,
  ];
}

def LowerToRuntimePass : Pass<"mpc-lower-to-runtime", "ModuleOp"> {
  let summary = "Lowers planned mpc graphs to calls of the mpcrt C ABI";
  let description = [{
    Runs after `--mpc-plan-memory`. Every function becomes
    `void f(void *arena, void *state, void *const *inputs,
    void *const *outputs)` on raw pointers: tensors live at their planned
    arena offsets, globals in one state buffer (declaration order, 256-byte
    aligned, then an i64 step counter), constants in read-only data, inputs
    and outputs in the caller's buffers. Each op becomes calls of the runtime
    ABI (`include/mpc/Runtime/mpcrt.h`), one family per source file:
    elementwise, linear algebra, normalization, neural-net layers, data
    movement, training. The module gains `mpc_step` (calls `entry`),
    `mpc_init_globals` (expands every initializer deterministically from its
    seed) and `mpc_model`, a JSON descriptor of the entry's inputs and
    outputs (named by the `mpc.name` argument attribute, else `argN`), the
    globals and the buffer sizes. What remains is func, arith and llvm ops
    for `--convert-func-to-llvm --convert-to-llvm` (func first: its calls
    then find their callees through one symbol table, where
    `--convert-to-llvm` alone scans the module for each).

    A function of more than `ops-per-part` ops is lowered as a chain of
    functions (`f`, then private `f.part1`, `f.part2`, ..., each ending by
    calling the next with the same four pointers), each re-deriving the
    pointers it uses from its arguments: LLVM's code generation of one
    function of 100k calls is superlinear in its length, of the parts
    linear.

    ```
    $ mpc-opt model.mlir --mpc-plan-memory --mpc-lower-to-runtime \
        --convert-func-to-llvm --convert-to-llvm --reconcile-unrealized-casts
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"train_step\"",
           "The function mpc_step calls (default train_step, or the only "
           "function)">,
    Option<"backend", "backend", "std::string", /*default=*/"\"cpu\"",
           "cpu: tensor constants are read-only globals of the program; "
           "cuda: they are copied into the state buffer (device memory) by "
           "mpc_init_globals, after the step counter">,
    Option<"opsPerPart", "ops-per-part", "int64_t", /*default=*/"2000",
           "Ops of a function lowered into one generated function (0: no "
           "limit, one function)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

def PrintPrecisionCategoriesPass :
    Pass<"mpc-print-precision-categories", "ModuleOp"> {
  let summary = "Reports each op's default precision category as a remark";
  let description = [{
    Emits `remark: precision category of '<op>': <lowp|fp32|promote|follow>`
    on every
    op implementing `PrecisionCategoryOpInterface`: the table the
    mixed-precision pass starts from.
  }];
}

def VerifyGraphPass : Pass<"mpc-verify-graph", "ModuleOp"> {
  let summary = "Checks module-level invariants of a training graph";
  let description = [{
    Beyond what each op verifies: every `ml_program.global` has a statically
    shaped tensor type, and an `#mpc.init` initializer fits it (fan-based
    initializers need rank >= 2; element types are floating point), and a
    low-precision weight copy's `mpc.master` names a global of its shape.
    Errors name the global.
  }];
}

#endif // MPC_DIALECT_MPC_TRANSFORMS_PASSES
