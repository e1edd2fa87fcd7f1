//===- Importer.cpp - an ONNX graph as mpc dialect text -------------------===//
//
// One emitter per (op type, since-version at kOpset), grouped by op family
// (elementwise, linear algebra, shape). Each emits mpc ops whose result
// types are ONNX's inferred ones; the module is then parsed and verified
// by mpc's own verifiers (mpc-import-onnx.cpp), so an emitter that got a
// type wrong is caught, not written.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

using namespace mpc::onnx_import;

namespace {

/// A value of the graph: its SSA name and type, and, for small integer
/// constants (shapes, axes), their values.
struct Value {
  std::string ssa;
  TensorType type;
  std::vector<int64_t> ints;
  bool constantInts = false;
};

/// The largest stride, dilation, kernel size or padding a window op may
/// have: sizes computed from them stay far from overflow.
constexpr int64_t kWindowLimit = int64_t(1) << 20;
/// Reflect padding, and a gather of constant indices that are not
/// consecutive, emit a slice per row: at most this many.
constexpr int64_t kReflectLimit = 4096;

/// Where each NCHW axis is in NHWC, and NCHW sizes in NHWC order.
constexpr int64_t kPositionInNHWC[4] = {0, 3, 1, 2};
std::vector<int64_t> channelsLastDims(const std::vector<int64_t> &nchw) {
  return {nchw[0], nchw[2], nchw[3], nchw[1]};
}

/// Whether a float tensor's bytes hold an infinity or a NaN: an exponent
/// of all ones, read from the raw bits of each element.
bool holdsNonFinite(const TensorValue &t) {
  auto scan = [&](auto word, uint64_t exponent) {
    using Word = decltype(word);
    size_t n = t.bytes.size() / sizeof(Word);
    for (size_t i = 0; i < n; ++i) {
      Word bits;
      std::memcpy(&bits, t.bytes.data() + i * sizeof(Word), sizeof(Word));
      if ((bits & exponent) == exponent)
        return true;
    }
    return false;
  };
  const std::string &e = t.type.element;
  if (e == "float")
    return scan(uint32_t(0), 0x7f800000u);
  if (e == "double")
    return scan(uint64_t(0), 0x7ff0000000000000ull);
  if (e == "float16")
    return scan(uint16_t(0), 0x7c00u);
  if (e == "bfloat16")
    return scan(uint16_t(0), 0x7f80u);
  return false;
}

/// The elements of a static type (the loader bounds every value's count
/// by 2^40, so the product cannot overflow).
int64_t elementCount(const TensorType &t) {
  int64_t n = 1;
  for (int64_t d : t.dims)
    n *= d;
  return n;
}

/// Whether `from` broadcasts to `to` (NumPy's rules, one direction).
bool broadcastsTo(const std::vector<int64_t> &from,
                  const std::vector<int64_t> &to) {
  if (from.size() > to.size())
    return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1)
      return false;
  }
  return true;
}

/// The shape `a` and `b` broadcast to (NumPy's rules), if they do.
std::optional<std::vector<int64_t>>
broadcastShape(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1;
    int64_t y = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (x != y && x != 1 && y != 1)
      return std::nullopt;
    out[out.size() - 1 - k] = x == 1 ? y : x;
  }
  return out;
}

/// Whether `a` and `b` broadcast together (NumPy's rules).
bool broadcastTogether(const std::vector<int64_t> &a,
                       const std::vector<int64_t> &b) {
  return broadcastShape(a, b).has_value();
}

std::string mlirElement(const std::string &e) {
  static const std::map<std::string, std::string> names = {
      {"float", "f32"},     {"double", "f64"}, {"float16", "f16"},
      {"bfloat16", "bf16"}, {"int64", "i64"},  {"int32", "i32"},
      {"bool", "i1"}};
  auto it = names.find(e);
  return it == names.end() ? "" : it->second;
}

std::string mlirType(const TensorType &t) {
  std::string s = "tensor<";
  for (int64_t d : t.dims)
    s += std::to_string(d) + "x";
  return s + mlirElement(t.element) + ">";
}

std::string hexOf(const std::vector<char> &bytes) {
  return "0x" + llvm::toHex(llvm::StringRef(bytes.data(), bytes.size()));
}

/// The elements of an integer tensor.
std::vector<int64_t> intsOf(const TensorValue &t) {
  std::vector<int64_t> out;
  int bytes = elementBytes(t.type.element);
  for (size_t i = 0; bytes && i < t.bytes.size() / bytes; ++i) {
    if (bytes == 8) {
      int64_t x;
      std::memcpy(&x, t.bytes.data() + i * 8, 8);
      out.push_back(x);
    } else if (bytes == 4) {
      int32_t y;
      std::memcpy(&y, t.bytes.data() + i * 4, 4);
      out.push_back(y);
    } else { // bool
      out.push_back(t.bytes[i] != 0);
    }
  }
  return out;
}

/// A float tensor's value as a dense attribute (hex bytes).
std::string denseOf(const TensorValue &t) {
  return t.bytes.empty() ? "dense<0.0>" : "dense<\"" + hexOf(t.bytes) + "\">";
}

/// "a, b, c": the elements of an array<i64: ...> attribute.
std::string join(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string floatLiteral(double v);

/// " {...}" with mpc.cross_entropy's attributes that differ from their
/// defaults, or "".
std::string crossEntropyAttrs(std::optional<int64_t> ignoreIndex,
                              double labelSmoothing, bool sum) {
  std::string attrs;
  auto add = [&](const std::string &a) {
    attrs += (attrs.empty() ? "" : ", ") + a;
  };
  if (ignoreIndex)
    add("ignore_index = " + std::to_string(*ignoreIndex));
  if (labelSmoothing != 0)
    add("label_smoothing = " + floatLiteral(labelSmoothing));
  if (sum)
    add("reduction = #mpc<reduction sum>");
  return attrs.empty() ? "" : " {" + attrs + "}";
}

/// A float literal that reads back as the same double.
std::string floatLiteral(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  std::string s = buffer;
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

/// An MLIR string literal of `s`: quotes and backslashes escaped, and
/// control characters as \HH (names in a model may hold any byte).
std::string quoted(const std::string &s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += '\\';
      out += hex[u >> 4];
      out += hex[u & 15];
      continue;
    }
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

class Emitter {
public:
  Emitter(const Graph &graph, const ImportOptions &options)
      : graph(graph), options(options) {}

  std::string run(std::string &mlir);
  /// What the import decided that the user should hear of (importGraph's
  /// notes).
  std::vector<std::string> notes;

private:
  std::string testLoss(const Value &output);
  using Emit = std::function<std::string(const Node &)>;

  std::string error(const Node &node, const std::string &what) {
    // Unnamed nodes are named OpType_<index>, as the locations say.
    return "node '" + currentName + "' (" + node.opType + ", opset " +
           std::to_string(kOpset) + " since-version " +
           std::to_string(node.sinceVersion) + "): " + what;
  }
  std::string fresh() { return "%v" + std::to_string(next++); }
  /// The location of what the current node emits: its name, at the
  /// node's position in the graph (line = 1 + its index).
  std::string loc() { return at(currentName, currentIndex + 1); }
  std::string at(const std::string &name, size_t line) {
    return " loc(" + quoted(name) + "(" + quoted(options.sourceName) + ":" +
           std::to_string(line) + ":1))";
  }
  void line(const std::string &text) { body += "    " + text + loc() + "\n"; }
  /// A mutable global's line, @symbol(value : type), located at the
  /// graph value `source`; `attribute` ("name = value") is added to its
  /// attributes where given.
  std::string mutableGlobal(const std::string &symbol, const std::string &value,
                            const std::string &type, const std::string &source,
                            bool frozen = false,
                            const std::string &attribute = "") {
    std::string attrs = frozen ? "mpc.frozen" : "";
    if (!attribute.empty())
      attrs += (attrs.empty() ? "" : ", ") + attribute;
    return "ml_program.global private mutable @" + quoted(symbol) + "(" +
           value + " : " + type + ") : " + type +
           (attrs.empty() ? "" : " {" + attrs + "}") + at(source, 0) + "\n";
  }

  /// Why the graph output `name` has no value to return: an integer
  /// known at compile time only, an output of a node that mpc does not
  /// import (Dropout's mask, MaxPool's indices), or nothing computed it.
  std::string notComputed(const std::string &name) {
    auto it = values.find(name);
    if (it != values.end())
      return "the output '" + name + "' is " + mlirType(it->second.type) +
             ", known at compile time only (integer shape arithmetic); mpc "
             "imports floating-point and boolean outputs";
    for (const Node &n : graph.nodes)
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (n.outputs[k] == name)
          return "the output '" + name + "' is output #" + std::to_string(k) +
                 (n.name.empty()
                      ? " of a " + n.opType + " node"
                      : " of node '" + n.name + "' (" + n.opType + ")") +
                 ", which mpc does not import";
    return "the output '" + name + "' was not computed";
  }

  /// The value an input of the node names, or an error.
  std::string input(const Node &node, size_t i, Value &out) {
    if (i >= node.inputs.size() || node.inputs[i].empty())
      return error(node, "input " + std::to_string(i) + " is missing");
    auto it = values.find(node.inputs[i]);
    if (it == values.end())
      return error(node, "input '" + node.inputs[i] +
                             "' is not a value mpc "
                             "imported");
    out = it->second;
    // Zero-sized values are not imported as data whatever their type.
    for (int64_t d : out.type.dims)
      if (d == 0)
        return error(node, "input '" + node.inputs[i] +
                               "' has no elements (a zero dimension), "
                               "which mpc does not import");
    if (out.ssa.empty())
      return error(node, "input '" + node.inputs[i] + "' is an integer " +
                             mlirType(out.type) +
                             "; integer tensors are imported only as "
                             "shapes and axes, not as data");
    return "";
  }
  /// An input as data of any element type: integer constants (shape
  /// arithmetic, a test case's integer inputs) become an i64 mpc.constant.
  std::string dataInput(const Node &node, size_t i, Value &out,
                        const std::string &element = "int64") {
    if (i < node.inputs.size()) {
      auto it = values.find(node.inputs[i]);
      if (it != values.end() && it->second.ssa.empty() &&
          it->second.constantInts) {
        Value &v = it->second;
        v.ssa = fresh();
        bool mask = v.type.element == "bool"; // a bool buffer (a mask)
        std::vector<std::string> items;
        for (int64_t x : v.ints)
          items.push_back(mask ? (x ? "true" : "false") : std::to_string(x));
        TensorType t = v.type;
        t.element = mask ? "bool" : element;
        line(v.ssa + " = mpc.constant dense<" + nested(items, t.dims) +
             "> : " + mlirType(t));
        v.type = t;
      }
    }
    return input(node, i, out);
  }
  /// A dense literal of `items` in the nested brackets of `dims`.
  static std::string nested(const std::vector<std::string> &items,
                            const std::vector<int64_t> &dims) {
    if (dims.empty())
      return items.empty() ? "0" : items[0];
    size_t at = 0;
    std::function<std::string(size_t)> level = [&](size_t d) {
      std::string out = "[";
      for (int64_t k = 0; k < dims[d]; ++k) {
        out += k ? ", " : "";
        out += d + 1 == dims.size() ? items[at++] : level(d + 1);
      }
      return out + "]";
    };
    return level(0);
  }
  /// The inferred type of output i, which must be a static tensor. With
  /// `intData`, an integer output is allowed and typed i32: data moved
  /// from an integer graph input, which is fed as i32.
  std::string outputType(const Node &node, size_t i, TensorType &type,
                         bool intData = false) {
    const TensorType *found = nullptr;
    if (auto own = ownTypes.find(node.outputs[i]); own != ownTypes.end())
      found = &own->second;
    else if (auto it = graph.types.find(node.outputs[i]);
             it != graph.types.end())
      found = &it->second;
    if (!found || !found->hasShape ||
        std::count(found->dims.begin(), found->dims.end(), -1)) {
      // Any other op: ONNX's inference of this node alone, from the
      // types (and folded values) the importer knows for its inputs.
      std::vector<TensorType> outputs;
      if (std::string e = inferOutputs(node, outputs); !e.empty())
        return error(node, "ONNX's shape inference gives output '" +
                               node.outputs[i] +
                               "' no static shape, and inferring the node "
                               "from its inputs' types fails: " +
                               e);
      for (size_t k = 0; k < outputs.size(); ++k)
        if (outputs[k].hasShape && !node.outputs[k].empty())
          ownTypes[node.outputs[k]] = outputs[k];
      if (auto own = ownTypes.find(node.outputs[i]); own != ownTypes.end())
        found = &own->second;
    }
    if (!found || !found->hasShape)
      return error(node, "ONNX's shape inference gives output '" +
                             node.outputs[i] + "' no shape");
    for (int64_t d : found->dims)
      if (d < -1) // -1: no size given (OnnxModel.cpp)
        return error(node, "ONNX's shape inference gives output '" +
                               node.outputs[i] + "' a size of " +
                               std::to_string(d) +
                               ": the node's attributes do not fit its "
                               "inputs");
      else if (d < 0)
        return error(node,
                     "output '" + node.outputs[i] + "' has a dynamic shape");
    bool isInt = found->element == "int64" || found->element == "int32";
    if (!isFloat(found->element) && found->element != "bool" &&
        !(intData && isInt))
      return error(node, "output '" + node.outputs[i] + "' has element type " +
                             found->element +
                             "; mpc imports floating-point and boolean "
                             "results only");
    for (int64_t d : found->dims)
      if (d == 0)
        return error(node, "output '" + node.outputs[i] +
                               "' has no elements (a zero dimension), "
                               "which mpc does not import");
    type = *found;
    if (intData && isInt)
      type.element = "int32";
    return "";
  }
  /// ONNX's inference of `node` alone from its inputs' types as the
  /// importer knows them, with the integer values it folded.
  std::string inferOutputs(const Node &node, std::vector<TensorType> &outputs) {
    std::vector<TensorType> types(node.inputs.size());
    std::vector<TensorValue> folded(node.inputs.size());
    std::vector<const TensorValue *> given(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      auto it = values.find(node.inputs[k]);
      if (node.inputs[k].empty() || it == values.end() ||
          std::count(it->second.type.dims.begin(), it->second.type.dims.end(),
                     -1))
        continue;
      types[k] = it->second.type;
      const std::vector<int64_t> &ints = it->second.ints;
      int bytes = elementBytes(types[k].element);
      if (it->second.constantInts && (bytes == 4 || bytes == 8) &&
          static_cast<int64_t>(ints.size()) == elementCount(types[k])) {
        folded[k].type = types[k];
        folded[k].bytes.resize(ints.size() * bytes);
        for (size_t j = 0; j < ints.size(); ++j) {
          int32_t narrow = static_cast<int32_t>(ints[j]);
          std::memcpy(folded[k].bytes.data() + j * bytes,
                      bytes == 8 ? static_cast<const void *>(&ints[j])
                                 : static_cast<const void *>(&narrow),
                      bytes);
        }
        given[k] = &folded[k];
      }
    }
    return inferNode(node, types, given, outputs);
  }
  /// Input 0 and the type of output 0: what most emitters start with.
  /// Ops that only move elements (`moves`) also take integer data.
  std::string inputAndType(const Node &node, Value &x, TensorType &type,
                           bool moves = false) {
    if (auto e = input(node, 0, x); !e.empty())
      return e;
    return outputType(node, 0, type, moves && x.type.element == "int32");
  }
  /// Emits mpc.transpose of `ssa` (of type `type`) by `perm`; its result.
  std::string transposeOf(const std::string &ssa, const TensorType &type,
                          const std::vector<int64_t> &perm) {
    std::string out = fresh();
    line(out + " = mpc.transpose " + ssa +
         " {permutation = array<i64: " + join(perm) + ">} : " + mlirType(type));
    return out;
  }
  /// `ssa` (of type `from`) as `to`: an mpc.reshape, none where the types
  /// are the same; its result.
  std::string reshapeOf(const std::string &ssa, const TensorType &from,
                        const TensorType &to) {
    if (mlirType(from) == mlirType(to))
      return ssa;
    std::string out = fresh();
    line(out + " = mpc.reshape " + ssa + " : " + mlirType(from) + " -> " +
         mlirType(to));
    return out;
  }
  /// Emits an mpc.slice of `ssa` (of type `type`); its result.
  std::string sliceOf(const std::string &ssa, const TensorType &type,
                      const std::vector<int64_t> &offsets,
                      const std::vector<int64_t> &sizes,
                      const std::vector<int64_t> &strides = {}) {
    std::string out = fresh();
    line(out + " = mpc.slice " + ssa + " {offsets = array<i64: " +
         join(offsets) + ">, sizes = array<i64: " + join(sizes) + ">" +
         (strides.empty() ? ""
                          : ", strides = array<i64: " + join(strides) + ">") +
         "} : " + mlirType(type));
    return out;
  }
  /// sliceOf `x`; of its channels-last twin where it has one (a layout op's
  /// result: the slice is taken channels-last and defines a twin too).
  std::string sliceOfValue(const Value &x, const std::vector<int64_t> &offsets,
                           const std::vector<int64_t> &sizes,
                           const std::vector<int64_t> &strides = {});
  std::string define(const Node &node, size_t i, const std::string &ssa,
                     const TensorType &type) {
    values[node.outputs[i]] = Value{ssa, type, {}, false};
    return "";
  }
  /// Defines `node`'s output, of NCHW `type`, as `ssa`; where `nhwc`
  /// (channelsLast's answer), `ssa` is its channels-last twin.
  std::string defineLaidOut(const Node &node, const std::string &ssa, bool nhwc,
                            const TensorType &type) {
    if (!nhwc)
      return define(node, 0, ssa, type);
    TensorType twin = type;
    twin.dims = channelsLastDims(type.dims);
    return define(node, 0, toNCHW(ssa, twin), type);
  }
  int64_t intAttr(const Node &node, const std::string &name, int64_t dflt) {
    auto it = node.attributes.find(name);
    return it != node.attributes.end() && it->second.kind == Attribute::Int
               ? it->second.i
               : dflt;
  }
  double floatAttr(const Node &node, const std::string &name, double dflt) {
    auto it = node.attributes.find(name);
    return it != node.attributes.end() && it->second.kind == Attribute::Float
               ? it->second.f
               : dflt;
  }

  std::string floatConstant(double v, const std::string &element) {
    std::string ssa = fresh();
    std::string type = "tensor<" + mlirElement(element) + ">";
    line(ssa + " = mpc.constant dense<" + floatLiteral(v) + "> : " + type);
    return ssa;
  }

  /// A convolution's end: input 2 (the bias, channels last) added to its
  /// channels-last result `y` when given, then output 0 defined in NCHW.
  std::string withBias(const Node &node, std::string y, const TensorType &yt,
                       const TensorType &type) {
    if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
      Value b;
      if (auto e = input(node, 2, b); !e.empty())
        return e;
      std::string sum = fresh();
      line(sum + " = mpc.add " + y + ", " + b.ssa + " : " + mlirType(yt) +
           ", " + mlirType(b.type));
      y = sum;
    }
    return define(node, 0, toNCHW(y, yt), type);
  }
  /// A [rows, cols] boolean mask of column index `predicate` row index
  /// plus k (Trilu's triangles, EyeLike's diagonal): a compare of the
  /// column indices [1, cols] with the rows' i + k [rows, 1], O(rows +
  /// cols) text; k must keep i + k within i32. Its SSA name.
  std::string diagonalMask(int64_t rows, int64_t cols, int64_t k,
                           const char *predicate) {
    std::vector<std::string> colIds, rowIds;
    for (int64_t j = 0; j < cols; ++j)
      colIds.push_back(std::to_string(j));
    for (int64_t i = 0; i < rows; ++i)
      rowIds.push_back(std::to_string(i + k));
    TensorType colType{"int32", {1, cols}, true},
        rowType{"int32", {rows, 1}, true};
    std::string colSsa = fresh(), rowSsa = fresh(), mask = fresh();
    line(colSsa + " = mpc.constant dense<" + nested(colIds, colType.dims) +
         "> : " + mlirType(colType));
    line(rowSsa + " = mpc.constant dense<" + nested(rowIds, rowType.dims) +
         "> : " + mlirType(rowType));
    line(mask + " = mpc.compare " + quoted(predicate) + ", " + colSsa + ", " +
         rowSsa + " : " + mlirType(colType) + ", " + mlirType(rowType));
    return mask;
  }
  /// A mask as numbers of `element`: 1 where it holds, 0 elsewhere.
  std::string maskAsNumbers(const std::string &mask, const TensorType &type,
                            const std::string &element) {
    std::string one = floatConstant(1.0, element);
    std::string zero = floatConstant(0.0, element);
    std::string ssa = fresh();
    std::string scalar = "tensor<" + mlirElement(element) + ">";
    line(ssa + " = mpc.where " + mask + ", " + one + ", " + zero + " : " +
         mlirType(type) + ", " + scalar + ", " + scalar);
    return ssa;
  }

  // Op families.
  std::string unary(const Node &node, const std::string &op);
  std::string binary(const Node &node, const std::string &op);
  std::string contracting(const Node &node, const Value &a, const Value &b,
                          bool ta, bool tb);
  std::string convShapes(const Node &node, const Value &x, const Value &w,
                         int64_t groups, const std::vector<int64_t> &strides,
                         const std::vector<int64_t> &dilations);
  std::string kernelShape(const Node &node, const Value &w);
  std::string matmul(const Node &node);
  std::string gemm(const Node &node);
  std::string softmax(const Node &node, const std::string &op);
  std::string reshapeTo(const Node &node);
  std::string transpose(const Node &node);
  std::string identity(const Node &node);
  std::string constant(const Node &node);
  std::string dropout(const Node &node);
  std::string layerNorm(const Node &node);
  std::string gather(const Node &node);
  std::string reduce(const Node &node, const std::string &op, bool axesInput);
  std::string cast(const Node &node);
  /// Equal, Less, ... to an i1 mask; Not; Where.
  std::string compare(const Node &node, const std::string &predicate);
  std::string logicalNot(const Node &node);
  std::string where(const Node &node);
  /// And, Or, Xor of two masks: their sum (a product for And) as numbers
  /// compared with 0 (with 1 for Xor).
  enum class Logical { And, Or, Xor };
  std::string logical(const Node &node, Logical kind);
  std::string concat(const Node &node);
  std::string slice(const Node &node);
  std::string split(const Node &node);
  /// LeakyRelu, Clip, HardSigmoid, HardSwish, Elu and Abs, written with
  /// mpc.compare and mpc.where (whose gradients are the ops' own), and
  /// Reciprocal as a division.
  std::string activation(const Node &node);
  std::string einsum(const Node &node);
  std::string trilu(const Node &node);
  /// EyeLike (torch.eye): ones on a diagonal of its input's rank-2 shape.
  std::string eyeLike(const Node &node);
  /// GatherElements (torch.gather): each output element picked from its
  /// row of the data along the axis by a mask of the index against the
  /// row's positions, summed over them.
  std::string gatherElements(const Node &node);
  /// DepthToSpace (PyTorch's PixelShuffle) and SpaceToDepth: a reshape, a
  /// transpose and a reshape of the channels-last values.
  std::string depthSpace(const Node &node, bool toSpace);
  std::string recurrent(const Node &node);
  std::string tile(const Node &node);
  std::string cumSum(const Node &node);
  /// A constant of `type` (f32 or f64) holding `values` (row-major).
  std::string denseConstant(const std::vector<double> &values,
                            const TensorType &type) {
    TensorValue t;
    t.type = type;
    bool f32 = type.element == "float";
    t.bytes.resize(values.size() * (f32 ? 4 : 8));
    for (size_t k = 0; k < values.size(); ++k) {
      float f = static_cast<float>(values[k]);
      std::memcpy(t.bytes.data() + k * (f32 ? 4 : 8),
                  f32 ? static_cast<const void *>(&f)
                      : static_cast<const void *>(&values[k]),
                  f32 ? 4 : 8);
    }
    std::string ssa = fresh();
    line(ssa + " = mpc.constant " + denseOf(t) + " : " + mlirType(type));
    return ssa;
  }
  std::string variadic(const Node &node);
  /// Expand: mpc.broadcast_to the inferred shape.
  std::string expand(const Node &node);
  /// Pad in constant mode: the value's slabs concatenated on each side.
  std::string pad(const Node &node);
  std::string conv(const Node &node);
  /// A 1-D window op (Conv, ConvTranspose, MaxPool, AveragePool over
  /// [N, C, L]) as `emit`'s 2-D form over [N, C, 1, L], or `emit` itself
  /// for any other rank.
  std::string windowOp(const Node &node,
                       const std::function<std::string(const Node &)> &emit);
  std::string batchNorm(const Node &node);
  std::string instanceNorm(const Node &node);
  std::string pool(const Node &node, bool max);
  /// GlobalAveragePool and GlobalMaxPool: `op` (reduce_mean, reduce_max)
  /// over every axis after the channels, kept.
  std::string globalPool(const Node &node, const std::string &op);
  std::string convTranspose(const Node &node);
  std::string resize(const Node &node);
  std::string constantOfShape(const Node &node);
  /// SoftmaxCrossEntropyLoss, and NegativeLogLikelihoodLoss of a
  /// LogSoftmax over the classes (how PyTorch's cross_entropy exports).
  std::string crossEntropy(const Node &node, bool fromLogProbs);
  /// The same written out (class weights, ignore_index, reduction none,
  /// the log_prob output, log-probabilities from anywhere).
  /// How [N, C, d...] scores were made [N D, C] rows: their type, the
  /// transposed type (classes last), the permutation, the labels' type.
  struct Unflatten {
    TensorType scores, last;
    std::vector<int64_t> perm;
    TensorType labels;
  };
  std::string weightedCrossEntropy(const Node &node, bool fromLogProbs,
                                   const Value &scores, const Value &labels,
                                   const std::string &how,
                                   std::optional<int64_t> ignore,
                                   const std::optional<Unflatten> &shape);
  /// The values of a float constant (an initializer or a Constant node).
  std::optional<std::vector<double>> floatConstant(const std::string &name);
  /// The tensor an initializer or a Constant node gives the value `name`,
  /// or null.
  const TensorValue *constantTensor(const std::string &name) {
    if (!constantsIndexed) { // one pass over the graph, not one per lookup
      constantsIndexed = true;
      for (const TensorValue &init : graph.initializers)
        constants.emplace(init.name, &init);
      for (const Node &n : graph.nodes) {
        auto a = n.attributes.find("value");
        if (n.opType == "Constant" && !n.outputs.empty() &&
            a != n.attributes.end() && a->second.kind == Attribute::Tensor)
          constants.emplace(n.outputs[0], &a->second.tensor);
      }
    }
    auto it = constants.find(name);
    return it == constants.end() ? nullptr : it->second;
  }
  std::map<std::string, const TensorValue *> constants;
  bool constantsIndexed = false;
  /// constantTensor's, or in a test case the data of the graph input
  /// `name`.
  const TensorValue *constantOrTestInput(const std::string &name) {
    if (const TensorValue *t = constantTensor(name))
      return t;
    if (options.testCase)
      for (size_t i = 0; i < graph.inputs.size(); ++i)
        if (graph.inputs[i].first == name && i < options.testInputs.size())
          return &options.testInputs[i];
    return nullptr;
  }
  /// The value of an f32 or f64 scalar tensor, or nothing.
  static std::optional<double> floatScalar(const TensorValue *t) {
    if (!t || !t->type.dims.empty())
      return std::nullopt;
    if (t->type.element == "double" && t->bytes.size() == 8) {
      double v;
      std::memcpy(&v, t->bytes.data(), 8);
      return v;
    }
    if (t->type.element == "float" && t->bytes.size() == 4) {
      float v;
      std::memcpy(&v, t->bytes.data(), 4);
      return v;
    }
    return std::nullopt;
  }
  /// NCHW <-> NHWC: mpc's convolutions are channels-last, ONNX's
  /// channels-first. Each layout op is wrapped in a transpose pair; the
  /// pairs between adjacent layout ops cancel (mpc.transpose's fold).
  std::string toNHWC(const Value &x, TensorType &type);
  std::string toNCHW(const std::string &ssa, const TensorType &nhwc);
  /// The channels-last twin of an NCHW value a layout op produced: the
  /// next layout op, or an elementwise op between two, uses it directly,
  /// so the transposes meet and cancel.
  std::map<std::string, std::pair<std::string, TensorType>> nhwcOf;
  /// GroupNorm's `[N, G, C/G H W]` view of a layout op's NCHW result (as
  /// PyTorch exports it, around an InstanceNormalization), and what the
  /// normalisation makes of it: the same values as the NHWC twin's
  /// `[N, H W, G, C/G]` view, normalised over its axes 1 and 3.
  std::map<std::string, std::pair<std::string, TensorType>> groupedOf;
  /// An elementwise op between layout ops: where one of `operands` (each
  /// broadcasting to the 4-D NCHW `result`) has a channels-last twin and
  /// every other one has fewer elements than the result, replaces each by
  /// its NHWC form (the twin; a smaller operand raised to rank 4 and
  /// transposed, none where all its sizes are 1) and returns true: the op
  /// then computes channels-last and defines toNCHW of its result, so one
  /// small operand's transpose replaces the pair around the op.
  bool channelsLast(std::vector<Value *> operands, const TensorType &result);
  /// What auto_pad SAME depends on: [h, w] each.
  struct Window {
    std::vector<int64_t> input, kernel, strides, dilations;
  };
  /// The [h, w] padding of a 2-D window op before and after the input
  /// (explicit pads, or auto_pad SAME_* with `window`), or an error.
  std::string padding(const Node &node, std::vector<int64_t> &begin,
                      std::vector<int64_t> &end,
                      const Window *window = nullptr);
  /// `x` (NHWC) with `begin[d]`/`end[d]` rows and columns of `fill`
  /// concatenated before and after its H and W dimensions; `type` grows.
  std::string padNHWC(const std::string &x, TensorType &type,
                      const std::vector<int64_t> &begin,
                      const std::vector<int64_t> &end, const char *fill);
  /// Globals written back by the step (batch-norm running statistics).
  struct Store {
    std::string global, ssa, type;
  };
  std::vector<Store> stores;
  std::set<std::string> globalNames;
  /// The --padding-idx tables an embedding read (each must be one).
  std::set<std::string> paddedTables;
  std::string erf(const Node &node);
  /// The nodes of a GELU written with Erf (PyTorch's export before
  /// opset 20: x / sqrt(2), Erf, + 1, * x, * 0.5), and the tanh form an
  /// opset-20 Gelu is converted to, found before emission.
  void findErfGelus();
  /// Shape arithmetic on compile-time integers (what exports of reshapes
  /// with a batch dimension compute: Shape, Gather, Unsqueeze, Concat,
  /// arithmetic): folded here. Returns false when the node is not that.
  bool foldInts(const Node &node, std::string &err);
  /// A GELU found: the index of its last node, its input, and whether it
  /// is the tanh approximation.
  struct GeluMatch {
    size_t end;
    std::string x;
    bool tanh;
  };
  /// By the index of the node where it is emitted (the Erf, the Tanh).
  std::map<size_t, GeluMatch> geluAt;
  std::set<size_t> covered;
  /// mpc.gelu for the GELU found at this node.
  std::string gelu(const Node &node, const GeluMatch &match);
  /// Integer values of a constant input (shapes, axes), or an error.
  std::string constInts(const Node &node, size_t i, std::vector<int64_t> &out);

  std::map<std::pair<std::string, int>, Emit> emitters();

  const Graph &graph;
  const ImportOptions &options;
  std::map<std::string, Value> values;
  /// Types of values the importer names itself (the 2-D views of 1-D
  /// window ops' results), where outputType looks before ONNX's.
  std::map<std::string, TensorType> ownTypes;
  std::string globals, body, currentName;
  size_t currentIndex = 0;
  int next = 0;

  /// Makes node i of the graph the current one: its index and its name
  /// (an unnamed node is OpType_<index>, as the locations say).
  void enterNode(size_t i) {
    const Node &node = graph.nodes[i];
    currentIndex = i;
    currentName =
        node.name.empty() ? node.opType + "_" + std::to_string(i) : node.name;
  }
};

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

std::string Emitter::unary(const Node &node, const std::string &op) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type); !e.empty())
    return e;
  if (auto it = nhwcOf.find(x.ssa); it != nhwcOf.end()) {
    // Between layout ops: computed channels-last (a transpose back to
    // NCHW is emitted for other users and folds away when there are none).
    std::string ssa = fresh();
    line(ssa + " = mpc." + op + " " + it->second.first + " : " +
         mlirType(it->second.second));
    return define(node, 0, toNCHW(ssa, it->second.second), type);
  }
  std::string ssa = fresh();
  line(ssa + " = mpc." + op + " " + x.ssa + " : " + mlirType(x.type));
  return define(node, 0, ssa, type);
}

std::string Emitter::binary(const Node &node, const std::string &op) {
  Value a, b;
  TensorType type;
  if (auto e = input(node, 0, a); !e.empty())
    return e;
  // An integer exponent may be constant data too (a test case's input),
  // as i32 while every value is exact in f32.
  bool smallInts = false;
  if (op == "pow" && node.inputs.size() > 1)
    if (auto it = values.find(node.inputs[1]);
        it != values.end() && it->second.constantInts)
      smallInts = std::all_of(it->second.ints.begin(), it->second.ints.end(),
                              [](int64_t x) { return std::abs(x) <= 1 << 24; });
  if (auto e = smallInts ? dataInput(node, 1, b, "int32") : input(node, 1, b);
      !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  // Pow's exponent may be integer data (an integer graph input, fed as
  // i32): it is cast to the base's type, exactly while |y| < 2^24.
  if (op == "pow" && isFloat(a.type.element) && b.type.element == "int32") {
    TensorType widened = b.type;
    widened.element = a.type.element;
    std::string cast = fresh();
    line(cast + " = mpc.cast " + b.ssa + " : " + mlirType(b.type) + " -> " +
         mlirType(widened));
    b.ssa = cast;
    b.type = widened;
  }
  if (!broadcastTogether(a.type.dims, b.type.dims))
    return error(node, "operands " + mlirType(a.type) + " and " +
                           mlirType(b.type) + " do not broadcast together");
  for (const Value *v : {&a, &b})
    if (!isFloat(v->type.element) ||
        mlirElement(v->type.element) != mlirElement(type.element))
      return error(node, "computes " + type.element + " from " +
                             a.type.element + " and " + b.type.element +
                             "; mpc's " + op +
                             " takes floating-point operands of the "
                             "result's type");
  bool nhwc = channelsLast({&a, &b}, type);
  std::string ssa = fresh();
  line(ssa + " = mpc." + op + " " + a.ssa + ", " + b.ssa + " : " +
       mlirType(a.type) + ", " + mlirType(b.type));
  return defineLaidOut(node, ssa, nhwc, type);
}

std::string Emitter::activation(const Node &node) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type); !e.empty())
    return e;
  if (!isFloat(x.type.element) || x.type.dims != type.dims)
    return error(node, "takes floating-point data to the same shape");
  const std::string &op = node.opType;
  // PRelu's slope: an input broadcast to x (its gradient summed back over
  // the broadcast axes by autodiff).
  Value slope;
  if (op == "PRelu") {
    if (auto e = input(node, 1, slope); !e.empty())
      return e;
    if (slope.type.element != x.type.element ||
        !broadcastsTo(slope.type.dims, x.type.dims))
      return error(node, "the slope " + mlirType(slope.type) +
                             " must broadcast to the data " + mlirType(x.type) +
                             " of its type");
  }
  // Between layout ops: computed channels-last.
  const TensorType nchw = type;
  std::vector<Value *> operands = {&x};
  if (op == "PRelu")
    operands.push_back(&slope);
  bool nhwc = channelsLast(operands, type);
  if (nhwc)
    type = x.type;
  const std::string t = mlirType(type);
  const std::string scalar = "tensor<" + mlirElement(type.element) + ">";
  TensorType maskType = type;
  maskType.element = "bool";
  // mask = v PRED bound; where(mask, a, b).
  auto compare = [&](const char *pred, const std::string &v,
                     const std::string &bound, const std::string &boundType) {
    std::string m = fresh();
    line(m + " = mpc.compare " + quoted(pred) + ", " + v + ", " + bound +
         " : " + t + ", " + boundType);
    return m;
  };
  auto select = [&](const std::string &mask, const std::string &a,
                    const std::string &aType, const std::string &b,
                    const std::string &bType) {
    std::string r = fresh();
    line(r + " = mpc.where " + mask + ", " + a + ", " + b + " : " +
         mlirType(maskType) + ", " + aType + ", " + bType);
    return r;
  };
  auto binary = [&](const char *op, const std::string &a, const std::string &b,
                    const std::string &bType) {
    std::string r = fresh();
    line(r + " = mpc." + op + " " + a + ", " + b + " : " + t + ", " + bType);
    return r;
  };
  // Clip to [lo, hi] (either may be absent). Inclusive: the gradient
  // passes at the bounds, as PyTorch's clamp; exclusive: it stops there,
  // as PyTorch's hardsigmoid and hardtanh (the same values either way).
  auto clip = [&](std::string v, const std::optional<Value> &lo,
                  const std::optional<Value> &hi, bool inclusive = true) {
    if (lo)
      v = select(
          compare(inclusive ? "lt" : "le", v, lo->ssa, mlirType(lo->type)),
          lo->ssa, mlirType(lo->type), v, t);
    if (hi)
      v = select(
          compare(inclusive ? "gt" : "ge", v, hi->ssa, mlirType(hi->type)),
          hi->ssa, mlirType(hi->type), v, t);
    return v;
  };
  auto constant = [&](double v) {
    return Value{floatConstant(v, type.element),
                 TensorType{type.element, {}, true},
                 {},
                 false};
  };
  std::string y;
  if (op == "LeakyRelu" || op == "PRelu") {
    // x > 0 ? x : slope x: LeakyRelu's slope its alpha, PRelu's an input;
    // at 0 the gradient is the slope, as PyTorch's.
    if (op == "LeakyRelu")
      slope = constant(floatAttr(node, "alpha", 0.01));
    std::string zero = floatConstant(0, type.element);
    y = select(compare("gt", x.ssa, zero, scalar), x.ssa, t,
               binary("mul", x.ssa, slope.ssa, mlirType(slope.type)), t);
  } else if (op == "Clip") {
    std::optional<Value> bounds[2];
    for (size_t i = 1; i < 3; ++i) {
      if (i >= node.inputs.size() || node.inputs[i].empty())
        continue;
      Value b;
      if (auto e = input(node, i, b); !e.empty())
        return e;
      if (!b.type.dims.empty() ||
          mlirElement(b.type.element) != mlirElement(type.element))
        return error(node, "the bounds must be scalars of the data's type");
      bounds[i - 1] = b;
    }
    y = clip(x.ssa, bounds[0], bounds[1]);
  } else if (op == "HardSigmoid" || op == "HardSwish") {
    // max(0, min(1, alpha x + beta)); HardSwish is x times it with
    // alpha 1/6 and beta 1/2. As PyTorch's: HardSigmoid's gradient stops
    // at the bends (alpha x + beta = 0 or 1), HardSwish's passes there.
    bool swish = op == "HardSwish";
    std::string alpha = floatConstant(
        swish ? 1.0 / 6 : floatAttr(node, "alpha", 0.2), type.element);
    std::string beta =
        floatConstant(swish ? 0.5 : floatAttr(node, "beta", 0.5), type.element);
    std::string h =
        clip(binary("add", binary("mul", x.ssa, alpha, scalar), beta, scalar),
             constant(0), constant(1), /*inclusive=*/swish);
    y = swish ? binary("mul", x.ssa, h, t) : h;
  } else if (op == "Reciprocal") {
    std::string one = floatConstant(1, type.element);
    y = fresh();
    line(y + " = mpc.div " + one + ", " + x.ssa + " : " + scalar + ", " + t);
  } else if (op == "Abs" || op == "Softsign") {
    // x > 0 ? x : (x < 0 ? -x : 0 x): the gradient is sign(x), 0 at 0 as
    // PyTorch's (and a NaN stays NaN). Softsign is x / (1 + |x|).
    std::string zero = floatConstant(0, type.element), negated = fresh();
    line(negated + " = mpc.neg " + x.ssa + " : " + t);
    std::string inner = select(compare("lt", x.ssa, zero, scalar), negated, t,
                               binary("mul", x.ssa, zero, scalar), t);
    y = select(compare("gt", x.ssa, zero, scalar), x.ssa, t, inner, t);
    if (op == "Softsign") {
      std::string one = floatConstant(1, type.element);
      y = binary("div", x.ssa, binary("add", y, one, scalar), t);
    }
  } else if (op == "Sign") {
    // x > 0 ? 1 : (x < 0 ? -1 : 0 x): 0 at 0, NaN stays NaN; no gradient.
    std::string zero = floatConstant(0, type.element),
                one = floatConstant(1, type.element),
                minus = floatConstant(-1, type.element);
    std::string inner = select(compare("lt", x.ssa, zero, scalar), minus,
                               scalar, binary("mul", x.ssa, zero, scalar), t);
    y = select(compare("gt", x.ssa, zero, scalar), one, scalar, inner, t);
  } else if (op == "Softplus") {
    // PyTorch's: x past 20 is x, else log(1 + exp(x)), its exp of x
    // clamped to 20 (an overflowing exp on the unselected side would make
    // its zero gradient NaN). log(1 + e) rounds exp(x) below 2^-24 away,
    // where PyTorch's log1p keeps it (an absolute difference under 6e-8).
    std::string limit = floatConstant(20, type.element);
    std::string one = floatConstant(1, type.element);
    std::string above = compare("gt", x.ssa, limit, scalar);
    std::string clamped = select(above, limit, scalar, x.ssa, t);
    std::string e = fresh(), l = fresh();
    line(e + " = mpc.exp " + clamped + " : " + t);
    line(l + " = mpc.log " + binary("add", e, one, scalar) + " : " + t);
    y = select(above, x.ssa, t, l, t);
  } else if (op == "Shrink") {
    // x < -lambd ? x + bias : (x > lambd ? x - bias : 0 x): PyTorch's
    // hardshrink (bias 0) and softshrink (bias lambd); the gradient 0 on
    // [-lambd, lambd], its ends included, as PyTorch's; a NaN stays NaN.
    double lambd = floatAttr(node, "lambd", 0.5);
    std::string bias =
        floatConstant(floatAttr(node, "bias", 0.0), type.element);
    std::string below = floatConstant(-lambd, type.element),
                above = floatConstant(lambd, type.element),
                zero = floatConstant(0, type.element);
    std::string inner = select(compare("gt", x.ssa, above, scalar),
                               binary("sub", x.ssa, bias, scalar), t,
                               binary("mul", x.ssa, zero, scalar), t);
    y = select(compare("lt", x.ssa, below, scalar),
               binary("add", x.ssa, bias, scalar), t, inner, t);
  } else { // Elu: x > 0 ? x : alpha (exp(x) - 1), exp of min(x, 0) only
           // (an overflowing exp of the unselected side would make its
           // zero gradient NaN), x itself at 0 (its gradient alpha there,
           // as PyTorch's); Selu is gamma times that; Celu takes the exp
           // of x / alpha (its gradient 1 at 0, as PyTorch's).
    bool selu = op == "Selu", celu = op == "Celu";
    std::string zero = floatConstant(0, type.element);
    std::string one = floatConstant(1, type.element);
    std::string alpha = floatConstant(
        floatAttr(node, "alpha", selu ? 1.67326319217681884765625 : 1.0),
        type.element);
    std::string negative =
        select(compare("gt", x.ssa, zero, scalar), zero, scalar, x.ssa, t);
    if (celu) {
      double a = floatAttr(node, "alpha", 1.0);
      if (!(a != 0) || !std::isfinite(a))
        return error(node, "alpha must be finite and nonzero");
      negative = binary("div", negative, alpha, scalar);
    }
    std::string e = fresh();
    line(e + " = mpc.exp " + negative + " : " + t);
    std::string below =
        binary("mul", binary("sub", e, one, scalar), alpha, scalar);
    y = select(compare("gt", x.ssa, zero, scalar), x.ssa, t, below, t);
    if (selu)
      y = binary(
          "mul", y,
          floatConstant(floatAttr(node, "gamma", 1.05070102214813232421875),
                        type.element),
          scalar);
  }
  return define(node, 0, nhwc ? toNCHW(y, type) : y, nchw);
}

/// LSTM and GRU (PyTorch's nn.LSTM and nn.GRU), unrolled over the static
/// sequence: the input's product with every gate's weights is one matmul
/// over all steps (the biases added once); each step then adds its hidden
/// state's product, slices the gates and applies sigmoid and tanh, so
/// autodiff differentiates the whole recurrence. ONNX's gate orders: LSTM
/// i, o, f, c; GRU z, r, h. Forward, reverse and bidirectional; layout 0;
/// default activations, no clip, no peepholes, no input_forget, no
/// sequence_lens shorter than the sequence.
std::string Emitter::recurrent(const Node &node) {
  bool lstm = node.opType == "LSTM";
  int gates = lstm ? 4 : 3;
  Value x, w, r;
  for (auto [i, v] : {std::pair{0, &x}, {1, &w}, {2, &r}})
    if (auto e = input(node, i, *v); !e.empty())
      return e;
  auto given = [&](size_t i) {
    return i < node.inputs.size() && !node.inputs[i].empty();
  };
  auto str = [&](const char *name, const char *dflt) {
    auto it = node.attributes.find(name);
    return it == node.attributes.end() ? std::string(dflt) : it->second.s;
  };
  std::string direction = str("direction", "forward");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && dirs != 2)
    return error(node, "direction " + direction + " is not imported");
  // Layout 1 (batch first): X and the states transposed to layout 0, the
  // results back.
  bool batchFirst = intAttr(node, "layout", 0) == 1;
  if (intAttr(node, "layout", 0) > 1 || node.attributes.count("clip") ||
      node.attributes.count("activations") ||
      node.attributes.count("activation_alpha") ||
      (lstm && intAttr(node, "input_forget", 0) != 0) || (lstm && given(7)))
    return error(node, "only the default activations, no clip, no "
                       "peepholes and no input_forget are imported");
  if (x.type.dims.size() != 3 || !isFloat(x.type.element))
    return error(node, "X must be floating-point [sequence, batch, input] "
                       "([batch, sequence, input] with layout 1)");
  auto swap01 = [&](Value &v) {
    TensorType t = v.type;
    std::swap(t.dims[0], t.dims[1]);
    v = Value{transposeOf(v.ssa, v.type, {1, 0, 2}), t, {}, false};
  };
  if (batchFirst)
    swap01(x);
  int64_t steps = x.type.dims[0], batch = x.type.dims[1],
          inputs = x.type.dims[2];
  int64_t hidden = intAttr(node, "hidden_size", 0);
  if (hidden <= 0 || hidden > (int64_t(1) << 24))
    return error(node, "hidden_size must be given and positive");
  if (steps * dirs > kReflectLimit)
    return error(node, "more than " + std::to_string(kReflectLimit) +
                           " unrolled steps");
  const std::string &el = x.type.element;
  auto tt = [&](std::vector<int64_t> dims) {
    return TensorType{el, std::move(dims), true};
  };
  if (w.type.dims != std::vector<int64_t>{dirs, gates * hidden, inputs} ||
      r.type.dims != std::vector<int64_t>{dirs, gates * hidden, hidden} ||
      w.type.element != el || r.type.element != el)
    return error(node,
                 "W must be " + mlirType(tt({dirs, gates * hidden, inputs})) +
                     " and R " + mlirType(tt({dirs, gates * hidden, hidden})));
  if (given(4)) { // sequence_lens: the whole sequence only
    auto it = values.find(node.inputs[4]);
    bool whole = it != values.end() && it->second.constantInts;
    if (whole)
      for (int64_t n : it->second.ints)
        whole &= n == steps;
    if (!whole)
      return error(node, "sequence_lens must be constants equal to the "
                         "sequence length");
  }
  Value b, h0, c0;
  if (given(3)) {
    if (auto e = input(node, 3, b); !e.empty())
      return e;
    if (b.type.dims != std::vector<int64_t>{dirs, 2 * gates * hidden})
      return error(node,
                   "B must be " + mlirType(tt({dirs, 2 * gates * hidden})));
  }
  for (auto [i, v] : {std::pair{5, &h0}, {6, &c0}}) {
    if (!given(i) || (i == 6 && !lstm))
      continue;
    if (auto e = input(node, i, *v); !e.empty())
      return e;
    if (batchFirst && v->type.dims.size() == 3)
      swap01(*v);
    if (v->type.dims != std::vector<int64_t>{dirs, batch, hidden})
      return error(node, "the initial states must be " +
                             mlirType(tt({dirs, batch, hidden})));
  }

  auto op2 = [&](const char *op, const std::string &a, const TensorType &ta,
                 const std::string &bb, const TensorType &tb) {
    std::string out = fresh();
    line(out + " = mpc." + op + " " + a + ", " + bb + " : " + mlirType(ta) +
         ", " + mlirType(tb));
    return out;
  };
  auto op1 = [&](const char *op, const std::string &a, const TensorType &t) {
    std::string out = fresh();
    line(out + " = mpc." + op + " " + a + " : " + mlirType(t));
    return out;
  };
  TensorType bh = tt({batch, hidden}), bg = tt({batch, gates * hidden}),
             gw = tt({gates * hidden, inputs}),
             gr = tt({gates * hidden, hidden}), g1 = tt({gates * hidden}),
             w3 = tt({1, gates * hidden, inputs}),
             r3 = tt({1, gates * hidden, hidden}), s3 = tt({1, batch, hidden});
  std::vector<std::string> ys(static_cast<size_t>(dirs)),
      lastH(static_cast<size_t>(dirs)), lastC(static_cast<size_t>(dirs));
  for (int64_t d = 0; d < dirs; ++d) {
    bool backwards = direction == "reverse" || d == 1;
    std::string wd = reshapeOf(
        sliceOf(w.ssa, w.type, {d, 0, 0}, {1, gates * hidden, inputs}), w3, gw);
    std::string rd = reshapeOf(
        sliceOf(r.ssa, r.type, {d, 0, 0}, {1, gates * hidden, hidden}), r3, gr);
    // Every step's input products at once: [steps, batch, gates hidden].
    TensorType xg = tt({steps, batch, gates * hidden});
    std::string xw = fresh();
    line(xw + " = mpc.matmul " + x.ssa + ", " + wd +
         " {transpose_b} : " + mlirType(x.type) + ", " + mlirType(gw));
    std::string rb; // R's bias, added inside the reset gate for GRU's h
    if (b.ssa.size()) {
      TensorType b2 = tt({1, gates * hidden});
      std::string wb = reshapeOf(
          sliceOf(b.ssa, b.type, {d, 0}, {1, gates * hidden}), b2, g1);
      rb = reshapeOf(
          sliceOf(b.ssa, b.type, {d, gates * hidden}, {1, gates * hidden}), b2,
          g1);
      // GRU (PyTorch's linear_before_reset) keeps R's bias of h apart;
      // every other bias is added to the input products here.
      std::string both = lstm ? op2("add", wb, g1, rb, g1) : wb;
      if (!lstm) {
        TensorType two = tt({2 * hidden});
        std::string rzr = sliceOf(rb, g1, {0}, {2 * hidden});
        std::string zero = fresh();
        line(zero + " = mpc.constant dense<0.0> : " + mlirType(tt({hidden})));
        std::string rpad = fresh();
        line(rpad + " = mpc.concat " + rzr + ", " + zero +
             " {axis = 0 : i64} : " + mlirType(two) + ", " +
             mlirType(tt({hidden})));
        both = op2("add", wb, g1, rpad, g1);
      }
      xw = op2("add", xw, xg, both, g1);
    }
    bool linearBeforeReset = intAttr(node, "linear_before_reset", 0) != 0;
    auto initial = [&](const Value &v) {
      if (v.ssa.empty()) {
        std::string z = fresh();
        line(z + " = mpc.constant dense<0.0> : " + mlirType(bh));
        return z;
      }
      return reshapeOf(sliceOf(v.ssa, v.type, {d, 0, 0}, {1, batch, hidden}),
                       s3, bh);
    };
    std::string h = initial(h0), c = lstm ? initial(c0) : "";
    std::vector<std::string> hs(static_cast<size_t>(steps));
    TensorType x1 = tt({1, batch, gates * hidden});
    for (int64_t k = 0; k < steps; ++k) {
      int64_t t = backwards ? steps - 1 - k : k;
      std::string xt = reshapeOf(
          sliceOf(xw, xg, {t, 0, 0}, {1, batch, gates * hidden}), x1, bg);
      std::string hr = fresh();
      line(hr + " = mpc.matmul " + h + ", " + rd +
           " {transpose_b} : " + mlirType(bh) + ", " + mlirType(gr));
      auto gate = [&](const std::string &v, int64_t g) {
        return sliceOf(v, bg, {0, g * hidden}, {batch, hidden});
      };
      if (lstm) {
        std::string sum = op2("add", xt, bg, hr, bg);
        std::string i = op1("sigmoid", gate(sum, 0), bh),
                    o = op1("sigmoid", gate(sum, 1), bh),
                    f = op1("sigmoid", gate(sum, 2), bh),
                    cc = op1("tanh", gate(sum, 3), bh);
        c = op2("add", op2("mul", f, bh, c, bh), bh, op2("mul", i, bh, cc, bh),
                bh);
        h = op2("mul", o, bh, op1("tanh", c, bh), bh);
      } else {
        // z and r from the sums; h~ = tanh(x_h + r * (h R_h + Rb_h)) with
        // linear_before_reset, else tanh(x_h + (r * h) R_h + Rb_h).
        std::string sum = op2("add", xt, bg, hr, bg);
        std::string z = op1("sigmoid", gate(sum, 0), bh),
                    rr = op1("sigmoid", gate(sum, 1), bh);
        std::string rbh;
        if (!rb.empty())
          rbh = sliceOf(rb, g1, {2 * hidden}, {hidden});
        std::string inner;
        if (linearBeforeReset) {
          inner = gate(hr, 2);
          if (!rbh.empty())
            inner = op2("add", inner, bh, rbh, tt({hidden}));
          inner = op2("mul", rr, bh, inner, bh);
        } else {
          std::string rh = op2("mul", rr, bh, h, bh);
          TensorType rhT = tt({hidden, hidden});
          std::string rdh = sliceOf(rd, gr, {2 * hidden, 0}, {hidden, hidden});
          inner = fresh();
          line(inner + " = mpc.matmul " + rh + ", " + rdh +
               " {transpose_b} : " + mlirType(bh) + ", " + mlirType(rhT));
          if (!rbh.empty())
            inner = op2("add", inner, bh, rbh, tt({hidden}));
        }
        std::string hh =
            op1("tanh", op2("add", gate(xt, 2), bh, inner, bh), bh);
        // h = (1 - z) h~ + z h = h~ + z (h - h~)
        h = op2("add", hh, bh, op2("mul", z, bh, op2("sub", h, bh, hh, bh), bh),
                bh);
      }
      hs[static_cast<size_t>(t)] = reshapeOf(h, bh, s3);
    }
    lastH[static_cast<size_t>(d)] = h;
    lastC[static_cast<size_t>(d)] = c;
    std::string operands, types;
    for (int64_t t = 0; t < steps; ++t) {
      operands += (t ? ", " : "") + hs[static_cast<size_t>(t)];
      types += (t ? ", " : "") + mlirType(s3);
    }
    std::string y = fresh();
    if (steps == 1)
      y = hs[0];
    else
      line(y + " = mpc.concat " + operands + " {axis = 0 : i64} : " + types);
    ys[static_cast<size_t>(d)] =
        reshapeOf(y, tt({steps, batch, hidden}), tt({steps, 1, batch, hidden}));
  }
  // Y [steps, dirs, batch, hidden]; Y_h and Y_c [dirs, batch, hidden].
  auto stack = [&](const std::vector<std::string> &parts,
                   const TensorType &part, int64_t axis) {
    if (parts.size() == 1)
      return parts[0];
    std::string out = fresh();
    line(out + " = mpc.concat " + parts[0] + ", " + parts[1] +
         " {axis = " + std::to_string(axis) + " : i64} : " + mlirType(part) +
         ", " + mlirType(part));
    return out;
  };
  auto lasts = [&](const std::vector<std::string> &v) {
    std::vector<std::string> out;
    for (const std::string &s1 : v)
      out.push_back(reshapeOf(s1, bh, s3));
    return stack(out, s3, 0);
  };
  std::vector<std::pair<std::string, TensorType>> results = {
      {stack(ys, tt({steps, 1, batch, hidden}), 1),
       tt({steps, dirs, batch, hidden})},
      {lasts(lastH), tt({dirs, batch, hidden})}};
  if (lstm)
    results.push_back({lasts(lastC), tt({dirs, batch, hidden})});
  if (batchFirst) { // Y [batch, steps, dirs, hidden], states [batch, dirs, ..]
    results[0] = {
        transposeOf(results[0].first, results[0].second, {2, 0, 1, 3}),
        tt({batch, steps, dirs, hidden})};
    for (size_t k = 1; k < results.size(); ++k)
      results[k] = {transposeOf(results[k].first, results[k].second, {1, 0, 2}),
                    tt({batch, dirs, hidden})};
  }
  for (size_t k = 0; k < node.outputs.size() && k < results.size(); ++k)
    if (!node.outputs[k].empty()) {
      TensorType declared;
      if (outputType(node, k, declared).empty() &&
          declared.dims != results[k].second.dims)
        return error(node, "the model gives output " + std::to_string(k) +
                               " the type " + mlirType(declared) + ", not " +
                               mlirType(results[k].second));
      define(node, k, results[k].first, results[k].second);
    }
  return "";
}

/// Trilu: the upper (or lower) triangle of the last two axes, from the
/// diagonal `k` (a constant input) on; the rest zero (false): a where of
/// a constant boolean mask broadcast over the leading axes (a constant
/// mask's Trilu is folded by foldInts). Not the data
/// times a 0/1 mask: a causal mask is torch.triu of -inf, and -inf times
/// 0 is NaN where Trilu gives 0.
std::string Emitter::trilu(const Node &node) {
  Value x;
  TensorType type;
  // A constant mask as data (it is folded unless it is a graph output);
  // integers are refused as input() refuses them.
  auto known = values.find(node.inputs.empty() ? "" : node.inputs[0]);
  bool constantMask = known != values.end() && known->second.constantInts &&
                      known->second.type.element == "bool";
  if (auto e = constantMask ? dataInput(node, 0, x) : input(node, 0, x);
      !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  size_t rank = x.type.dims.size();
  if (rank < 2 || type.dims != x.type.dims)
    return error(node, "takes data of rank 2 or more to its own type");
  int64_t k = 0;
  if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    std::vector<int64_t> ks;
    if (auto e = constInts(node, 1, ks); !e.empty())
      return e;
    if (ks.size() != 1)
      return error(node, "k must be one integer");
    k = ks[0];
  }
  bool upper = intAttr(node, "upper", 1) != 0;
  int64_t rows = x.type.dims[rank - 2], cols = x.type.dims[rank - 1];
  if (rows * cols > (int64_t(1) << 24))
    return error(node, "a mask of more than 2^24 elements is not imported");
  if (x.type.element != "bool" && x.type.element != "float" &&
      x.type.element != "double")
    return error(node, "takes f32, f64 or boolean data");
  // Element (i, j) is kept where j >= i + k (upper; j <= i + k lower): a
  // compare of the column indices [1, cols] with the rows' i + k [rows,
  // 1], k clamped to where the mask stops changing (i + k fits in i32).
  k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
  TensorType maskType{"bool", {rows, cols}, true};
  TensorType zeroType{x.type.element, {}, true};
  std::string mask = diagonalMask(rows, cols, k, upper ? "ge" : "le"), zero;
  // mpc.where selects floating-point values: a mask is cut as numbers
  // (1 and 0) and compared with 0 again.
  bool mask01 = x.type.element == "bool";
  std::string element = mask01 ? "float" : x.type.element;
  std::string data = mask01 ? maskAsNumbers(x.ssa, x.type, element) : x.ssa;
  TensorType dataType = x.type;
  dataType.element = zeroType.element = element;
  zero = floatConstant(0, element);
  std::string ssa = fresh();
  line(ssa + " = mpc.where " + mask + ", " + data + ", " + zero + " : " +
       mlirType(maskType) + ", " + mlirType(dataType) + ", " +
       mlirType(zeroType));
  if (mask01) {
    std::string kept = ssa;
    ssa = fresh();
    line(ssa + " = mpc.compare \"gt\", " + kept + ", " + zero + " : " +
         mlirType(dataType) + ", " + mlirType(zeroType));
  }
  return define(node, 0, ssa, type);
}

/// EyeLike: ones where the column is the row plus k, zeros elsewhere, in
/// the shape of its input (only the shape is read), up to 2^24 elements.
/// Integer and boolean eyes are compile-time values like other constant
/// masks; a float eye is a compare of column and row indices made
/// numbers, O(rows + cols) text.
std::string Emitter::eyeLike(const Node &node) {
  auto it = values.find(node.inputs.empty() ? "" : node.inputs[0]);
  if (it == values.end())
    return error(node, "input 0 is missing");
  const std::vector<int64_t> &dims = it->second.type.dims;
  if (dims.size() != 2 || dims[0] <= 0 || dims[1] <= 0)
    return error(node, "takes an input of rank 2 with static sizes, not " +
                           mlirType(it->second.type));
  TensorType type;
  if (auto e = outputType(node, 0, type, /*intData=*/true); !e.empty())
    return e;
  if (type.dims != dims)
    return error(node, "ONNX's shape inference gives the output the type " +
                           mlirType(type) + ", not the input's shape");
  int64_t rows = dims[0], cols = dims[1];
  int64_t k = std::clamp<int64_t>(intAttr(node, "k", 0), -rows, cols);
  if (rows > (int64_t(1) << 24) / cols)
    return error(node, "an eye of more than 2^24 elements is not imported");
  if (!isFloat(type.element)) {
    Value v;
    v.constantInts = true;
    v.type = type;
    if (type.element == "int32")
      v.type.element = "int64"; // a compile-time value, not i32 data
    v.ints.assign(static_cast<size_t>(rows * cols), 0);
    for (int64_t i = 0; i < rows; ++i)
      if (i + k >= 0 && i + k < cols)
        v.ints[static_cast<size_t>(i * cols + i + k)] = 1;
    values[node.outputs[0]] = v;
    return "";
  }
  TensorType maskType{"bool", dims, true};
  std::string mask = diagonalMask(rows, cols, k, "eq");
  return define(node, 0, maskAsNumbers(mask, maskType, type.element), type);
}

std::string Emitter::gatherElements(const Node &node) {
  Value x, index;
  if (auto e = input(node, 0, x); !e.empty())
    return e;
  if (x.type.element != "float" && x.type.element != "double" &&
      x.type.element != "float16" && x.type.element != "bfloat16")
    return error(node, "takes float data");
  auto known = values.find(node.inputs.size() > 1 ? node.inputs[1] : "");
  bool constant = known != values.end() && known->second.constantInts;
  std::vector<int64_t> ints =
      constant ? known->second.ints : std::vector<int64_t>{};
  if (auto e = dataInput(node, 1, index, "int32"); !e.empty())
    return e;
  if (index.type.element != "int32")
    return error(node, "takes indices that are constants or an integer "
                       "graph input");
  int64_t rank = static_cast<int64_t>(x.type.dims.size());
  int64_t axis = intAttr(node, "axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  if (axis < 0 || axis >= rank)
    return error(node, "the axis is out of range");
  if (static_cast<int64_t>(index.type.dims.size()) != rank)
    return error(node, "the indices " + mlirType(index.type) +
                           " must have the data's rank");
  const std::vector<int64_t> &dims = index.type.dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && dims[d] > x.type.dims[d])
      return error(node, "the indices " + mlirType(index.type) +
                             " are larger than the data " + mlirType(x.type) +
                             " along axis " + std::to_string(d));
  int64_t n = x.type.dims[axis];
  for (int64_t i : ints)
    if (i < -n || i >= n)
      return error(node, "index " + std::to_string(i) +
                             " is out of range for an axis of " +
                             std::to_string(n));
  // The mask is [..., m, n, ...]: the indices' elements times the axis.
  if (elementCount(index.type) > (int64_t(1) << 28) / n)
    return error(node, "a mask of more than 2^28 elements (the indices' "
                       "elements times the axis) is not imported");
  TensorType type;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  // The data cut to the indices' sizes on the other axes, a unit axis
  // before the gathered one; the indices with a unit axis after it; the
  // positions 0..n-1 (and -n..-1, ONNX's negative indices) along it.
  std::vector<int64_t> cut = dims;
  cut[axis] = n;
  std::string data = x.ssa;
  TensorType cutType = x.type;
  if (cut != x.type.dims) {
    cutType.dims = cut;
    data = sliceOf(x.ssa, x.type, std::vector<int64_t>(rank, 0), cut);
  }
  TensorType dataUp = cutType, indexUp = index.type, posType{"int32", {}, true};
  dataUp.dims.insert(dataUp.dims.begin() + axis, 1);
  indexUp.dims.insert(indexUp.dims.begin() + axis + 1, 1);
  posType.dims.assign(rank + 1, 1);
  posType.dims[axis + 1] = n;
  std::vector<std::string> pos, neg;
  for (int64_t k = 0; k < n; ++k) {
    pos.push_back(std::to_string(k));
    neg.push_back(std::to_string(k - n));
  }
  std::string posSsa = fresh(), negSsa = fresh(), hit = fresh(),
              hitNeg = fresh(), zero = floatConstant(0.0, x.type.element),
              fromEnd = fresh(), picked = fresh(), sum = fresh();
  std::string dataSsa = reshapeOf(data, cutType, dataUp),
              indexSsa = reshapeOf(index.ssa, index.type, indexUp);
  line(posSsa + " = mpc.constant dense<" + nested(pos, posType.dims) +
       "> : " + mlirType(posType));
  line(negSsa + " = mpc.constant dense<" + nested(neg, posType.dims) +
       "> : " + mlirType(posType));
  line(hit + " = mpc.compare \"eq\", " + indexSsa + ", " + posSsa + " : " +
       mlirType(indexUp) + ", " + mlirType(posType));
  line(hitNeg + " = mpc.compare \"eq\", " + indexSsa + ", " + negSsa + " : " +
       mlirType(indexUp) + ", " + mlirType(posType));
  TensorType wide = type, maskType{"bool", {}, true};
  wide.dims.insert(wide.dims.begin() + axis + 1, n);
  maskType.dims = wide.dims;
  std::string scalar = "tensor<" + mlirElement(x.type.element) + ">";
  line(fromEnd + " = mpc.where " + hitNeg + ", " + dataSsa + ", " + zero +
       " : " + mlirType(maskType) + ", " + mlirType(dataUp) + ", " + scalar);
  line(picked + " = mpc.where " + hit + ", " + dataSsa + ", " + fromEnd +
       " : " + mlirType(maskType) + ", " + mlirType(dataUp) + ", " +
       mlirType(wide));
  line(sum + " = mpc.reduce_sum " + picked + " {dims = array<i64: " +
       std::to_string(axis + 1) + ">} : " + mlirType(wide));
  return define(node, 0, sum, type);
}

std::string Emitter::depthSpace(const Node &node, bool toSpace) {
  Value x;
  if (auto e = input(node, 0, x); !e.empty())
    return e;
  if (x.type.dims.size() != 4)
    return error(node, "takes [N, C, H, W] data");
  int64_t b = intAttr(node, "blocksize", 0);
  if (b < 1 || b > (int64_t(1) << 16))
    return error(node, "blocksize must be given, from 1 to 65536 (got " +
                           std::to_string(b) + ")");
  auto modeAttr = node.attributes.find("mode");
  std::string mode =
      modeAttr == node.attributes.end() ? "DCR" : modeAttr->second.s;
  if (toSpace && mode != "DCR" && mode != "CRD")
    return error(node, "mode " + mode + " is not one of DCR and CRD");
  int64_t n = x.type.dims[0], c = x.type.dims[1], h = x.type.dims[2],
          w = x.type.dims[3], hb, wb, cbb;
  if (__builtin_mul_overflow(h, b * b, &hb) ||
      __builtin_mul_overflow(w, b * b, &wb) ||
      __builtin_mul_overflow(c, b * b, &cbb))
    return error(node, "the output's dimensions overflow 64 bits");
  if (toSpace ? c % (b * b) != 0 : h % b != 0 || w % b != 0)
    return error(node, toSpace ? "the channels (" + std::to_string(c) +
                                     ") are not a multiple of blocksize^2"
                               : "the height and width (" + std::to_string(h) +
                                     ", " + std::to_string(w) +
                                     ") are not multiples of blocksize");
  // Checked before the output's type, which ONNX's inference gives with
  // the sizes rounded down (0 channels for 3 by blocks of 2).
  TensorType type;
  if (auto e = outputType(node, 0, type, x.type.element == "int32"); !e.empty())
    return e;
  std::vector<int64_t> want =
      toSpace ? std::vector<int64_t>{n, c / (b * b), h * b, w * b}
              : std::vector<int64_t>{n, c * b * b, h / b, w / b};
  if (type.dims != want)
    return error(node, "the model gives the output the type " + mlirType(type) +
                           ", not " +
                           mlirType(TensorType{type.element, want, true}));
  // Channels last, [N, H, W, C]: DCR splits the channels as (b1, b2, c),
  // CRD as (c, b1, b2); both put b1 after H and b2 after W. SpaceToDepth
  // splits H and W and gathers (b1, b2, c) as DCR's channels.
  TensorType nhwc;
  std::string v = toNHWC(x, nhwc);
  TensorType split = nhwc, moved = nhwc, out = nhwc;
  std::vector<int64_t> perm;
  if (toSpace) {
    int64_t k = c / (b * b);
    split.dims = mode == "DCR" ? std::vector<int64_t>{n, h, w, b, b, k}
                               : std::vector<int64_t>{n, h, w, k, b, b};
    perm = mode == "DCR" ? std::vector<int64_t>{0, 1, 3, 2, 4, 5}
                         : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
    moved.dims = {n, h, b, w, b, k};
    out.dims = {n, h * b, w * b, k};
  } else {
    split.dims = {n, h / b, b, w / b, b, c};
    perm = {0, 1, 3, 2, 4, 5};
    moved.dims = {n, h / b, w / b, b, b, c};
    out.dims = {n, h / b, w / b, c * b * b};
  }
  std::string t = transposeOf(reshapeOf(v, nhwc, split), split, perm);
  return define(node, 0, toNCHW(reshapeOf(t, moved, out), out), type);
}

/// Tile by constant repeats: per axis, the copies joined by one concat
/// (autodiff sums the copies' gradients).
std::string Emitter::tile(const Node &node) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type, /*moves=*/true); !e.empty())
    return e;
  std::vector<int64_t> repeats;
  if (auto e = constInts(node, 1, repeats); !e.empty())
    return e;
  size_t rank = x.type.dims.size();
  if (repeats.size() != rank)
    return error(node, "repeats must give every axis");
  std::vector<int64_t> dims = x.type.dims;
  for (size_t d = 0; d < rank; ++d) {
    if (repeats[d] < 1 || repeats[d] > kReflectLimit)
      return error(node, "repeats must be between 1 and " +
                             std::to_string(kReflectLimit));
    dims[d] *= repeats[d];
  }
  if (dims != type.dims)
    return error(node, "the model gives the output the type " + mlirType(type) +
                           ", not the tiled input's");
  Value y = x;
  for (size_t d = 0; d < rank; ++d) {
    if (repeats[d] == 1)
      continue;
    std::string operands, types;
    for (int64_t r = 0; r < repeats[d]; ++r) {
      operands += (r ? ", " : "") + y.ssa;
      types += (r ? ", " : "") + mlirType(y.type);
    }
    std::string ssa = fresh();
    line(ssa + " = mpc.concat " + operands + " {axis = " + std::to_string(d) +
         " : i64} : " + types);
    y.type.dims[d] *= repeats[d];
    y.ssa = ssa;
  }
  return define(node, 0, y.ssa, type);
}

/// CumSum along a constant axis: a product with a constant triangular 0/1
/// matrix (exclusive and reverse choose the triangle), kept in f32 at every
/// AMP level (PyTorch's autocast runs cumsum in f32).
std::string Emitter::cumSum(const Node &node) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type); !e.empty())
    return e;
  if (x.type.element != "float" && x.type.element != "double")
    return error(node, "takes f32 or f64 data");
  std::vector<int64_t> axes;
  if (auto e = constInts(node, 1, axes); !e.empty())
    return e;
  int64_t rank = static_cast<int64_t>(x.type.dims.size());
  if (axes.size() != 1 || axes[0] < -rank || axes[0] >= rank)
    return error(node, "axis must be one integer within the data's rank");
  int64_t axis = axes[0] < 0 ? axes[0] + rank : axes[0];
  int64_t n = x.type.dims[axis];
  if (n * n > (int64_t(1) << 24))
    return error(node, "an axis of " + std::to_string(n) +
                           " (a matrix of over 2^24 weights) is not imported");
  bool exclusive = intAttr(node, "exclusive", 0) != 0,
       reverse = intAttr(node, "reverse", 0) != 0;
  // y[j] = sum over i of x[i] * m[i][j]: i <= j (i < j exclusive), or
  // i >= j reversed.
  std::vector<double> m(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      bool in =
          reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
      m[static_cast<size_t>(i * n + j)] = in ? 1.0 : 0.0;
    }
  TensorType mt{x.type.element, {n, n}, true};
  std::string matrix = denseConstant(m, mt);
  // The axis last, the product, the axis back.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  std::vector<int64_t> back(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d)
    back[static_cast<size_t>(perm[static_cast<size_t>(d)])] = d;
  bool last = axis == rank - 1;
  TensorType moved = x.type;
  for (int64_t d = 0; d < rank; ++d)
    moved.dims[static_cast<size_t>(d)] =
        x.type.dims[static_cast<size_t>(perm[static_cast<size_t>(d)])];
  std::string in = last ? x.ssa : transposeOf(x.ssa, x.type, perm);
  TensorType in2 = moved;
  if (rank == 1)
    in2.dims = {1, n};
  std::string flat = reshapeOf(in, moved, in2);
  std::string product = fresh();
  line(product + " = mpc.matmul " + flat + ", " + matrix +
       " {mpc.precision = \"fp32\"} : " + mlirType(in2) + ", " + mlirType(mt));
  std::string y = reshapeOf(product, in2, moved);
  if (!last)
    y = transposeOf(y, moved, back);
  return define(node, 0, y, type);
}

/// Einsum of one or two operands as transposes, sums, reshapes and one
/// batched mpc.matmul: the labels both operands and the output share are
/// the batch, those both share and the output drops are summed by the
/// product, the others are rows (first operand) and columns (second); a
/// label one operand alone has and the output drops is summed first. A
/// label repeated in one operand (a diagonal) is refused.
std::string Emitter::einsum(const Node &node) {
  // ONNX's inference gives an Einsum its rank only: the dims come from the
  // equation, checked against a type the model declares.
  TensorType declared, type;
  bool haveDeclared = outputType(node, 0, declared).empty();
  auto eq = node.attributes.find("equation");
  if (eq == node.attributes.end() || eq->second.kind != Attribute::String)
    return error(node, "the equation attribute is missing");
  std::string equation;
  for (char c : eq->second.s)
    if (c != ' ')
      equation += c;
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != node.inputs.size() || terms.empty() || terms.size() > 2)
    return error(node, "equation '" + eq->second.s +
                           "': one or two operands are imported, each "
                           "with its term");
  std::vector<Value> xs(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    if (auto e = input(node, i, xs[i]); !e.empty())
      return e;
    if (!isFloat(xs[i].type.element) ||
        xs[i].type.element != xs[0].type.element)
      return error(node, "the operands must be floating-point of one type");
  }
  type.element = xs[0].type.element;
  type.hasShape = true;
  // Labels: letters, and "..." as labels of their own (digits), the same
  // for every operand (equal sizes; no broadcasting of them).
  int64_t ellipsisRank = -1;
  auto expand = [&](const std::string &term, int64_t rank,
                    std::string &out) -> std::string {
    size_t dots = term.find("...");
    int64_t letters =
        static_cast<int64_t>(term.size()) - (dots == std::string::npos ? 0 : 3);
    if (dots == std::string::npos) {
      if (letters != rank)
        return "term '" + term + "' has " + std::to_string(letters) +
               " labels for an operand of rank " + std::to_string(rank);
      out = term;
    } else {
      int64_t k = rank - letters;
      if (k < 0 || (ellipsisRank >= 0 && k != ellipsisRank) || k > 10)
        return "the ellipsis of term '" + term + "' covers " +
               std::to_string(k) + " dimensions";
      ellipsisRank = k;
      out = term.substr(0, dots);
      for (int64_t d = 0; d < k; ++d)
        out += static_cast<char>('0' + d);
      out += term.substr(dots + 3);
    }
    for (char c : out)
      if (!std::isalpha(static_cast<unsigned char>(c)) &&
          !std::isdigit(static_cast<unsigned char>(c)))
        return "term '" + term + "' has the label '" + std::string(1, c) + "'";
    for (size_t a = 0; a < out.size(); ++a)
      if (out.find(out[a], a + 1) != std::string::npos)
        return "term '" + term + "' repeats '" + std::string(1, out[a]) +
               "' (a diagonal), which is not imported";
    return "";
  };
  std::vector<std::string> labels(terms.size());
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (auto e = expand(terms[i], int64_t(xs[i].type.dims.size()), labels[i]);
        !e.empty())
      return error(node, e);
    for (size_t d = 0; d < labels[i].size(); ++d) {
      auto [it, fresh] = size.emplace(labels[i][d], xs[i].type.dims[d]);
      if (!fresh && it->second != xs[i].type.dims[d])
        return error(node, "label '" + std::string(1, labels[i][d]) +
                               "' has sizes " + std::to_string(it->second) +
                               " and " + std::to_string(xs[i].type.dims[d]));
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    // The output's rank: its letters, plus the ellipsis's.
    std::string term = equation.substr(arrow + 2);
    bool dots = term.find("...") != std::string::npos;
    int64_t rank = static_cast<int64_t>(term.size()) -
                   (dots ? 3 - std::max<int64_t>(ellipsisRank, 0) : 0);
    if (auto e = expand(term, rank, out); !e.empty())
      return error(node, e);
  } else { // implicit: the ellipsis, then the labels seen once, sorted
    for (int64_t d = 0; d < std::max<int64_t>(ellipsisRank, 0); ++d)
      out += static_cast<char>('0' + d);
    std::string once;
    for (auto [c, n] : size) {
      int64_t seen = 0;
      for (const std::string &l : labels)
        seen += std::count(l.begin(), l.end(), c);
      if (std::isalpha(static_cast<unsigned char>(c)) && seen == 1)
        once += c;
    }
    out += once;
  }
  for (char c : out)
    if (!size.count(c))
      return error(node, "the output's label '" + std::string(1, c) +
                             "' is no operand's");
  for (char c : out)
    type.dims.push_back(size[c]);
  if (haveDeclared && declared.dims != type.dims)
    return error(node, "the model gives the output the type " +
                           mlirType(declared) + ", not the equation's " +
                           mlirType(type));

  auto typeOf = [&](const std::string &l) {
    TensorType t{type.element, {}, true};
    for (char c : l)
      t.dims.push_back(size[c]);
    return t;
  };
  // Sums an operand over its labels in neither `keep` set.
  auto sumAway = [&](Value &x, std::string &l, const std::string &keep) {
    std::vector<int64_t> dims;
    std::string kept;
    for (size_t d = 0; d < l.size(); ++d)
      if (keep.find(l[d]) == std::string::npos)
        dims.push_back(int64_t(d));
      else
        kept += l[d];
    if (dims.empty())
      return;
    std::string r = fresh();
    line(r + " = mpc.reduce_sum " + x.ssa +
         " {dims = array<i64: " + join(dims) + ">} : " + mlirType(x.type));
    x = Value{r, typeOf(kept), {}, false};
    l = kept;
  };
  // Permutes an operand to `order`; reshapes to `dims`.
  auto arrange = [&](Value x, const std::string &l, const std::string &order) {
    std::vector<int64_t> perm;
    for (char c : order)
      perm.push_back(int64_t(l.find(c)));
    bool identity = true;
    for (size_t d = 0; d < perm.size(); ++d)
      identity &= perm[d] == int64_t(d);
    if (!identity)
      x = Value{transposeOf(x.ssa, x.type, perm), typeOf(order), {}, false};
    return x;
  };
  auto reshape = [&](const Value &x, const TensorType &to) {
    return Value{reshapeOf(x.ssa, x.type, to), to, {}, false};
  };
  auto product = [&](const std::string &l) {
    int64_t n = 1;
    for (char c : l)
      n *= size[c];
    return n;
  };

  if (xs.size() == 1) {
    Value x = xs[0];
    std::string l = labels[0];
    sumAway(x, l, out);
    x = arrange(x, l, out);
    return define(node, 0, reshape(x, type).ssa, type);
  }
  Value a = xs[0], b = xs[1];
  std::string la = labels[0], lb = labels[1];
  sumAway(a, la, out + lb);
  sumAway(b, lb, out + la);
  std::string batch, contracted, rows, cols;
  for (char c : la)
    (lb.find(c) != std::string::npos
         ? (out.find(c) != std::string::npos ? batch : contracted)
         : rows) += c;
  for (char c : lb)
    if (la.find(c) == std::string::npos)
      cols += c;
  int64_t bt = product(batch), m = product(rows), k = product(contracted),
          n = product(cols);
  auto shape3 = [&](int64_t x, int64_t y) {
    TensorType t{type.element, {}, true};
    if (!batch.empty())
      t.dims.push_back(bt);
    t.dims.push_back(x);
    t.dims.push_back(y);
    return t;
  };
  a = reshape(arrange(a, la, batch + rows + contracted), shape3(m, k));
  b = reshape(arrange(b, lb, batch + contracted + cols), shape3(k, n));
  std::string r = fresh();
  line(r + " = mpc.matmul " + a.ssa + ", " + b.ssa + " : " + mlirType(a.type) +
       ", " + mlirType(b.type));
  std::string order = batch + rows + cols;
  Value y = reshape(Value{r, shape3(m, n), {}, false}, typeOf(order));
  y = arrange(y, order, out);
  return define(node, 0, reshape(y, type).ssa, type);
}

std::string Emitter::variadic(const Node &node) {
  // Max, Min, Sum and Mean of one or more inputs, broadcast together:
  // where(a >= b, a, b) for Max (a tie's gradient goes to the first input;
  // PyTorch's maximum splits it in halves), a chain of adds for Sum.
  TensorType type;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  const std::string &op = node.opType;
  std::vector<Value> xs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    Value v;
    if (auto e = input(node, i, v); !e.empty())
      return e;
    if (!isFloat(v.type.element) || v.type.element != type.element ||
        !broadcastsTo(v.type.dims, type.dims))
      return error(node, "input " + std::to_string(i) + " " + mlirType(v.type) +
                             " does not broadcast to " + mlirType(type));
    xs.push_back(v);
  }
  if (xs.empty())
    return error(node, "takes at least one input");
  Value acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    std::vector<int64_t> dims = *broadcastShape(acc.type.dims, xs[i].type.dims);
    TensorType out{type.element, dims, true}, mask{"bool", dims, true};
    std::string r = fresh();
    if (op == "Sum" || op == "Mean") {
      line(r + " = mpc.add " + acc.ssa + ", " + xs[i].ssa + " : " +
           mlirType(acc.type) + ", " + mlirType(xs[i].type));
    } else {
      std::string m = fresh();
      line(m + " = mpc.compare " + quoted(op == "Max" ? "ge" : "le") + ", " +
           acc.ssa + ", " + xs[i].ssa + " : " + mlirType(acc.type) + ", " +
           mlirType(xs[i].type));
      line(r + " = mpc.where " + m + ", " + acc.ssa + ", " + xs[i].ssa + " : " +
           mlirType(mask) + ", " + mlirType(acc.type) + ", " +
           mlirType(xs[i].type));
    }
    acc = Value{r, out, {}, false};
  }
  if (op == "Mean" && xs.size() > 1) {
    std::string r = fresh();
    line(r + " = mpc.div " + acc.ssa + ", " +
         floatConstant(double(xs.size()), type.element) + " : " +
         mlirType(acc.type) + ", tensor<" + mlirElement(type.element) + ">");
    acc.ssa = r;
  }
  if (acc.type.dims != type.dims) {
    std::string r = fresh();
    line(r + " = mpc.broadcast_to " + acc.ssa + " : " + mlirType(acc.type) +
         " -> " + mlirType(type));
    acc = Value{r, type, {}, false};
  }
  return define(node, 0, acc.ssa, type);
}

std::string Emitter::expand(const Node &node) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type); !e.empty())
    return e;
  if (!broadcastsTo(x.type.dims, type.dims) ||
      mlirElement(x.type.element) != mlirElement(type.element))
    return error(node,
                 mlirType(x.type) + " does not broadcast to " + mlirType(type));
  if (x.type.dims == type.dims)
    return identity(node);
  std::string ssa = fresh();
  line(ssa + " = mpc.broadcast_to " + x.ssa + " : " + mlirType(x.type) +
       " -> " + mlirType(type));
  return define(node, 0, ssa, type);
}

std::string Emitter::pad(const Node &node) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type); !e.empty())
    return e;
  auto modeAttr = node.attributes.find("mode");
  std::string mode =
      modeAttr == node.attributes.end() ? "constant" : modeAttr->second.s;
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    return error(node, "mode " + mode +
                           " is not imported (constant, edge and reflect are)");
  int64_t rank = static_cast<int64_t>(x.type.dims.size());
  std::vector<int64_t> pads;
  if (auto e = constInts(node, 1, pads); !e.empty())
    return e;
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return error(node, "pads must give a start and an end for each of the " +
                           std::to_string(rank) + " axes");
  double value = 0;
  if (mode == "constant" && node.inputs.size() > 2 && !node.inputs[2].empty()) {
    // A constant of the model: an initializer, a Constant node's value, or
    // (a test case) an input's data.
    const TensorValue *found = constantOrTestInput(node.inputs[2]);
    std::optional<double> v = floatScalar(found);
    if (!v || mlirElement(found->type.element) != mlirElement(type.element))
      return error(node, "the padding value must be a constant f32 or f64 "
                         "scalar of the data's type");
    value = *v;
  }
  std::vector<int64_t> grown = x.type.dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (pads[d] < 0 || pads[rank + d] < 0 || pads[d] > kWindowLimit ||
        pads[rank + d] > kWindowLimit)
      return error(node, "pads must be between 0 and 2^20 (negative pads, "
                         "a crop, are not imported)");
    int64_t n = x.type.dims[d];
    if (mode == "edge" && n == 0 && (pads[d] > 0 || pads[rank + d] > 0))
      return error(node, "edge padding of the empty axis " + std::to_string(d));
    // Each reflected row is a slice of its own: bounded, as ONNX bounds
    // them by the axis.
    if (mode == "reflect" &&
        (std::max(pads[d], pads[rank + d]) >= n ||
         std::max(pads[d], pads[rank + d]) > kReflectLimit))
      return error(node, "reflect pads of axis " + std::to_string(d) +
                             " must be smaller than its size " +
                             std::to_string(n) + " and at most " +
                             std::to_string(kReflectLimit));
    grown[d] += pads[d] + pads[rank + d];
  }
  if (grown != type.dims)
    return error(node, "the model gives the output the type " + mlirType(type) +
                           ", not the padded input's");
  // Axis by axis, as numpy.pad (ONNX's reference) does: an axis padded
  // later pads the rows earlier axes added too (the corners).
  std::string out = x.ssa;
  TensorType current = x.type;
  for (int64_t d = 0; d < rank; ++d) {
    if (pads[d] == 0 && pads[rank + d] == 0)
      continue;
    int64_t n = current.dims[d];
    TensorType row = current;
    row.dims[d] = 1;
    // Row `i` of axis d of the tensor padded so far.
    auto rowAt = [&](int64_t i) {
      std::vector<int64_t> offsets(rank, 0), sizes = row.dims;
      offsets[d] = i;
      return sliceOf(out, current, offsets, sizes);
    };
    // The rows added before (true) or after (false) the axis.
    using Part = std::pair<std::string, TensorType>;
    auto padding = [&](bool before) {
      std::vector<Part> parts;
      int64_t count = before ? pads[d] : pads[rank + d];
      if (count == 0)
        return parts;
      TensorType slab = current;
      slab.dims[d] = count;
      if (mode == "constant") {
        std::string ssa = fresh();
        line(ssa + " = mpc.constant dense<" + floatLiteral(value) +
             "> : " + mlirType(slab));
        parts.push_back({ssa, slab});
      } else if (mode == "edge") {
        std::string ssa = rowAt(before ? 0 : n - 1);
        if (count > 1) {
          std::string edge = ssa;
          ssa = fresh();
          line(ssa + " = mpc.broadcast_to " + edge + " : " + mlirType(row) +
               " -> " + mlirType(slab));
        }
        parts.push_back({ssa, count > 1 ? slab : row});
      } else { // reflect: rows count..1 before, n-2..n-1-count after
        for (int64_t k = 0; k < count; ++k)
          parts.push_back({rowAt(before ? count - k : n - 2 - k), row});
      }
      return parts;
    };
    std::vector<Part> parts = padding(true);
    parts.push_back({out, current});
    for (Part &p : padding(false))
      parts.push_back(p);
    std::string next = fresh(), operands, types;
    for (auto &[ssa, t] : parts) {
      operands += (operands.empty() ? "" : ", ") + ssa;
      types += (types.empty() ? "" : ", ") + mlirType(t);
    }
    line(next + " = mpc.concat " + operands + " {axis = " + std::to_string(d) +
         " : i64} : " + types);
    current.dims[d] += pads[d] + pads[rank + d];
    out = next;
  }
  return define(node, 0, out, type);
}

std::string Emitter::softmax(const Node &node, const std::string &op) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type); !e.empty())
    return e;
  int64_t rank = static_cast<int64_t>(x.type.dims.size());
  int64_t axis = intAttr(node, "axis", -1);
  if (axis < -rank || axis >= rank)
    return error(node, "axis " + std::to_string(axis) + " is out of range");
  axis = axis < 0 ? axis + rank : axis;
  if (axis == rank - 1) {
    std::string ssa = fresh();
    line(ssa + " = mpc." + op + " " + x.ssa +
         " {axis = -1 : i64} : " + mlirType(x.type));
    return define(node, 0, ssa, type);
  }
  // mpc normalises along the last axis: swap the axis there and back.
  std::vector<int64_t> perm(rank);
  for (int64_t d = 0; d < rank; ++d)
    perm[d] = d;
  std::swap(perm[axis], perm[rank - 1]);
  TensorType swapped = x.type;
  std::swap(swapped.dims[axis], swapped.dims[rank - 1]);
  std::string in = transposeOf(x.ssa, x.type, perm), norm = fresh();
  line(norm + " = mpc." + op + " " + in +
       " {axis = -1 : i64} : " + mlirType(swapped));
  return define(node, 0, transposeOf(norm, swapped, perm), type);
}

std::string Emitter::dropout(const Node &node) {
  // Opset 13: Dropout(data, ratio?, training_mode?). Without a constant
  // training_mode of true it is the identity, as in inference.
  Value x;
  if (auto e = input(node, 0, x); !e.empty())
    return e;
  bool training = false;
  double ratio = 0.5;
  if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    // A constant of the model (PyTorch exports the probability as a
    // Constant node); data would be a run-time probability.
    std::optional<double> r = floatScalar(constantTensor(node.inputs[1]));
    if (!r)
      return error(node, "a ratio given as an input is not imported (mpc's "
                         "dropout probability is a compile-time attribute: "
                         "give it as a constant f32 or f64 scalar)");
    ratio = *r;
    if (!(ratio >= 0 && ratio < 1))
      return error(node, "ratio " + floatLiteral(ratio) + " is not in [0, 1)");
  }
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    auto it = values.find(node.inputs[2]);
    if (it == values.end() || !it->second.constantInts ||
        it->second.ints.size() != 1)
      return error(node, "training_mode must be a constant");
    training = it->second.ints[0] != 0;
  }
  if (!training) {
    values[node.outputs[0]] = x;
    return "";
  }
  std::string ssa = fresh();
  line(ssa + ", " + ssa + "_mask = mpc.dropout " + x.ssa + " {p = " +
       floatLiteral(ratio) + " : f64, seed = " + std::to_string(next) +
       " : i64} : " + mlirType(x.type));
  return define(node, 0, ssa, x.type);
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// The dimension a product of `a` and `b` sums over must be one (ONNX's
/// inference does not check it where the model declares the output).
std::string Emitter::contracting(const Node &node, const Value &a,
                                 const Value &b, bool ta, bool tb) {
  size_t ra = a.type.dims.size(), rb = b.type.dims.size();
  int64_t ka = a.type.dims[ta ? ra - 2 : ra - 1];
  int64_t kb = b.type.dims[tb ? rb - 1 : rb - 2];
  if (ka != kb)
    return error(node, "multiplies " + mlirType(a.type) +
                           (ta ? " (transposed)" : "") + " by " +
                           mlirType(b.type) + (tb ? " (transposed)" : "") +
                           ": the summed dimensions are " + std::to_string(ka) +
                           " and " + std::to_string(kb));
  return "";
}

std::string Emitter::matmul(const Node &node) {
  Value a, b;
  TensorType type;
  if (auto e = input(node, 0, a); !e.empty())
    return e;
  if (auto e = input(node, 1, b); !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  if (a.type.dims.empty() || b.type.dims.empty())
    return error(node, "scalar operands are not imported (MatMul takes "
                       "vectors, matrices or stacks of them)");
  // NumPy's rule for vectors (torch.matmul): a 1-D left operand [K] is
  // the row [1, K], a 1-D right operand [K] the column [K, 1], and the
  // product's unit dimension is dropped again (the result's type, which
  // the final reshape gives).
  Value a2 = a, b2 = b;
  if (a.type.dims.size() == 1) {
    a2.type.dims = {1, a.type.dims[0]};
    a2.ssa = reshapeOf(a.ssa, a.type, a2.type);
  }
  if (b.type.dims.size() == 1) {
    b2.type.dims = {b.type.dims[0], 1};
    b2.ssa = reshapeOf(b.ssa, b.type, b2.type);
  }
  if (auto e = contracting(node, a2, b2, false, false); !e.empty())
    return e;
  // The product's type: the batch dimensions broadcast, then M and N.
  const std::vector<int64_t> &da = a2.type.dims, &db = b2.type.dims;
  auto batch =
      broadcastShape({da.begin(), da.end() - 2}, {db.begin(), db.end() - 2});
  if (!batch)
    return error(node, "the batch dimensions of " + mlirType(a.type) + " and " +
                           mlirType(b.type) + " do not broadcast");
  TensorType product = type;
  product.dims = *batch;
  product.dims.push_back(da[da.size() - 2]);
  product.dims.push_back(db.back());
  if (elementCount(product) != elementCount(type))
    return error(node, "the model gives the product of " + mlirType(a.type) +
                           " and " + mlirType(b.type) + " the type " +
                           mlirType(type));
  std::string ssa = fresh();
  line(ssa + " = mpc.matmul " + a2.ssa + ", " + b2.ssa + " : " +
       mlirType(a2.type) + ", " + mlirType(b2.type));
  return define(node, 0, reshapeOf(ssa, product, type), type);
}

std::string Emitter::gemm(const Node &node) {
  Value a, b;
  TensorType type;
  if (auto e = input(node, 0, a); !e.empty())
    return e;
  if (auto e = input(node, 1, b); !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  bool ta = intAttr(node, "transA", 0), tb = intAttr(node, "transB", 0);
  if (a.type.dims.size() != 2 || b.type.dims.size() != 2)
    return error(node, "Gemm takes matrices; its operands are " +
                           mlirType(a.type) + " and " + mlirType(b.type));
  if (auto e = contracting(node, a, b, ta, tb); !e.empty())
    return e;
  double alpha = floatAttr(node, "alpha", 1), beta = floatAttr(node, "beta", 1);
  std::string attrs;
  if (ta || tb)
    attrs = std::string(" {") + (ta ? "transpose_a" : "") +
            (ta && tb ? ", " : "") + (tb ? "transpose_b" : "") + "}";
  std::string ssa = fresh();
  line(ssa + " = mpc.matmul " + a.ssa + ", " + b.ssa + attrs + " : " +
       mlirType(a.type) + ", " + mlirType(b.type));
  std::string result = mlirType(type);
  if (alpha != 1) {
    std::string k = floatConstant(alpha, type.element), scaled = fresh();
    line(scaled + " = mpc.mul " + ssa + ", " + k + " : " + result +
         ", tensor<" + mlirElement(type.element) + ">");
    ssa = scaled;
  }
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    Value c;
    if (auto e = input(node, 2, c); !e.empty())
      return e;
    if (!broadcastsTo(c.type.dims, type.dims))
      return error(node, "the bias " + mlirType(c.type) +
                             " does not broadcast to the product's " +
                             mlirType(type));
    std::string cssa = c.ssa;
    if (beta != 1) {
      std::string k = floatConstant(beta, type.element);
      cssa = fresh();
      line(cssa + " = mpc.mul " + c.ssa + ", " + k + " : " + mlirType(c.type) +
           ", tensor<" + mlirElement(type.element) + ">");
    }
    std::string sum = fresh();
    line(sum + " = mpc.add " + ssa + ", " + cssa + " : " + result + ", " +
         mlirType(c.type));
    ssa = sum;
  }
  return define(node, 0, ssa, type);
}

//===----------------------------------------------------------------------===//
// Shapes and constants
//===----------------------------------------------------------------------===//

/// Reshape and Flatten: the result's shape is ONNX's inferred one.
std::string Emitter::reshapeTo(const Node &node) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type, /*moves=*/true); !e.empty())
    return e;
  // ONNX's inference keeps a type the model declares where it cannot
  // compute one (a shape or axes given as graph inputs): it must still
  // hold the input's elements.
  if (elementCount(x.type) != elementCount(type) ||
      mlirElement(x.type.element) != mlirElement(type.element))
    return error(node, "the model gives output '" + node.outputs[0] +
                           "' the type " + mlirType(type) + ", and input '" +
                           node.inputs[0] + "' is " + mlirType(x.type) +
                           ": not a reshape of it");
  // GroupNorm's view and back, between layout ops: the NHWC values' own
  // views ([N, H, W, C] <-> [N, H W, G, C/G]), no transpose.
  const std::vector<int64_t> &from = x.type.dims, &to = type.dims;
  if (auto it = groupedOf.find(x.ssa);
      it != groupedOf.end() && to.size() == 4) {
    const auto &[grouped, groupedType] = it->second;
    const std::vector<int64_t> &g = groupedType.dims;
    if (to[0] == g[0] && to[1] == g[2] * g[3] && to[2] * to[3] == g[1]) {
      TensorType nhwc = type;
      nhwc.dims = channelsLastDims(to);
      return define(node, 0,
                    toNCHW(reshapeOf(grouped, groupedType, nhwc), nhwc), type);
    }
  }
  std::string ssa = fresh();
  line(ssa + " = mpc.reshape " + x.ssa + " : " + mlirType(x.type) + " -> " +
       mlirType(type));
  if (auto it = nhwcOf.find(x.ssa); it != nhwcOf.end() && from.size() == 4 &&
                                    to.size() == 3 && to[0] == from[0] &&
                                    to[1] > 0 && from[1] % to[1] == 0) {
    TensorType grouped = type;
    grouped.dims = {from[0], from[2] * from[3], to[1], from[1] / to[1]};
    groupedOf[ssa] = {reshapeOf(it->second.first, it->second.second, grouped),
                      grouped};
  }
  return define(node, 0, ssa, type);
}

std::string Emitter::transpose(const Node &node) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type, /*moves=*/true); !e.empty())
    return e;
  std::vector<int64_t> perm;
  auto it = node.attributes.find("perm");
  if (it != node.attributes.end())
    perm = it->second.ints;
  else
    for (size_t d = x.type.dims.size(); d-- > 0;)
      perm.push_back(static_cast<int64_t>(d));
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t d = 0; d < sorted.size(); ++d)
    if (sorted.size() != x.type.dims.size() ||
        sorted[d] != static_cast<int64_t>(d))
      return error(node, "perm is not a permutation of the input's " +
                             std::to_string(x.type.dims.size()) +
                             " dimensions");
  std::vector<int64_t> permuted;
  for (int64_t d : perm)
    permuted.push_back(x.type.dims[d]);
  if (permuted != type.dims)
    return error(node, "the model gives the output the type " + mlirType(type) +
                           ", not the permuted input's");
  return define(node, 0, transposeOf(x.ssa, x.type, perm), type);
}

std::string Emitter::identity(const Node &node) {
  Value x;
  if (auto e = input(node, 0, x); !e.empty())
    return e;
  values[node.outputs[0]] = x;
  return "";
}

std::string Emitter::constant(const Node &node) {
  auto it = node.attributes.find("value");
  if (it == node.attributes.end() || it->second.kind != Attribute::Tensor)
    return error(node, "only a 'value' tensor is imported");
  const TensorValue &t = it->second.tensor;
  Value v;
  v.type = t.type;
  if (t.type.element == "int64" || t.type.element == "int32" ||
      t.type.element == "bool") { // folded (training_mode, masks of shapes)
    v.constantInts = true;
    v.ints = intsOf(t);
  } else if (!isFloat(t.type.element)) {
    return error(node, "a constant of element type " + t.type.element +
                           " is not imported");
  }
  if (isFloat(t.type.element) && elementCount(t.type) > 0) { // not an
    // empty optional input (Resize's roi)
    v.ssa = fresh();
    line(v.ssa + " = mpc.constant dense<\"" + hexOf(t.bytes) +
         "\"> : " + mlirType(t.type));
  }
  values[node.outputs[0]] = v;
  return "";
}

std::string Emitter::constInts(const Node &node, size_t i,
                               std::vector<int64_t> &out) {
  if (i >= node.inputs.size() || node.inputs[i].empty())
    return error(node, "input " + std::to_string(i) + " is missing");
  auto it = values.find(node.inputs[i]);
  if (it == values.end() || !it->second.constantInts)
    return error(node, "input '" + node.inputs[i] +
                           "' must be a constant (an initializer or a "
                           "Constant)");
  out = it->second.ints;
  return "";
}

//===----------------------------------------------------------------------===//
// Normalisation, embedding, reductions
//===----------------------------------------------------------------------===//

std::string Emitter::layerNorm(const Node &node) {
  Value x, g, b;
  TensorType type;
  if (auto e = input(node, 0, x); !e.empty())
    return e;
  if (auto e = input(node, 1, g); !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  int64_t rank = static_cast<int64_t>(x.type.dims.size());
  int64_t axis = intAttr(node, "axis", -1);
  if (axis < -rank || axis >= rank)
    return error(node, "axis " + std::to_string(axis) + " is out of range");
  axis = axis < 0 ? axis + rank : axis;
  double epsilon = floatAttr(node, "epsilon", 1e-5);
  if (!(epsilon > 0) || !std::isfinite(epsilon))
    return error(node, "epsilon must be positive and finite, not " +
                           floatLiteral(epsilon));
  // mpc normalises the last axis: over several trailing axes, x is viewed
  // as [rows, cols] and the parameters as [cols].
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? rows : cols) *= x.type.dims[d];
  if (type.dims != x.type.dims)
    return error(node, "the model gives the output the type " + mlirType(type) +
                           " for an input of " + mlirType(x.type));
  std::vector<const Value *> parameters = {&g};
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    if (auto e = input(node, 2, b); !e.empty())
      return e;
    parameters.push_back(&b);
  }
  for (const Value *p : parameters)
    if (elementCount(p->type) != cols)
      return error(node, "the scale and bias must hold the normalized " +
                             std::to_string(cols) + " elements; " +
                             mlirType(p->type) + " does not");
  bool flat = axis != rank - 1;
  TensorType x2 = x.type, g2 = g.type;
  if (flat) {
    x2.dims = {rows, cols};
    g2.dims = {cols};
  }
  std::string xs = reshapeOf(x.ssa, x.type, x2),
              gs = reshapeOf(g.ssa, g.type, g2);
  std::string beta;
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    TensorType b2 = b.type;
    b2.dims = g2.dims;
    beta = reshapeOf(b.ssa, b.type, b2);
  } else {
    beta = fresh();
    line(beta + " = mpc.constant dense<0.0> : " + mlirType(g2));
  }
  std::string ssa = fresh();
  line(ssa + ", " + ssa + "_mean, " + ssa + "_rstd = mpc.layer_norm " + xs +
       ", " + gs + ", " + beta + " {epsilon = " + floatLiteral(epsilon) +
       " : f64} : " + mlirType(x2) + ", " + mlirType(g2));
  std::string y = reshapeOf(ssa, x2, type);
  define(node, 0, y, type);
  // Mean and InvStdDev: mpc's are f32 over the leading dimensions.
  TensorType stats{"float", {}, true};
  stats.dims.assign(x2.dims.begin(), x2.dims.end() - 1);
  const char *names[] = {"_mean", "_rstd"};
  for (size_t i = 1; i < node.outputs.size() && i < 3; ++i) {
    if (node.outputs[i].empty())
      continue;
    TensorType out;
    if (auto e = outputType(node, i, out); !e.empty())
      return e;
    if (out.element != "float")
      return error(node, "statistics other than f32 are not imported");
    define(node, i, reshapeOf(ssa + names[i - 1], stats, out), out);
  }
  return "";
}

std::string Emitter::gather(const Node &node) {
  Value table;
  TensorType type;
  if (auto e = input(node, 0, table); !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  auto it = values.find(node.inputs.size() > 1 ? node.inputs[1] : "");
  if (it != values.end() && it->second.constantInts) {
    // Constant indices (x[:, 0], x[:, [2, 0]], positions from an arange):
    // a slice where they are consecutive, an embedding of constant rows of
    // a 2-D table, else one slice per index joined; then the index shape
    // in place of the axis.
    int64_t rank = static_cast<int64_t>(table.type.dims.size());
    int64_t axis = intAttr(node, "axis", 0);
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis >= rank)
      return error(node, "the axis is out of range");
    std::vector<int64_t> index = it->second.ints;
    int64_t dim = table.type.dims[axis];
    if (index.empty())
      return error(node, "no indices (zero-sized tensors are not imported)");
    bool consecutive = true;
    for (size_t k = 0; k < index.size(); ++k) {
      int64_t i = index[k] < 0 ? index[k] + dim : index[k];
      if (i < 0 || i >= dim)
        return error(node, "index " + std::to_string(index[k]) +
                               " is out of range for an axis of " +
                               std::to_string(dim));
      index[k] = i;
      consecutive &= i == index[0] + static_cast<int64_t>(k);
    }
    int64_t count = static_cast<int64_t>(index.size());
    TensorType taken = table.type;
    taken.dims[axis] = count;
    std::string part;
    if (consecutive) {
      std::vector<int64_t> offsets(rank, 0);
      offsets[axis] = index[0];
      part = sliceOf(table.ssa, table.type, offsets, taken.dims);
    } else if (axis == 0 && rank == 2) {
      std::vector<std::string> items;
      for (int64_t i : index)
        items.push_back(std::to_string(i));
      TensorType ids{"int32", it->second.type.dims, true};
      std::string rows = fresh();
      line(rows + " = mpc.constant dense<" + nested(items, ids.dims) +
           "> : " + mlirType(ids));
      part = fresh();
      line(part + " = mpc.embedding " + table.ssa + ", " + rows + " : " +
           mlirType(table.type) + ", " + mlirType(ids));
      return define(node, 0, part, type);
    } else if (count <= kReflectLimit) {
      TensorType one = table.type;
      one.dims[axis] = 1;
      std::string operands, types;
      for (int64_t i : index) {
        std::vector<int64_t> offsets(rank, 0);
        offsets[axis] = i;
        operands += (operands.empty() ? "" : ", ") +
                    sliceOf(table.ssa, table.type, offsets, one.dims);
        types += (types.empty() ? "" : ", ") + mlirType(one);
      }
      part = fresh();
      line(part + " = mpc.concat " + operands +
           " {axis = " + std::to_string(axis) + " : i64} : " + types);
    } else {
      return error(node, "more than " + std::to_string(kReflectLimit) +
                             " constant indices that are not consecutive");
    }
    if (elementCount(taken) != elementCount(type))
      return error(node, "the model gives the output the type " +
                             mlirType(type) + ", not the gathered rows'");
    return define(node, 0, reshapeOf(part, taken, type), type);
  }
  if (it == values.end() || it->second.ssa.empty() ||
      isFloat(it->second.type.element))
    return error(node, "the indices must be integers: a graph input or "
                       "constants");
  if (intAttr(node, "axis", 0) != 0 || table.type.dims.size() != 2)
    return error(node, "only rows of a 2-D table (an embedding, axis 0) are "
                       "imported");
  std::string attrs;
  if (auto padding = options.paddingIdx.find(node.inputs[0]);
      padding != options.paddingIdx.end()) {
    if (padding->second >= table.type.dims[0])
      return error(node, "--padding-idx " + node.inputs[0] + "=" +
                             std::to_string(padding->second) +
                             " is past the table's " +
                             std::to_string(table.type.dims[0]) + " rows");
    attrs = " {padding_idx = " + std::to_string(padding->second) + " : i64}";
    paddedTables.insert(node.inputs[0]);
  }
  std::string ssa = fresh();
  line(ssa + " = mpc.embedding " + table.ssa + ", " + it->second.ssa + attrs +
       " : " + mlirType(table.type) + ", " + mlirType(it->second.type));
  return define(node, 0, ssa, type);
}

std::string Emitter::reduce(const Node &node, const std::string &op,
                            bool axesInput) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type); !e.empty())
    return e;
  int64_t rank = static_cast<int64_t>(x.type.dims.size());
  std::vector<int64_t> axes;
  if (axesInput) {
    if (node.inputs.size() > 1 && !node.inputs[1].empty())
      if (auto e = constInts(node, 1, axes); !e.empty())
        return e;
  } else if (auto it = node.attributes.find("axes");
             it != node.attributes.end()) {
    axes = it->second.ints;
  }
  if (axes.empty()) {
    if (intAttr(node, "noop_with_empty_axes", 0))
      return identity(node);
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  for (int64_t &a : axes) {
    if (a < -rank || a >= rank)
      return error(node, "axis " + std::to_string(a) + " is out of range");
    a = a < 0 ? a + rank : a;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  bool keep = intAttr(node, "keepdims", 1) != 0;
  // After a layout op, where the axes kept are in the same order in both
  // layouts (C not kept with H or W): the NHWC twin reduced without kept
  // dimensions, whose result is the NCHW one in memory (a reshape away).
  const TensorType out = type;
  const std::string original = x.ssa;
  if (auto it = nhwcOf.find(x.ssa); it != nhwcOf.end() && rank == 4) {
    auto kept = [&](int64_t d) {
      return !std::binary_search(axes.begin(), axes.end(), d);
    };
    if (!(kept(1) && (kept(2) || kept(3)))) {
      for (int64_t &a : axes)
        a = kPositionInNHWC[a];
      std::sort(axes.begin(), axes.end());
      x.ssa = it->second.first;
      x.type = it->second.second;
      keep = false;
      type.dims.clear();
      for (int64_t d = 0; d < rank; ++d)
        if (!std::binary_search(axes.begin(), axes.end(), d))
          type.dims.push_back(x.type.dims[static_cast<size_t>(d)]);
    }
  }
  auto finish = [&](const std::string &ssa) {
    std::string result = reshapeOf(ssa, type, out);
    if (out.dims.size() == 4 && x.ssa != original) {
      // Kept dimensions: the NHWC form is a reshape too, the twin of the
      // result for the layout op that reads it (a squeeze-and-excitation
      // gate's 1x1 convolution).
      TensorType nhwcKept = x.type;
      for (int64_t a : axes)
        nhwcKept.dims[static_cast<size_t>(a)] = 1;
      nhwcOf[result] = {reshapeOf(ssa, type, nhwcKept), nhwcKept};
    }
    return define(node, 0, result, out);
  };
  auto dimsAttr = [&](bool keepDims) {
    return " {dims = array<i64: " + join(axes) + ">" +
           (keepDims ? ", keep_dims" : "") + "} : " + mlirType(x.type);
  };
  if (op == "min") { // -max(-x): ties share the gradient, as torch.amin
    std::string neg = fresh(), max = fresh(), ssa = fresh();
    line(neg + " = mpc.neg " + x.ssa + " : " + mlirType(x.type));
    line(max + " = mpc.reduce_max " + neg + dimsAttr(keep));
    line(ssa + " = mpc.neg " + max + " : " + mlirType(type));
    return finish(ssa);
  }
  if (op == "logsumexp") {
    // m + log(sum(exp(x - m))) with m the maximum: no exp overflows.
    TensorType kept = x.type;
    for (int64_t a : axes)
      kept.dims[static_cast<size_t>(a)] = 1;
    std::string m = fresh(), d = fresh(), e = fresh(), sum = fresh(),
                l = fresh(), ssa = fresh();
    line(m + " = mpc.reduce_max " + x.ssa + dimsAttr(true));
    line(d + " = mpc.sub " + x.ssa + ", " + m + " : " + mlirType(x.type) +
         ", " + mlirType(kept));
    line(e + " = mpc.exp " + d + " : " + mlirType(x.type));
    line(sum + " = mpc.reduce_sum " + e + dimsAttr(keep));
    line(l + " = mpc.log " + sum + " : " + mlirType(type));
    std::string mm = reshapeOf(m, kept, type);
    line(ssa + " = mpc.add " + l + ", " + mm + " : " + mlirType(type) + ", " +
         mlirType(type));
    return finish(ssa);
  }
  std::string in = x.ssa, ssa = fresh();
  bool squares = op == "l2" || op == "sum_square";
  if (squares) { // the sum of x * x
    in = fresh();
    line(in + " = mpc.mul " + x.ssa + ", " + x.ssa + " : " + mlirType(x.type) +
         ", " + mlirType(x.type));
  }
  line(ssa + " = mpc." + (squares ? std::string("reduce_sum") : op) + " " + in +
       " {dims = array<i64: " + join(axes) + ">" + (keep ? ", keep_dims" : "") +
       "} : " + mlirType(x.type));
  if (op == "l2") {
    // sqrt(s), as where(s > 0, sqrt(where(s > 0, s, 1)), 0): the same
    // values, and a zero norm's gradient 0 (PyTorch's) where sqrt's would
    // be 0 times infinity.
    const std::string t = mlirType(type),
                      scalar = "tensor<" + mlirElement(type.element) + ">";
    TensorType maskType = type;
    maskType.element = "bool";
    std::string zero = floatConstant(0, type.element),
                one = floatConstant(1, type.element), positive = fresh(),
                safe = fresh(), root = fresh(), norm = fresh();
    line(positive + " = mpc.compare \"gt\", " + ssa + ", " + zero + " : " + t +
         ", " + scalar);
    line(safe + " = mpc.where " + positive + ", " + ssa + ", " + one + " : " +
         mlirType(maskType) + ", " + t + ", " + scalar);
    line(root + " = mpc.sqrt " + safe + " : " + t);
    line(norm + " = mpc.where " + positive + ", " + root + ", " + zero + " : " +
         mlirType(maskType) + ", " + t + ", " + scalar);
    ssa = norm;
  }
  return finish(ssa);
}

//===----------------------------------------------------------------------===//
// Casts, concatenation, slices
//===----------------------------------------------------------------------===//

std::string Emitter::cast(const Node &node) {
  Value x;
  TensorType type;
  // An integer graph input cast to another integer type (PyTorch's
  // `ids.long()`) stays the i32 data it is fed as.
  if (auto e = inputAndType(node, x, type, /*moves=*/true); !e.empty())
    return e;
  if (x.type.element == type.element)
    return identity(node);
  if (x.type.element == "bool" && isFloat(type.element))
    return define(node, 0, maskAsNumbers(x.ssa, x.type, type.element), type);
  if (isFloat(x.type.element) && type.element == "bool") {
    // Nonzero (NaN included) is true: x != 0.
    std::string zero = floatConstant(0, x.type.element), ssa = fresh();
    line(ssa + " = mpc.compare \"ne\", " + x.ssa + ", " + zero + " : " +
         mlirType(x.type) + ", tensor<" + mlirElement(x.type.element) + ">");
    return define(node, 0, ssa, type);
  }
  // Integer data is an integer graph input, fed as i32 (an attention mask
  // of 0s and 1s cast to the scores' type).
  bool fromInts = x.type.element == "int32" && isFloat(type.element);
  if (!fromInts && (!isFloat(x.type.element) || !isFloat(type.element)))
    return error(node, "a cast from " + x.type.element + " to " + type.element +
                           " is not imported");
  if (mlirType(x.type) == mlirType(type))
    return identity(node);
  std::string ssa = fresh();
  line(ssa + " = mpc.cast " + x.ssa + " : " + mlirType(x.type) + " -> " +
       mlirType(type));
  return define(node, 0, ssa, type);
}

std::string Emitter::compare(const Node &node, const std::string &predicate) {
  Value a, b;
  TensorType type;
  // Integer graph inputs are fed as i32: constants compared with them are
  // made i32 too.
  std::string element = "int64";
  for (size_t i = 0; i < 2 && i < node.inputs.size(); ++i)
    if (auto it = values.find(node.inputs[i]);
        it != values.end() && !it->second.ssa.empty() &&
        it->second.type.element == "int32")
      element = "int32";
  if (auto e = dataInput(node, 0, a, element); !e.empty())
    return e;
  if (auto e = dataInput(node, 1, b, element); !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  if (mlirElement(a.type.element) != mlirElement(b.type.element))
    return error(node,
                 "compares " + a.type.element + " with " + b.type.element);
  if (!broadcastTogether(a.type.dims, b.type.dims))
    return error(node, "operands " + mlirType(a.type) + " and " +
                           mlirType(b.type) + " do not broadcast together");
  // Between layout ops: compared channels-last (the mask a twin too).
  bool nhwc = channelsLast({&a, &b}, type);
  std::string ssa = fresh();
  line(ssa + " = mpc.compare " + quoted(predicate) + ", " + a.ssa + ", " +
       b.ssa + " : " + mlirType(a.type) + ", " + mlirType(b.type));
  return defineLaidOut(node, ssa, nhwc, type);
}

std::string Emitter::logicalNot(const Node &node) {
  Value x;
  TensorType type;
  if (auto e = dataInput(node, 0, x); !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  std::string no = fresh(), ssa = fresh();
  line(no + " = mpc.constant dense<false> : tensor<i1>");
  line(ssa + " = mpc.compare \"eq\", " + x.ssa + ", " + no + " : " +
       mlirType(x.type) + ", tensor<i1>");
  return define(node, 0, ssa, type);
}

std::string Emitter::logical(const Node &node, Logical kind) {
  Value a, b;
  TensorType type;
  if (auto e = dataInput(node, 0, a); !e.empty())
    return e;
  if (auto e = dataInput(node, 1, b); !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  if (a.type.element != "bool" || b.type.element != "bool")
    return error(node, "expects bool operands");
  // As numbers: a*b > 0 (and), a+b > 0 (or), a+b == 1 (xor).
  std::string x = maskAsNumbers(a.ssa, a.type, "float");
  std::string y = maskAsNumbers(b.ssa, b.type, "float");
  TensorType xt = a.type, yt = b.type, f = type;
  xt.element = yt.element = f.element = "float";
  bool xor_ = kind == Logical::Xor;
  std::string bound = floatConstant(xor_ ? 1.0 : 0.0, "float");
  std::string combined = fresh(), ssa = fresh();
  line(combined + " = mpc." + (kind == Logical::And ? "mul" : "add") + " " + x +
       ", " + y + " : " + mlirType(xt) + ", " + mlirType(yt));
  line(ssa + " = mpc.compare " + (xor_ ? "\"eq\", " : "\"gt\", ") + combined +
       ", " + bound + " : " + mlirType(f) + ", tensor<f32>");
  return define(node, 0, ssa, type);
}

std::string Emitter::where(const Node &node) {
  Value c, a, b;
  TensorType type;
  if (auto e = dataInput(node, 0, c); !e.empty())
    return e;
  if (auto e = input(node, 1, a); !e.empty())
    return e;
  if (auto e = input(node, 2, b); !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  if (c.type.element != "bool")
    return error(node, "the condition is " + c.type.element + ", not bool");
  if (!isFloat(type.element))
    return error(node, "selects " + type.element +
                           " values; mpc selects floating-point values only");
  // Between layout ops: selected channels-last.
  bool nhwc = channelsLast({&c, &a, &b}, type);
  std::string ssa = fresh();
  line(ssa + " = mpc.where " + c.ssa + ", " + a.ssa + ", " + b.ssa + " : " +
       mlirType(c.type) + ", " + mlirType(a.type) + ", " + mlirType(b.type));
  return defineLaidOut(node, ssa, nhwc, type);
}

std::string Emitter::concat(const Node &node) {
  TensorType type;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  int64_t rank = static_cast<int64_t>(type.dims.size());
  int64_t axis = intAttr(node, "axis", 0);
  if (axis < -rank || axis >= rank)
    return error(node, "axis " + std::to_string(axis) + " is out of range");
  axis = axis < 0 ? axis + rank : axis;
  std::vector<Value> parts(node.inputs.size());
  int64_t along = 0, twinElements = 0, otherElements = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    Value &v = parts[i];
    // A constant mask (torch.zeros_like of a mask) joins masks as data.
    if (auto e =
            type.element == "bool" ? dataInput(node, i, v) : input(node, i, v);
        !e.empty())
      return e;
    bool fits = v.type.dims.size() == type.dims.size();
    for (int64_t d = 0; fits && d < rank; ++d)
      fits = d == axis || v.type.dims[d] == type.dims[d];
    if (!fits)
      return error(node, "input '" + node.inputs[i] + "' " + mlirType(v.type) +
                             " is not a part of " + mlirType(type) +
                             " along axis " + std::to_string(axis));
    along += v.type.dims[axis];
    (nhwcOf.count(v.ssa) ? twinElements : otherElements) +=
        elementCount(v.type);
  }
  if (along != type.dims[axis])
    return error(node, "the inputs hold " + std::to_string(along) +
                           " along axis " + std::to_string(axis) +
                           "; the output " + mlirType(type) + " has " +
                           std::to_string(type.dims[axis]));
  // Parts from layout ops (a U-Net's skip connection) holding more than
  // the others (the input joined to a segmentation head's features): the
  // NHWC twins, and the others transposed to NHWC, concatenated along the
  // axis's place there (transposing the smaller side).
  bool twins = rank == 4 && twinElements > otherElements;
  TensorType result = type;
  if (twins) {
    for (Value &v : parts) {
      TensorType nhwc;
      v.ssa = toNHWC(v, nhwc);
      v.type = nhwc;
    }
    axis = kPositionInNHWC[axis];
    result.dims = channelsLastDims(type.dims);
  }
  std::string operands, types;
  for (size_t i = 0; i < parts.size(); ++i) {
    operands += (i ? ", " : "") + parts[i].ssa;
    types += (i ? ", " : "") + mlirType(parts[i].type);
  }
  std::string ssa = fresh();
  line(ssa + " = mpc.concat " + operands + " {axis = " + std::to_string(axis) +
       " : i64} : " + types);
  return define(node, 0, twins ? toNCHW(ssa, result) : ssa, type);
}

std::string Emitter::slice(const Node &node) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type); !e.empty())
    return e;
  std::vector<int64_t> starts, ends, axes, steps;
  if (auto e = constInts(node, 1, starts); !e.empty())
    return e;
  if (auto e = constInts(node, 2, ends); !e.empty())
    return e;
  if (node.inputs.size() > 3 && !node.inputs[3].empty())
    if (auto e = constInts(node, 3, axes); !e.empty())
      return e;
  if (node.inputs.size() > 4 && !node.inputs[4].empty())
    if (auto e = constInts(node, 4, steps); !e.empty())
      return e;
  int64_t rank = static_cast<int64_t>(x.type.dims.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  std::vector<int64_t> offsets(rank, 0), strides(rank, 1);
  // Axes taken backwards (torch.flip): first whole, then row by row.
  struct Backwards {
    int64_t axis, start, step;
  };
  std::vector<Backwards> backwards;
  TensorType taken = type;
  if (type.dims.size() != x.type.dims.size())
    return error(node, "the model gives the output another rank");
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank)
      return error(node,
                   "axis " + std::to_string(axes[i]) + " is out of range");
    int64_t step = i < steps.size() ? steps[i] : 1;
    if (step == 0)
      return error(node, "a step of 0");
    int64_t dim = x.type.dims[a], start = i < starts.size() ? starts[i] : 0;
    start = start < 0 ? start + dim : start;
    if (step < 0) {
      if (type.dims[a] > kReflectLimit)
        return error(node, "more than " + std::to_string(kReflectLimit) +
                               " rows taken with a negative step");
      backwards.push_back({a, std::clamp<int64_t>(start, 0, dim - 1), step});
      taken.dims[a] = dim;
      continue;
    }
    offsets[a] = std::clamp<int64_t>(start, 0, dim);
    strides[a] = step;
  }
  bool whole = taken.dims == x.type.dims &&
               std::all_of(strides.begin(), strides.end(),
                           [](int64_t v) { return v == 1; });
  std::string y = whole ? x.ssa
                  : backwards.empty()
                      ? sliceOfValue(x, offsets, taken.dims, strides)
                      : sliceOf(x.ssa, x.type, offsets, taken.dims, strides);
  for (const Backwards &b : backwards) {
    TensorType row = taken;
    row.dims[b.axis] = 1;
    std::string operands, types;
    for (int64_t k = 0; k < type.dims[b.axis]; ++k) {
      int64_t index = b.start + k * b.step;
      if (index < 0)
        return error(node, "the model gives the output more rows than the "
                           "negative step takes");
      std::vector<int64_t> at(rank, 0);
      at[b.axis] = index;
      operands += (k ? ", " : "") + sliceOf(y, taken, at, row.dims);
      types += (k ? ", " : "") + mlirType(row);
    }
    std::string joined = fresh();
    line(joined + " = mpc.concat " + operands +
         " {axis = " + std::to_string(b.axis) + " : i64} : " + types);
    taken.dims[b.axis] = type.dims[b.axis];
    y = joined;
  }
  return define(node, 0, y, type);
}

//===----------------------------------------------------------------------===//
// Convolutions, normalisation and pooling (NCHW in ONNX, NHWC in mpc)
//===----------------------------------------------------------------------===//

std::string Emitter::toNHWC(const Value &x, TensorType &type) {
  if (auto it = nhwcOf.find(x.ssa); it != nhwcOf.end()) {
    type = it->second.second;
    return it->second.first;
  }
  type = x.type;
  type.dims = channelsLastDims(x.type.dims);
  return transposeOf(x.ssa, x.type, {0, 2, 3, 1});
}

std::string Emitter::toNCHW(const std::string &ssa, const TensorType &nhwc) {
  std::string out = transposeOf(ssa, nhwc, {0, 3, 1, 2});
  nhwcOf[out] = {ssa, nhwc};
  return out;
}

std::string Emitter::sliceOfValue(const Value &x,
                                  const std::vector<int64_t> &offsets,
                                  const std::vector<int64_t> &sizes,
                                  const std::vector<int64_t> &strides) {
  auto it = nhwcOf.find(x.ssa);
  if (it == nhwcOf.end() || x.type.dims.size() != 4)
    return sliceOf(x.ssa, x.type, offsets, sizes, strides);
  const auto &[twin, twinType] = it->second;
  TensorType nhwc = twinType;
  nhwc.dims = channelsLastDims(sizes);
  return toNCHW(sliceOf(twin, twinType, channelsLastDims(offsets), nhwc.dims,
                        strides.empty() ? strides : channelsLastDims(strides)),
                nhwc);
}

bool Emitter::channelsLast(std::vector<Value *> operands,
                           const TensorType &result) {
  if (result.dims.size() != 4)
    return false;
  bool twin = false;
  for (Value *v : operands) {
    if (nhwcOf.count(v->ssa))
      twin = true;
    else if (v->type.dims.size() > 4 ||
             elementCount(v->type) >= elementCount(result))
      return false;
  }
  if (!twin)
    return false;
  for (Value *v : operands) {
    if (auto it = nhwcOf.find(v->ssa); it != nhwcOf.end()) {
      v->ssa = it->second.first;
      v->type = it->second.second;
      continue;
    }
    if (elementCount(v->type) == 1)
      continue; // broadcasts alike in either layout
    TensorType raised = v->type;
    raised.dims.insert(raised.dims.begin(), 4 - v->type.dims.size(), 1);
    std::string ssa = reshapeOf(v->ssa, v->type, raised);
    v->type = raised;
    v->type.dims = channelsLastDims(raised.dims);
    v->ssa = transposeOf(ssa, raised, {0, 2, 3, 1});
  }
  return true;
}

std::string Emitter::padding(const Node &node, std::vector<int64_t> &begin,
                             std::vector<int64_t> &end, const Window *window) {
  begin = end = {0, 0};
  auto autoPad = node.attributes.find("auto_pad");
  if (autoPad != node.attributes.end() &&
      (autoPad->second.s == "SAME_UPPER" ||
       autoPad->second.s == "SAME_LOWER") &&
      window) {
    // The output is ceil(in / stride); the padding that takes, the odd one
    // after the input (SAME_UPPER) or before it (SAME_LOWER).
    bool upper = autoPad->second.s == "SAME_UPPER";
    for (int d = 0; d < 2; ++d) {
      int64_t in = window->input[d], s = window->strides[d];
      int64_t k = (window->kernel[d] - 1) * window->dilations[d] + 1;
      int64_t total = std::max<int64_t>((in + s - 1) / s * s - s + k - in, 0);
      begin[d] = upper ? total / 2 : total - total / 2;
      end[d] = total - begin[d];
    }
    return "";
  }
  if (autoPad != node.attributes.end() && autoPad->second.s != "NOTSET" &&
      autoPad->second.s != "VALID")
    return error(node, "auto_pad " + autoPad->second.s +
                           " is not imported (give explicit pads)");
  auto it = node.attributes.find("pads");
  if (it == node.attributes.end())
    return "";
  const std::vector<int64_t> &p = it->second.ints;
  if (p.size() != 4)
    return error(node, "pads of a 2-D window op must have 4 entries");
  for (int64_t v : p)
    if (v < 0 || v > kWindowLimit)
      return error(node, "pads must be between 0 and 2^20");
  begin = {p[0], p[1]};
  end = {p[2], p[3]};
  return "";
}

std::string Emitter::padNHWC(const std::string &x, TensorType &type,
                             const std::vector<int64_t> &begin,
                             const std::vector<int64_t> &end,
                             const char *fill) {
  std::string out = x;
  for (int d = 0; d < 2; ++d) {
    int64_t axis = d + 1;
    for (auto [count, before] : {std::pair{begin[d], true}, {end[d], false}}) {
      if (count == 0)
        continue;
      TensorType pad = type;
      pad.dims[axis] = count;
      std::string padSsa = fresh();
      line(padSsa + " = mpc.constant dense<" + std::string(fill) +
           "> : " + mlirType(pad));
      TensorType grown = type;
      grown.dims[axis] += count;
      std::string next = fresh();
      line(next + " = mpc.concat " + (before ? padSsa : out) + ", " +
           (before ? out : padSsa) + " {axis = " + std::to_string(axis) +
           " : i64} : " + mlirType(before ? pad : type) + ", " +
           mlirType(before ? type : pad));
      out = next;
      type = grown;
    }
  }
  return out;
}

/// A number for a message: 9 significant digits.
static std::string shortNumber(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  return buffer;
}

/// The smallest and the largest positive normal numbers of a float
/// element type.
static std::pair<double, double> normalRange(const std::string &element) {
  if (element == "float16")
    return {std::ldexp(1.0, -14), 65504.0};
  if (element == "bfloat16")
    return {std::ldexp(1.0, -126), std::ldexp(255.0, 120)};
  if (element == "double")
    return {std::numeric_limits<double>::min(),
            std::numeric_limits<double>::max()};
  return {std::numeric_limits<float>::min(), std::numeric_limits<float>::max()};
}

/// Negative infinity as an MLIR literal of the element type.
static const char *minusInfinity(const std::string &element) {
  if (element == "float16")
    return "0xFC00";
  if (element == "bfloat16")
    return "0xFF80";
  if (element == "double")
    return "0xFFF0000000000000";
  return "0xFF800000";
}

/// A window op's [h, w] attribute.
static std::string pair(const std::vector<int64_t> &v) {
  return "array<i64: " + join(v) + ">";
}

std::string
Emitter::windowOp(const Node &node,
                  const std::function<std::string(const Node &)> &emit) {
  auto x = values.find(node.inputs.empty() ? "" : node.inputs[0]);
  if (x == values.end() || x->second.type.dims.size() != 3)
    return emit(node);
  // The view: a unit height before the length of the input and of a
  // filter (the second input of a convolution), a unit first entry in
  // every per-axis attribute.
  Node flat = node;
  auto view = [](TensorType from) {
    from.dims.insert(from.dims.begin() + 2, 1);
    return from;
  };
  for (size_t i = 0; i < 2 && i < node.inputs.size(); ++i) {
    if (i == 1 && node.opType != "Conv" && node.opType != "ConvTranspose")
      break;
    Value v;
    if (auto e = input(node, i, v); !e.empty())
      return e;
    if (v.type.dims.size() != 3)
      return error(node, "input '" + node.inputs[i] + "' is " +
                             mlirType(v.type) + "; a 1-D " + node.opType +
                             " takes [N, C, L] data and [O, I, K] filters");
    TensorType type = view(v.type);
    std::string ssa = fresh();
    line(ssa + " = mpc.reshape " + v.ssa + " : " + mlirType(v.type) + " -> " +
         mlirType(type));
    flat.inputs[i] = node.inputs[i] + "#2d";
    values[flat.inputs[i]] = Value{ssa, type, {}, false};
  }
  for (const char *name :
       {"strides", "dilations", "kernel_shape", "output_padding"}) {
    auto it = flat.attributes.find(name);
    if (it == flat.attributes.end())
      continue;
    if (it->second.ints.size() != 1)
      return error(node, std::string("a 1-D ") + node.opType + "'s " + name +
                             " must have one entry");
    it->second.ints.insert(it->second.ints.begin(),
                           std::string(name) == "output_padding" ? 0 : 1);
  }
  if (auto it = flat.attributes.find("pads"); it != flat.attributes.end()) {
    if (it->second.ints.size() != 2)
      return error(node, std::string("a 1-D ") + node.opType +
                             "'s pads must have two entries");
    it->second.ints = {0, it->second.ints[0], 0, it->second.ints[1]};
  }
  if (auto it = flat.attributes.find("output_shape");
      it != flat.attributes.end()) {
    if (it->second.ints.empty())
      return error(node, "output_shape must give the output's length");
    it->second.ints.insert(it->second.ints.end() - 1, 1);
  }
  TensorType type;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  if (type.dims.size() != 3)
    return error(node, "the model gives the output the type " + mlirType(type) +
                           ", not [N, C, L]");
  flat.outputs.assign(1, node.outputs[0] + "#2d");
  ownTypes[flat.outputs[0]] = view(type);
  if (auto e = emit(flat); !e.empty())
    return e;
  const Value &y = values[flat.outputs[0]];
  std::string ssa = fresh();
  line(ssa + " = mpc.reshape " + y.ssa + " : " + mlirType(y.type) + " -> " +
       mlirType(type));
  return define(node, 0, ssa, type);
}

/// A convolution's filter [out, in / groups, kh, kw] against its NCHW
/// input, and its strides and dilations (two each, positive): ONNX's
/// inference leaves some of this unchecked where the model declares the
/// output.
std::string Emitter::convShapes(const Node &node, const Value &x,
                                const Value &w, int64_t groups,
                                const std::vector<int64_t> &strides,
                                const std::vector<int64_t> &dilations) {
  if (w.type.dims.size() != 4)
    return error(node, "the filter must be [out, in / groups, kh, kw], not " +
                           mlirType(w.type));
  if (groups < 1 || x.type.dims[1] % groups != 0 ||
      w.type.dims[0] % groups != 0 || w.type.dims[1] * groups != x.type.dims[1])
    return error(node, "the filter " + mlirType(w.type) + " in " +
                           std::to_string(groups) +
                           " groups does not fit the input " +
                           mlirType(x.type));
  for (const auto *v : {&strides, &dilations})
    if (v->size() != 2 || (*v)[0] < 1 || (*v)[1] < 1 ||
        (*v)[0] > kWindowLimit || (*v)[1] > kWindowLimit)
      return error(node, "strides and dilations must be two numbers "
                         "between 1 and 2^20 each");
  return kernelShape(node, w);
}

/// A kernel_shape attribute must give the filter's own [kh, kw] (its last
/// two dimensions, in a convolution and a transposed one): ONNX's
/// inference takes the attribute's where the two differ.
std::string Emitter::kernelShape(const Node &node, const Value &w) {
  auto it = node.attributes.find("kernel_shape");
  if (it == node.attributes.end())
    return "";
  std::vector<int64_t> own(w.type.dims.end() - 2, w.type.dims.end());
  if (it->second.ints == own)
    return "";
  return error(node, "kernel_shape [" + join(it->second.ints) +
                         "] is not the filter's " + mlirType(w.type) +
                         " kernel");
}

std::string Emitter::conv(const Node &node) {
  Value x, w;
  TensorType type;
  if (auto e = input(node, 0, x); !e.empty())
    return e;
  if (auto e = input(node, 1, w); !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  if (x.type.dims.size() != 4)
    return error(
        node,
        "only 1-D and 2-D convolutions (NCL and NCHW inputs) are imported");
  if (type.dims.size() != 4)
    return error(node, "the model gives the output the type " + mlirType(type) +
                           ", not NCHW");
  auto ints = [&](const char *name) {
    auto it = node.attributes.find(name);
    return it == node.attributes.end() ? std::vector<int64_t>{1, 1}
                                       : it->second.ints;
  };
  std::vector<int64_t> strides = ints("strides"), dilations = ints("dilations"),
                       pads;
  int64_t groups = intAttr(node, "group", 1);
  if (auto e = convShapes(node, x, w, groups, strides, dilations); !e.empty())
    return e;
  Window window{{x.type.dims[2], x.type.dims[3]},
                {w.type.dims[2], w.type.dims[3]},
                strides,
                dilations};
  std::vector<int64_t> begin, end;
  if (auto e = padding(node, begin, end, &window); !e.empty())
    return e;
  for (int d = 0; d < 2; ++d)
    if ((w.type.dims[2 + d] - 1) * dilations[d] + 1 >
        x.type.dims[2 + d] + begin[d] + end[d])
      return error(node, "the filter " + mlirType(w.type) +
                             " does not fit the padded input " +
                             mlirType(x.type));
  TensorType xt, wt = w.type;
  std::string xs = toNHWC(x, xt);
  // mpc pads both sides alike: the common part as the convolution's
  // padding, what one side has more (auto_pad SAME with an odd total,
  // uneven pads) as rows and columns of zeros concatenated to the input.
  std::vector<int64_t> extraBegin(2), extraEnd(2);
  for (int d = 0; d < 2; ++d) {
    pads.push_back(std::min(begin[d], end[d]));
    extraBegin[d] = begin[d] - pads[d];
    extraEnd[d] = end[d] - pads[d];
  }
  if (extraBegin != std::vector<int64_t>{0, 0} ||
      extraEnd != std::vector<int64_t>{0, 0})
    xs = padNHWC(xs, xt, extraBegin, extraEnd, "0.000000e+00");
  // The filter stays OIHW in the state (PyTorch's layout, under its name);
  // the step transposes it to mpc's OHWI.
  wt.dims = channelsLastDims(w.type.dims);
  std::string ws = transposeOf(w.ssa, w.type, {0, 2, 3, 1});
  TensorType yt = type;
  yt.dims = channelsLastDims(type.dims);
  std::string y = fresh();
  line(y + " = mpc.conv2d " + xs + ", " + ws + " {stride = " + pair(strides) +
       ", padding = " + pair(pads) + ", dilation = " + pair(dilations) +
       ", groups = " + std::to_string(groups) + " : i64} : " + mlirType(xt) +
       ", " + mlirType(wt));
  return withBias(node, y, yt, type);
}

/// InstanceNormalization (and so PyTorch's GroupNorm, which exports as one
/// over [N, groups, -1]): each (n, c) row normalised over the remaining
/// axes with its biased variance, then scaled and shifted per channel,
/// written out of reductions and elementwise ops (autodiff differentiates
/// them).
std::string Emitter::instanceNorm(const Node &node) {
  Value x, g, b;
  TensorType type;
  for (auto [i, v] : {std::pair{0, &x}, {1, &g}, {2, &b}})
    if (auto e = input(node, i, *v); !e.empty())
      return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  size_t rank = x.type.dims.size();
  if (rank < 3 || type.dims != x.type.dims)
    return error(node, "the input must be [N, C, D...] and the output of its "
                       "type");
  for (const Value *p : {&g, &b})
    if (p->type.dims != std::vector<int64_t>{x.type.dims[1]} ||
        p->type.element != x.type.element)
      return error(node, "scale and bias must be [" +
                             std::to_string(x.type.dims[1]) + "] of " +
                             mlirElement(x.type.element));
  double eps = floatAttr(node, "epsilon", 1e-5);
  if (!(eps > 0) || !std::isfinite(eps))
    return error(node, "epsilon must be positive and finite, not " +
                           floatLiteral(eps));
  std::vector<int64_t> axes;
  TensorType stat = x.type, ct = g.type;
  ct.dims = {x.type.dims[1]};
  for (size_t d = 2; d < rank; ++d) {
    axes.push_back(static_cast<int64_t>(d));
    stat.dims[d] = 1;
    ct.dims.push_back(1);
  }
  // GroupNorm's view of a layout op's result (reshapeTo): normalised as
  // the NHWC values' [N, H W, G, C/G] view, over H W and C/G.
  const Value nchw = x;
  auto grouped = groupedOf.find(x.ssa);
  if (grouped != groupedOf.end()) {
    x = Value{grouped->second.first, grouped->second.second, {}, false};
    stat = x.type;
    stat.dims[1] = stat.dims[3] = 1;
    ct.dims = {1, 1, x.type.dims[2], 1};
  }
  std::string xs = mlirType(x.type), ss = mlirType(stat), cs = mlirType(ct),
              scalar = "tensor<" + mlirElement(x.type.element) + ">";
  std::string mean = fresh(), c = fresh(), sq = fresh(), var = fresh(),
              ve = fresh(), inv = fresh(), n = fresh(), sc = fresh(),
              y = fresh();
  std::string e = floatConstant(eps, x.type.element);
  // The mean of `v` over `axes` into `out`; in the grouped view over its
  // axes 3 (C/G) then 1 (H W), which are not adjacent (equal counts: the
  // same mean).
  auto meanOver = [&](const std::string &out, const std::string &v) {
    if (grouped == groupedOf.end()) {
      line(out + " = mpc.reduce_mean " + v +
           " {dims = array<i64: " + join(axes) + ">, keep_dims} : " + xs);
      return;
    }
    std::string part = fresh();
    TensorType partType = x.type;
    partType.dims[3] = 1;
    line(part + " = mpc.reduce_mean " + v +
         " {dims = array<i64: 3>, keep_dims} : " + xs);
    line(out + " = mpc.reduce_mean " + part +
         " {dims = array<i64: 1>, keep_dims} : " + mlirType(partType));
  };
  meanOver(mean, x.ssa);
  line(c + " = mpc.sub " + x.ssa + ", " + mean + " : " + xs + ", " + ss);
  line(sq + " = mpc.mul " + c + ", " + c + " : " + xs + ", " + xs);
  meanOver(var, sq);
  line(ve + " = mpc.add " + var + ", " + e + " : " + ss + ", " + scalar);
  line(inv + " = mpc.rsqrt " + ve + " : " + ss);
  line(n + " = mpc.mul " + c + ", " + inv + " : " + xs + ", " + ss);
  std::string gv = reshapeOf(g.ssa, g.type, ct),
              bv = reshapeOf(b.ssa, b.type, ct);
  line(sc + " = mpc.mul " + n + ", " + gv + " : " + xs + ", " + cs);
  line(y + " = mpc.add " + sc + ", " + bv + " : " + xs + ", " + cs);
  if (grouped == groupedOf.end())
    return define(node, 0, y, type);
  // The NCHW view too, for other readers: [N, G, C/G, H W], flattened.
  TensorType moved = x.type;
  moved.dims = {x.type.dims[0], x.type.dims[2], x.type.dims[3], x.type.dims[1]};
  std::string out =
      reshapeOf(transposeOf(y, x.type, {0, 2, 3, 1}), moved, nchw.type);
  groupedOf[out] = {y, x.type};
  return define(node, 0, out, type);
}

std::string Emitter::batchNorm(const Node &node) {
  Value x, g, b, mean, var;
  TensorType type;
  for (auto [i, v] :
       {std::pair{0, &x}, {1, &g}, {2, &b}, {3, &mean}, {4, &var}})
    if (auto e = input(node, i, *v); !e.empty())
      return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  double eps = floatAttr(node, "epsilon", 1e-5);
  if (!(eps > 0) || !std::isfinite(eps))
    return error(node, "epsilon must be positive and finite, not " +
                           floatLiteral(eps));
  if (!intAttr(node, "training_mode", 0)) {
    // Inference: (x - mean) / sqrt(var + eps) * scale + bias, per channel
    // of NCHW (the statistics broadcast as [C, 1, 1]).
    size_t rank = x.type.dims.size();
    TensorType ct = g.type;
    ct.dims = {g.type.dims[0]};
    for (size_t d = 2; d < rank; ++d)
      ct.dims.push_back(1);
    auto view = [&](const Value &v) {
      std::string r = fresh();
      line(r + " = mpc.reshape " + v.ssa + " : " + mlirType(v.type) + " -> " +
           mlirType(ct));
      return r;
    };
    std::string e = floatConstant(eps, g.type.element), ssa;
    std::string m = view(mean), v = view(var), gg = view(g), bb = view(b);
    std::string ve = fresh(), sd = fresh(), c = fresh(), n = fresh(),
                sc = fresh(), y = fresh();
    std::string cts = mlirType(ct),
                scalar = "tensor<" + mlirElement(g.type.element) + ">";
    line(ve + " = mpc.add " + v + ", " + e + " : " + cts + ", " + scalar);
    line(sd + " = mpc.sqrt " + ve + " : " + cts);
    line(c + " = mpc.sub " + x.ssa + ", " + m + " : " + mlirType(x.type) +
         ", " + cts);
    line(n + " = mpc.div " + c + ", " + sd + " : " + mlirType(x.type) + ", " +
         cts);
    line(sc + " = mpc.mul " + n + ", " + gg + " : " + mlirType(x.type) + ", " +
         cts);
    line(y + " = mpc.add " + sc + ", " + bb + " : " + mlirType(x.type) + ", " +
         cts);
    return define(node, 0, y, type);
  }
  // Training: mpc.batch_norm on NHWC with PyTorch's running statistics
  // (mpc momentum = 1 - ONNX momentum; the unbiased variance), written
  // back to the statistics' globals.
  size_t rank = x.type.dims.size();
  if (rank < 2)
    return error(node, "the input must be [N, C] or [N, C, D...]");
  double momentum = 1 - floatAttr(node, "momentum", 0.9);
  // [N, C, D...] other than NCHW (BatchNorm1d's [N, C, L], BatchNorm3d's
  // [N, C, D, H, W]) is normalized as the NCHW view [N, C, D... but the
  // last, last]: the statistics are over N and every spatial position
  // either way.
  Value x4 = x;
  if (rank == 3 || rank > 4) {
    int64_t rows = 1;
    for (size_t d = 2; d + 1 < rank; ++d)
      rows *= x.type.dims[d];
    x4.type.dims = {x.type.dims[0], x.type.dims[1], rows, x.type.dims.back()};
    x4.ssa = reshapeOf(x.ssa, x.type, x4.type);
  }
  bool image = rank >= 3;
  TensorType xt = x4.type;
  std::string xs = image ? toNHWC(x4, xt) : x.ssa;
  std::string ssa = fresh();
  line(ssa + ":5 = mpc.batch_norm " + xs + ", " + g.ssa + ", " + b.ssa + ", " +
       mean.ssa + ", " + var.ssa + " {momentum = " + floatLiteral(momentum) +
       " : f64, epsilon = " + floatLiteral(eps) + " : f64} : " + mlirType(xt) +
       ", " + mlirType(g.type));
  for (auto [i, stat] : {std::pair{3, 1}, std::pair{4, 2}}) {
    const std::string &name = node.inputs[i];
    if (!globalNames.count(name))
      return error(node, "the running statistic '" + name +
                             "' must be a trainable-side initializer (a "
                             "global) to be updated; see --trainable");
    stores.push_back({name, ssa + "#" + std::to_string(stat),
                      mlirType(i == 3 ? mean.type : var.type)});
  }
  std::string y = image ? toNCHW(ssa + "#0", xt) : ssa + "#0";
  return define(node, 0, reshapeOf(y, x4.type, x.type), type);
}

std::string Emitter::pool(const Node &node, bool max) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type); !e.empty())
    return e;
  if (x.type.dims.size() != 4)
    return error(node,
                 "only 1-D and 2-D pooling (NCL and NCHW inputs) is imported");
  bool ceil = intAttr(node, "ceil_mode", 0) != 0;
  bool includePad = intAttr(node, "count_include_pad", 0) != 0;
  if (ceil && !max && includePad)
    return error(node, "ceil_mode of AveragePool with count_include_pad = 1 "
                       "is not imported (its windows past the padding have "
                       "smaller divisors)");
  if (node.outputs.size() > 1 && !node.outputs[1].empty())
    return error(node, "the Indices output is not imported");
  auto it = node.attributes.find("dilations");
  if (it != node.attributes.end())
    for (int64_t d : it->second.ints)
      if (d != 1)
        return error(node, "dilated pooling is not imported");
  auto kernel = node.attributes.find("kernel_shape");
  if (kernel == node.attributes.end() || kernel->second.ints.size() != 2)
    return error(node, "a 2-D kernel_shape is required");
  auto st = node.attributes.find("strides");
  std::vector<int64_t> strides = st == node.attributes.end()
                                     ? std::vector<int64_t>{1, 1}
                                     : st->second.ints,
                       pads;
  const std::vector<int64_t> *sizes[] = {&strides, &kernel->second.ints};
  for (const std::vector<int64_t> *v : sizes)
    if (v->size() != 2 || (*v)[0] < 1 || (*v)[1] < 1 ||
        (*v)[0] > kWindowLimit || (*v)[1] > kWindowLimit)
      return error(node, "the kernel and the strides must be two numbers "
                         "between 1 and 2^20 each");
  Window window{
      {x.type.dims[2], x.type.dims[3]}, kernel->second.ints, strides, {1, 1}};
  std::vector<int64_t> begin, end;
  if (auto e = padding(node, begin, end, &window); !e.empty())
    return e;
  const std::vector<int64_t> &k = kernel->second.ints;
  if (ceil)
    // ceil_mode: the last window may start past the padded input, if it
    // starts inside the input or its leading padding (ONNX, PyTorch); the
    // rows it needs beyond are padding too.
    for (int d = 0; d < 2; ++d) {
      int64_t in = x.type.dims[2 + d], span = in + begin[d] + end[d];
      if (span < k[d])
        continue;
      int64_t out = (span - k[d] + strides[d] - 1) / strides[d] + 1;
      if ((out - 1) * strides[d] >= in + begin[d])
        --out;
      end[d] += std::max<int64_t>((out - 1) * strides[d] + k[d] - span, 0);
    }
  // The windows of the (padded) input must be the output's: ONNX's
  // inference counts ceil_mode's windows without the rule above, or keeps
  // a type the model declares.
  if (type.dims.size() != 4)
    return error(node, "the model gives the output the type " + mlirType(type) +
                           ", not NCHW");
  for (int d = 0; d < 2; ++d) {
    int64_t span = x.type.dims[2 + d] + begin[d] + end[d];
    int64_t windows = span < k[d] ? 0 : (span - k[d]) / strides[d] + 1;
    if (windows != type.dims[2 + d] || type.dims[0] != x.type.dims[0] ||
        type.dims[1] != x.type.dims[1])
      return error(node, "the model gives the output the type " +
                             mlirType(type) + "; the windows of " +
                             mlirType(x.type) + " make " +
                             std::to_string(windows) + " along axis " +
                             std::to_string(2 + d));
  }
  // mpc pads both sides alike and at most half the kernel (each window
  // holds an input element). Max pooling takes the rest as -inf rows and
  // columns concatenated to the input; average pooling counting its
  // padding as zeros, as zeros; average pooling without the padding in
  // its divisors cannot (the extra zeros would count).
  std::vector<int64_t> extraBegin(2), extraEnd(2);
  bool ratio = false;
  for (int d = 0; d < 2; ++d) {
    pads.push_back(std::min({begin[d], end[d], k[d] / 2}));
    extraBegin[d] = begin[d] - pads[d];
    extraEnd[d] = end[d] - pads[d];
    ratio |= !max && !includePad && (extraBegin[d] || extraEnd[d]);
  }
  TensorType xt, yt = type;
  std::string xs = toNHWC(x, xt);
  yt.dims = channelsLastDims(type.dims);
  if (ratio) {
    // Average pooling without its padding in the divisors, over padding mpc
    // cannot hold: the windows' means over the zero-padded input, divided
    // by their means over ones where the input is (each window's share of
    // input elements), both counting every position.
    auto meanOf = [&](const std::string &v, TensorType t) {
      std::string padded = padNHWC(v, t, begin, end, "0.0"), out = fresh();
      line(out + " = mpc.avg_pool2d " + padded + " {kernel = " + pair(k) +
           ", stride = " + pair(strides) + ", padding = " + pair({0, 0}) +
           ", count_include_pad = true} : " + mlirType(t));
      return out;
    };
    std::string sums = meanOf(xs, xt);
    TensorType onesType{xt.element, {1, xt.dims[1], xt.dims[2], 1}, true};
    std::string ones = fresh();
    line(ones + " = mpc.constant dense<1.0> : " + mlirType(onesType));
    std::string counts = meanOf(ones, onesType), y = fresh();
    TensorType countsType{xt.element, {1, yt.dims[1], yt.dims[2], 1}, true};
    line(y + " = mpc.div " + sums + ", " + counts + " : " + mlirType(yt) +
         ", " + mlirType(countsType));
    return define(node, 0, toNCHW(y, yt), type);
  }
  xs = padNHWC(xs, xt, extraBegin, extraEnd,
               max ? minusInfinity(xt.element) : "0.0");
  std::string y = fresh();
  std::string extra = max ? ""
                          : std::string(", count_include_pad = ") +
                                (includePad ? "true" : "false");
  line(y + " = mpc." + (max ? "max_pool2d " : "avg_pool2d ") + xs +
       " {kernel = " + pair(kernel->second.ints) +
       ", stride = " + pair(strides) + ", padding = " + pair(pads) + extra +
       "} : " + mlirType(xt));
  return define(node, 0, toNCHW(y, yt), type);
}

std::string Emitter::convTranspose(const Node &node) {
  Value x, w;
  TensorType type;
  if (auto e = input(node, 0, x); !e.empty())
    return e;
  if (auto e = input(node, 1, w); !e.empty())
    return e;
  if (auto e = outputType(node, 0, type); !e.empty())
    return e;
  if (x.type.dims.size() != 4)
    return error(node, "only 1-D and 2-D transposed convolutions are imported");
  if (type.dims.size() != 4)
    return error(node, "the model gives the output the type " + mlirType(type) +
                           ", not NCHW");
  int64_t groups = intAttr(node, "group", 1);
  if (w.type.dims.size() != 4)
    return error(node, "the filter must be [in, out / groups, kh, kw], not " +
                           mlirType(w.type));
  if (groups < 1 || x.type.dims[1] % groups != 0 ||
      w.type.dims[0] != x.type.dims[1])
    return error(node, "the group count must divide the input channels, "
                       "which the filter's first dimension must equal");
  if (auto e = kernelShape(node, w); !e.empty())
    return e;
  auto ints = [&](const char *name, int64_t dflt) {
    auto it = node.attributes.find(name);
    return it == node.attributes.end() ? std::vector<int64_t>{dflt, dflt}
                                       : it->second.ints;
  };
  std::vector<int64_t> strides = ints("strides", 1),
                       dilations = ints("dilations", 1),
                       outputPadding = ints("output_padding", 0), pads(2);
  for (const auto *v : {&strides, &dilations, &outputPadding})
    if (v->size() != 2 || (*v)[0] < (v == &outputPadding ? 0 : 1) ||
        (*v)[1] < (v == &outputPadding ? 0 : 1) || (*v)[0] > kWindowLimit ||
        (*v)[1] > kWindowLimit)
      return error(node, "strides, dilations and output_padding must be two "
                         "numbers each (positive, positive, not negative), "
                         "at most 2^20");
  std::vector<int64_t> begin(2), end(2);
  auto outputShape = node.attributes.find("output_shape");
  auto autoPad = node.attributes.find("auto_pad");
  std::string mode =
      autoPad == node.attributes.end() ? "NOTSET" : autoPad->second.s;
  if (outputShape != node.attributes.end() || mode == "SAME_UPPER" ||
      mode == "SAME_LOWER") {
    // ONNX's padding for a given output size (output_shape, or in * stride
    // for SAME): the natural size minus the output in all, the odd one at
    // the end with SAME_UPPER, else at the start (the operator's
    // definition).
    const std::vector<int64_t> *os = outputShape != node.attributes.end()
                                         ? &outputShape->second.ints
                                         : nullptr;
    if (os && os->size() < 2)
      return error(node, "output_shape must give the two spatial sizes");
    for (int d = 0; d < 2; ++d) {
      int64_t in = x.type.dims[2 + d];
      int64_t target = os ? (*os)[os->size() - 2 + d] : in * strides[d];
      int64_t k = (w.type.dims[2 + d] - 1) * dilations[d] + 1;
      int64_t total = strides[d] * (in - 1) + outputPadding[d] + k - target;
      // Halves rounded down (ONNX's reference): a negative total (an
      // output larger than the natural size) puts zero rows at the end.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      begin[d] = mode == "SAME_UPPER" ? half : total - half;
      end[d] = total - begin[d];
    }
  } else if (auto e = padding(node, begin, end); !e.empty()) {
    return e;
  }
  // Output row o is row o + b of the full transposed convolution, F = s
  // (in - 1) + k rows (ONNX's output_padding and any output beyond them
  // are zeros). mpc's symmetric padding p gives full rows [p, F - p): the
  // rows the output takes from the full result, [b0, e0), come from p =
  // min(b0, F - e0) and a slice; rows before 0 or from F on are zeros
  // concatenated before and after.
  std::vector<int64_t> offsets(2), lead(2), trail(2), middle(2), fullRows(2);
  for (int d = 0; d < 2; ++d) {
    int64_t k = (w.type.dims[2 + d] - 1) * dilations[d] + 1;
    int64_t full = fullRows[d] = strides[d] * (x.type.dims[2 + d] - 1) + k;
    int64_t rows = type.dims[2 + d];
    int64_t b0 = std::max<int64_t>(0, begin[d]),
            e0 = std::min(begin[d] + rows, full);
    if (e0 <= b0)
      return error(node, "the output holds no row of the transposed "
                         "convolution");
    pads[d] = std::min(b0, full - e0);
    offsets[d] = b0 - pads[d];
    middle[d] = e0 - b0;
    lead[d] = b0 - begin[d];
    trail[d] = rows - lead[d] - middle[d];
    outputPadding[d] = 0;
  }
  TensorType xt, wt = w.type;
  std::string xs = toNHWC(x, xt);
  // ONNX [Cin, Cout, kh, kw] -> mpc [Cin, kh, kw, Cout], in the step.
  wt.dims = channelsLastDims(w.type.dims);
  std::string ws = transposeOf(w.ssa, w.type, {0, 2, 3, 1});
  TensorType yt = type;
  yt.dims = channelsLastDims(type.dims);
  TensorType got = yt; // mpc's result: rows [p, F - p) of the full one
  for (int d = 0; d < 2; ++d)
    got.dims[1 + d] = fullRows[d] - 2 * pads[d];
  // Groups: each group's input channels and filters transposed apart,
  // the results concatenated along the channels in group order.
  int64_t perGroup = xt.dims[3] / groups;
  std::string y;
  TensorType part = got;
  part.dims[3] = got.dims[3] / groups;
  for (int64_t gi = 0; gi < groups; ++gi) {
    std::string xg = xs, wg = ws;
    TensorType xgt = xt, wgt = wt;
    if (groups > 1) {
      xgt.dims[3] = perGroup;
      wgt.dims[0] = perGroup;
      xg = sliceOf(xs, xt, {0, 0, 0, gi * perGroup}, xgt.dims);
      wg = sliceOf(ws, wt, {gi * perGroup, 0, 0, 0}, wgt.dims);
    }
    std::string yg = fresh();
    line(yg + " = mpc.conv_transpose2d " + xg + ", " + wg +
         " {stride = " + pair(strides) + ", padding = " + pair(pads) +
         ", dilation = " + pair(dilations) + ", output_padding = " +
         pair(outputPadding) + "} : " + mlirType(xgt) + ", " + mlirType(wgt));
    if (gi == 0) {
      y = yg;
      continue;
    }
    TensorType sofar = part;
    sofar.dims[3] = part.dims[3] * gi;
    std::string joined = fresh();
    line(joined + " = mpc.concat " + y + ", " + yg +
         " {axis = 3 : i64} : " + mlirType(sofar) + ", " + mlirType(part));
    y = joined;
  }
  TensorType taken = yt;
  taken.dims[1] = middle[0];
  taken.dims[2] = middle[1];
  if (got.dims != taken.dims)
    y = sliceOf(y, got, {0, offsets[0], offsets[1], 0}, taken.dims);
  if (lead != std::vector<int64_t>{0, 0} || trail != std::vector<int64_t>{0, 0})
    y = padNHWC(y, taken, lead, trail, "0.000000e+00");
  return withBias(node, y, yt, type);
}

/// The weights of ONNX's Resize along one axis, [out, in] row-major: row i
/// holds what output i takes from each input (ONNX's reference: the
/// coordinate transformation, then the nearest, linear or cubic neighbours,
/// indices past the ends clamped to them), or an error.
std::string interpolationWeights(const std::string &mode,
                                 const std::string &ctm,
                                 const std::string &nearest, double cubicA,
                                 bool excludeOutside, int64_t in, int64_t out,
                                 double scale, std::vector<double> &w) {
  // ONNX's resized length: in * scale, not rounded (its reference computes
  // align_corners and pytorch_half_pixel with it); out where sizes are
  // given (scale = out / in).
  double length = double(in) * scale;
  w.assign(static_cast<size_t>(out * in), 0.0);
  for (int64_t i = 0; i < out; ++i) {
    double x;
    if (ctm == "half_pixel")
      x = (i + 0.5) / scale - 0.5;
    else if (ctm == "pytorch_half_pixel")
      x = length > 1 ? (i + 0.5) / scale - 0.5 : 0.0;
    else if (ctm == "align_corners")
      x = length == 1 ? 0.0 : double(i) * double(in - 1) / (length - 1);
    else if (ctm == "asymmetric")
      x = i / scale;
    else if (ctm == "tf_half_pixel_for_nn")
      x = (i + 0.5) / scale;
    else
      return "coordinate_transformation_mode " + ctm + " is not imported";
    auto add = [&](int64_t j, double weight) {
      j = std::clamp<int64_t>(j, 0, in - 1);
      w[static_cast<size_t>(i * in + j)] += weight;
    };
    if (mode == "nearest") {
      double f = std::floor(x);
      bool half = x - f == 0.5;
      int64_t j;
      if (nearest == "round_prefer_floor")
        j = static_cast<int64_t>(half ? f : std::round(x));
      else if (nearest == "round_prefer_ceil")
        j = static_cast<int64_t>(half ? f + 1 : std::round(x));
      else if (nearest == "floor")
        j = static_cast<int64_t>(f);
      else if (nearest == "ceil")
        j = static_cast<int64_t>(std::ceil(x));
      else
        return "nearest_mode " + nearest + " is not imported";
      add(j, 1.0);
    } else if (mode == "linear") {
      double f = std::floor(x), t = x - f;
      add(static_cast<int64_t>(f), 1 - t);
      add(static_cast<int64_t>(f) + 1, t);
    } else if (mode == "cubic") {
      double f = std::floor(x), t = x - f, a = cubicA;
      double c[4] = {
          ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
          ((a + 2) * t - (a + 3)) * t * t + 1,
          ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
          ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a};
      int64_t j0 = static_cast<int64_t>(f) - 1;
      double kept = 0;
      for (int k = 0; k < 4; ++k)
        if (!excludeOutside || (j0 + k >= 0 && j0 + k < in))
          kept += c[k];
      for (int k = 0; k < 4; ++k)
        if (!excludeOutside || (j0 + k >= 0 && j0 + k < in))
          add(j0 + k, excludeOutside ? c[k] / kept : c[k]);
    } else {
      return "mode " + mode + " is not imported";
    }
  }
  return "";
}

/// Resize of the spatial dimensions of NCHW data. Nearest upsampling by
/// whole factors (PyTorch's `interpolate(mode="nearest")`) is
/// mpc.upsample_nearest2d; anything else ONNX defines (linear, cubic, other
/// coordinate transformations and roundings, any size) is two products
/// with constant interpolation matrices, one per axis.
std::string Emitter::resize(const Node &node) {
  Value x;
  TensorType type;
  if (auto e = input(node, 0, x); !e.empty())
    return e;
  size_t rank = x.type.dims.size();
  if (rank < 3)
    return error(node, "only the spatial dimensions of [N, C, D...] data "
                       "are resized");
  // The scales ONNX's coordinate transformation uses: the constant scales,
  // or out / in where sizes are given.
  std::vector<double> scales;
  type = x.type;
  if (node.inputs.size() > 3 && !node.inputs[3].empty()) {
    std::vector<int64_t> sizes;
    if (auto e = constInts(node, 3, sizes); !e.empty())
      return e;
    if (sizes.size() != x.type.dims.size())
      return error(node, "sizes must give every dimension");
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] < 1 || sizes[d] > kWindowLimit)
        return error(node, "sizes must be between 1 and 2^20");
      scales.push_back(double(sizes[d]) / double(x.type.dims[d]));
    }
    type.dims = sizes;
  } else if (auto v =
                 floatConstant(node.inputs.size() > 2 ? node.inputs[2] : "");
             v && v->size() == x.type.dims.size()) {
    for (size_t d = 0; d < v->size(); ++d) {
      double size = std::floor(double(x.type.dims[d]) * (*v)[d]);
      if (!((*v)[d] > 0) || !(size >= 1 && size <= double(kWindowLimit)))
        return error(node, "the scales must give sizes between 1 and 2^20");
      type.dims[d] = static_cast<int64_t>(size);
    }
    scales = *v;
  } else {
    return error(node, "the scales must be constants");
  }
  if (TensorType declared;
      outputType(node, 0, declared).empty() && declared.dims != type.dims)
    return error(node, "the model gives the output the type " +
                           mlirType(declared) + ", not the resized input's " +
                           mlirType(type));
  if (type.dims[0] != x.type.dims[0] || type.dims[1] != x.type.dims[1])
    return error(node, "only the spatial dimensions of [N, C, D...] data "
                       "are resized");
  auto str = [&](const char *name, const char *dflt) {
    auto it = node.attributes.find(name);
    return it == node.attributes.end() ? std::string(dflt) : it->second.s;
  };
  std::string mode = str("mode", "nearest");
  std::string ctm = str("coordinate_transformation_mode", "half_pixel");
  std::string nearest = str("nearest_mode", "round_prefer_floor");
  // With a whole factor s, output i reads input floor(i / s): the
  // asymmetric transformation with floor rounding (what PyTorch exports),
  // or half_pixel ((i + 0.5) / s - 0.5) rounded to nearest, which never
  // ties for whole s.
  bool whole = rank == 4;
  std::vector<int64_t> factor;
  for (size_t d = 2; whole && d < 4; ++d) {
    whole &= type.dims[d] % x.type.dims[d] == 0 &&
             scales[d] == double(type.dims[d] / x.type.dims[d]);
    factor.push_back(type.dims[d] / x.type.dims[d]);
  }
  bool asymmetric = ctm == "asymmetric" && nearest == "floor";
  bool halfPixel =
      (ctm == "half_pixel" || ctm == "pytorch_half_pixel") &&
      (nearest == "round_prefer_floor" || nearest == "round_prefer_ceil");
  if (mode == "nearest" && whole && (asymmetric || halfPixel)) {
    TensorType xt, yt = type;
    std::string xs = toNHWC(x, xt);
    yt.dims = channelsLastDims(type.dims);
    std::string y = fresh();
    line(y + " = mpc.upsample_nearest2d " + xs + " {scale = " + pair(factor) +
         "} : " + mlirType(xt));
    return define(node, 0, toNCHW(y, yt), type);
  }

  // The interpolation matrices, [out, in] per axis, in the data's type.
  if (x.type.element != "float" && x.type.element != "double")
    return error(node, "mode " + mode + " resizes f32 or f64 data only");
  double cubicA = -0.75;
  if (auto a = node.attributes.find("cubic_coeff_a");
      a != node.attributes.end() && a->second.kind == Attribute::Float)
    cubicA = a->second.f;
  bool exclude = intAttr(node, "exclude_outside", 0) != 0;
  // Axis by axis, last first: a [P, in] view times the matrix transposed
  // for the last axis, the matrix times a [P, in, Q] view (broadcast over
  // P) for the others; an axis whose weights are the identity is skipped.
  // A layout op's result is resized channels-last, its NHWC twin's H and W
  // axes (no transposes; the result a twin too).
  Value y = x;
  auto twin = rank == 4 ? nhwcOf.find(x.ssa) : nhwcOf.end();
  bool nhwc = twin != nhwcOf.end();
  if (nhwc)
    y = Value{twin->second.first, twin->second.second, {}, false};
  for (size_t d = rank; d-- > 2;) {
    int64_t in = x.type.dims[d], out = type.dims[d];
    if (in * out > (int64_t(1) << 24))
      return error(node, "an interpolation matrix of " + std::to_string(out) +
                             " x " + std::to_string(in) +
                             " (over 2^24 weights) is not imported");
    std::vector<double> w;
    if (auto e = interpolationWeights(mode, ctm, nearest, cubicA, exclude, in,
                                      out, scales[d], w);
        !e.empty())
      return error(node, e);
    bool identity = in == out;
    for (int64_t i = 0; identity && i < out; ++i)
      for (int64_t j = 0; identity && j < in; ++j)
        identity = w[static_cast<size_t>(i * in + j)] == (i == j ? 1.0 : 0.0);
    if (identity)
      continue;
    TensorType mt{x.type.element, {out, in}, true};
    std::string matrix = denseConstant(w, mt);
    size_t axis = nhwc ? kPositionInNHWC[d] : d;
    int64_t p = 1, q = 1;
    for (size_t k = 0; k < axis; ++k)
      p *= y.type.dims[k];
    for (size_t k = axis + 1; k < rank; ++k)
      q *= y.type.dims[k];
    TensorType view{x.type.element, {p, in}, true}, result = view;
    if (q > 1)
      view.dims.push_back(q);
    result.dims =
        q > 1 ? std::vector<int64_t>{p, out, q} : std::vector<int64_t>{p, out};
    std::string flat = reshapeOf(y.ssa, y.type, view), product = fresh();
    if (q > 1)
      line(product + " = mpc.matmul " + matrix + ", " + flat + " : " +
           mlirType(mt) + ", " + mlirType(view));
    else
      line(product + " = mpc.matmul " + flat + ", " + matrix +
           " {transpose_b} : " + mlirType(view) + ", " + mlirType(mt));
    TensorType next = y.type;
    next.dims[axis] = out;
    y = Value{reshapeOf(product, result, next), next, {}, false};
  }
  if (y.ssa == x.ssa || (nhwc && y.ssa == twin->second.first))
    return identity(node);
  return define(node, 0, nhwc ? toNCHW(y.ssa, y.type) : y.ssa, type);
}

std::optional<std::vector<double>>
Emitter::floatConstant(const std::string &name) {
  const TensorValue *t = constantOrTestInput(name);
  if (!t) {
    // Computed from constants: Concat, Cast and Identity of them (how
    // exports of interpolate's scale_factor build the scales).
    for (const Node &n : graph.nodes) {
      if (n.outputs.empty() || n.outputs[0] != name)
        continue;
      if (n.opType == "Cast" || n.opType == "Identity")
        return n.inputs.empty() ? std::nullopt : floatConstant(n.inputs[0]);
      if (n.opType != "Concat")
        return std::nullopt;
      std::vector<double> all;
      for (const std::string &in : n.inputs) {
        auto part = floatConstant(in);
        auto ints = values.find(in);
        if (part)
          all.insert(all.end(), part->begin(), part->end());
        else if (ints != values.end() && ints->second.constantInts)
          all.insert(all.end(), ints->second.ints.begin(),
                     ints->second.ints.end());
        else
          return std::nullopt;
      }
      return all;
    }
  }
  if (!t || t->type.element != "float")
    return std::nullopt;
  std::vector<double> out(t->bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    float v;
    std::memcpy(&v, t->bytes.data() + i * 4, 4);
    out[i] = v;
  }
  return out;
}

std::string Emitter::crossEntropy(const Node &node, bool fromLogProbs) {
  Value scores;
  if (auto e = input(node, 0, scores); !e.empty())
    return e;
  auto found = values.find(node.inputs.size() > 1 ? node.inputs[1] : "");
  if (found == values.end() || isFloat(found->second.type.element) ||
      (found->second.ssa.empty() && !found->second.constantInts))
    return error(node, "the labels must be integers");
  Value labelValue = found->second;
  if (labelValue.ssa.empty()) { // compile-time labels: an i32 constant
    TensorType type{"int32", labelValue.type.dims, true};
    TensorType flat{"int32", {int64_t(labelValue.ints.size())}, true};
    std::string dense;
    for (int64_t v : labelValue.ints) {
      if (v < INT32_MIN || v > INT32_MAX)
        return error(node, "a label beyond 32 bits");
      dense += (dense.empty() ? "" : ", ") + std::to_string(v);
    }
    labelValue.ssa = fresh();
    line(labelValue.ssa + " = mpc.constant dense<[" + dense +
         "]> : " + mlirType(flat));
    if (type.dims != flat.dims) {
      std::string r = fresh();
      line(r + " = mpc.reshape " + labelValue.ssa + " : " + mlirType(flat) +
           " -> " + mlirType(type));
      labelValue.ssa = r;
    }
    labelValue.type = type;
  }
  const Value *labels = &labelValue;
  int64_t rank = static_cast<int64_t>(scores.type.dims.size());
  if (rank < 2)
    return error(node, "the scores must be [batch, classes, ...]");
  std::vector<int64_t> expectedLabels = scores.type.dims;
  expectedLabels.erase(expectedLabels.begin() + 1);
  if (labels->type.dims != expectedLabels)
    return error(node, "the labels must have the scores' shape less the "
                       "classes; scores " +
                           mlirType(scores.type) + ", labels " +
                           mlirType(labels->type));
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    auto w = values.find(node.inputs[2]);
    if (w != values.end() &&
        w->second.type.dims != std::vector<int64_t>{scores.type.dims[1]})
      return error(node, "the class weights must be [classes] = [" +
                             std::to_string(scores.type.dims[1]) + "], not " +
                             mlirType(w->second.type));
  }
  auto reduction = node.attributes.find("reduction");
  std::string how =
      reduction == node.attributes.end() ? "mean" : reduction->second.s;
  if (how != "mean" && how != "sum" && how != "none")
    return error(node, "reduction " + how + " is not one of mean, sum, none");
  bool weighted = node.inputs.size() > 2 && !node.inputs[2].empty();
  auto ignore = node.attributes.find("ignore_index");
  std::optional<int64_t> ignoreIndex;
  if (ignore != node.attributes.end())
    ignoreIndex = ignore->second.i;
  if (ignoreIndex && (*ignoreIndex < INT32_MIN || *ignoreIndex > INT32_MAX))
    return error(node, "ignore_index " + std::to_string(*ignoreIndex) +
                           " is beyond the 32-bit labels");
  bool logProbOut =
      !fromLogProbs && node.outputs.size() > 1 && !node.outputs[1].empty();
  // The log-likelihood of a LogSoftmax over the classes: mpc's fused
  // cross-entropy of the LogSoftmax's input (PyTorch's export of
  // cross_entropy), when nothing else is asked for.
  const Node *logSoftmax = nullptr;
  if (fromLogProbs)
    for (const Node &n : graph.nodes)
      if (!n.outputs.empty() && n.outputs[0] == node.inputs[0] &&
          n.opType == "LogSoftmax" &&
          (intAttr(n, "axis", -1) == 1 || intAttr(n, "axis", -1) == -1))
        logSoftmax = &n;
  if (logSoftmax) {
    auto it = values.find(logSoftmax->inputs[0]);
    if (it == values.end() || it->second.ssa.empty())
      logSoftmax = nullptr;
  }
  // [N, C, d...] with d: the classes moved last, [N, d..., C].
  std::vector<int64_t> perm{0};
  for (int64_t d = 2; d < rank; ++d)
    perm.push_back(d);
  perm.push_back(1);
  TensorType last = scores.type;
  for (int64_t d = 0; d < rank; ++d)
    last.dims[d] = scores.type.dims[perm[d]];
  // The fused op (its ignore_index PyTorch's, which it always exports,
  // -100 by default) where nothing else is asked for; with [N, C, d...]
  // scores, of [N, d..., C] (a LogSoftmax's over the classes, axis 1).
  if (how != "none" && !weighted && !logProbOut &&
      (!fromLogProbs ||
       (logSoftmax && (rank == 2 || intAttr(*logSoftmax, "axis", -1) == 1)))) {
    Value logits =
        logSoftmax ? values.find(logSoftmax->inputs[0])->second : scores;
    if (rank > 2) { // the same shape as the scores
      logits.ssa = transposeOf(logits.ssa, logits.type, perm);
      logits.type.dims = last.dims;
    }
    std::string ssa = fresh();
    line(ssa + " = mpc.cross_entropy " + logits.ssa + ", " + labels->ssa +
         crossEntropyAttrs(ignoreIndex, 0, how == "sum") + " : " +
         mlirType(logits.type) + ", " + mlirType(labels->type));
    return define(node, 0, ssa, TensorType{logits.type.element, {}, true});
  }
  if (rank == 2)
    return weightedCrossEntropy(node, fromLogProbs, scores, *labels, how,
                                ignoreIndex, std::nullopt);
  // Written out: every position a row, [N D, C] against [N D] labels;
  // results shaped back.
  int64_t positions = 1;
  for (int64_t d = 0; d + 1 < rank; ++d)
    positions *= last.dims[d];
  int64_t classes = scores.type.dims[1];
  Value flat{fresh(),
             TensorType{scores.type.element, {positions, classes}, true},
             {},
             false};
  line(flat.ssa + " = mpc.reshape " +
       transposeOf(scores.ssa, scores.type, perm) + " : " + mlirType(last) +
       " -> " + mlirType(flat.type));
  Value flatLabels{
      fresh(), TensorType{labels->type.element, {positions}, true}, {}, false};
  line(flatLabels.ssa + " = mpc.reshape " + labels->ssa + " : " +
       mlirType(labels->type) + " -> " + mlirType(flatLabels.type));
  return weightedCrossEntropy(node, fromLogProbs, flat, flatLabels, how,
                              ignoreIndex,
                              Unflatten{scores.type, last, perm, labels->type});
}

std::string Emitter::weightedCrossEntropy(
    const Node &node, bool fromLogProbs, const Value &scores,
    const Value &labels, const std::string &how, std::optional<int64_t> ignore,
    const std::optional<Unflatten> &shape) {
  // Written out as ONNX defines it: l_i = -w[y_i] logp[i, y_i] (w = 1
  // without weights; 0 for an ignored label), then none, sum, or the sum
  // over sum_i w[y_i]. The label's column is picked by a one-hot mask
  // (labels against 0..C-1).
  int64_t n = scores.type.dims[0], classes = scores.type.dims[1];
  const std::string &elt = scores.type.element;
  std::string t = mlirType(scores.type);
  std::string logp = scores.ssa;
  if (!fromLogProbs) {
    logp = fresh();
    line(logp + " = mpc.log_softmax " + scores.ssa +
         " {axis = -1 : i64} : " + t);
  }
  TensorType column{labels.type.element, {n, 1}, true},
      row{labels.type.element, {1, classes}, true};
  std::string labels2 = fresh();
  line(labels2 + " = mpc.reshape " + labels.ssa + " : " +
       mlirType(labels.type) + " -> " + mlirType(column));
  std::string iota = fresh(), ids;
  for (int64_t c = 0; c < classes; ++c)
    ids += (c ? ", " : "") + std::to_string(c);
  line(iota + " = mpc.constant dense<[[" + ids + "]]> : " + mlirType(row));
  TensorType maskType{"bool", {n, classes}, true};
  std::string onehot = fresh();
  line(onehot + " = mpc.compare \"eq\", " + labels2 + ", " + iota + " : " +
       mlirType(column) + ", " + mlirType(row));
  std::string zero = floatConstant(0.0, elt),
              scalar = "tensor<" + mlirElement(elt) + ">";
  TensorType perSample{elt, {n}, true};
  // The sum over the classes of `x` where the mask holds: [n].
  auto pick = [&](const std::string &x, const std::string &xType) {
    std::string masked = fresh(), sum = fresh();
    line(masked + " = mpc.where " + onehot + ", " + x + ", " + zero + " : " +
         mlirType(maskType) + ", " + xType + ", " + scalar);
    line(sum + " = mpc.reduce_sum " + masked +
         " {dims = array<i64: 1>} : " + t);
    return sum;
  };
  std::string picked = pick(logp, t);
  std::string weight; // per sample, empty for all ones
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    Value w;
    if (auto e = input(node, 2, w); !e.empty())
      return e;
    if (w.type.dims != std::vector<int64_t>{classes} || w.type.element != elt)
      return error(node, "the class weights must be a [" +
                             std::to_string(classes) +
                             "] tensor of the scores' type");
    weight = pick(w.ssa, mlirType(w.type));
  }
  if (ignore) {
    int64_t ignoreIndex = *ignore;
    std::string ignored = fresh(), valid = fresh();
    TensorType scalarInt{labels.type.element, {}, true};
    line(ignored + " = mpc.constant dense<" + std::to_string(ignoreIndex) +
         "> : " + mlirType(scalarInt));
    line(valid + " = mpc.compare \"ne\", " + labels.ssa + ", " + ignored +
         " : " + mlirType(labels.type) + ", " + mlirType(scalarInt));
    TensorType validType{"bool", {n}, true};
    if (weight.empty()) {
      weight = maskAsNumbers(valid, validType, elt);
    } else {
      std::string kept = fresh();
      line(kept + " = mpc.where " + valid + ", " + weight + ", " + zero +
           " : " + mlirType(validType) + ", " + mlirType(perSample) + ", " +
           scalar);
      weight = kept;
    }
  }
  std::string loss = fresh();
  line(loss + " = mpc.neg " + picked + " : " + mlirType(perSample));
  if (!weight.empty()) {
    std::string weighted = fresh();
    line(weighted + " = mpc.mul " + loss + ", " + weight + " : " +
         mlirType(perSample) + ", " + mlirType(perSample));
    loss = weighted;
  }
  if (!fromLogProbs && node.outputs.size() > 1 && !node.outputs[1].empty()) {
    if (!shape) {
      if (auto e = define(node, 1, logp, scores.type); !e.empty())
        return e;
    } else { // [N D, C] back to [N, C, d...]
      std::string r = fresh();
      line(r + " = mpc.reshape " + logp + " : " + t + " -> " +
           mlirType(shape->last));
      std::vector<int64_t> inverse(shape->perm.size());
      for (size_t d = 0; d < shape->perm.size(); ++d)
        inverse[shape->perm[d]] = static_cast<int64_t>(d);
      if (auto e = define(node, 1, transposeOf(r, shape->last, inverse),
                          shape->scores);
          !e.empty())
        return e;
    }
  }
  if (how == "none") {
    if (!shape)
      return define(node, 0, loss, perSample);
    TensorType out{elt, shape->labels.dims, true};
    std::string r = fresh();
    line(r + " = mpc.reshape " + loss + " : " + mlirType(perSample) + " -> " +
         mlirType(out));
    return define(node, 0, r, out);
  }
  TensorType rank0{elt, {}, true};
  auto total = [&](const std::string &x) {
    std::string sum = fresh();
    line(sum + " = mpc.reduce_sum " + x +
         " {dims = array<i64: 0>} : " + mlirType(perSample));
    return sum;
  };
  std::string sum = total(loss);
  if (how == "sum")
    return define(node, 0, sum, rank0);
  std::string mean = fresh();
  if (weight.empty()) {
    line(mean + " = mpc.reduce_mean " + loss +
         " {dims = array<i64: 0>} : " + mlirType(perSample));
  } else {
    std::string norm = total(weight);
    line(mean + " = mpc.div " + sum + ", " + norm + " : " + mlirType(rank0) +
         ", " + mlirType(rank0));
  }
  return define(node, 0, mean, rank0);
}

/// ConstantOfShape: a splat of its value (float) over a constant shape;
/// integer ones are compile-time values like other shape data.
std::string Emitter::constantOfShape(const Node &node) {
  std::vector<int64_t> dims;
  if (auto e = constInts(node, 0, dims); !e.empty())
    return e;
  TensorValue value;
  value.type = TensorType{"float", {1}, true};
  value.bytes.assign(4, 0);
  if (auto it = node.attributes.find("value");
      it != node.attributes.end() && it->second.kind == Attribute::Tensor)
    value = it->second.tensor;
  int bytes = elementBytes(value.type.element);
  if (bytes == 0 || value.bytes.size() != static_cast<size_t>(bytes))
    return error(node, "the value must be a one-element tensor");
  for (int64_t d : dims)
    if (d <= 0)
      return error(node, "zero-sized tensors are not imported");
  TensorType type{value.type.element, dims, true};
  if (!isFloat(value.type.element)) {
    Value v;
    v.constantInts = true;
    v.type = type;
    int64_t count = 1;
    for (int64_t d : dims)
      count *= d;
    int64_t x = intsOf(value).empty() ? 0 : intsOf(value)[0];
    if (count > (int64_t(1) << 20))
      return error(node, "an integer constant this large is not imported");
    v.ints.assign(static_cast<size_t>(count), x);
    values[node.outputs[0]] = v;
    return "";
  }
  std::string ssa = fresh();
  line(ssa + " = mpc.constant " + denseOf(value) + " : " + mlirType(type));
  return define(node, 0, ssa, type);
}

std::string Emitter::globalPool(const Node &node, const std::string &op) {
  Value x;
  TensorType type;
  if (auto e = inputAndType(node, x, type); !e.empty())
    return e;
  if (x.type.dims.size() < 3)
    return error(node,
                 "takes [N, C, spatial...] data, not " + mlirType(x.type));
  if (auto it = nhwcOf.find(x.ssa);
      it != nhwcOf.end() && x.type.dims.size() == 4) {
    // After a layout op: the mean over H and W of the NHWC twin, [N, 1, 1,
    // C], is [N, C, 1, 1] in memory already: a reshape, no transpose.
    TensorType pooled = it->second.second;
    pooled.dims[1] = pooled.dims[2] = 1;
    std::string mean = fresh(), ssa = fresh();
    line(mean + " = mpc." + op + " " + it->second.first +
         " {dims = array<i64: 1, 2>, keep_dims} : " +
         mlirType(it->second.second));
    line(ssa + " = mpc.reshape " + mean + " : " + mlirType(pooled) + " -> " +
         mlirType(type));
    return define(node, 0, ssa, type);
  }
  std::string dims;
  for (size_t d = 2; d < x.type.dims.size(); ++d)
    dims += (d > 2 ? ", " : "") + std::to_string(d);
  std::string ssa = fresh();
  line(ssa + " = mpc." + op + " " + x.ssa + " {dims = array<i64: " + dims +
       ">, keep_dims} : " + mlirType(x.type));
  return define(node, 0, ssa, type);
}

/// Split: one slice per output, along the axis, at the inferred sizes.
std::string Emitter::split(const Node &node) {
  Value x;
  if (auto e = input(node, 0, x); !e.empty())
    return e;
  int64_t rank = static_cast<int64_t>(x.type.dims.size());
  int64_t axis = intAttr(node, "axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  if (axis < 0 || axis >= rank)
    return error(node, "the axis is out of range");
  int64_t offset = 0;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    TensorType type;
    if (auto e = outputType(node, i, type); !e.empty())
      return e;
    // The outputs' types (ONNX's, or the model's where the split sizes
    // are not constant) must tile the input along the axis.
    bool fits = static_cast<int64_t>(type.dims.size()) == rank &&
                type.dims[axis] <= x.type.dims[axis] - offset;
    for (int64_t d = 0; fits && d < rank; ++d)
      fits = d == axis || type.dims[d] == x.type.dims[d];
    if (!fits)
      return error(node, "output '" + node.outputs[i] + "' " + mlirType(type) +
                             " is not the next part of " + mlirType(x.type) +
                             " along axis " + std::to_string(axis));
    std::vector<int64_t> offsets(rank, 0);
    offsets[axis] = offset;
    define(node, i, sliceOfValue(x, offsets, type.dims), type);
    offset += type.dims[axis];
  }
  return "";
}

//===----------------------------------------------------------------------===//
// GELU written with Erf
//===----------------------------------------------------------------------===//

void Emitter::findErfGelus() {
  std::map<std::string, size_t> producer;
  std::map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const std::string &out : graph.nodes[i].outputs)
      producer[out] = i;
    for (const std::string &in : graph.nodes[i].inputs)
      consumers[in].push_back(i);
  }
  // A scalar constant's value (an initializer or a Constant node).
  auto scalar = [&](const std::string &name) -> std::optional<double> {
    auto v = floatConstant(name);
    if (!v || v->size() != 1)
      return std::nullopt;
    return (*v)[0];
  };
  auto only = [&](const std::string &value) -> std::optional<size_t> {
    auto it = consumers.find(value);
    if (it == consumers.end() || it->second.size() != 1)
      return std::nullopt;
    return it->second[0];
  };
  auto other = [](const Node &n, const std::string &one) {
    return n.inputs.size() == 2
               ? (n.inputs[0] == one ? n.inputs[1] : n.inputs[0])
               : std::string();
  };
  auto near = [](std::optional<double> v, double want) {
    return v && std::fabs(*v - want) <= 1e-6 * std::fabs(want);
  };
  // Both forms end the same way from erf(...) or tanh(...): + 1, * x,
  // * 0.5; the three nodes, or nothing.
  auto tail = [&](const std::string &from,
                  const std::string &x) -> std::optional<std::vector<size_t>> {
    auto add = only(from);
    if (!add || graph.nodes[*add].opType != "Add" ||
        !near(scalar(other(graph.nodes[*add], from)), 1.0))
      return std::nullopt;
    auto mul = only(graph.nodes[*add].outputs[0]);
    if (!mul || graph.nodes[*mul].opType != "Mul" ||
        other(graph.nodes[*mul], graph.nodes[*add].outputs[0]) != x)
      return std::nullopt;
    auto half = only(graph.nodes[*mul].outputs[0]);
    if (!half || graph.nodes[*half].opType != "Mul" ||
        !near(scalar(other(graph.nodes[*half], graph.nodes[*mul].outputs[0])),
              0.5))
      return std::nullopt;
    return std::vector<size_t>{*add, *mul, *half};
  };
  for (size_t e = 0; e < graph.nodes.size(); ++e) {
    const Node &erfNode = graph.nodes[e];
    if (erfNode.opType != "Erf" || erfNode.inputs.size() != 1)
      continue;
    auto p = producer.find(erfNode.inputs[0]);
    if (p == producer.end())
      continue;
    const Node &div = graph.nodes[p->second];
    if (div.opType != "Div" || div.inputs.size() != 2 ||
        !near(scalar(div.inputs[1]), std::sqrt(2.0)) ||
        only(div.outputs[0]) != e)
      continue;
    const std::string &x = div.inputs[0];
    auto end = tail(erfNode.outputs[0], x);
    if (!end)
      continue;
    geluAt[e] = GeluMatch{end->back(), x, false};
    covered.insert(end->begin(), end->end());
    covered.insert(p->second);
  }
  // The tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
  // x^3))), as an opset-20 Gelu is written out for opset 17 (x^3 as
  // (x x) x, or Pow(x, 3)), and the nodes it covers.
  auto producerOf = [&](const std::string &v) -> const Node * {
    auto it = producer.find(v);
    return it == producer.end() ? nullptr : &graph.nodes[it->second];
  };
  auto onlyFrom = [&](const Node *n, const std::string &v, size_t user) {
    return n && only(v) == user;
  };
  for (size_t t = 0; t < graph.nodes.size(); ++t) {
    const Node &tanhNode = graph.nodes[t];
    if (tanhNode.opType != "Tanh" || tanhNode.inputs.size() != 1)
      continue;
    const Node *scaled = producerOf(tanhNode.inputs[0]);
    if (!onlyFrom(scaled, tanhNode.inputs[0], t) || scaled->opType != "Mul")
      continue;
    std::string innerName;
    for (const std::string &in : scaled->inputs)
      if (near(scalar(other(*scaled, in)), std::sqrt(2 / M_PI)))
        innerName = in;
    const Node *inner = innerName.empty() ? nullptr : producerOf(innerName);
    size_t scaledAt = producer[scaled->outputs[0]];
    if (!onlyFrom(inner, innerName, scaledAt) || inner->opType != "Add" ||
        inner->inputs.size() != 2)
      continue;
    size_t innerAt = producer[inner->outputs[0]];
    // One addend is x, the other 0.044715 x^3.
    std::string x;
    std::vector<size_t> cubeNodes;
    for (int which = 0; which < 2 && x.empty(); ++which) {
      const std::string &k = inner->inputs[which],
                        &candidate = inner->inputs[1 - which];
      const Node *scale = producerOf(k);
      if (!onlyFrom(scale, k, innerAt) || scale->opType != "Mul")
        continue;
      size_t scaleAt = producer[k];
      std::string cubeName;
      for (const std::string &in : scale->inputs)
        if (near(scalar(other(*scale, in)), 0.044715))
          cubeName = in;
      const Node *cube = cubeName.empty() ? nullptr : producerOf(cubeName);
      if (!onlyFrom(cube, cubeName, scaleAt))
        continue;
      size_t cubeAt = producer[cubeName];
      if (cube->opType == "Pow" && cube->inputs.size() == 2 &&
          cube->inputs[0] == candidate && near(scalar(cube->inputs[1]), 3)) {
        x = candidate;
        cubeNodes = {cubeAt, scaleAt};
      } else if (cube->opType == "Mul" && cube->inputs.size() == 2 &&
                 other(*cube, candidate).size()) {
        const std::string &sqName = other(*cube, candidate);
        const Node *sq = producerOf(sqName);
        if (onlyFrom(sq, sqName, cubeAt) && sq->opType == "Mul" &&
            sq->inputs.size() == 2 && sq->inputs[0] == candidate &&
            sq->inputs[1] == candidate) {
          x = candidate;
          cubeNodes = {producer[sqName], cubeAt, scaleAt};
        }
      }
    }
    auto end = x.empty() ? std::nullopt : tail(tanhNode.outputs[0], x);
    if (!end)
      continue;
    geluAt[t] = GeluMatch{end->back(), x, true};
    covered.insert(cubeNodes.begin(), cubeNodes.end());
    covered.insert(end->begin(), end->end());
    covered.insert({innerAt, scaledAt});
  }
}

std::string Emitter::erf(const Node &node) {
  auto it = geluAt.find(currentIndex);
  if (it == geluAt.end())
    return error(node, "Erf is imported only inside GELU (x * 0.5 * (1 + "
                       "erf(x / sqrt(2))), as PyTorch exports it)");
  return gelu(node, it->second);
}

std::string Emitter::gelu(const Node &node, const GeluMatch &match) {
  auto v = values.find(match.x);
  if (v == values.end() || v->second.ssa.empty())
    return error(node, "the GELU's input is not a value mpc imported");
  Node end = graph.nodes[match.end];
  TensorType type;
  if (auto e = outputType(end, 0, type); !e.empty())
    return e;
  std::string ssa = fresh();
  line(ssa + " = mpc.gelu " + v->second.ssa +
       (match.tanh ? " {approximate}" : "") + " : " + mlirType(v->second.type));
  values[end.outputs[0]] = Value{ssa, type, {}, false};
  return "";
}

bool Emitter::foldInts(const Node &node, std::string &err) {
  std::vector<std::vector<int64_t>> in;
  std::vector<TensorType> types;
  if (node.opType == "Shape") {
    auto it = values.find(node.inputs.empty() ? "" : node.inputs[0]);
    if (it == values.end())
      return false;
    const std::vector<int64_t> &dims = it->second.type.dims;
    int64_t rank = static_cast<int64_t>(dims.size());
    int64_t start = intAttr(node, "start", 0), end = intAttr(node, "end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    Value v;
    v.constantInts = true;
    for (int64_t d = start; d < end; ++d)
      v.ints.push_back(dims[d]);
    v.type = TensorType{"int64", {static_cast<int64_t>(v.ints.size())}, true};
    values[node.outputs[0]] = v;
    return true;
  }
  if (node.opType == "Range" && node.inputs.size() == 3) {
    // torch.arange of shape entries: start, limit, delta, all constant.
    std::vector<int64_t> bound[3];
    for (int k = 0; k < 3; ++k) {
      auto it = values.find(node.inputs[k]);
      if (it == values.end() || !it->second.constantInts ||
          it->second.ints.size() != 1)
        return false;
      bound[k] = it->second.ints;
    }
    int64_t start = bound[0][0], limit = bound[1][0], delta = bound[2][0];
    if (delta == 0) {
      err = error(node, "a delta of 0");
      return true;
    }
    // ceil((limit - start) / delta) elements, at least 0, in 128 bits.
    __int128 span = static_cast<__int128>(limit) - start;
    __int128 n =
        span / delta + (span % delta != 0 && (span > 0) == (delta > 0));
    if (n < 1 || n > (int64_t(1) << 24)) {
      err = error(node, "a range of " +
                            std::to_string(static_cast<long long>(
                                std::max<__int128>(n, 0))) +
                            " values (1 to 2^24 are imported)");
      return true;
    }
    Value v;
    v.constantInts = true;
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i)
      v.ints.push_back(start + i * delta);
    v.type = TensorType{"int64", {static_cast<int64_t>(n)}, true};
    values[node.outputs[0]] = v;
    return true;
  }
  static const std::set<std::string> folded = {
      "Gather",    "Unsqueeze", "Squeeze", "Concat",     "Cast",    "Mul",
      "Div",       "Add",       "Sub",     "Identity",   "Reshape", "Slice",
      "Transpose", "Equal",     "Where",   "ReduceProd", "Expand",  "Trilu"};
  if (!folded.count(node.opType) || node.inputs.empty())
    return false;
  // A graph output is computed by the op's emitter, not folded away.
  for (const auto &[name, type] : graph.outputs)
    if (name == node.outputs[0])
      return false;
  for (const std::string &name : node.inputs) {
    if (name.empty())
      continue;
    auto it = values.find(name);
    if (it == values.end() || !it->second.constantInts)
      return false;
    in.push_back(it->second.ints);
    types.push_back(it->second.type);
  }
  TensorType type;
  auto t = graph.types.find(node.outputs[0]);
  if (t == graph.types.end() || !t->second.hasShape)
    return false;
  type = t->second;
  Value v;
  v.constantInts = true;
  v.type = type;
  const std::string &op = node.opType;
  if (op == "Gather") {
    if (types[0].dims.size() != 1)
      return false;
    for (int64_t i : in[1]) {
      int64_t n = static_cast<int64_t>(in[0].size());
      i = i < 0 ? i + n : i;
      if (i < 0 || i >= n) {
        err = error(node, "index " + std::to_string(i) + " is out of range");
        return true;
      }
      v.ints.push_back(in[0][i]);
    }
  } else if (op == "Concat") {
    for (const auto &part : in)
      v.ints.insert(v.ints.end(), part.begin(), part.end());
  } else if (op == "Cast" && isFloat(type.element)) {
    // A shape entry used as a number (a head size's square root): a float
    // constant from here on.
    std::string list;
    for (size_t i = 0; i < in[0].size(); ++i)
      list += (i ? ", " : "") + floatLiteral(static_cast<double>(in[0][i]));
    Value f;
    f.type = type;
    f.ssa = fresh();
    line(f.ssa + " = mpc.constant dense<" +
         (type.dims.empty() ? list : "[" + list + "]") +
         "> : " + mlirType(type));
    values[node.outputs[0]] = f;
    return true;
  } else if (op == "Unsqueeze" || op == "Squeeze" || op == "Cast" ||
             op == "Identity" || op == "Reshape") {
    v.ints = in[0];
  } else if (op == "Expand") {
    // Constant integers broadcast to a constant shape (positions expanded
    // to the batch).
    auto dims = broadcastShape(types[0].dims, in[1]);
    if (!dims || types[0].dims.size() > dims->size())
      return false;
    v.type = TensorType{types[0].element, *dims, true};
    int64_t rank = static_cast<int64_t>(dims->size()),
            offset = rank - static_cast<int64_t>(types[0].dims.size());
    int64_t total = 1;
    for (int64_t d : *dims)
      total *= d;
    if (total > (int64_t(1) << 24))
      return false;
    for (int64_t k = 0; k < total; ++k) {
      int64_t rest = k, at = 0, stride = 1;
      for (int64_t d = rank - 1; d >= 0; --d) {
        int64_t c = rest % (*dims)[static_cast<size_t>(d)];
        rest /= (*dims)[static_cast<size_t>(d)];
        if (d >= offset) {
          int64_t size = types[0].dims[static_cast<size_t>(d - offset)];
          at += (size == 1 ? 0 : c) * stride;
          stride *= size;
        }
      }
      v.ints.push_back(in[0][static_cast<size_t>(at)]);
    }
  } else if (op == "ReduceProd") {
    // The product of shape entries (torch.var's element count): over the
    // `axes` attribute's axes, or all; overflow-checked.
    const std::vector<int64_t> &dims = types[0].dims;
    int64_t rank = static_cast<int64_t>(dims.size());
    std::vector<bool> reduced(static_cast<size_t>(rank), false);
    auto axes = node.attributes.find("axes");
    if (axes == node.attributes.end() || axes->second.ints.empty())
      reduced.assign(static_cast<size_t>(rank), true);
    else
      for (int64_t a : axes->second.ints) {
        if (a < -rank || a >= rank)
          return false;
        reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
      }
    // Output element of each input element: its index with the reduced
    // axes' coordinates dropped.
    std::vector<int64_t> outDims;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[static_cast<size_t>(d)])
        outDims.push_back(dims[static_cast<size_t>(d)]);
    int64_t outCount = 1;
    for (int64_t d : outDims)
      outCount *= d;
    v.ints.assign(static_cast<size_t>(outCount), 1);
    for (size_t i = 0; i < in[0].size(); ++i) {
      int64_t rest = static_cast<int64_t>(i), o = 0, stride = 1;
      for (int64_t d = rank - 1; d >= 0; --d) {
        int64_t c = rest % dims[static_cast<size_t>(d)];
        rest /= dims[static_cast<size_t>(d)];
        if (!reduced[static_cast<size_t>(d)]) {
          o += c * stride;
          stride *= dims[static_cast<size_t>(d)];
        }
      }
      int64_t r;
      if (__builtin_mul_overflow(v.ints[static_cast<size_t>(o)], in[0][i],
                                 &r)) {
        err = error(node, "the product overflows 64 bits");
        return true;
      }
      v.ints[static_cast<size_t>(o)] = r;
    }
    if (static_cast<int64_t>(v.ints.size()) != elementCount(type))
      return false;
  } else if (op == "Trilu") {
    // A constant mask's triangle (torch.triu of a boolean ones): element
    // (i, j) of the last two axes kept where j >= i + k (j <= i + k for
    // the lower one), the rest 0.
    const std::vector<int64_t> &dims = types[0].dims;
    size_t rank = dims.size();
    if (rank < 2 || in.size() > 2 || (in.size() == 2 && in[1].size() != 1) ||
        static_cast<int64_t>(in[0].size()) != elementCount(types[0]) ||
        dims != type.dims)
      return false;
    int64_t k = in.size() == 2 ? in[1][0] : 0;
    int64_t rows = dims[rank - 2], cols = dims[rank - 1];
    k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
    bool upper = intAttr(node, "upper", 1) != 0;
    v.ints = in[0];
    for (size_t e = 0; e < v.ints.size(); ++e) {
      int64_t j = static_cast<int64_t>(e) % cols,
              i = static_cast<int64_t>(e) / cols % rows;
      if (upper ? j < i + k : j > i + k)
        v.ints[e] = 0;
    }
  } else if (op == "Equal" || op == "Where") {
    // PyTorch's expand(n, -1): the -1 entries of a shape replaced by ones
    // (Equal, Where), element by element, a single element broadcast.
    size_t n = 0;
    for (const auto &part : in)
      n = std::max(n, part.size());
    for (const auto &part : in)
      if (part.size() != n && part.size() != 1)
        return false;
    auto at = [&](size_t k, size_t i) {
      return in[k][in[k].size() == 1 ? 0 : i];
    };
    for (size_t i = 0; i < n; ++i)
      v.ints.push_back(op == "Equal" ? at(0, i) == at(1, i)
                                     : (at(0, i) ? at(1, i) : at(2, i)));
  } else if (op == "Slice" || op == "Transpose") {
    // Row-major index arithmetic over the constant's dims (the padding
    // lists of PyTorch's F.pad export: reshaped to [n, 2], rows reversed
    // by a step of -1, transposed, flattened).
    const std::vector<int64_t> &dims = types[0].dims;
    int64_t rank = static_cast<int64_t>(dims.size());
    if (elementCount(types[0]) != static_cast<int64_t>(in[0].size()) ||
        elementCount(type) > static_cast<int64_t>(in[0].size()) ||
        static_cast<int64_t>(type.dims.size()) != rank)
      return false;
    std::vector<int64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * dims[d + 1];
    // For each output axis: the input axis it reads, its first index and
    // its step.
    std::vector<int64_t> from(rank), first(rank, 0), step(rank, 1);
    for (int64_t d = 0; d < rank; ++d)
      from[d] = d;
    if (op == "Transpose") {
      auto perm = node.attributes.find("perm");
      if (perm == node.attributes.end() ||
          static_cast<int64_t>(perm->second.ints.size()) != rank)
        return false;
      for (int64_t d = 0; d < rank; ++d) {
        from[d] = perm->second.ints[d];
        if (from[d] < 0 || from[d] >= rank)
          return false;
      }
    } else {
      if (in.size() < 3)
        return false;
      std::vector<int64_t> axes;
      for (size_t i = 0; i < in[1].size(); ++i)
        axes.push_back(in.size() > 3 ? in[3][i] : static_cast<int64_t>(i));
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (a < 0 || a >= rank)
          return false;
        int64_t s = in.size() > 4 ? in[4][i] : 1, n = dims[a];
        if (s == 0)
          return false;
        // ONNX's clamping of the start: [0, n] forwards, [0, n-1] back.
        int64_t b =
            in[1][i] < 0 ? std::max<int64_t>(in[1][i], -n) + n : in[1][i];
        b = s > 0 ? std::min(b, n) : std::min(b, n - 1);
        first[a] = b;
        step[a] = s;
      }
    }
    std::vector<int64_t> index(rank, 0);
    for (int64_t k = 0, total = elementCount(type); k < total; ++k) {
      int64_t at = 0;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t i = first[from[d]] + index[d] * step[from[d]];
        if (i < 0 || i >= dims[from[d]])
          return false;
        at += i * strides[from[d]];
      }
      v.ints.push_back(in[0][at]);
      for (int64_t d = rank - 1; d >= 0 && ++index[d] == type.dims[d]; --d)
        index[d] = 0;
    }
  } else {
    // Elementwise arithmetic with broadcasting of a single element.
    if (in.size() != 2)
      return false;
    size_t n = std::max(in[0].size(), in[1].size());
    for (size_t i = 0; i < n; ++i) {
      int64_t a = in[0][in[0].size() == 1 ? 0 : i],
              b = in[1][in[1].size() == 1 ? 0 : i];
      if (op == "Div" && b == 0) {
        err = error(node, "division by zero in shape arithmetic");
        return true;
      }
      int64_t r;
      bool overflow = op == "Mul"   ? __builtin_mul_overflow(a, b, &r)
                      : op == "Add" ? __builtin_add_overflow(a, b, &r)
                      : op == "Sub"
                          ? __builtin_sub_overflow(a, b, &r)
                          : (a == INT64_MIN && b == -1) || ((r = a / b), false);
      if (overflow) {
        err = error(node, "shape arithmetic overflows 64 bits");
        return true;
      }
      v.ints.push_back(r);
    }
  }
  // A dimension ONNX's inference left unknown (after a folded Range): the
  // one that makes the count.
  if (std::count(v.type.dims.begin(), v.type.dims.end(), -1) == 1) {
    int64_t known = 1;
    for (int64_t d : v.type.dims)
      known *= d == -1 ? 1 : d;
    int64_t count = static_cast<int64_t>(v.ints.size());
    if (known <= 0 || count % known != 0)
      return false;
    for (int64_t &d : v.type.dims)
      if (d == -1)
        d = count / known;
  }
  if (std::count(v.type.dims.begin(), v.type.dims.end(), -1) ||
      elementCount(v.type) != static_cast<int64_t>(v.ints.size()))
    return false;
  values[node.outputs[0]] = v;
  return true;
}

std::map<std::pair<std::string, int>, Emitter::Emit> Emitter::emitters() {
  auto u = [this](const char *op) {
    return [this, op](const Node &n) { return unary(n, op); };
  };
  auto b = [this](const char *op) {
    return [this, op](const Node &n) { return binary(n, op); };
  };
  return {
      {{"Relu", 14}, u("relu")},
      {{"Sigmoid", 13}, u("sigmoid")},
      {{"Tanh", 13},
       [this, tanh = u("tanh")](const Node &n) {
         auto it = geluAt.find(currentIndex);
         return it != geluAt.end() ? gelu(n, it->second) : tanh(n);
       }},
      {{"Exp", 13}, u("exp")},
      {{"Log", 13}, u("log")},
      {{"Sqrt", 13}, u("sqrt")},
      {{"Neg", 13}, u("neg")},
      {{"Sin", 7}, u("sin")},
      {{"Cos", 7}, u("cos")},
      {{"Add", 14}, b("add")},
      {{"Sub", 14}, b("sub")},
      {{"Mul", 14}, b("mul")},
      {{"Div", 14}, b("div")},
      {{"Pow", 15}, b("pow")},
      {{"Equal", 13}, [this](const Node &n) { return compare(n, "eq"); }},
      {{"Less", 13}, [this](const Node &n) { return compare(n, "lt"); }},
      {{"LessOrEqual", 16}, [this](const Node &n) { return compare(n, "le"); }},
      {{"Greater", 13}, [this](const Node &n) { return compare(n, "gt"); }},
      {{"GreaterOrEqual", 16},
       [this](const Node &n) { return compare(n, "ge"); }},
      {{"Not", 1}, [this](const Node &n) { return logicalNot(n); }},
      {{"And", 7}, [this](const Node &n) { return logical(n, Logical::And); }},
      {{"Or", 7}, [this](const Node &n) { return logical(n, Logical::Or); }},
      {{"Xor", 7}, [this](const Node &n) { return logical(n, Logical::Xor); }},
      {{"Where", 16}, [this](const Node &n) { return where(n); }},
      {{"MatMul", 13}, [this](const Node &n) { return matmul(n); }},
      {{"Gemm", 13}, [this](const Node &n) { return gemm(n); }},
      {{"Softmax", 13},
       [this](const Node &n) { return softmax(n, "softmax"); }},
      {{"LogSoftmax", 13},
       [this](const Node &n) { return softmax(n, "log_softmax"); }},
      {{"Reshape", 14}, [this](const Node &n) { return reshapeTo(n); }},
      {{"Flatten", 13}, [this](const Node &n) { return reshapeTo(n); }},
      {{"Transpose", 13}, [this](const Node &n) { return transpose(n); }},
      {{"DepthToSpace", 13},
       [this](const Node &n) { return depthSpace(n, /*toSpace=*/true); }},
      {{"SpaceToDepth", 13},
       [this](const Node &n) { return depthSpace(n, /*toSpace=*/false); }},
      {{"Identity", 16}, [this](const Node &n) { return identity(n); }},
      {{"Constant", 13}, [this](const Node &n) { return constant(n); }},
      {{"Dropout", 13}, [this](const Node &n) { return dropout(n); }},
      {{"LayerNormalization", 17},
       [this](const Node &n) { return layerNorm(n); }},
      {{"Gather", 13}, [this](const Node &n) { return gather(n); }},
      {{"GatherElements", 13},
       [this](const Node &n) { return gatherElements(n); }},
      {{"ReduceMean", 13},
       [this](const Node &n) { return reduce(n, "reduce_mean", false); }},
      {{"ReduceSum", 13},
       [this](const Node &n) { return reduce(n, "reduce_sum", true); }},
      {{"ReduceMax", 13},
       [this](const Node &n) { return reduce(n, "reduce_max", false); }},
      {{"Reciprocal", 13}, [this](const Node &n) { return activation(n); }},
      {{"Expand", 13}, [this](const Node &n) { return expand(n); }},
      {{"Pad", 13}, [this](const Node &n) { return pad(n); }},
      {{"Abs", 13}, [this](const Node &n) { return activation(n); }},
      {{"Cast", 13}, [this](const Node &n) { return cast(n); }},
      {{"Concat", 13}, [this](const Node &n) { return concat(n); }},
      {{"Slice", 13}, [this](const Node &n) { return slice(n); }},
      {{"Split", 13}, [this](const Node &n) { return split(n); }},
      {{"LeakyRelu", 16}, [this](const Node &n) { return activation(n); }},
      {{"Clip", 13}, [this](const Node &n) { return activation(n); }},
      {{"HardSigmoid", 6}, [this](const Node &n) { return activation(n); }},
      {{"HardSwish", 14}, [this](const Node &n) { return activation(n); }},
      {{"Elu", 6}, [this](const Node &n) { return activation(n); }},
      {{"Celu", 12}, [this](const Node &n) { return activation(n); }},
      {{"Shrink", 9}, [this](const Node &n) { return activation(n); }},
      {{"Selu", 6}, [this](const Node &n) { return activation(n); }},
      {{"Softplus", 1}, [this](const Node &n) { return activation(n); }},
      {{"Softsign", 1}, [this](const Node &n) { return activation(n); }},
      {{"PRelu", 16}, [this](const Node &n) { return activation(n); }},
      {{"Max", 13}, [this](const Node &n) { return variadic(n); }},
      {{"Min", 13}, [this](const Node &n) { return variadic(n); }},
      {{"Sum", 13}, [this](const Node &n) { return variadic(n); }},
      {{"Mean", 13}, [this](const Node &n) { return variadic(n); }},
      {{"ReduceMin", 13},
       [this](const Node &n) { return reduce(n, "min", false); }},
      {{"ReduceLogSumExp", 13},
       [this](const Node &n) { return reduce(n, "logsumexp", false); }},
      {{"Sign", 13}, [this](const Node &n) { return activation(n); }},
      {{"ReduceL2", 13},
       [this](const Node &n) { return reduce(n, "l2", false); }},
      {{"ReduceSumSquare", 13},
       [this](const Node &n) { return reduce(n, "sum_square", false); }},
      {{"Conv", 11},
       [this](const Node &n) {
         return windowOp(n, [this](const Node &m) { return conv(m); });
       }},
      {{"BatchNormalization", 15},
       [this](const Node &n) { return batchNorm(n); }},
      {{"InstanceNormalization", 6},
       [this](const Node &n) { return instanceNorm(n); }},
      {{"MaxPool", 12},
       [this](const Node &n) {
         return windowOp(n, [this](const Node &m) { return pool(m, true); });
       }},
      {{"AveragePool", 11},
       [this](const Node &n) {
         return windowOp(n, [this](const Node &m) { return pool(m, false); });
       }},
      {{"ConvTranspose", 11},
       [this](const Node &n) {
         return windowOp(n, [this](const Node &m) { return convTranspose(m); });
       }},
      {{"Resize", 13}, [this](const Node &n) { return resize(n); }},
      {{"SoftmaxCrossEntropyLoss", 13},
       [this](const Node &n) { return crossEntropy(n, false); }},
      {{"NegativeLogLikelihoodLoss", 13},
       [this](const Node &n) { return crossEntropy(n, true); }},
      {{"ConstantOfShape", 9},
       [this](const Node &n) { return constantOfShape(n); }},
      {{"GlobalAveragePool", 1},
       [this](const Node &n) { return globalPool(n, "reduce_mean"); }},
      {{"GlobalMaxPool", 1},
       [this](const Node &n) { return globalPool(n, "reduce_max"); }},
      {{"Unsqueeze", 13}, [this](const Node &n) { return reshapeTo(n); }},
      {{"Squeeze", 13}, [this](const Node &n) { return reshapeTo(n); }},
      {{"Erf", 13}, [this](const Node &n) { return erf(n); }},
      {{"Einsum", 12}, [this](const Node &n) { return einsum(n); }},
      {{"Trilu", 14}, [this](const Node &n) { return trilu(n); }},
      {{"EyeLike", 9}, [this](const Node &n) { return eyeLike(n); }},
      {{"LSTM", 14}, [this](const Node &n) { return recurrent(n); }},
      {{"GRU", 14}, [this](const Node &n) { return recurrent(n); }},
      {{"Tile", 13}, [this](const Node &n) { return tile(n); }},
      {{"CumSum", 14}, [this](const Node &n) { return cumSum(n); }},
  };
}

/// sum(output * w) in f32, w fixed weights in +-[0.25, 1] (a golden-ratio
/// sequence, signs alternating in runs of three): the gradient checks'
/// loss, which weights every element of the output differently and none
/// by zero.
std::string Emitter::testLoss(const Value &output) {
  currentIndex = graph.nodes.size();
  Value x = output;
  if (x.type.element != "float") {
    TensorType f32 = x.type;
    f32.element = "float";
    std::string cast = fresh();
    line(cast + " = mpc.cast " + x.ssa + " : " + mlirType(x.type) + " -> " +
         mlirType(f32));
    x = Value{cast, f32, {}, false};
  }
  std::vector<char> bytes;
  int64_t count = elementCount(x.type);
  for (int64_t i = 0; i < count; ++i) {
    double frac = std::fmod(double(i + 1) * 0.6180339887498949, 1.0);
    float w = float((0.25 + 0.75 * frac) * ((i / 3) % 2 ? -1 : 1));
    const char *p = reinterpret_cast<const char *>(&w);
    bytes.insert(bytes.end(), p, p + 4);
  }
  std::string type = mlirType(x.type);
  std::string weights = fresh(), product = fresh();
  line(weights + " = mpc.constant dense<\"" + hexOf(bytes) + "\"> : " + type);
  line(product + " = mpc.mul " + x.ssa + ", " + weights + " : " + type + ", " +
       type);
  std::string sum = product;
  if (!x.type.dims.empty()) {
    std::vector<int64_t> dims;
    for (size_t d = 0; d < x.type.dims.size(); ++d)
      dims.push_back(int64_t(d));
    sum = fresh();
    line(sum + " = mpc.reduce_sum " + product +
         " {dims = array<i64: " + join(dims) + ">} : " + type);
  }
  return sum;
}

std::string Emitter::run(std::string &mlir) {
  llvm::Regex trainable("^(" + options.trainable + ")$");
  std::string regexError;
  if (!trainable.isValid(regexError))
    return "--trainable: " + regexError;
  llvm::Regex frozen("^(" + options.frozen + ")$");
  if (!frozen.isValid(regexError))
    return "--frozen: " + regexError;
  // Initializers: float ones matching --trainable become globals named
  // after the ONNX tensor (the checkpoint keys), the others constants.
  std::string loads;
  int argIndex = 0;
  for (const TensorValue &t : graph.initializers) {
    Value v;
    v.type = t.type;
    if (t.type.element == "int64" || t.type.element == "int32" ||
        t.type.element == "bool") { // compile-time values (Dropout's mode)
      v.constantInts = true;
      v.ints = intsOf(t);
      values[t.name] = v;
      continue;
    }
    if (!isFloat(t.type.element))
      return "initializer '" + t.name + "' has element type " + t.type.element +
             ", which mpc does not import";
    v.ssa = "%w" + std::to_string(argIndex++);
    std::string type = mlirType(t.type);
    // The value is a placeholder marked with the initializer's index,
    // which fillWeights replaces with its bytes after parsing: the
    // weights, most of a large model, never pass through text.
    size_t index = static_cast<size_t>(&t - graph.initializers.data());
    std::string marker = t.bytes.empty() ? std::string()
                                         : std::string(kWeightMarker) + " = " +
                                               std::to_string(index) + " : i64";
    if (trainable.match(t.name)) {
      globalNames.insert(t.name);
      bool isFrozen = !options.frozen.empty() && frozen.match(t.name);
      // A float buffer holding -inf (a causal mask PyTorch registered) is
      // an initializer like the weights; trained, its finite entries would
      // move. No weight holds an infinity or a NaN: such an initializer
      // is kept frozen, as PyTorch keeps the buffer.
      if (!isFrozen && holdsNonFinite(t)) {
        isFrozen = true;
        notes.push_back("initializer '" + t.name + "' " + type +
                        " holds infinities or NaNs: kept frozen (a mask or "
                        "buffer, not a weight), not trained");
      }
      globals +=
          mutableGlobal(t.name, "dense<0.0>", type, t.name, isFrozen, marker);
      loads += "    " + v.ssa + " = ml_program.global_load @" + quoted(t.name) +
               " : " + type + at(t.name, 0) + "\n";
    } else {
      loads += "    " + v.ssa + " = mpc.constant " +
               (marker.empty() ? "" : "{" + marker + "} ") +
               "dense<0.0> : " + type + at(t.name, 0) + "\n";
    }
    values[t.name] = v;
  }
  // Arguments: the graph's inputs in order, labels last.
  std::string args;
  Value labels;
  bool haveLabels = false;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const auto &[name, type] = graph.inputs[i];
    if (!options.labels.empty() && name == options.labels) {
      labels = Value{"%labels", type, {}, false};
      haveLabels = true;
      continue;
    }
    if (options.testCase) {
      if (i >= options.testInputs.size())
        return "the test case has no input_" + std::to_string(i) + ".pb";
      const TensorValue &t = options.testInputs[i];
      Value v{"", t.type, {}, false};
      if (t.type.element == "int64" || t.type.element == "int32") {
        v.constantInts = true;
        v.ints = intsOf(t);
      } else if (t.type.element == "bool") {
        std::vector<std::string> items;
        for (char c : t.bytes)
          items.push_back(c ? "true" : "false");
        v.ssa = "%a" + std::to_string(i);
        loads += "    " + v.ssa + " = mpc.constant dense<" +
                 nested(items, t.type.dims) + "> : " + mlirType(t.type) +
                 at(name, 0) + "\n";
      } else if (isFloat(t.type.element) && elementCount(t.type) == 0) {
        // An empty optional input (Resize's roi): no value to load.
      } else if (isFloat(t.type.element) && options.testGradients) {
        v.ssa = "%a" + std::to_string(i);
        std::string type = mlirType(t.type);
        globals += mutableGlobal("input:" + name, denseOf(t), type, name);
        globals += mutableGlobal("initial:" + name, denseOf(t), type, name,
                                 /*frozen=*/true);
        loads += "    " + v.ssa + " = ml_program.global_load @" +
                 quoted("input:" + name) + " : " + type + at(name, 0) + "\n";
      } else if (isFloat(t.type.element)) {
        v.ssa = "%a" + std::to_string(i);
        loads += "    " + v.ssa + " = mpc.constant " + denseOf(t) + " : " +
                 mlirType(t.type) + at(name, 0) + "\n";
      } else {
        return "input '" + name + "' has element type " + t.type.element +
               ", which mpc does not import";
      }
      values[name] = v;
      continue;
    }
    if (mlirElement(type.element).empty())
      return "input '" + name + "' has element type " + type.element +
             ", which mpc does not import";
    // Integer inputs (token ids) are fed as i32, as the runner reads them.
    TensorType argType = type;
    if (argType.element == "int64")
      argType.element = "int32";
    Value v{"%a" + std::to_string(i), argType, {}, false};
    args += (args.empty() ? "" : ", ") + v.ssa + ": " + mlirType(argType) +
            " {mpc.name = " + quoted(name) + "}" + at(name, 0);
    values[name] = v;
  }
  // The labels: a graph input no node reads (an export with its loss's
  // input left over), or a new argument (exports without one).
  if (haveLabels)
    for (size_t i = 0; i < graph.nodes.size(); ++i)
      if (const Node &node = graph.nodes[i];
          llvm::is_contained(node.inputs, options.labels)) {
        enterNode(i);
        return error(node, "reads '" + options.labels +
                               "', which --labels makes the loss's labels: "
                               "name the labels' own input (one no node "
                               "reads) or a new name");
      }
  auto table = emitters();
  findErfGelus();
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node &node = graph.nodes[i];
    if (covered.count(i))
      continue; // part of a GELU, emitted at its Erf
    enterNode(i);
    if (!node.domain.empty() && node.domain != "ai.onnx")
      return error(node, "domain '" + node.domain + "' is not imported");
    std::string foldError;
    if (foldInts(node, foldError)) {
      if (!foldError.empty())
        return foldError;
      continue;
    }
    auto it = table.find({node.opType, node.sinceVersion});
    if (it == table.end())
      return error(node, "not supported by mpc-import-onnx (docs/Import.md "
                         "lists what is)");
    if (std::string e = it->second(node); !e.empty())
      return e;
  }
  for (const Store &store : stores) {
    currentName = store.global;
    body += "    ml_program.global_store @" + quoted(store.global) + " = " +
            store.ssa + " : " + store.type + at(store.global, 0) + "\n";
  }
  for (const auto &[name, row] : options.paddingIdx)
    if (!paddedTables.count(name))
      return "--padding-idx " + name + "=" + std::to_string(row) +
             ": no embedding (a Gather of integer indices) reads '" + name +
             "'";
  // Results: the graph's outputs, or the loss of the first.
  std::string results, resultTypes;
  if (options.testCase) {
    std::string loss;
    for (size_t i = 0; i < graph.outputs.size(); ++i) {
      const std::string &name = graph.outputs[i].first;
      auto it = values.find(name);
      if (it == values.end() || it->second.ssa.empty())
        return notComputed(name);
      if (i >= options.testOutputs.size())
        return "the test case has no output_" + std::to_string(i) + ".pb";
      TensorValue expected = options.testOutputs[i];
      std::string type = mlirType(it->second.type);
      if (mlirType(expected.type) != type)
        return "output '" + name + "' is " + type + "; the test case expects " +
               mlirType(expected.type);
      std::string ssa = it->second.ssa;
      if (expected.type.element == "bool") {
        // Masks are compared as 0.0 and 1.0 in f32.
        TensorType f32 = expected.type;
        f32.element = "float";
        std::vector<char> bytes;
        for (char c : expected.bytes) {
          float v = c ? 1.0f : 0.0f;
          const char *p = reinterpret_cast<const char *>(&v);
          bytes.insert(bytes.end(), p, p + 4);
        }
        expected.type = f32;
        expected.bytes = bytes;
        currentName = name;
        ssa = maskAsNumbers(ssa, it->second.type, "float");
        type = mlirType(f32);
      }
      globals += mutableGlobal("output:" + name, "dense<0.0>", type, name);
      globals +=
          mutableGlobal("expected:" + name, denseOf(expected), type, name);
      currentName = name;
      body += "    ml_program.global_store @" + quoted("output:" + name) +
              " = " + ssa + " : " + type + at(name, 0) + "\n";
      if (options.testGradients && loss.empty() &&
          isFloat(it->second.type.element)) // not a mask
        loss = testLoss(it->second);
    }
    args = "%unused: tensor<1xf32> {mpc.name = \"unused\"}";
    if (loss.empty()) {
      body += "    %zero = mpc.constant dense<0.0> : tensor<f32>\n";
      loss = "%zero";
    }
    results = loss;
    resultTypes = "tensor<f32>";
  } else if (!options.loss.empty()) {
    // The outputs the loss is of: those --loss-output names, or the
    // graph's single one.
    std::vector<std::pair<std::string, double>> terms = options.lossOutputs;
    // The first 8 outputs' names.
    std::string names;
    for (size_t i = 0; i < graph.outputs.size() && i < 8; ++i)
      names += (i ? ", '" : "'") + graph.outputs[i].first + "'";
    if (graph.outputs.size() > 8)
      names += ", ...";
    if (terms.empty() && graph.outputs.size() != 1)
      return "--loss needs a graph with one output (the logits); this one "
             "has " +
             std::to_string(graph.outputs.size()) +
             (names.empty()
                  ? std::string()
                  : " (" + names +
                        "): name the ones the loss is of, each with its "
                        "weight, with --loss-output NAME[=WEIGHT] "
                        "(torchvision's GoogLeNet: --loss-output logits "
                        "--loss-output aux1=0.3 --loss-output aux2=0.3, "
                        "weighed as in its paper)");
    if (terms.empty())
      terms.emplace_back(graph.outputs[0].first, 1.0);
    std::vector<const Value *> outputs;
    for (const auto &term : terms) {
      const std::string &name = term.first;
      if (!llvm::any_of(graph.outputs,
                        [&](const auto &o) { return o.first == name; }))
        return "--loss-output '" + name +
               "' is not an output of the graph; its outputs are " + names;
      auto found = values.find(name);
      if (found == values.end() || found->second.ssa.empty())
        return notComputed(name);
      const Value &logits = found->second;
      if (!isFloat(logits.type.element))
        return "--loss " + options.loss + " needs a floating-point output; '" +
               name + "' is " + mlirType(logits.type);
      if (!outputs.empty() && logits.type.dims != outputs[0]->type.dims)
        return "the outputs of --loss-output share the labels, so they must "
               "have one shape; '" +
               terms[0].first + "' is " + mlirType(outputs[0]->type) + ", '" +
               name + "' is " + mlirType(logits.type);
      // The weight as the loss's type holds it: a normal number (one
      // that rounds to infinity or to 0, or loses bits as a subnormal,
      // would poison or lose the head).
      auto [smallest, largest] = normalRange(logits.type.element);
      if (term.second < smallest || term.second > largest)
        return "--loss-output " + name + "=" + shortNumber(term.second) +
               ": the weight must be a normal " +
               mlirElement(logits.type.element) + " number, from " +
               shortNumber(smallest) + " to " + shortNumber(largest);
      if (!outputs.empty() && logits.type.element != outputs[0]->type.element)
        return "the outputs of --loss-output must have one element type; '" +
               terms[0].first + "' is " + mlirType(outputs[0]->type) + ", '" +
               name + "' is " + mlirType(logits.type);
      outputs.push_back(&logits);
    }
    const TensorType &outputType = outputs[0]->type;
    // cross_entropy: integer class labels, one per row of [batch,
    // classes] logits, or per position of [batch, classes, d...] ones (a
    // segmentation's, PyTorch's K-dimensional cross_entropy); mse and
    // bce_with_logits: float targets shaped like the output (a UNet's
    // mask).
    bool classes = options.loss == "cross_entropy";
    int64_t rank = static_cast<int64_t>(outputType.dims.size());
    if (classes && rank < 2)
      return "--loss cross_entropy needs [batch, classes] or [batch, "
             "classes, d...] logits; '" +
             terms[0].first + "' is " + mlirType(outputType);
    TensorType labelType = outputType;
    // [N, C, d...]: the classes moved last, [N, d..., C], rows of the op.
    std::vector<int64_t> perm{0};
    for (int64_t d = 2; d < rank; ++d)
      perm.push_back(d);
    perm.push_back(1);
    TensorType rowsType = outputType;
    if (classes) {
      labelType = TensorType{"int32", outputType.dims, true};
      labelType.dims.erase(labelType.dims.begin() + 1);
      for (int64_t d = 0; d < rank; ++d)
        rowsType.dims[d] = outputType.dims[perm[d]];
    }
    args += (args.empty() ? "" : ", ") + std::string("%labels: ") +
            mlirType(labelType) + " {mpc.name = " + quoted(options.labels) +
            "}" + at(options.labels, 0);
    currentName = "loss";
    currentIndex = graph.nodes.size();
    std::string lossType = "tensor<" + mlirElement(outputType.element) + ">";
    std::string total;
    for (size_t i = 0; i < terms.size(); ++i) {
      std::string logits = outputs[i]->ssa;
      TensorType type = outputType;
      if (classes && rank > 2) {
        logits = transposeOf(logits, outputType, perm);
        type = rowsType;
      }
      std::string term = terms.size() == 1 ? "%loss" : fresh();
      std::string attrs = classes
                              ? crossEntropyAttrs(options.ignoreIndex,
                                                  options.labelSmoothing, false)
                              : "";
      // Where the loss is built from several (or weighted), the first
      // output's is what evaluation reports (mpc-eval-step), as PyTorch
      // evaluates GoogLeNet on its main logits alone.
      if (i == 0 && (terms.size() > 1 || terms[0].second != 1))
        attrs = attrs.empty()
                    ? " {mpc.eval_loss}"
                    : attrs.substr(0, attrs.size() - 1) + ", mpc.eval_loss}";
      line(term + " = mpc." + options.loss + " " + logits + ", %labels" +
           attrs + " : " + mlirType(type) + ", " + mlirType(labelType));
      if (terms[i].second != 1) {
        std::string weight = floatConstant(terms[i].second, outputType.element),
                    weighted = fresh();
        line(weighted + " = mpc.mul " + term + ", " + weight + " : " +
             lossType + ", " + lossType);
        term = weighted;
      }
      if (total.empty()) {
        total = term;
      } else {
        std::string sum = i + 1 == terms.size() ? "%loss" : fresh();
        line(sum + " = mpc.add " + total + ", " + term + " : " + lossType +
             ", " + lossType);
        total = sum;
      }
    }
    results = total;
    resultTypes = lossType;
  } else {
    if (graph.outputs.empty())
      return "the graph has no outputs: nothing to compute";
    for (const auto &[name, type] : graph.outputs) {
      auto it = values.find(name);
      if (it == values.end() || it->second.ssa.empty())
        return notComputed(name);
      results += (results.empty() ? "" : ", ") + it->second.ssa;
      resultTypes +=
          (resultTypes.empty() ? "" : ", ") + mlirType(it->second.type);
    }
  }
  mlir = "// Imported by mpc-import-onnx from " + options.sourceName +
         " (opset " + std::to_string(graph.originalOpset) + ", as " +
         std::to_string(kOpset) + ").\n" + globals + "\nfunc.func @" +
         options.function + "(" + args + ") -> (" + resultTypes + ") {\n" +
         loads + body + "    return " + results + " : " + resultTypes +
         at("return", graph.nodes.size() + 1) + "\n}" +
         at(options.function, 0) + "\n";
  return "";
}

} // namespace

std::string mpc::onnx_import::importGraph(const Graph &graph,
                                          const ImportOptions &options,
                                          std::string &mlir,
                                          std::vector<std::string> *notes) {
  Emitter emitter(graph, options);
  std::string err = emitter.run(mlir);
  if (notes)
    *notes = std::move(emitter.notes);
  return err;
}
