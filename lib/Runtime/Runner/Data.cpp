//===- Data.cpp - NumPy .npy / .npz input and the model descriptor --------===//

#include "Model.h"

#include "mpc/Support/Files.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstring>

using namespace mpc::runner;
using llvm::createStringError;
using llvm::Error;
using llvm::StringRef;

int64_t TensorInfo::elementBytes() const {
  if (dtype == "f16" || dtype == "bf16")
    return 2;
  if (dtype == "f32" || dtype == "i32")
    return 4;
  if (dtype == "f64" || dtype == "i64")
    return 8;
  return 1; // bool
}

static Error descriptorError(const llvm::Twine &what) {
  return createStringError("malformed model descriptor: " + what);
}

static llvm::Expected<std::vector<TensorInfo>>
parseTensors(const llvm::json::Object &root, StringRef key) {
  const llvm::json::Array *array = root.getArray(key);
  if (!array)
    return descriptorError("no '" + key + "' array");
  std::vector<TensorInfo> result;
  for (const llvm::json::Value &v : *array) {
    const llvm::json::Object *o = v.getAsObject();
    const llvm::json::Array *shape = o ? o->getArray("shape") : nullptr;
    if (!o || !shape || !o->getString("name") || !o->getString("dtype") ||
        !o->getInteger("bytes"))
      return descriptorError("bad entry in '" + key + "'");
    TensorInfo t;
    t.name = o->getString("name")->str();
    t.dtype = o->getString("dtype")->str();
    t.bytes = *o->getInteger("bytes");
    t.offset = o->getInteger("offset").value_or(0);
    for (const llvm::json::Value &d : *shape)
      t.shape.push_back(d.getAsInteger().value_or(-1));
    result.push_back(std::move(t));
  }
  return result;
}

llvm::Expected<Model> mpc::runner::parseModel(StringRef json) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed)
    return parsed.takeError();
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root || !root->getString("entry") || !root->getInteger("arena_bytes") ||
      !root->getInteger("state_bytes"))
    return descriptorError("missing entry or sizes");
  Model model;
  model.entry = root->getString("entry")->str();
  model.arenaBytes = *root->getInteger("arena_bytes");
  model.stateBytes = *root->getInteger("state_bytes");
  if (std::optional<int64_t> k = root->getInteger("accumulate_steps")) {
    if (*k < 1)
      return descriptorError("accumulate_steps below 1");
    model.accumulateSteps = *k;
  }
  for (auto [key, field] : {std::pair{"inputs", &model.inputs},
                            std::pair{"outputs", &model.outputs},
                            std::pair{"globals", &model.globals}}) {
    auto tensors = parseTensors(*root, key);
    if (!tensors)
      return tensors.takeError();
    *field = std::move(*tensors);
  }
  if (const llvm::json::Array *ops = root->getArray("numerics_ops"))
    for (const llvm::json::Value &v : *ops) {
      const llvm::json::Object *o = v.getAsObject();
      const llvm::json::Array *inputs = o ? o->getArray("inputs") : nullptr;
      if (!o || !inputs || !o->getString("op") || !o->getString("loc") ||
          !o->getString("phase") || !o->getString("dtype"))
        return descriptorError("bad entry in 'numerics_ops'");
      NumericsOp op;
      op.op = o->getString("op")->str();
      op.loc = o->getString("loc")->str();
      op.phase = o->getString("phase")->str();
      op.function = o->getString("function").value_or("").str();
      op.dtype = o->getString("dtype")->str();
      for (const llvm::json::Value &i : *inputs)
        op.inputs.push_back(i.getAsInteger().value_or(-1));
      model.numericsOps.push_back(std::move(op));
    }
  if (const llvm::json::Array *guards = root->getArray("arena_guards"))
    for (const llvm::json::Value &v : *guards) {
      const llvm::json::Object *o = v.getAsObject();
      std::optional<StringRef> function =
          o ? o->getString("function") : std::nullopt;
      std::optional<int64_t> offset =
                                 o ? o->getInteger("offset") : std::nullopt,
                             bytes = o ? o->getInteger("bytes") : std::nullopt;
      if (!function || !offset || !bytes || !o->getString("op") ||
          !o->getString("loc") || *offset < 0 || *bytes <= 0 ||
          *offset > model.arenaBytes - *bytes)
        return descriptorError("bad entry in 'arena_guards'");
      ArenaGuard guard;
      if (*function == "step")
        guard.slot = 0;
      else if (*function == "accumulate")
        guard.slot = 1;
      else if (*function == "eval")
        guard.slot = 2;
      else
        return descriptorError("bad entry in 'arena_guards'");
      guard.offset = *offset;
      guard.bytes = *bytes;
      guard.op = o->getString("op")->str();
      guard.loc = o->getString("loc")->str();
      model.arenaGuards.push_back(std::move(guard));
    }
  model.stateGuard = root->getInteger("state_guard").value_or(0);
  if (model.stateGuard < 0 || model.stateGuard > model.stateBytes)
    return descriptorError("bad 'state_guard'");
  model.lossScaleMin = root->getNumber("loss_scale_min").value_or(0.0);
  if (const llvm::json::Object *dp = root->getObject("data_parallel")) {
    const llvm::json::Array *rankMean = dp->getArray("rank_mean");
    if (!dp->getString("inverse_size") || !rankMean)
      return descriptorError("bad 'data_parallel'");
    model.dataParallel = true;
    model.inverseSize = dp->getString("inverse_size")->str();
    for (const llvm::json::Value &v : *rankMean) {
      if (!v.getAsString())
        return descriptorError("bad 'data_parallel'");
      model.rankMean.push_back(v.getAsString()->str());
    }
  }
  if (root->getArray("eval_outputs")) {
    auto tensors = parseTensors(*root, "eval_outputs");
    if (!tensors)
      return tensors.takeError();
    model.evalOutputs = std::move(*tensors);
    for (const TensorInfo &t : model.evalOutputs)
      if (!t.shape.empty() || t.bytes > 8 ||
          (t.dtype != "f32" && t.dtype != "f64" && t.dtype != "f16" &&
           t.dtype != "bf16"))
        return descriptorError("evaluation output '" + t.name +
                               "' is not a scalar float");
  }
  return model;
}

llvm::Expected<int64_t> mpc::runner::batchSizeOf(const Model &model) {
  if (model.inputs.empty())
    return createStringError("the step function has no inputs to batch");
  const std::vector<TensorInfo> &outputs = model.outputs;
  if (outputs.empty() || !outputs[0].shape.empty() ||
      outputs[0].dtype == "bool" || outputs[0].dtype[0] == 'i')
    return createStringError("the step function's first result must be the "
                             "scalar float loss");
  int64_t batch = model.inputs[0].shape.empty() ? 1 : model.inputs[0].shape[0];
  for (const TensorInfo &in : model.inputs)
    if (in.shape.empty() || in.shape[0] != batch)
      return createStringError("every step input must have the batch as its "
                               "leading dimension ('" +
                               in.name + "' does not)");
  return batch;
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

/// Parses one .npy image; `file` names it in errors.
static Error parseNpy(StringRef bytes, const std::string &file, Array &out) {
  auto bad = [&](const llvm::Twine &what) {
    return createStringError(file + ": " + what);
  };
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    return bad("not a NumPy .npy file (bad magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, start;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                static_cast<unsigned char>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated .npy header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= size_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    start = 12;
  } else {
    return bad("unsupported .npy version " + llvm::Twine(major));
  }
  if (start + headerLen > bytes.size())
    return bad("truncated .npy header");
  StringRef header = bytes.substr(start, headerLen);
  auto field = [&](StringRef key) -> StringRef {
    size_t at = header.find("'" + key.str() + "'");
    if (at == StringRef::npos)
      return {};
    StringRef rest = header.drop_front(at + key.size() + 2).ltrim(" :");
    return rest;
  };
  StringRef descr = field("descr");
  if (!descr.consume_front("'"))
    return bad("no dtype in the .npy header");
  descr = descr.take_until([](char c) { return c == '\''; });
  static const std::pair<const char *, const char *> dtypes[] = {
      {"<f2", "f16"}, {"<f4", "f32"}, {"<f8", "f64"},
      {"<i4", "i32"}, {"<i8", "i64"}, {"|b1", "bool"}};
  out.dtype.clear();
  for (auto [numpy, ours] : dtypes)
    if (descr == numpy)
      out.dtype = ours;
  if (out.dtype.empty())
    return bad("unsupported dtype '" + descr +
               "' (expected little-endian float16/32/64, int32/64 or bool)");
  if (field("fortran_order").starts_with("True"))
    return bad("Fortran-ordered arrays are not supported; save a "
               "C-contiguous array");
  StringRef shape = field("shape");
  if (!shape.consume_front("("))
    return bad("no shape in the .npy header");
  shape = shape.take_until([](char c) { return c == ')'; });
  out.shape.clear();
  llvm::SmallVector<StringRef> dims;
  shape.split(dims, ',', -1, /*KeepEmpty=*/false);
  // Sizes are checked for overflow: a header may announce anything.
  uint64_t count = 1;
  for (StringRef d : dims) {
    int64_t v;
    if (d.trim().empty()) // "(3, )"
      continue;
    if (d.trim().getAsInteger(10, v) || v < 0)
      return bad("bad shape in the .npy header");
    out.shape.push_back(v);
    if (__builtin_mul_overflow(count, uint64_t(v), &count))
      return bad("the shape in the .npy header overflows 64 bits");
  }
  TensorInfo info{"", out.dtype, {}, 0, 0};
  uint64_t expected;
  if (__builtin_mul_overflow(count, uint64_t(info.elementBytes()), &expected))
    return bad("the shape in the .npy header overflows 64 bits");
  size_t have = bytes.size() - start - headerLen;
  if (have < expected)
    return bad("truncated: " + llvm::Twine(have) + " bytes of data, the " +
               "header announces " + llvm::Twine(expected));
  out.data.assign(bytes.data() + start + headerLen,
                  bytes.data() + start + headerLen + expected);
  return Error::success();
}

//===----------------------------------------------------------------------===//
// .npz: a ZIP archive of .npy files (np.savez; stored, not deflated)
//===----------------------------------------------------------------------===//

static uint64_t le(StringRef bytes, size_t at, int width) {
  uint64_t v = 0;
  for (int i = 0; i < width; ++i)
    v |= uint64_t(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

static Error parseNpz(StringRef zip, const std::string &file,
                      std::vector<std::pair<std::string, Array>> &arrays) {
  auto bad = [&](const llvm::Twine &what) {
    return createStringError(file + ": " + what);
  };
  // End of central directory: the last "PK\5\6" record.
  if (zip.size() < 22)
    return bad("not a .npz archive (too short)");
  size_t eocd = StringRef::npos;
  for (size_t at = zip.size() - 22;; --at) {
    if (le(zip, at, 4) == 0x06054b50) {
      eocd = at;
      break;
    }
    if (at == 0 || zip.size() - at > 22 + 65535)
      break;
  }
  if (eocd == StringRef::npos)
    return bad("not a .npz archive (no ZIP directory; truncated?)");
  // Offsets and sizes come from the file: every range is checked without
  // computing an end that could wrap around.
  auto fits = [&](uint64_t at, uint64_t length) {
    return at <= zip.size() && length <= zip.size() - at;
  };
  uint64_t entries = le(zip, eocd + 10, 2);
  uint64_t cd = le(zip, eocd + 16, 4);
  for (uint64_t e = 0; e < entries; ++e) {
    if (!fits(cd, 46) || le(zip, cd, 4) != 0x02014b50)
      return bad("corrupt ZIP directory");
    uint64_t method = le(zip, cd + 10, 2);
    uint32_t crc = static_cast<uint32_t>(le(zip, cd + 16, 4));
    uint64_t compressed = le(zip, cd + 20, 4), size = le(zip, cd + 24, 4);
    uint64_t nameLen = le(zip, cd + 28, 2), extraLen = le(zip, cd + 30, 2),
             commentLen = le(zip, cd + 32, 2);
    uint64_t local = le(zip, cd + 42, 4);
    if (!fits(cd + 46, nameLen + extraLen + commentLen))
      return bad("corrupt ZIP directory");
    std::string name = zip.substr(cd + 46, nameLen).str();
    // ZIP64 sizes and offset, in this order, for the fields that overflow.
    StringRef extra = zip.substr(cd + 46 + nameLen, extraLen);
    for (size_t at = 0; at + 4 <= extra.size();) {
      uint64_t id = le(extra, at, 2), len = le(extra, at + 2, 2);
      if (id == 1) {
        size_t p = at + 4;
        for (uint64_t *f : {&size, &compressed, &local})
          if (*f == 0xffffffff && p + 8 <= at + 4 + len) {
            *f = le(extra, p, 8);
            p += 8;
          }
      }
      at += 4 + len;
    }
    cd += 46 + nameLen + extraLen + commentLen;
    if (method != 0)
      return bad("'" + name +
                 "' is compressed; only uncompressed archives "
                 "(np.savez, not np.savez_compressed) are supported");
    if (!fits(local, 30) || le(zip, local, 4) != 0x04034b50)
      return bad("corrupt ZIP entry '" + name + "'");
    uint64_t data =
        local + 30 + le(zip, local + 26, 2) + le(zip, local + 28, 2);
    if (!fits(data, size))
      return bad("'" + name + "' is truncated");
    // The archive's CRC-32 of each member: a flipped byte is an error,
    // not silently different data.
    StringRef member = zip.substr(data, size);
    uint32_t actual = llvm::crc32(llvm::arrayRefFromStringRef(member));
    if (actual != crc)
      return bad("'" + name + "' is corrupt (CRC-32 " +
                 llvm::utohexstr(actual, true) + ", the archive says " +
                 llvm::utohexstr(crc, true) + ")");
    Array array;
    if (Error err = parseNpy(member, file + ":" + name, array))
      return err;
    StringRef stem = name;
    stem.consume_back(".npy");
    arrays.emplace_back(stem.str(), std::move(array));
  }
  return Error::success();
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
mpc::runner::readWholeFile(const std::string &path) {
  if (std::string why = mpc::files::notAFile(path); !why.empty())
    return createStringError(why);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return createStringError(path + ": " + buffer.getError().message());
  return std::move(*buffer);
}

Error mpc::runner::readArrays(
    const std::string &path,
    std::vector<std::pair<std::string, Array>> &arrays) {
  if (llvm::sys::fs::is_directory(path)) {
    std::error_code ec;
    std::vector<std::string> files;
    for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec;
         it.increment(ec))
      if (StringRef(it->path()).ends_with(".npy"))
        files.push_back(it->path());
    if (ec)
      return createStringError(path + ": " + ec.message());
    std::sort(files.begin(), files.end());
    for (const std::string &file : files)
      if (Error err = readArrays(file, arrays))
        return err;
    return Error::success();
  }
  auto buffer = readWholeFile(path);
  if (!buffer)
    return buffer.takeError();
  StringRef bytes = (*buffer)->getBuffer();
  if (StringRef(path).ends_with(".npz"))
    return parseNpz(bytes, path, arrays);
  Array array;
  if (Error err = parseNpy(bytes, path, array))
    return err;
  arrays.emplace_back(llvm::sys::path::stem(path).str(), std::move(array));
  return Error::success();
}
