#include "sim_runner.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <stdexcept>

#include "ir/interpreter.h"
#include "runtime/shape_binding.h"
#include "sim/sim_device.h"

namespace weft::test {

std::vector<HostTensor> runOnSim(const fusion::FusionPlan& plan,
                                 const codegen::CompiledModule& module,
                                 const std::vector<HostTensor>& inputs, const ir::Binding& binding,
                                 std::vector<LaunchCounters>* counters) {
  auto dev = makeSimDevice(plan.device);
  const ir::Graph& g = plan.graph;
  std::vector<DevicePtr> ptr(plan.buffers.size());
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const auto& b = plan.buffers[i];
    size_t bytes = size_t(std::max<int64_t>(1, b.elements.evaluate(binding))) *
                   size_t(ir::dtypeBytes(b.dtype));
    ptr[i] = dev->allocate(bytes);
  }
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    int buf = plan.bufferOfValue[size_t(g.inputs()[i])];
    if (buf >= 0)
      dev->copyToDevice(ptr[size_t(buf)], inputs[i].bytes.data(), inputs[i].bytes.size());
  }
  ModuleHandle mod = dev->loadModule(module.ptx);
  for (const auto& k : module.kernels) {
    KernelHandle h = dev->getKernel(mod, k.name);
    LaunchConfig c = launchConfigFor(k, k.launch.tiles.evaluate(binding));
    std::vector<KernelArg> args;
    for (const auto& p : k.params) {
      switch (p.kind) {
      case codegen::KernelParam::Kind::Buffer:
        args.push_back(KernelArg::pointer(ptr.at(size_t(p.buffer))));
        break;
      case codegen::KernelParam::Kind::Symbol:
        args.push_back(KernelArg::of<int64_t>(binding.at(p.symbol)));
        break;
      case codegen::KernelParam::Kind::BarrierState: {
        DevicePtr s = dev->allocate(256);
        dev->memset(s, 0, 256);
        args.push_back(KernelArg::pointer(s));
        break;
      }
      }
    }
    dev->launch(h, c, args);
  }
  dev->synchronize();
  if (counters) *counters = dev->takeCounters();
  std::vector<HostTensor> out;
  for (ir::NodeId o : g.outputs()) {
    const ir::Node& n = g.node(o);
    HostTensor t(n.type.dtype, ir::evaluate(n.type.shape, binding));
    int buf = plan.bufferOfValue[size_t(o)];
    if (buf < 0) throw std::runtime_error("output " + n.name + " has no buffer");
    dev->copyToHost(t.bytes.data(), ptr[size_t(buf)], t.bytes.size());
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<HostTensor> makeInputs(const ir::Graph& g, const ir::Binding& binding, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<HostTensor> in;
  for (ir::NodeId p : g.inputs()) {
    const ir::Node& n = g.node(p);
    HostTensor t(n.type.dtype, ir::evaluate(n.type.shape, binding));
    for (int64_t i = 0; i < t.numElements(); ++i) {
      if (ir::isFloat(t.dtype))
        t.set(i, std::uniform_real_distribution<double>(-2, 2)(rng));
      else if (ir::isBool(t.dtype))
        t.set(i, (rng() >> 7) & 1);
      else
        t.set(i, double(int(rng() % 11) - 5));
    }
    in.push_back(std::move(t));
  }
  return in;
}

double maxError(const HostTensor& got, const HostTensor& want) {
  if (got.numElements() != want.numElements()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < got.numElements(); ++i) {
    double a = got.get(i), b = want.get(i);
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) return NAN;
      continue;
    }
    if (std::isinf(a) || std::isinf(b)) {
      if (a != b) return INFINITY;
      continue;
    }
    worst = std::max(worst, std::fabs(a - b) / std::max(1.0, std::fabs(b)));
  }
  return worst;
}

void checkOnSim(const fusion::FusionPlan& plan, const codegen::CompiledModule& module,
                double tolerance, std::vector<LaunchCounters>* counters) {
  std::vector<HostTensor> inputs = makeInputs(plan.graph);
  std::vector<HostTensor> want = ir::interpret(plan.graph, inputs);
  std::vector<HostTensor> got = runOnSim(plan, module, inputs, {}, counters);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("output " << plan.graph.node(plan.graph.outputs()[i]).name << " " << want[i].typeStr());
    CHECK(maxError(got[i], want[i]) <= tolerance);
  }
}

LaunchCounters checkOneKernelOnSim(const fusion::FusionPlan& plan, double tolerance,
                                   codegen::CompiledModule* module) {
  codegen::CompiledModule m = codegen::compileToPtx(plan);
  REQUIRE(m.kernels.size() == 1);
  std::vector<LaunchCounters> counters;
  checkOnSim(plan, m, tolerance, &counters);
  REQUIRE(counters.size() == 1);
  if (module) *module = std::move(m);
  return counters[0];
}

} // namespace weft::test
