//===- Passes.td - mpc dialect passes ----------------------*- tablegen -*-===//

#ifndef MPC_DIALECT_MPC_TRANSFORMS_PASSES
#define MPC_DIALECT_MPC_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def GraphSummaryPass : Pass<"mpc-graph-summary", "ModuleOp"> {
  let summary = "Prints a summary of each graph: ops by kind and parameters";
  let description = [{
    Writes, for the module, its trainable parameters (globals no function
    writes: count, elements, bytes, by element type) and its state (globals
    written by `ml_program.global_store`, e.g. BatchNorm running statistics),
    then for each function its op counts by name. The IR is unchanged.

    ```
    $ mpc-opt --mpc-graph-summary examples/mlp.mlir -o /dev/null
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' for stdout)">,
  ];
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
    initializers need rank >= 2; element types are floating point). Errors
    name the global.
  }];
}

#endif // MPC_DIALECT_MPC_TRANSFORMS_PASSES
