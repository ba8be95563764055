// weft::Program and weft::Plan (weft/weft.h): read-only views of a CompiledProgram.
#include "compile.h"
#include "fusion/plan_printer.h"

namespace weft {

int Plan::kernelCount() const { return program_->plan.kernelCount(); }
std::string Plan::str() const { return fusion::printFusionPlan(program_->plan); }
std::string Plan::dot() const { return fusion::fusionPlanDot(program_->plan); }

const Binding& Program::binding() const { return program_->binding; }
bool Program::generic() const { return program_->generic; }
Plan Program::plan() const { return detail::Access::makePlan(program_); }
const std::string& Program::ptx() const { return program_->module.ptx; }
const std::string& Program::llvmIr() const { return program_->module.llvmIr; }
std::vector<std::string> Program::kernelNames() const {
  std::vector<std::string> names;
  for (const codegen::CompiledKernel& k : program_->module.kernels)
    names.push_back(k.name);
  return names;
}
bool Program::fromDiskCache() const { return program_->fromDiskCache; }
Program::Timings Program::timings() const {
  const codegen::CompileTimings& t = program_->module.timings;
  Timings out;
  out.planMs = program_->planMs;
  if (!program_->fromDiskCache) {
    out.llvmIrMs = t.llvmIrMs;
    out.optimiseMs = t.optimiseMs;
    out.ptxMs = t.ptxMs;
  }
  out.totalMs = program_->totalMs;
  return out;
}

} // namespace weft
