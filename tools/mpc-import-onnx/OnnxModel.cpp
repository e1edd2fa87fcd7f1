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

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

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

/// ONNX's checker, converter and shape inference on `model`, in place,
/// with the user's dimensions bound. (Run in a child process: see
/// prepareIsolated.)
std::string prepare(const std::string &path,
                    const std::map<std::string, std::vector<int64_t>> &shapes,
                    onnx::ModelProto &model, int64_t &originalOpset) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return path + ": the ONNX checker refuses the model: " + e.what();
  }
  originalOpset = defaultOpset(model);
  if (originalOpset == 0)
    return path + ": the model imports no version of the default ONNX opset";
  if (originalOpset != kOpset) {
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

/// prepare() in a child process: libonnx 1.12's converter and shape
/// inference can crash on a malformed graph that passes its checker (a
/// mutated model's dangling reference, found by fuzzing); a crash of the
/// child is an error message here, not a crash of the importer.
std::string
prepareIsolated(const std::string &path,
                const std::map<std::string, std::vector<int64_t>> &shapes,
                onnx::ModelProto &model, int64_t &originalOpset) {
  int fds[2];
  if (pipe(fds) != 0)
    return prepare(path, shapes, model, originalOpset);
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    return prepare(path, shapes, model, originalOpset);
  }
  if (child == 0) {
    close(fds[0]);
    // A crash here is reported by the parent: no stack dump of the
    // handlers the parent installed, and the library's own chatter muted.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE})
      std::signal(sig, SIG_DFL);
    if (std::FILE *null = std::freopen("/dev/null", "w", stderr))
      (void)null;
    std::string reply;
    try {
      std::string err = prepare(path, shapes, model, originalOpset);
      reply = err.empty() ? "O" + model.SerializeAsString() : "E" + err;
    } catch (const std::exception &e) {
      reply = std::string("E") + path + ": " + e.what();
    }
    int64_t opset = originalOpset;
    reply.insert(1, reinterpret_cast<const char *>(&opset), sizeof opset);
    for (size_t done = 0; done < reply.size();) {
      ssize_t n = write(fds[1], reply.data() + done, reply.size() - done);
      if (n <= 0)
        _exit(2);
      done += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string reply;
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
  if (WIFSIGNALED(status) || reply.size() < 1 + sizeof(int64_t))
    return path +
           ": the ONNX library crashed checking, converting or "
           "typing this model (" +
           (WIFSIGNALED(status) ? std::string(strsignal(WTERMSIG(status)))
                                : std::string("no reply")) +
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

std::string load(const std::string &path,
                 const std::map<std::string, std::vector<int64_t>> &shapes,
                 Graph &graph) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return path + ": cannot open";
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&file))
    return path + ": not an ONNX model (the protobuf does not parse)";
  if (std::string err =
          prepareIsolated(path, shapes, model, graph.originalOpset);
      !err.empty())
    return err;
  onnx::GraphProto *g = model.mutable_graph();
  std::vector<std::string> initializers;
  for (const auto &t : g->initializer())
    initializers.push_back(t.name());
  g = model.mutable_graph();
  for (const auto &t : g->initializer()) {
    TensorValue value;
    if (std::string err = copyTensor(t, value); !err.empty())
      return err;
    graph.types[t.name()] = value.type;
    graph.initializers.push_back(std::move(value));
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
  for (const auto &n : g->node()) {
    Node node;
    node.name = n.name(), node.opType = n.op_type(), node.domain = n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
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

std::string loadTensor(const std::string &path, TensorValue &value) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return path + ": cannot open";
  onnx::TensorProto t;
  if (!t.ParseFromIstream(&file))
    return path + ": not a serialized ONNX tensor";
  try {
    return copyTensor(t, value);
  } catch (const std::exception &e) {
    return path + ": " + e.what();
  }
}

} // namespace mpc::onnx_import
