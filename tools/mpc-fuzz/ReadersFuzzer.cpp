//===- ReadersFuzzer.cpp - libFuzzer over the executable's file readers ---===//
//
// The first byte of an input picks the reader, the rest is the file:
// 0 an .npy array, 1 an .npz archive, 2 a safetensors checkpoint read with
// --resume semantics into a small model (globals w: f32[2, 3], b: f16[4]
// and the step counter; its metadata's number of ranks and data position
// too), 3 the same with --init semantics. Errors are the
// expected outcome; a crash or a sanitizer report is a finding. The
// readers take paths, so the input is written to a file first.
//
//===----------------------------------------------------------------------===//

#include "Model.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

using namespace mpc::runner;

static const Model &model() {
  static Model m = [] {
    Model m;
    m.entry = "train_step";
    m.globals.push_back({"w", "f32", {2, 3}, 24, 0});
    m.globals.push_back({"b", "f16", {4}, 8, 256});
    m.globals.push_back({"mpc.step", "i64", {}, 8, 512});
    m.stateBytes = 768;
    return m;
  }();
  return m;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int mode = data[0] % 4;
  static const std::string dir = [] {
    const char *tmp = getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp");
  }();
  static const char *suffix[] = {".npy", ".npz", ".safetensors",
                                 ".safetensors"};
  std::string path =
      dir + "/mpc-fuzz-" + std::to_string(getpid()) + suffix[mode];
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return 0;
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);
  if (mode <= 1) {
    std::vector<std::pair<std::string, Array>> arrays;
    llvm::consumeError(readArrays(path, arrays));
  } else {
    std::vector<char> state(model().stateBytes, 0);
    int64_t worldSize = 0;
    DataPosition position;
    llvm::consumeError(readCheckpoint(path, model(), state.data(),
                                      /*all=*/mode == 2, nullptr, &worldSize,
                                      &position));
  }
  std::remove(path.c_str());
  return 0;
}
