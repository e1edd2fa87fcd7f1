//===- Checkpoint.cpp - safetensors checkpoints of every global -----------===//
//
// Layout (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header size, a JSON header mapping each tensor name to its
// dtype, shape and [begin, end) byte range in the data that follows, padded
// with spaces to 8 bytes. We add "__metadata__" with the entry function and
// a CRC-32 of the whole file (header and data; the CRC's own eight hex
// digits counted as "00000000"), so a flipped byte anywhere is an error,
// not a silent change. A file that says it is ours must carry it.
//
//===----------------------------------------------------------------------===//

#include "Model.h"
#include "mpc/Runtime/Report.h"

#include "mpc/Support/Files.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <optional>
#include <unistd.h>

using namespace mpc::runner;
using llvm::createStringError;
using llvm::Error;
using llvm::StringRef;

/// The CRC's value while it is computed: eight hex digits, all zero.
static constexpr const char *kCrcPlaceholder = "00000000";

/// The CRC-32 `crc` continued over `bytes`. zlib's CRC of a null buffer
/// is its initial value, not the CRC so far: empty bytes add nothing.
static uint32_t crcOver(uint32_t crc, StringRef bytes) {
  return bytes.empty() ? crc
                       : llvm::crc32(crc, llvm::arrayRefFromStringRef(bytes));
}

/// CRC-32 of the size field, the header (with the CRC as the placeholder)
/// and the data.
static uint32_t fileCrc(StringRef size, StringRef header, StringRef data) {
  return crcOver(crcOver(crcOver(0, size), header), data);
}

static std::string safetensorsDtype(StringRef dtype) {
  if (dtype == "bool")
    return "BOOL";
  return llvm::StringRef(dtype).upper();
}

Error mpc::runner::writeCheckpoint(const std::string &path, const Model &model,
                                   const char *state, int64_t worldSize,
                                   DataPosition position) {
  // The data are the globals in order, written and summed straight from
  // the state: no copy of them (a whole state's worth, more while it
  // grew) is made here.
  llvm::json::Object header;
  int64_t end = 0;
  for (const TensorInfo &g : model.globals) {
    llvm::json::Array shape;
    for (int64_t d : g.shape)
      shape.push_back(d);
    int64_t begin = end;
    end += g.bytes;
    header[g.name] =
        llvm::json::Object{{"dtype", safetensorsDtype(g.dtype)},
                           {"shape", std::move(shape)},
                           {"data_offsets", llvm::json::Array{begin, end}}};
  }
  llvm::json::Object meta{{"format", "mpc"},
                          {"mpc.entry", model.entry},
                          {"mpc.crc32", kCrcPlaceholder}};
  if (model.dataParallel)
    meta["mpc.world_size"] = std::to_string(worldSize);
  if (position.epoch >= 0 && position.offset >= 0) {
    meta["mpc.data_epoch"] = std::to_string(position.epoch);
    meta["mpc.data_offset"] = std::to_string(position.offset);
  }
  header["__metadata__"] = std::move(meta);
  std::string json;
  llvm::raw_string_ostream(json) << llvm::json::Value(std::move(header));
  json.append((8 - json.size() % 8) % 8, ' ');
  char size[8];
  for (int i = 0; i < 8; ++i)
    size[i] = char(uint64_t(json.size()) >> (8 * i));
  uint32_t sum = fileCrc(StringRef(size, 8), json, StringRef());
  for (const TensorInfo &g : model.globals)
    sum = crcOver(sum, StringRef(state + g.offset, g.bytes));
  std::string crc = llvm::utohexstr(sum, /*LowerCase=*/true);
  crc.insert(0, 8 - crc.size(), '0');
  size_t at = json.find(kCrcPlaceholder);
  json.replace(at, crc.size(), crc);

  // Atomic: a complete temporary file, flushed, renamed over the target.
  // A failure names the checkpoint and says whether one is left there.
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  auto failed = [&](const std::string &why) {
    llvm::sys::fs::remove(temp);
    return createStringError(path + ": cannot write the checkpoint: " + why +
                             (llvm::sys::fs::exists(path)
                                  ? " (the previous checkpoint is kept)"
                                  : ""));
  };
  {
    int fd;
    if (std::error_code ec = llvm::sys::fs::openFileForWrite(
            temp, fd, llvm::sys::fs::CD_CreateAlways))
      return failed(temp + ": " + ec.message());
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(size, 8);
    os << json;
    for (const TensorInfo &g : model.globals)
      os.write(state + g.offset, static_cast<size_t>(g.bytes));
    std::string why = mpc::files::writeError(os);
    if (why.empty() && ::fsync(fd) != 0)
      why = std::strerror(errno);
    if (!why.empty())
      return failed(why);
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path))
    return failed("renaming " + temp + ": " + ec.message());
  return Error::success();
}

Error mpc::runner::prepareCheckpoint(const std::string &path,
                                     llvm::raw_ostream &notes) {
  namespace fs = llvm::sys::fs;
  StringRef dir = llvm::sys::path::parent_path(path);
  std::string folder = dir.empty() ? "." : dir.str();
  fs::file_status status;
  if (fs::status(folder, status) || !fs::is_directory(status))
    return createStringError("--checkpoint " + path + ": the folder " + folder +
                             " does not exist");
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return createStringError("--checkpoint " + path + ": the folder " + folder +
                             " is not writable");
  if (!fs::status(path, status) && fs::exists(status) &&
      !fs::is_regular_file(status))
    return createStringError("--checkpoint " + path +
                             ": not a regular file (a checkpoint replaces "
                             "it; name a file)");
  // Leftovers of writes that were killed: PATH.tmp.PID, PID gone.
  std::error_code ec;
  std::string prefix = llvm::sys::path::filename(path).str() + ".tmp.";
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end;
       it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    unsigned long long pid;
    if (!name.consume_front(prefix) || name.getAsInteger(10, pid) || pid == 0 ||
        pid > 0x7fffffff)
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)
      continue; // its writer still runs (or is not ours to judge)
    if (!fs::remove(it->path()))
      notes << mpcrt::errors::prefix("note").text << "removed " << it->path()
            << ", left by a checkpoint write that did not finish\n";
  }
  return Error::success();
}

std::string mpc::runner::firstNonFinite(const Model &model, const char *state) {
  for (const TensorInfo &g : model.globals) {
    int64_t count = g.bytes / std::max<int64_t>(1, g.elementBytes());
    const char *p = state + g.offset;
    for (int64_t i = 0; i < count; ++i) {
      bool finite = true;
      if (g.dtype == "f32") {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        finite = std::isfinite(v);
      } else if (g.dtype == "f64") {
        double v;
        std::memcpy(&v, p + 8 * i, 8);
        finite = std::isfinite(v);
      } else if (g.dtype == "f16" || g.dtype == "bf16") {
        uint16_t bits;
        std::memcpy(&bits, p + 2 * i, 2);
        uint16_t exponent = g.dtype == "f16" ? 0x7c00 : 0x7f80;
        finite = (bits & exponent) != exponent;
      } else {
        break; // integers and booleans are always finite
      }
      if (!finite)
        return "@" + g.name + " element " + std::to_string(i);
    }
  }
  return "";
}

Error mpc::runner::readCheckpoint(const std::string &path, const Model &model,
                                  char *state, bool all,
                                  std::vector<std::string> *loaded,
                                  int64_t *worldSize, DataPosition *position) {
  auto bad = [&](const llvm::Twine &what) {
    return createStringError(path + ": " + what);
  };
  auto buffer = readWholeFile(path);
  if (!buffer)
    return buffer.takeError();
  StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() < 8)
    return bad("not a safetensors checkpoint (" + llvm::Twine(bytes.size()) +
               " bytes; truncated?)");
  uint64_t headerSize = 0;
  for (int i = 0; i < 8; ++i)
    headerSize |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (headerSize > bytes.size() - 8)
    return bad("header of " + llvm::Twine(headerSize) + " bytes runs past " +
               "the end of the file (truncated or corrupt)");
  auto parsed = llvm::json::parse(bytes.substr(8, headerSize));
  if (!parsed)
    return bad("corrupt header: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *header = parsed->getAsObject();
  if (!header)
    return bad("corrupt header: not a JSON object");
  StringRef data = bytes.drop_front(8 + headerSize);

  // Ours (format "mpc"): the CRC must be there and match. A foreign
  // safetensors file (PyTorch weights for --init) has none to check.
  const llvm::json::Object *meta = header->getObject("__metadata__");
  bool ours = meta && meta->getString("format") == StringRef("mpc");
  if (all && !ours)
    return bad("not a checkpoint written by mpc (no \"format\": \"mpc\" "
               "metadata); --resume needs one, --init loads weights");
  // Truncation first: it is the likelier story than corruption.
  uint64_t end = 0;
  for (const auto &[name, v] : *header)
    if (const llvm::json::Object *t = v.getAsObject())
      if (const llvm::json::Array *o = t->getArray("data_offsets"))
        if (o->size() == 2)
          end = std::max<uint64_t>(
              end, uint64_t((*o)[1].getAsInteger().value_or(0)));
  if (end > data.size())
    return bad("data is truncated: " + llvm::Twine(data.size()) +
               " bytes, the header needs " + llvm::Twine(end));
  if (ours) {
    std::optional<StringRef> crc = meta->getString("mpc.crc32");
    if (!crc || crc->size() != 8)
      return bad("no CRC-32 in the header of a checkpoint that says it is "
                 "written by mpc (altered or corrupt)");
    StringRef headerBytes = bytes.substr(8, headerSize);
    std::string quoted = "\"mpc.crc32\":\"" + crc->str() + "\"";
    size_t at = headerBytes.find(quoted);
    if (at == StringRef::npos)
      return bad("corrupt header: its CRC-32 field is not where mpc writes "
                 "it");
    std::string blanked = headerBytes.str();
    blanked.replace(at + quoted.size() - 9, 8, kCrcPlaceholder);
    std::string actual = llvm::utohexstr(
        fileCrc(bytes.take_front(8), blanked, data), /*LowerCase=*/true);
    actual.insert(0, 8 - actual.size(), '0');
    if (actual != *crc)
      return bad("checkpoint is corrupt (CRC-32 " + actual + ", expected " +
                 *crc + ")");
  }

  if (worldSize) {
    *worldSize = 1;
    if (std::optional<StringRef> n =
            ours ? meta->getString("mpc.world_size") : std::nullopt)
      if (n->getAsInteger(10, *worldSize) || *worldSize < 1)
        return bad("corrupt header: bad mpc.world_size '" + *n + "'");
  }
  if (position) {
    *position = DataPosition();
    std::optional<StringRef> epoch =
        ours ? meta->getString("mpc.data_epoch") : std::nullopt;
    std::optional<StringRef> offset =
        ours ? meta->getString("mpc.data_offset") : std::nullopt;
    if (epoch.has_value() != offset.has_value())
      return bad("corrupt header: mpc.data_epoch and mpc.data_offset come "
                 "together");
    if (epoch &&
        (epoch->getAsInteger(10, position->epoch) || position->epoch < 0))
      return bad("corrupt header: bad mpc.data_epoch '" + *epoch + "'");
    if (offset &&
        (offset->getAsInteger(10, position->offset) || position->offset < 0))
      return bad("corrupt header: bad mpc.data_offset '" + *offset + "'");
  }
  std::vector<char> staged(state, state + model.stateBytes);
  for (const auto &[key, value] : *header) {
    StringRef name = key;
    if (name == "__metadata__")
      continue;
    const TensorInfo *global = nullptr;
    for (const TensorInfo &g : model.globals)
      if (g.name == name)
        global = &g;
    if (!global && !all && name == "data_parallel_inverse_size")
      continue; // a data-parallel job's, set by the executable
    if (!global)
      return bad("tensor '" + name + "' is not a global of this model");
    const llvm::json::Object *t = value.getAsObject();
    const llvm::json::Array *shape = t ? t->getArray("shape") : nullptr;
    const llvm::json::Array *offsets =
        t ? t->getArray("data_offsets") : nullptr;
    if (!t || !shape || !offsets || offsets->size() != 2 ||
        !t->getString("dtype"))
      return bad("corrupt header entry for '" + name + "'");
    if (*t->getString("dtype") != safetensorsDtype(global->dtype))
      return bad("'" + name + "' has dtype " + *t->getString("dtype") +
                 ", the model's global is " + safetensorsDtype(global->dtype));
    std::vector<int64_t> dims;
    for (const llvm::json::Value &d : *shape)
      dims.push_back(d.getAsInteger().value_or(-1));
    if (dims != global->shape)
      return bad("'" + name + "' has another shape than the model's global");
    int64_t begin = (*offsets)[0].getAsInteger().value_or(-1),
            end = (*offsets)[1].getAsInteger().value_or(-1);
    // Compared without a difference or a sum that could overflow.
    if (begin < 0 || end < begin || end > int64_t(data.size()) ||
        uint64_t(end) - uint64_t(begin) != uint64_t(global->bytes))
      return bad("data of '" + name + "' is out of range (truncated or " +
                 "corrupt)");
    std::memcpy(staged.data() + global->offset, data.data() + begin,
                global->bytes);
    if (loaded)
      loaded->push_back(name.str());
  }
  if (all)
    for (const TensorInfo &g : model.globals)
      if (!header->get(g.name))
        return bad("no tensor '" + g.name + "' (every global is needed to " +
                   "resume)");
  std::memcpy(state, staged.data(), model.stateBytes);
  return Error::success();
}
