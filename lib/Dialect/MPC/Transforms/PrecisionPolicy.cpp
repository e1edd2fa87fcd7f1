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

LogicalResult PrecisionPolicy::addNameRule(MLIRContext *context, StringRef glob,
                                           StringRef opName,
                                           PrecisionCategory category,
                                           StringRef source,
                                           std::string &error) {
  std::string op;
  if (!opName.empty()) {
    auto registered = lookupMPCOp(context, opName);
    if (!registered) {
      error = llvm::formatv("unknown op '{0}' (expected an mpc op such as "
                            "mpc.matmul)",
                            opName);
      return failure();
    }
    op = registered->getStringRef().str();
  }
  NameRule &rule = nameRules.emplace_back();
  rule.text = glob.str();
  auto pattern = llvm::GlobPattern::create(rule.text);
  if (!pattern) {
    error = llvm::formatv("'{0}' is not a glob pattern: {1}", glob,
                          llvm::toString(pattern.takeError()));
    nameRules.pop_back();
    return failure();
  }
  rule.glob = std::move(*pattern);
  rule.opName = op;
  rule.choice = {category, source.str(), true};
  return success();
}

/// The names in `loc`: NameLoc names, also inside fused and call-site
/// locations.
static void locationNames(Location loc, SmallVectorImpl<StringRef> &names) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    names.push_back(name.getName().getValue());
    locationNames(name.getChildLoc(), names);
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      locationNames(inner, names);
  } else if (auto call = dyn_cast<CallSiteLoc>(loc)) {
    locationNames(call.getCallee(), names);
  }
}

std::vector<std::string> PrecisionPolicy::unusedNameRules() const {
  std::vector<std::string> unused;
  for (const NameRule &rule : nameRules)
    if (!rule.used)
      unused.push_back(rule.choice.source);
  return unused;
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
      if (const llvm::json::Object *entry = value.getAsObject()) {
        // {"name": "<glob of location names>", "op": "<optional op>"}
        std::optional<StringRef> glob = entry->getString("name");
        std::string where = position(contents, contents.find('{', from));
        std::optional<StringRef> opName = entry->getString("op");
        for (auto &field : *entry)
          if (field.first != "name" && field.first != "op") {
            error = llvm::formatv("{0}:{1}: unknown field '{2}' in a name "
                                  "entry (expected name and op)",
                                  path, where, StringRef(field.first));
            return failure();
          }
        if (!glob || (entry->get("op") && !opName)) {
          error = llvm::formatv("{0}:{1}: a name entry needs \"name\": a "
                                "glob of location names as a string (and "
                                "\"op\", if given, a string)",
                                path, where);
          return failure();
        }
        if (size_t close = contents.find('}', from); close != StringRef::npos)
          from = close + 1;
        std::string ruleError;
        std::string ruleSource =
            llvm::formatv("policy {0}:{1} name '{2}'", path, where, *glob);
        if (failed(addNameRule(context, *glob, opName.value_or(""), *category,
                               ruleSource, ruleError))) {
          error = llvm::formatv("{0}:{1}: {2}", path, where, ruleError);
          return failure();
        }
        continue;
      }
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

FailureOr<std::optional<CategoryChoice>>
PrecisionPolicy::lookup(Operation *op, std::string &error) const {
  std::optional<PrecisionCategory> defaultCategory =
      getDefaultPrecisionCategory(op);
  if (Attribute attr = op->getAttr(kPrecisionAttr)) {
    auto text = dyn_cast<StringAttr>(attr);
    std::optional<PrecisionCategory> category =
        text ? symbolizePrecisionCategory(text.getValue()) : std::nullopt;
    if (!category) {
      error = llvm::formatv("{0} must be \"lowp\", \"fp32\", \"promote\" "
                            "or \"follow\", got {1}",
                            kPrecisionAttr, attr);
      return failure();
    }
    if (!defaultCategory) {
      error = llvm::formatv("{0} on '{1}', which has no precision category",
                            kPrecisionAttr, op->getName());
      return failure();
    }
    return std::optional<CategoryChoice>(
        CategoryChoice{*category, ("attribute " + kPrecisionAttr).str(), true});
  }
  if (!defaultCategory)
    return std::optional<CategoryChoice>();
  if (!nameRules.empty()) {
    SmallVector<StringRef> names;
    locationNames(op->getLoc(), names);
    for (const NameRule &rule : nameRules) {
      if (!rule.opName.empty() && rule.opName != op->getName().getStringRef())
        continue;
      for (StringRef name : names)
        if (rule.glob.match(name)) {
          rule.used = true;
          return std::optional<CategoryChoice>(rule.choice);
        }
    }
  }
  auto it = overrides.find(op->getName().getStringRef());
  if (it != overrides.end())
    return std::optional<CategoryChoice>(it->second);
  return std::optional<CategoryChoice>(
      CategoryChoice{*defaultCategory, "default"});
}
