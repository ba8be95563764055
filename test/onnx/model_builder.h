#pragma once
// Builds small ONNX models in tests with the protobuf classes, so each test states the model
// it imports (and bad models are made on purpose rather than checked in).
#include <initializer_list>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_proto.h"

namespace weft::onnx::test {

struct Attr {
  std::string name;
  enum Kind { Int, Float, Ints, String } kind;
  int64_t i = 0;
  float f = 0;
  std::vector<int64_t> ints;
  std::string s;
  static Attr integer(std::string n, int64_t v) { return {std::move(n), Int, v, 0, {}, {}}; }
  static Attr real(std::string n, float v) { return {std::move(n), Float, 0, v, {}, {}}; }
  static Attr list(std::string n, std::vector<int64_t> v) {
    return {std::move(n), Ints, 0, 0, std::move(v), {}};
  }
  static Attr text(std::string n, std::string v) {
    return {std::move(n), String, 0, 0, {}, std::move(v)};
  }
};

class ModelBuilder {
public:
  explicit ModelBuilder(int opset = 13) {
    model_.set_ir_version(8);
    model_.set_producer_name("weft-test");
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  /// dims: a number, or a name for a dim_param ("N").
  ModelBuilder& input(const std::string& name, int elemType, const std::vector<std::string>& dims) {
    auto* vi = model_.mutable_graph()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elemType);
    auto* shape = tt->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = shape->add_dim();
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0])))
        dim->set_dim_value(std::stoll(d));
      else
        dim->set_dim_param(d);
    }
    return *this;
  }
  ModelBuilder& output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<float>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
      t->add_dims(d);
    for (float v : values)
      t->add_float_data(v);
    return *this;
  }
  ModelBuilder& initializerInts(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    for (int64_t d : dims)
      t->add_dims(d);
    for (int64_t v : values)
      t->add_int64_data(v);
    return *this;
  }
  ModelBuilder& node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, const std::vector<Attr>& attrs = {},
                     const std::string& name = "", const std::string& domain = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    n->set_domain(domain);
    for (const auto& i : inputs)
      n->add_input(i);
    for (const auto& o : outputs)
      n->add_output(o);
    for (const auto& a : attrs) {
      auto* p = n->add_attribute();
      p->set_name(a.name);
      switch (a.kind) {
      case Attr::Int:
        p->set_type(::onnx::AttributeProto::INT);
        p->set_i(a.i);
        break;
      case Attr::Float:
        p->set_type(::onnx::AttributeProto::FLOAT);
        p->set_f(a.f);
        break;
      case Attr::Ints:
        p->set_type(::onnx::AttributeProto::INTS);
        for (int64_t v : a.ints)
          p->add_ints(v);
        break;
      case Attr::String:
        p->set_type(::onnx::AttributeProto::STRING);
        p->set_s(a.s);
        break;
      }
    }
    return *this;
  }
  ::onnx::ModelProto& proto() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }

private:
  ::onnx::ModelProto model_;
};

inline constexpr int kFloat = ::onnx::TensorProto::FLOAT;
inline constexpr int kInt64 = ::onnx::TensorProto::INT64;
inline constexpr int kBool = ::onnx::TensorProto::BOOL;
inline constexpr int kUint8 = ::onnx::TensorProto::UINT8;
inline constexpr int kInt8 = ::onnx::TensorProto::INT8;
inline constexpr int kInt32 = ::onnx::TensorProto::INT32;
inline constexpr int kDouble = ::onnx::TensorProto::DOUBLE;
inline constexpr int kHalf = ::onnx::TensorProto::FLOAT16;
inline constexpr int kBfloat16 = ::onnx::TensorProto::BFLOAT16;

} // namespace weft::onnx::test
