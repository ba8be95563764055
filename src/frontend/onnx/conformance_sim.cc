#include "frontend/onnx/conformance_sim.h"

#include <fmt/format.h>

#include "compile.h"

namespace weft::onnx {

Backend simBackend(Policy policy, const std::string& profile) {
  auto spec = deviceSpecProfile(profile);
  if (!spec) throw InputError(fmt::format("unknown device profile \"{}\"", profile));
  return {fmt::format("sim/{}/{}", profile, fusion::policyName(policy)),
          [policy, spec = *spec](const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                 int* kernels) {
            CompileOptions options;
            options.policy = policy;
            options.device = spec;
            options.cacheDir = "off";
            auto compiled = compile(g, options);
            auto device = makeDevice("sim", spec);
            Executable exe(compiled, *device);
            Binding binding = inferBinding(g, inputs);
            std::vector<HostTensor> outputs = exe.run(inputs, binding);
            if (kernels) *kernels = exe.programFor(binding).plan().kernelCount();
            return outputs;
          }};
}

} // namespace weft::onnx
