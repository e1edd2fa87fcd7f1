//===- OnnxModel.cpp - read, check, convert and type an ONNX model --------===//
//
// The only file that touches the ONNX library: built with exceptions and
// RTTI (which ONNX's checker and converter need), apart from the MLIR side.
//
//===----------------------------------------------------------------------===//

#include "OnnxModel.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA1.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace mpc::onnx_import {
namespace {

std::string lower(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string elementName(int32_t type) {
  if (!onnx::TensorProto_DataType_IsValid(type))
    return "unknown";
  return lower(onnx::TensorProto_DataType_Name(
      static_cast<onnx::TensorProto_DataType>(type)));
}

TensorType typeOf(const onnx::TypeProto &type) {
  TensorType out;
  if (!type.has_tensor_type())
    return out;
  const auto &tensor = type.tensor_type();
  out.element = elementName(tensor.elem_type());
  if (tensor.has_shape()) {
    out.hasShape = true;
    for (const auto &dim : tensor.shape().dim())
      out.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  }
  return out;
}

/// Copies a TensorProto's elements out (raw_data or the typed fields).
std::string copyTensor(const onnx::TensorProto &t, TensorValue &value) {
  value.name = t.name();
  value.type.element = elementName(t.data_type());
  value.type.hasShape = true;
  value.type.dims.assign(t.dims().begin(), t.dims().end());
  int bytes = elementBytes(value.type.element);
  if (bytes == 0)
    return "tensor '" + t.name() + "' has element type " + value.type.element +
           ", which mpc does not import";
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return "tensor '" + t.name() +
           "' keeps its data in an external file, which mpc does not read";
  int64_t count = 1;
  for (int64_t d : value.type.dims) {
    if (d < 0 || (d > 0 && count > (int64_t(1) << 40) / d))
      return "tensor '" + t.name() + "' has an invalid or huge shape";
    count *= d;
  }
  size_t size = static_cast<size_t>(count) * bytes;
  value.bytes.assign(size, 0);
  auto fill = [&](const auto &field, auto convert) -> std::string {
    if (static_cast<int64_t>(field.size()) != count)
      return "tensor '" + t.name() + "' holds " + std::to_string(field.size()) +
             " elements, its shape " + std::to_string(count);
    for (int64_t i = 0; i < count; ++i) {
      auto v = convert(field.Get(static_cast<int>(i)));
      std::memcpy(value.bytes.data() + i * bytes, &v, bytes);
    }
    return "";
  };
  if (t.has_raw_data()) {
    if (t.raw_data().size() != size)
      return "tensor '" + t.name() + "' holds " +
             std::to_string(t.raw_data().size()) + " bytes, its shape " +
             std::to_string(size);
    std::memcpy(value.bytes.data(), t.raw_data().data(), size);
    return "";
  }
  const std::string &e = value.type.element;
  if (e == "float")
    return fill(t.float_data(), [](float v) { return v; });
  if (e == "double")
    return fill(t.double_data(), [](double v) { return v; });
  if (e == "int64")
    return fill(t.int64_data(), [](int64_t v) { return v; });
  if (e == "int32")
    return fill(t.int32_data(), [](int32_t v) { return v; });
  if (e == "float16" || e == "bfloat16")
    return fill(t.int32_data(),
                [](int32_t v) { return static_cast<uint16_t>(v); });
  if (e == "bool" || e == "uint8" || e == "int8")
    return fill(t.int32_data(),
                [](int32_t v) { return static_cast<uint8_t>(v); });
  return "tensor '" + t.name() + "' stores " + e +
         " elements in a way mpc does not read";
}

/// The folder a file's relative references start from.
std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// A byte count or offset as ONNX's external data entries write it:
/// decimal digits only, at most 2^62.
bool parseByteCount(const std::string &text, uint64_t &out) {
  if (text.empty() || text.size() > 19)
    return false;
  out = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    out = out * 10 + static_cast<uint64_t>(c - '0');
  }
  return out <= (uint64_t(1) << 62);
}

/// The SHA-1 of the file at `path` (whose stat() is `status`) in
/// lower-case hex, each file hashed once (a model's tensors often share
/// one file) unless its size or time of change differ; "" when it cannot
/// be read.
std::string fileSha1(const std::string &path, const struct stat &status) {
  static std::map<std::string, std::string> digests;
  std::string key = path + '\0' + std::to_string(status.st_size) + '\0' +
                    std::to_string(status.st_mtim.tv_sec) + '.' +
                    std::to_string(status.st_mtim.tv_nsec);
  auto it = digests.find(key);
  if (it != digests.end())
    return it->second;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return "";
  llvm::SHA1 sha;
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    sha.update(llvm::StringRef(chunk.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad())
    return "";
  std::array<uint8_t, 20> digest = sha.final();
  return digests[key] = llvm::toHex(digest, /*LowerCase=*/true);
}

/// Reads the data of `t`, which ONNX's external data format keeps in a
/// file (the entries location, offset, length and checksum: the SHA-1 of
/// the whole file, checked where given), into `bytes`. `location` must stay
/// below `folder` (the model's): a relative path without "..", as ONNX's
/// checker requires since 1.13. The file's path goes into `files`.
std::string readExternal(const onnx::TensorProto &t, const std::string &folder,
                         std::vector<char> &bytes,
                         std::set<std::string> &files) {
  const std::string what =
      t.name().empty() ? "the tensor" : "tensor '" + t.name() + "'";
  std::string location, checksum;
  uint64_t offset = 0, length = 0;
  bool haveLocation = false, haveLength = false, haveChecksum = false;
  std::set<std::string> seen;
  for (const auto &e : t.external_data()) {
    if (!seen.insert(e.key()).second)
      return what + ": its external data gives '" + e.key() + "' twice";
    if (e.key() == "location") {
      location = e.value(), haveLocation = true;
    } else if (e.key() == "offset" || e.key() == "length") {
      uint64_t value = 0;
      if (!parseByteCount(e.value(), value))
        return what + ": its external data's " + e.key() + " '" + e.value() +
               "' is not a byte count";
      if (e.key() == "offset")
        offset = value;
      else
        length = value, haveLength = true;
    } else if (e.key() == "checksum") {
      checksum = e.value(), haveChecksum = true;
      if (checksum.size() != 40 || !llvm::all_of(checksum, llvm::isHexDigit))
        return what + ": its external data's checksum '" + checksum +
               "' is not a SHA-1 digest (40 hex digits)";
    } else {
      return what + ": its external data has the entry '" + e.key() +
             "', which mpc does not know (it reads location, offset, "
             "length and checksum)";
    }
  }
  if (!haveLocation || location.empty())
    return what + " keeps its data in an external file but names none (no "
                  "'location' entry)";
  bool escapes = location[0] == '/';
  for (size_t start = 0; start <= location.size();) {
    size_t end = location.find('/', start);
    if (end == std::string::npos)
      end = location.size();
    escapes = escapes || location.compare(start, end - start, "..") == 0;
    start = end + 1;
  }
  if (escapes)
    return what + ": its external data's location '" + location +
           "' is not below the model's folder (it must be a relative path "
           "without '..')";
  if (t.has_raw_data() || t.float_data_size() || t.int32_data_size() ||
      t.int64_data_size() || t.double_data_size() || t.string_data_size() ||
      t.uint64_data_size())
    return what +
           " keeps its data both in the model and in the external "
           "file '" +
           location + "'";
  std::string element = elementName(t.data_type());
  int elementSize = elementBytes(element);
  if (elementSize == 0)
    return what + " has element type " + element +
           ", which mpc does not import";
  uint64_t need = static_cast<uint64_t>(elementSize);
  for (int64_t d : t.dims()) {
    if (d < 0 ||
        (d > 0 && need > (uint64_t(1) << 42) / static_cast<uint64_t>(d)))
      return what + " has an invalid or huge shape";
    need *= static_cast<uint64_t>(d);
  }
  std::string file = folder + "/" + location;
  files.insert(file);
  struct stat status;
  if (stat(file.c_str(), &status) != 0)
    return what + ": cannot open its external data file '" + file +
           "': " + std::strerror(errno);
  if (!S_ISREG(status.st_mode))
    return what + ": its external data file '" + file +
           "' is not a regular file";
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return what + ": cannot open its external data file '" + file +
           "': " + std::strerror(errno);
  uint64_t size = static_cast<uint64_t>(status.st_size);
  if (offset > size)
    return what + ": its external data's offset " + std::to_string(offset) +
           " is past the end of '" + file + "' (" + std::to_string(size) +
           " bytes)";
  if (!haveLength)
    length = size - offset;
  else if (length > size - offset)
    return what + ": its external data (" + std::to_string(length) +
           " bytes at offset " + std::to_string(offset) +
           ") runs past the end of '" + file + "' (" + std::to_string(size) +
           " bytes)";
  if (length != need) {
    std::string shape;
    for (int64_t d : t.dims())
      shape += (shape.empty() ? "" : "x") + std::to_string(d);
    return what + ": its external data holds " + std::to_string(length) +
           " bytes (in '" + file + "'" +
           (haveLength ? std::string() : ", to its end") + "); its shape " +
           (shape.empty() ? std::string("(a scalar)") : shape) + " of " +
           element + " needs " + std::to_string(need);
  }
  if (haveChecksum) {
    std::string digest = fileSha1(file, status);
    if (digest.empty())
      return what + ": cannot read its external data file '" + file + "'";
    if (!llvm::StringRef(digest).equals_insensitive(checksum))
      return what + ": its external data file '" + file + "' has SHA-1 " +
             digest + ", not the model's checksum " + checksum +
             " (the file is not the one the model was saved with)";
  }
  bytes.assign(static_cast<size_t>(need), 0);
  in.seekg(static_cast<std::streamoff>(offset));
  if (need && !in.read(bytes.data(), static_cast<std::streamsize>(need)))
    return what + ": cannot read its external data from '" + file + "'";
  return "";
}

/// Makes `t` hold its external data itself (raw_data), as if it had
/// never been external.
std::string internalize(onnx::TensorProto &t, const std::string &folder,
                        std::set<std::string> &files) {
  std::vector<char> bytes;
  if (std::string err = readExternal(t, folder, bytes, files); !err.empty())
    return err;
  t.set_raw_data(std::string(bytes.begin(), bytes.end()));
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  return "";
}

/// External data below this many bytes (and every integer tensor: shapes,
/// axes, indices) is read into the model before ONNX's checker and shape
/// inference, which may read such values; larger float tensors, external
/// or not, are kept out of what ONNX's library processes (see
/// detachWeights).
constexpr uint64_t kInternalizeBelow = 1024;

/// Reads the external data of `model` (whose file is in `folder`): the
/// tensor attributes' and small or integer initializers' into the model.
/// Float initializers of kInternalizeBelow bytes or more, external or held
/// in the model, go to `detached` instead, each replaced in the graph by an
/// input of its type. ONNX's checker (which in libonnx 1.12 looks for the
/// files relative to the working directory) and shape inference then see
/// only what they need, and the model that goes to and from the child
/// process (prepareIsolated) stays small: the weights are neither
/// serialized, piped nor parsed again, and a protobuf message cannot be
/// serialized past 2 GB, which is why large models keep their weights
/// outside. The external data files read go into `files`.
std::string detachWeights(onnx::ModelProto &model, const std::string &folder,
                          std::vector<TensorValue> &detached,
                          std::set<std::string> &files) {
  onnx::GraphProto *g = model.mutable_graph();
  for (auto &n : *g->mutable_node())
    for (auto &a : *n.mutable_attribute()) {
      std::vector<onnx::TensorProto *> tensors;
      if (a.has_t())
        tensors.push_back(a.mutable_t());
      for (auto &t : *a.mutable_tensors())
        tensors.push_back(&t);
      for (onnx::TensorProto *t : tensors)
        if (t->data_location() == onnx::TensorProto::EXTERNAL)
          if (std::string err = internalize(*t, folder, files); !err.empty())
            return "node '" + n.name() + "' (" + n.op_type() + "): " + err;
    }
  std::set<std::string> inputs;
  for (const auto &v : g->input())
    inputs.insert(v.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  std::set<std::string> names;
  for (auto &t : *g->mutable_initializer()) {
    // One detached and one kept would both reach the import.
    if (!names.insert(t.name()).second)
      return "the model has two initializers named '" + t.name() + "'";
    bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
    std::string element = elementName(t.data_type());
    uint64_t size = static_cast<uint64_t>(std::max(elementBytes(element), 1));
    for (int64_t d : t.dims())
      size = d >= 0 && size < kInternalizeBelow ? size * d : size;
    if (!isFloat(element) || size < kInternalizeBelow) {
      if (external)
        if (std::string err = internalize(t, folder, files); !err.empty())
          return err;
      kept.Add(std::move(t));
      continue;
    }
    TensorValue value;
    if (external) {
      value.name = t.name();
      value.type.element = element;
      value.type.hasShape = true;
      value.type.dims.assign(t.dims().begin(), t.dims().end());
      if (std::string err = readExternal(t, folder, value.bytes, files);
          !err.empty())
        return err;
    } else {
      if (std::string err = copyTensor(t, value); !err.empty())
        return err;
      // Its bytes are in `value` now; the model's copy goes.
      t.clear_raw_data();
    }
    detached.push_back(std::move(value));
    if (inputs.insert(t.name()).second) {
      onnx::ValueInfoProto *v = g->add_input();
      v->set_name(t.name());
      auto *type = v->mutable_type()->mutable_tensor_type();
      type->set_elem_type(t.data_type());
      auto *shape = type->mutable_shape();
      for (int64_t d : t.dims())
        shape->add_dim()->set_dim_value(d);
    }
  }
  g->mutable_initializer()->Swap(&kept);
  return "";
}

std::string copyAttribute(const onnx::AttributeProto &a, Attribute &out) {
  switch (a.type()) {
  case onnx::AttributeProto::INT:
    out.kind = Attribute::Int, out.i = a.i();
    return "";
  case onnx::AttributeProto::FLOAT:
    out.kind = Attribute::Float, out.f = a.f();
    return "";
  case onnx::AttributeProto::STRING:
    out.kind = Attribute::String, out.s = a.s();
    return "";
  case onnx::AttributeProto::INTS:
    out.kind = Attribute::Ints;
    out.ints.assign(a.ints().begin(), a.ints().end());
    return "";
  case onnx::AttributeProto::FLOATS:
    out.kind = Attribute::Floats;
    out.floats.assign(a.floats().begin(), a.floats().end());
    return "";
  case onnx::AttributeProto::TENSOR:
    out.kind = Attribute::Tensor;
    return copyTensor(a.t(), out.tensor);
  default:
    out.kind = Attribute::Other;
    return "";
  }
}

int64_t defaultOpset(const onnx::ModelProto &model) {
  for (const auto &op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx")
      return op.version();
  return 0;
}

/// The newest default opset a model may import: 18 to kNewestOpset are
/// rewritten to kOpset (libonnx 1.12 knows kOpset) where their ops mean the
/// same there, see downgrade.
constexpr int64_t kNewestOpset = 20;

/// The int64 values of a constant (an initializer or a Constant node's
/// value) named `name`, or false.
/// The attribute `name` of `n`, or null.
const onnx::AttributeProto *attributeOf(const onnx::NodeProto &n,
                                        const std::string &name) {
  for (const auto &a : n.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

bool constantInts(const onnx::GraphProto &g, const std::string &name,
                  std::vector<int64_t> &out) {
  auto read = [&](const onnx::TensorProto &t) {
    TensorValue value;
    if (t.data_type() != onnx::TensorProto::INT64 ||
        !copyTensor(t, value).empty())
      return false;
    out.resize(value.bytes.size() / 8);
    std::memcpy(out.data(), value.bytes.data(), out.size() * 8);
    return true;
  };
  for (const auto &t : g.initializer())
    if (t.name() == name)
      return read(t);
  for (const auto &n : g.node())
    if (n.op_type() == "Constant" && n.output_size() == 1 &&
        n.output(0) == name)
      if (const auto *a = attributeOf(n, "value"); a && a->has_t())
        return read(a->t());
  return false;
}

/// A model of opsets 18 to 20 as one of kOpset, where the ops it uses
/// mean the same there: Gelu (20) written out (the Erf form, which the
/// importer fuses back into one mpc.gelu, or the tanh formula); the
/// reductions' constant axes input (18) made the attribute again; the
/// attributes Resize (18, 19), AveragePool (19) and Cast (19) gained,
/// dropped where they hold their defaults; Pad (18, 19) and Split (18)
/// as they were. Any other op that changed after kOpset is an error
/// naming the node.
std::string downgrade(onnx::ModelProto &model) {
  int64_t opset = 0;
  onnx::OperatorSetIdProto *defaultImport = nullptr;
  for (auto &op : *model.mutable_opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") {
      opset = op.version();
      defaultImport = &op;
    }
  if (opset <= kOpset)
    return "";
  if (opset > kNewestOpset)
    return "opset " + std::to_string(opset) + " is newer than the " +
           std::to_string(kNewestOpset) + " this importer reads";
  onnx::GraphProto *g = model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  int made = 0;
  auto fresh = [&](const std::string &what) {
    return "mpc_opset" + std::to_string(opset) + "_" + what + "_" +
           std::to_string(made++);
  };
  // A float scalar as a Constant node (a constant, not a parameter).
  auto scalar = [&](float value) {
    onnx::NodeProto *c = nodes.Add();
    std::string name = fresh("constant");
    c->set_op_type("Constant");
    c->set_name(name);
    c->add_output(name);
    onnx::AttributeProto *a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a->mutable_t()->add_float_data(value);
    return name;
  };
  auto binary = [&](const std::string &op, const std::string &a,
                    const std::string &b, const std::string &out,
                    const std::string &name) {
    onnx::NodeProto *n = nodes.Add();
    n->set_op_type(op);
    n->set_name(name);
    n->add_input(a);
    n->add_input(b);
    n->add_output(out);
  };
  auto unaryNode = [&](const std::string &op, const std::string &a,
                       const std::string &out, const std::string &name) {
    onnx::NodeProto *n = nodes.Add();
    n->set_op_type(op);
    n->set_name(name);
    n->add_input(a);
    n->add_output(out);
  };
  auto dropAttribute = [](onnx::NodeProto &n, const std::string &name) {
    auto *attrs = n.mutable_attribute();
    for (int i = 0; i < attrs->size(); ++i)
      if (attrs->Get(i).name() == name) {
        attrs->DeleteSubrange(i, 1);
        return;
      }
  };
  static const std::set<std::string> reductions = {
      "ReduceL1",   "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
      "ReduceMean", "ReduceMin", "ReduceProd",   "ReduceSumSquare"};
  static const std::set<std::string> changed = {"BitwiseAnd",
                                                "BitwiseNot",
                                                "BitwiseOr",
                                                "BitwiseXor",
                                                "CenterCropPad",
                                                "Col2Im",
                                                "GroupNormalization",
                                                "LpPool",
                                                "Mish",
                                                "OptionalGetElement",
                                                "OptionalHasElement",
                                                "ScatterElements",
                                                "ScatterND",
                                                "DeformConv",
                                                "DequantizeLinear",
                                                "QuantizeLinear",
                                                "If",
                                                "Loop",
                                                "Scan",
                                                "AffineGrid",
                                                "DFT",
                                                "GridSample",
                                                "ImageDecoder",
                                                "RegexFullMatch",
                                                "StringConcat",
                                                "StringSplit"};
  for (const onnx::NodeProto &original : g->node()) {
    onnx::NodeProto node = original;
    const std::string &op = node.op_type();
    auto refuse = [&](const std::string &why) {
      return "node '" + node.name() + "' (" + op + ", opset " +
             std::to_string(opset) + "): " + why;
    };
    bool onnxDomain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!onnxDomain) {
      *nodes.Add() = node;
      continue;
    }
    if (op == "Gelu") {
      const auto *a = attributeOf(node, "approximate");
      std::string how = a ? a->s() : "none";
      if (node.input_size() != 1 || node.output_size() != 1)
        return refuse("takes one input and one output");
      const std::string &x = node.input(0), &y = node.output(0);
      std::string base = node.name().empty() ? fresh("gelu") : node.name();
      if (how == "none") { // x * (1 + erf(x / sqrt 2)) * 0.5
        std::string d = fresh("div"), e = fresh("erf"), s = fresh("add"),
                    m = fresh("mul");
        binary("Div", x, scalar(static_cast<float>(M_SQRT2)), d, base + "/div");
        unaryNode("Erf", d, e, base + "/erf");
        binary("Add", e, scalar(1.0f), s, base + "/add");
        binary("Mul", x, s, m, base + "/mul");
        binary("Mul", m, scalar(0.5f), y, base + "/half");
      } else if (how == "tanh") {
        // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        std::string cube = fresh("cube"), k = fresh("k"), inner = fresh("in"),
                    scaled = fresh("scaled"), t = fresh("tanh"),
                    s = fresh("add"), m = fresh("mul");
        binary("Mul", x, x, cube + "_sq", base + "/square");
        binary("Mul", cube + "_sq", x, cube, base + "/cube");
        binary("Mul", cube, scalar(0.044715f), k, base + "/k");
        binary("Add", x, k, inner, base + "/inner");
        binary("Mul", inner, scalar(static_cast<float>(std::sqrt(2.0 / M_PI))),
               scaled, base + "/scaled");
        unaryNode("Tanh", scaled, t, base + "/tanh");
        binary("Add", t, scalar(1.0f), s, base + "/add");
        binary("Mul", x, s, m, base + "/mul");
        binary("Mul", m, scalar(0.5f), y, base + "/half");
      } else {
        return refuse("approximate '" + how + "' is neither none nor tanh");
      }
      continue;
    }
    if (reductions.count(op)) {
      if (node.input_size() > 1 && !node.input(1).empty()) {
        std::vector<int64_t> axes;
        if (!constantInts(*g, node.input(1), axes))
          return refuse("the axes must be a constant");
        node.mutable_input()->RemoveLast();
        if (!axes.empty()) {
          onnx::AttributeProto *a = node.add_attribute();
          a->set_name("axes");
          a->set_type(onnx::AttributeProto::INTS);
          for (int64_t axis : axes)
            a->add_ints(axis);
        }
      }
      const auto *noop = attributeOf(node, "noop_with_empty_axes");
      if (noop && noop->i() != 0 && !attributeOf(node, "axes")) {
        node.set_op_type("Identity");
        node.clear_attribute();
      } else {
        dropAttribute(node, "noop_with_empty_axes");
      }
    } else if (op == "Split") {
      if (attributeOf(node, "num_outputs") &&
          !(node.input_size() > 1 && !node.input(1).empty()))
        dropAttribute(node, "num_outputs"); // equal parts, as opset 13
    } else if (op == "Resize") {
      const auto *antialias = attributeOf(node, "antialias");
      const auto *policy = attributeOf(node, "keep_aspect_ratio_policy");
      const auto *mode = attributeOf(node, "coordinate_transformation_mode");
      if ((antialias && antialias->i() != 0) || attributeOf(node, "axes") ||
          (policy && policy->s() != "stretch") ||
          (mode && mode->s() == "half_pixel_symmetric"))
        return refuse("antialias, axes, keep_aspect_ratio_policy and "
                      "half_pixel_symmetric are not converted to opset " +
                      std::to_string(kOpset));
      dropAttribute(node, "antialias");
      dropAttribute(node, "keep_aspect_ratio_policy");
    } else if (op == "Pad") {
      const auto *mode = attributeOf(node, "mode");
      if ((node.input_size() > 3 && !node.input(3).empty()) ||
          (mode && mode->s() == "wrap"))
        return refuse("axes and mode wrap are not converted to opset " +
                      std::to_string(kOpset));
    } else if (op == "AveragePool") {
      if (const auto *d = attributeOf(node, "dilations")) {
        for (int64_t v : d->ints())
          if (v != 1)
            return refuse("dilations are not converted to opset " +
                          std::to_string(kOpset));
        dropAttribute(node, "dilations");
      }
    } else if (op == "Cast" || op == "CastLike") {
      dropAttribute(node, "saturate"); // float8 only
    } else if (changed.count(op)) {
      return refuse("this op changed after opset " + std::to_string(kOpset) +
                    " and is not converted to it");
    }
    *nodes.Add() = node;
  }
  g->mutable_node()->Swap(&nodes);
  defaultImport->set_version(kOpset);
  // The IR version libonnx 1.12 checks (opsets 18-20 came with IR 9).
  if (model.ir_version() > 8)
    model.set_ir_version(8);
  return "";
}

/// ONNX's checker, converter and shape inference on `model`, in place,
/// with the user's dimensions bound. (Run in a child process: see
/// prepareIsolated.)
std::string prepare(const std::string &path,
                    const std::map<std::string, std::vector<int64_t>> &shapes,
                    onnx::ModelProto &model, int64_t &originalOpset) {
  int64_t declared = defaultOpset(model);
  if (std::string err = downgrade(model); !err.empty())
    return path + ": " + err;
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return path + ": the ONNX checker refuses the model: " + e.what();
  }
  originalOpset = declared;
  if (originalOpset == 0)
    return path + ": the model imports no version of the default ONNX opset";
  // ONNX's shape inference divides by a window op's strides unchecked
  // (SIGFPE in libonnx 1.12 for a stride of 0).
  for (const auto &n : model.graph().node())
    for (const auto &a : n.attribute())
      if (a.name() == "strides")
        for (int64_t v : a.ints())
          if (v < 1)
            return path + ": node '" + n.name() + "' (" + n.op_type() +
                   "): strides must be at least 1, not " + std::to_string(v);
  if (defaultOpset(model) != kOpset) {
    try {
      model = onnx::version_conversion::ConvertVersion(model, kOpset);
    } catch (const std::exception &e) {
      return path + ": cannot convert opset " + std::to_string(originalOpset) +
             " to " + std::to_string(kOpset) + ": " + e.what();
    }
  }
  onnx::GraphProto *g = model.mutable_graph();
  // Bind the dimensions the user gives, then insist on static inputs.
  std::vector<std::string> initializers;
  for (const auto &t : g->initializer())
    initializers.push_back(t.name());
  for (const auto &[given, dims] : shapes) {
    const std::string &name = given;
    auto it =
        std::find_if(g->mutable_input()->begin(), g->mutable_input()->end(),
                     [&](const auto &v) { return v.name() == name; });
    if (it == g->mutable_input()->end())
      return "--input-shape names '" + name + "', not an input of the graph";
    auto *shape = it->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() != 0 &&
        shape->dim_size() != static_cast<int>(dims.size()))
      return "--input-shape gives '" + name + "' " +
             std::to_string(dims.size()) + " dimensions; the model says " +
             std::to_string(shape->dim_size());
    for (size_t d = 0; d < dims.size(); ++d) {
      auto *dim = d < static_cast<size_t>(shape->dim_size())
                      ? shape->mutable_dim(static_cast<int>(d))
                      : shape->add_dim();
      if (dim->has_dim_value() && dim->dim_value() != dims[d])
        return "--input-shape gives '" + name + "' dimension " +
               std::to_string(d) + " = " + std::to_string(dims[d]) +
               "; the model fixes it at " + std::to_string(dim->dim_value());
      dim->set_dim_value(dims[d]);
    }
  }
  for (const auto &v : g->input()) {
    if (std::count(initializers.begin(), initializers.end(), v.name()))
      continue;
    if (!v.type().tensor_type().has_shape())
      return "input '" + v.name() +
             "' has no shape: give it with --input-shape " + v.name() +
             "=DxDx...";
    const auto &shape = v.type().tensor_type().shape();
    for (int d = 0; d < shape.dim_size(); ++d)
      if (!shape.dim(d).has_dim_value())
        return "input '" + v.name() + "' has a dynamic dimension " +
               std::to_string(d) +
               (shape.dim(d).dim_param().empty()
                    ? std::string()
                    : " ('" + shape.dim(d).dim_param() + "')") +
               ": bind it with --input-shape " + v.name() + "=DxDx...";
  }
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/true, /*strict_mode=*/1,
                                        /*data_prop=*/true);
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &e) {
    return path + ": ONNX shape inference fails: " + e.what();
  }
  return "";
}

/// Runs `work` in a child process and returns its reply in `reply`; false
/// when the child crashed or replied nothing (`why` says which). Where no
/// child can be made, `work` runs here.
bool isolated(const std::function<std::string()> &work, std::string &reply,
              std::string &why) {
  reply.clear();
  int fds[2];
  if (pipe(fds) != 0) {
    reply = work();
    return true;
  }
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    reply = work();
    return true;
  }
  if (child == 0) {
    close(fds[0]);
    // A crash here is reported by the parent: no stack dump of the
    // handlers the parent installed, and the library's own chatter muted.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE})
      std::signal(sig, SIG_DFL);
    if (std::FILE *null = std::freopen("/dev/null", "w", stderr))
      (void)null;
    std::string out = work();
    for (size_t done = 0; done < out.size();) {
      ssize_t n = write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0)
        _exit(2);
      done += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  char buffer[1 << 16];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    reply.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status) || reply.empty()) {
    why = WIFSIGNALED(status) ? std::string(strsignal(WTERMSIG(status)))
                              : std::string("no reply");
    return false;
  }
  return true;
}

/// prepare() in a child process: libonnx 1.12's converter and shape
/// inference can crash on a malformed graph that passes its checker (a
/// mutated model's dangling reference, found by fuzzing); a crash of the
/// child is an error message here, not a crash of the importer.
std::string
prepareIsolated(const std::string &path,
                const std::map<std::string, std::vector<int64_t>> &shapes,
                onnx::ModelProto &model, int64_t &originalOpset) {
  std::string reply, why;
  bool replied = isolated(
      [&] {
        std::string out;
        try {
          std::string err = prepare(path, shapes, model, originalOpset);
          out = err.empty() ? "O" + model.SerializeAsString() : "E" + err;
        } catch (const std::exception &e) {
          out = std::string("E") + path + ": " + e.what();
        }
        int64_t opset = originalOpset;
        out.insert(1, reinterpret_cast<const char *>(&opset), sizeof opset);
        return out;
      },
      reply, why);
  if (!replied || reply.size() < 1 + sizeof(int64_t))
    return path +
           ": the ONNX library crashed checking, converting or "
           "typing this model (" +
           (replied ? std::string("no reply") : why) +
           "); the model is malformed, or exporting it at opset " +
           std::to_string(kOpset) + " avoids the conversion";
  std::memcpy(&originalOpset, reply.data() + 1, sizeof originalOpset);
  std::string payload = reply.substr(1 + sizeof(int64_t));
  if (reply[0] == 'E')
    return payload;
  if (!model.ParseFromString(payload))
    return path + ": the checked model did not come back whole";
  return "";
}

/// Parses the protobuf message in the file at `path`: from the file
/// mapped into memory where it is a regular file protobuf can take whole
/// (a string field, a tensor's raw data, is then one copy, where a stream
/// grows it piece by piece), else from a stream. "" when it parsed,
/// otherwise why not ("cannot open", or empty for a message that does
/// not parse).
std::string parseFile(const std::string &path,
                      google::protobuf::MessageLite &message, bool &parsed) {
  parsed = false;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return "cannot open";
  struct stat info;
  if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0 &&
      info.st_size <= INT_MAX) {
    size_t size = static_cast<size_t>(info.st_size);
    void *data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED)
      return "cannot read";
    parsed = message.ParseFromArray(data, static_cast<int>(size));
    munmap(data, size);
    return "";
  }
  close(fd);
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return "cannot open";
  parsed = message.ParseFromIstream(&file);
  return "";
}

std::string load(const std::string &path,
                 const std::map<std::string, std::vector<int64_t>> &shapes,
                 Graph &graph) {
  onnx::ModelProto model;
  bool parsed;
  if (std::string err = parseFile(path, model, parsed); !err.empty())
    return path + ": " + err;
  if (!parsed)
    return path + ": not an ONNX model (the protobuf does not parse)";
  // The initializers' order, which the detached ones keep.
  std::vector<std::string> order;
  for (const auto &t : model.graph().initializer())
    order.push_back(t.name());
  std::vector<TensorValue> detached;
  if (std::string err =
          detachWeights(model, folderOf(path), detached, graph.dataFiles);
      !err.empty())
    return path + ": " + err;
  if (std::string err =
          prepareIsolated(path, shapes, model, graph.originalOpset);
      !err.empty())
    return err;
  onnx::GraphProto *g = model.mutable_graph();
  std::map<std::string, TensorValue> values;
  for (TensorValue &value : detached)
    values[value.name] = std::move(value);
  std::set<std::string> listed(order.begin(), order.end());
  for (const auto &t : g->initializer()) {
    TensorValue value;
    if (std::string err = copyTensor(t, value); !err.empty())
      return err;
    if (listed.insert(t.name()).second)
      order.push_back(t.name()); // one the converter added
    values[t.name()] = std::move(value);
  }
  std::vector<std::string> initializers;
  for (const std::string &name : order) {
    auto it = values.find(name);
    if (it == values.end())
      continue; // one the converter removed
    graph.types[name] = it->second.type;
    graph.initializers.push_back(std::move(it->second));
    values.erase(it);
    initializers.push_back(name);
  }
  for (const auto &v : g->input()) {
    graph.types[v.name()] = typeOf(v.type());
    if (!std::count(initializers.begin(), initializers.end(), v.name()))
      graph.inputs.emplace_back(v.name(), typeOf(v.type()));
  }
  for (const auto &v : g->value_info())
    graph.types[v.name()] = typeOf(v.type());
  for (const auto &v : g->output()) {
    graph.types[v.name()] = typeOf(v.type());
    graph.outputs.emplace_back(v.name(), typeOf(v.type()));
  }
  // Every value's size is bounded (as the initializers' are): the import
  // multiplies dimensions freely after this.
  for (const auto &[name, type] : graph.types) {
    int64_t count = 1;
    for (int64_t d : type.dims) {
      if (d <= 0)
        continue; // unknown here; refused where it matters
      if (count > (int64_t(1) << 40) / d)
        return path + ": value '" + name +
               "' has a huge shape (over 2^40 elements), which mpc does not "
               "import";
      count *= d;
    }
  }
  for (const auto &n : g->node()) {
    Node node;
    node.name = n.name(), node.opType = n.op_type(), node.domain = n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    node.proto = n.SerializeAsString();
    if (const auto *schema =
            onnx::OpSchemaRegistry::Schema(n.op_type(), kOpset, n.domain()))
      node.sinceVersion = schema->SinceVersion();
    for (const auto &a : n.attribute())
      if (std::string err = copyAttribute(a, node.attributes[a.name()]);
          !err.empty())
        return "node '" + n.name() + "' (" + n.op_type() + "): " + err;
    graph.nodes.push_back(std::move(node));
  }
  return "";
}

} // namespace

bool isFloat(const std::string &e) {
  return e == "float" || e == "double" || e == "float16" || e == "bfloat16";
}

int elementBytes(const std::string &e) {
  if (e == "float" || e == "int32")
    return 4;
  if (e == "double" || e == "int64")
    return 8;
  if (e == "float16" || e == "bfloat16")
    return 2;
  if (e == "bool" || e == "uint8" || e == "int8")
    return 1;
  return 0;
}

std::string loadModel(const std::string &path,
                      const std::map<std::string, std::vector<int64_t>> &shapes,
                      Graph &graph) {
  try {
    return load(path, shapes, graph);
  } catch (const std::exception &e) {
    return path + ": " + e.what();
  }
}

namespace {
std::string inferNodeImpl(const Node &node,
                          const std::vector<TensorType> &inputTypes,
                          const std::vector<const TensorValue *> &inputValues,
                          std::vector<TensorType> &outputs) {
  outputs.assign(node.outputs.size(), TensorType{});
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  onnx::GraphProto *g = model.mutable_graph();
  g->set_name("node");
  if (!g->add_node()->ParseFromString(node.proto))
    return "the node does not parse";
  std::set<std::string> declared;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const std::string &name = node.inputs[i];
    if (name.empty() || !declared.insert(name).second)
      continue;
    if (i >= inputTypes.size() || !inputTypes[i].hasShape)
      return "input '" + name + "' has no known type";
    const TensorType &t = inputTypes[i];
    std::string upper = t.element;
    for (char &c : upper)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    onnx::TensorProto_DataType element;
    if (!onnx::TensorProto_DataType_Parse(upper, &element))
      return "input '" + name + "' has element type " + t.element;
    if (i < inputValues.size() && inputValues[i]) {
      onnx::TensorProto *value = g->add_initializer();
      value->set_name(name);
      value->set_data_type(element);
      for (int64_t d : inputValues[i]->type.dims)
        value->add_dims(d);
      value->set_raw_data(inputValues[i]->bytes.data(),
                          inputValues[i]->bytes.size());
      continue;
    }
    onnx::ValueInfoProto *v = g->add_input();
    v->set_name(name);
    auto *tensor = v->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(element);
    auto *shape = tensor->mutable_shape();
    for (int64_t d : t.dims)
      shape->add_dim()->set_dim_value(d);
  }
  std::string reply, why;
  bool replied = isolated(
      [&]() -> std::string {
        try {
          onnx::ShapeInferenceOptions options(/*check_type=*/true,
                                              /*strict_mode=*/1,
                                              /*data_prop=*/true);
          onnx::shape_inference::InferShapes(
              model, onnx::OpSchemaRegistry::Instance(), options);
        } catch (const std::exception &e) {
          return std::string("E") + e.what();
        }
        return "O" + model.SerializeAsString();
      },
      reply, why);
  if (!replied)
    return "ONNX's shape inference crashed on it (" + why + ")";
  if (reply[0] == 'E')
    return "ONNX's shape inference fails: " + reply.substr(1);
  onnx::ModelProto typed;
  if (!typed.ParseFromString(reply.substr(1)))
    return "ONNX's shape inference did not come back whole";
  for (const auto &v : typed.graph().value_info())
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (node.outputs[i] == v.name())
        outputs[i] = typeOf(v.type());
  return "";
}
} // namespace

std::string inferNode(const Node &node,
                      const std::vector<TensorType> &inputTypes,
                      const std::vector<const TensorValue *> &inputValues,
                      std::vector<TensorType> &outputs) {
  try {
    return inferNodeImpl(node, inputTypes, inputValues, outputs);
  } catch (const std::exception &e) {
    return e.what();
  }
}

std::string loadTensor(const std::string &path, TensorValue &value) {
  onnx::TensorProto t;
  bool parsed;
  if (std::string err = parseFile(path, t, parsed); !err.empty())
    return path + ": " + err;
  if (!parsed)
    return path + ": not a serialized ONNX tensor";
  try {
    return copyTensor(t, value);
  } catch (const std::exception &e) {
    return path + ": " + e.what();
  }
}

} // namespace mpc::onnx_import
