//===- PrecisionPolicy.cpp - op category overrides ------------------------===//

#include "mpc/Dialect/MPC/Transforms/PrecisionPolicy.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::mpc;

/// The registered op `name` or `mpc.<name>`, if it is an mpc op.
static std::optional<RegisteredOperationName> lookupMPCOp(MLIRContext *context,
                                                          StringRef name) {
  std::string full =
      name.starts_with("mpc.") ? name.str() : "mpc." + name.str();
  auto op = RegisteredOperationName::lookup(full, context);
  if (!op || !op->hasInterface<PrecisionCategoryOpInterface>())
    return std::nullopt;
  return op;
}

LogicalResult PrecisionPolicy::addOverride(MLIRContext *context,
                                           StringRef opName,
                                           PrecisionCategory category,
                                           StringRef source,
                                           std::string &error) {
  auto op = lookupMPCOp(context, opName);
  if (!op) {
    error = llvm::formatv("unknown op '{0}' (expected an mpc op such as "
                          "mpc.matmul)",
                          opName);
    return failure();
  }
  overrides[op->getStringRef()] = {category, source.str()};
  return success();
}

/// "line:col" of byte `offset` in `text` (1-based).
static std::string position(StringRef text, size_t offset) {
  StringRef before = text.take_front(offset);
  size_t line = before.count('\n') + 1;
  size_t lineStart = before.rfind('\n');
  size_t col = lineStart == StringRef::npos ? offset + 1 : offset - lineStart;
  return llvm::formatv("{0}:{1}", line, col);
}

/// The position of the first `"needle"` at or after `from`, for errors
/// about a JSON string (llvm::json keeps no positions once parsed).
static std::string positionOfString(StringRef text, StringRef needle,
                                    size_t &from) {
  std::string quoted = ("\"" + needle + "\"").str();
  size_t at = text.find(quoted, from);
  if (at == StringRef::npos)
    return "1:1";
  from = at + quoted.size();
  return position(text, at);
}

LogicalResult PrecisionPolicy::addPolicyFile(MLIRContext *context,
                                             StringRef path, StringRef contents,
                                             std::string &error) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(contents);
  if (!parsed) {
    // ParseError prints "[line:col, byte=N]: message".
    std::string message = llvm::toString(parsed.takeError());
    unsigned line = 0, col = 0;
    size_t close = message.find("]: ");
    if (sscanf(message.c_str(), "[%u:%u", &line, &col) == 2 &&
        close != std::string::npos)
      error = llvm::formatv("{0}:{1}:{2}: malformed policy file: {3}", path,
                            line, col, message.substr(close + 3));
    else
      error = llvm::formatv("{0}: malformed policy file: {1}", path, message);
    return failure();
  }
  auto *object = parsed->getAsObject();
  if (!object) {
    error = llvm::formatv("{0}:1:1: policy file must be a JSON object mapping "
                          "categories to lists of ops",
                          path);
    return failure();
  }
  // Walk keys in file order so the first error reported is the first in
  // the file.
  SmallVector<std::pair<size_t, StringRef>> keys;
  for (auto &entry : *object) {
    StringRef key = entry.first;
    size_t at = contents.find(("\"" + key + "\"").str());
    keys.push_back({at, key});
  }
  llvm::sort(keys);
  std::string source = ("policy " + path).str();
  for (auto [keyOffset, key] : keys) {
    size_t from = keyOffset;
    std::optional<PrecisionCategory> category = symbolizePrecisionCategory(key);
    if (!category) {
      error = llvm::formatv("{0}:{1}: unknown category '{2}' (expected lowp, "
                            "fp32, promote or follow)",
                            path, positionOfString(contents, key, from), key);
      return failure();
    }
    const llvm::json::Array *ops = object->getArray(key);
    if (!ops) {
      error = llvm::formatv("{0}:{1}: category '{2}' must map to an array of "
                            "op names",
                            path, positionOfString(contents, key, from), key);
      return failure();
    }
    for (const llvm::json::Value &value : *ops) {
      std::optional<StringRef> name = value.getAsString();
      if (!name) {
        std::string text = llvm::formatv("{0}", value).str();
        size_t at = contents.find(text, from);
        error = llvm::formatv(
            "{0}:{1}: op names must be strings, got {2}", path,
            position(contents, at == StringRef::npos ? from : at), text);
        return failure();
      }
      std::string where = positionOfString(contents, *name, from);
      std::string opError;
      if (failed(addOverride(context, *name, *category, source, opError))) {
        error = llvm::formatv("{0}:{1}: {2}", path, where, opError);
        return failure();
      }
    }
  }
  return success();
}

std::optional<CategoryChoice> PrecisionPolicy::lookup(Operation *op) const {
  auto it = overrides.find(op->getName().getStringRef());
  if (it != overrides.end())
    return it->second;
  if (std::optional<PrecisionCategory> category =
          getDefaultPrecisionCategory(op))
    return CategoryChoice{*category, "default"};
  return std::nullopt;
}
