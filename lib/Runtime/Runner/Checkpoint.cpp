//===- Checkpoint.cpp - safetensors checkpoints of every global -----------===//
//
// Layout (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header size, a JSON header mapping each tensor name to its
// dtype, shape and [begin, end) byte range in the data that follows, padded
// with spaces to 8 bytes. We add "__metadata__" with the entry function and
// a CRC-32 of the data, so a flipped byte is an error, not a silent change.
//
//===----------------------------------------------------------------------===//

#include "Model.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <unistd.h>

using namespace mpc::runner;
using llvm::createStringError;
using llvm::Error;
using llvm::StringRef;

static std::string safetensorsDtype(StringRef dtype) {
  if (dtype == "bool")
    return "BOOL";
  return llvm::StringRef(dtype).upper();
}

Error mpc::runner::writeCheckpoint(const std::string &path, const Model &model,
                                   const char *state) {
  std::string data;
  llvm::json::Object header;
  for (const TensorInfo &g : model.globals) {
    llvm::json::Array shape;
    for (int64_t d : g.shape)
      shape.push_back(d);
    int64_t begin = data.size();
    data.append(state + g.offset, g.bytes);
    header[g.name] = llvm::json::Object{
        {"dtype", safetensorsDtype(g.dtype)},
        {"shape", std::move(shape)},
        {"data_offsets", llvm::json::Array{begin, int64_t(data.size())}}};
  }
  uint32_t crc = llvm::crc32(llvm::arrayRefFromStringRef(data));
  header["__metadata__"] = llvm::json::Object{
      {"format", "mpc"},
      {"mpc.entry", model.entry},
      {"mpc.crc32", llvm::utohexstr(crc, /*LowerCase=*/true)}};
  std::string json;
  llvm::raw_string_ostream(json) << llvm::json::Value(std::move(header));
  json.append((8 - json.size() % 8) % 8, ' ');

  // Atomic: a complete temporary file, flushed, renamed over the target.
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    int fd;
    if (std::error_code ec = llvm::sys::fs::openFileForWrite(
            temp, fd, llvm::sys::fs::CD_CreateAlways))
      return createStringError(temp + ": " + ec.message());
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    char size[8];
    for (int i = 0; i < 8; ++i)
      size[i] = char(uint64_t(json.size()) >> (8 * i));
    os.write(size, 8);
    os << json;
    os.write(data.data(), data.size());
    os.flush();
    if (os.has_error() || ::fsync(fd) != 0) {
      std::string message = os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(temp);
      return createStringError("writing " + temp + ": " + message);
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    return createStringError("renaming " + temp + " to " + path + ": " +
                             ec.message());
  }
  return Error::success();
}

Error mpc::runner::readCheckpoint(const std::string &path, const Model &model,
                                  char *state, bool all,
                                  std::vector<std::string> *loaded) {
  auto bad = [&](const llvm::Twine &what) {
    return createStringError(path + ": " + what);
  };
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return bad(buffer.getError().message());
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

  if (const llvm::json::Object *meta = header->getObject("__metadata__"))
    if (auto crc = meta->getString("mpc.crc32")) {
      // The data is everything the tensors cover.
      int64_t end = 0;
      for (const auto &[name, v] : *header)
        if (const llvm::json::Object *t = v.getAsObject())
          if (const llvm::json::Array *o = t->getArray("data_offsets"))
            if (o->size() == 2)
              end = std::max(end, (*o)[1].getAsInteger().value_or(0));
      if (end > int64_t(data.size()))
        return bad("data is truncated: " + llvm::Twine(data.size()) +
                   " bytes, the header needs " + llvm::Twine(end));
      uint32_t actual =
          llvm::crc32(llvm::arrayRefFromStringRef(data.take_front(end)));
      if (llvm::utohexstr(actual, true) != *crc)
        return bad("data is corrupt (CRC-32 " + llvm::utohexstr(actual, true) +
                   ", expected " + *crc + ")");
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
    if (begin < 0 || end - begin != global->bytes || end > int64_t(data.size()))
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
