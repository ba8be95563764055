#include "perf_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "codegen/ptxas.h"
#include "compile.h"
#include "copy_kernel.h"

namespace weft::bench {
namespace {
constexpr int kMaxLoadsInFlight = 8; // what one thread keeps outstanding at most, in the model
/// How many times ptxas unrolls a column reduce's loop down its columns, which weft's PTX
/// leaves rolled (one load, then its add): the SASS of bias_grad's kernel (CUDA 13, sm_90)
/// issues 4 loads, then their 4 adds, per iteration, with remainder loops of 2 and 1.
constexpr int kPtxasColumnUnroll = 4;

/// The loads a thread of a group keeps in flight per load its PTX loop has: a streamed row's
/// chunk of steps (RowReduceMapping::streamLoads); for a column reduce, ptxas's unroll, at most
/// the iterations a thread makes (the reduced length over the block's rows of threads and the
/// split); 1 for every other mapping.
int64_t unrolledLoads(const fusion::Group& g, const std::map<std::string, int64_t>& binding) {
  if (const auto* row = std::get_if<fusion::RowReduceMapping>(&g.mapping))
    return std::max(1, row->streamLoads);
  const auto* column = std::get_if<fusion::ColumnReduceMapping>(&g.mapping);
  if (!column || g.acrossTiles) return 1;
  const int64_t length = g.rowLength.isStatic() ? g.rowLength.size() : g.rowLength.evaluate(binding);
  const int64_t perIteration =
      int64_t(std::max(1, column->tileRows)) * std::max(1, column->splitFactor);
  return std::clamp<int64_t>((length + perIteration - 1) / perIteration, 1, kPtxasColumnUnroll);
}
} // namespace

ModelProfile modelProfile(const DeviceSpec& spec, LaunchMode launches) {
  ModelProfile p;
  p.name = spec.name;
  p.cost = fusion::costModel(spec);
  p.launches = launches;
  return p;
}

ProgramShape programShape(const CompiledProgram& program,
                          const std::map<std::string, int64_t>& binding) {
  const fusion::FusionPlan& plan = program.plan;
  const DeviceSpec& spec = plan.device;
  auto bytesOf = [&](int buffer) -> uint64_t {
    const fusion::Buffer& b = plan.buffers[static_cast<size_t>(buffer)];
    const int64_t n = b.elements.isStatic() ? b.elements.size() : b.elements.evaluate(binding);
    return static_cast<uint64_t>(std::max<int64_t>(0, n)) * ir::dtypeBytes(b.dtype);
  };
  // Kernels that fill the SMs launch as many blocks as the compiled kernel keeps resident
  // (Executable::bind asks Device::maxActiveBlocksPerSM): on the GPU that follows the registers
  // ptxas allocates, which the plan's bound only caps. Assembled once per program that has one.
  std::map<std::string, int> ptxasRegisters;
  const bool fills = std::any_of(program.module.kernels.begin(), program.module.kernels.end(),
                                 [](const codegen::CompiledKernel& k) { return k.launch.fillSMs; });
  if (fills)
    if (const std::string ptxas = codegen::findPtxas(); !ptxas.empty()) {
      const codegen::PtxasReport r = codegen::runPtxas(ptxas, program.module.ptx, spec.smName());
      if (r.ok())
        for (const codegen::PtxasFunctionReport& f : r.functions)
          ptxasRegisters[f.name] = f.registers;
    }
  ProgramShape shape;
  for (const codegen::CompiledKernel& k : program.module.kernels) {
    KernelShape s;
    s.blockSize = k.launch.blockSize;
    s.clusterSize = std::max(1, k.launch.clusterSize);
    const int registers = k.launch.maxRegisters > 0 ? k.launch.maxRegisters : 32;
    s.blocksPerSM = std::max(1, blocksPerSM(spec, k.launch.blockSize, registers,
                                            k.launch.sharedBytes));
    if (k.launch.fillSMs) {
      auto assembled = ptxasRegisters.find(k.name);
      if (assembled != ptxasRegisters.end()) {
        // The GPU's grid: the plan's cap raised to what ptxas's registers keep resident.
        s.blocksPerSM = std::max(1, blocksPerSM(spec, k.launch.blockSize, assembled->second,
                                                k.launch.sharedBytes));
        const int64_t tiles =
            k.launch.tiles.isStatic() ? k.launch.tiles.size() : k.launch.tiles.evaluate(binding);
        s.fillGrid = std::max<int64_t>(
            1, std::min(tiles, std::max(k.launch.maxBlocks, int64_t(spec.smCount) * s.blocksPerSM)));
      } else {
        // No ptxas: the grid the simulator launched (its own register estimate) is the one
        // modeled, all of it resident (registers left out of the bound).
        s.blocksPerSM = std::max(1, blocksPerSM(spec, k.launch.blockSize, 1, k.launch.sharedBytes));
      }
    }
    // What the step writes: a kernel's outputs and its own scratch, a library call's result.
    std::set<int> written;
    if (k.planStep >= 0 && size_t(k.planStep) < plan.steps.size()) {
      const fusion::Step& step = plan.steps[static_cast<size_t>(k.planStep)];
      auto bufferOf = [&](ir::NodeId v) {
        return v >= 0 && size_t(v) < plan.bufferOfValue.size() ? plan.bufferOfValue[size_t(v)]
                                                                : -1;
      };
      if (const auto* kp = std::get_if<fusion::KernelPlan>(&step)) {
        s.handsOff = kp->handsOffToLastBlock();
        for (ir::NodeId v : kp->outputs)
          written.insert(bufferOf(v));
        // A loop iteration loads each input once; a slot phase loads its whole row first.
        int loads = std::max(1, int(kp->inputs.size())), slotLoads = 0;
        for (const fusion::PhasePlan& phase : kp->phases)
          if (phase.slots) {
            int loaded = 0; // reused values the phase loads (the rest it computes)
            for (ir::NodeId v : phase.slots->reused)
              loaded += std::count(kp->inputs.begin(), kp->inputs.end(), v) > 0 ? 1 : 0;
            slotLoads = std::max(slotLoads, phase.slots->steps * std::max(1, loaded));
          }
        if (slotLoads > 0) {
          loads = slotLoads;
        } else {
          int64_t unroll = 1;
          for (const fusion::Group& g : kp->groups)
            unroll = std::max(unroll, unrolledLoads(g, binding));
          loads = int(std::min<int64_t>(loads * unroll, kMaxLoadsInFlight));
        }
        s.loadsInFlight = std::min(loads, kMaxLoadsInFlight);
      } else if (const auto* call = std::get_if<fusion::LibraryCall>(&step)) {
        written.insert(bufferOf(call->result())); // the epilogue's result, if any
        s.loadsInFlight = kMaxLoadsInFlight; // a GEMM's tiles, double-buffered
      }
    }
    for (const codegen::KernelParam& p : k.params) {
      if (p.kind != codegen::KernelParam::Kind::Buffer || p.buffer < 0) continue;
      const bool scratch = plan.buffers[size_t(p.buffer)].kind == fusion::Buffer::Kind::Scratch;
      BufferUse use{p.buffer, bytesOf(p.buffer)};
      if (written.count(p.buffer) || scratch) s.writes.push_back(use);
      if (!written.count(p.buffer) || scratch) s.reads.push_back(use);
    }
    shape.push_back(std::move(s));
  }
  return shape;
}

ModeledTime& ModeledTime::operator+=(const ModeledTime& o) {
  memoryUs += o.memoryUs;
  issueUs += o.issueUs;
  boundUs += o.boundUs;
  launchUs += o.launchUs;
  barrierUs += o.barrierUs;
  dramBytes += o.dramBytes;
  l2Bytes += o.l2Bytes;
  return *this;
}

ModeledTime modelKernel(const LaunchCounters& k, const ModelProfile& p, const KernelShape* shape,
                        uint64_t l2Bytes) {
  const fusion::CostModel& m = p.cost;
  // The grid the GPU launches (a kernel that fills the SMs: what ptxas's registers keep
  // resident; the simulator's grid-stride loops count the same bytes and instructions).
  const uint64_t grid = shape && shape->fillGrid > 0 ? uint64_t(shape->fillGrid) : k.blocks;
  const double blocks = static_cast<double>(std::max<uint64_t>(1, grid));
  const double sms = static_cast<double>(m.smCount);
  const double busy = std::min(1.0, blocks / sms);
  const uint64_t read = k.globalSectorsRead * 32;
  l2Bytes = std::min(l2Bytes, read);
  ModeledTime t;
  t.l2Bytes = l2Bytes;
  t.dramBytes = k.globalBytes() - l2Bytes;
  // Bytes in flight per SM and the round a warp's loads wait through (perf_model.h). Unknown
  // block size: a full SM (what the model assumed before it knew occupancy).
  double inFlight = 1e30, roundNs = m.latencyNs;
  if (shape && shape->blockSize > 0 && k.globalLoadRequests > 0) {
    const int loads = std::max(1, shape->loadsInFlight);
    const double warps = shape->blockSize / 32.0;
    // bytes a warp moves (loads and the stores that follow them) per load it waits for
    const double perRequest = double(k.globalBytes()) / double(k.globalLoadRequests);
    const double resident =
        std::min<double>(std::max(1, shape->blocksPerSM), std::ceil(blocks / sms));
    inFlight = resident * warps * perRequest * loads;
    // What a warp does after its loads came back and before it loads again: its instructions
    // (they use the data) and its block barriers (every warp waits for the last), per load
    // it waits for; loads from another block's shared memory (thread-block clusters) are
    // waits too. A round issues `loads` loads together, then does the work of all of them.
    // An instruction waits for the one before it (dependentInstructionNs) or for the block's
    // other warps to issue theirs on the SM's schedulers (they compute between the same
    // barriers), whichever is longer.
    const double waits = double(k.globalLoadRequests + k.clusterSharedLoads);
    const double warpBarriers = double(k.blockBarriers) * warps;
    const double instructionNs = std::max(m.dependentInstructionNs, warps / (m.issueGInstr / sms));
    const double workPerLoadNs =
        (instructionNs * double(k.warpInstructions) + m.blockBarrierNs * warpBarriers) / waits;
    roundNs += loads * workPerLoadNs;
  }
  const double bandwidth =
      fusion::achievedBandwidthGBs(m, std::min(blocks, sms), inFlight, roundNs);
  t.memoryUs = double(t.dramBytes) / (bandwidth * 1e3) + double(l2Bytes) / (m.l2GBs * 1e3);
  t.issueUs = static_cast<double>(k.warpInstructions) / (m.issueGInstr * 1e3 * busy);
  t.boundUs = std::max(t.memoryUs, t.issueUs);
  t.launchUs = p.launchUs();
  t.barrierUs = static_cast<double>(k.gridBarriers) * fusion::gridBarrierUs(m, grid) +
                (shape && shape->handsOff ? fusion::handoffUs(m) : 0);
  return t;
}

std::vector<uint64_t> l2HitBytes(const std::vector<LaunchCounters>& kernels,
                                 const ProgramShape& shape, double l2Bytes) {
  std::vector<uint64_t> hits(kernels.size(), 0);
  if (shape.size() != kernels.size()) return hits;
  std::map<int, size_t> lastTouch; // buffer → the launch that last read or wrote it
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelShape& s = shape[k];
    double hit = 0, unique = 0;
    for (const BufferUse& r : s.reads) {
      unique += double(r.bytes);
      auto last = lastTouch.find(r.buffer);
      if (last == lastTouch.end()) continue;
      // Bytes through L2 since: every other buffer touched by the launches in between, and
      // what this launch writes while it reads.
      std::map<int, uint64_t> between;
      for (size_t j = last->second + 1; j < k; ++j) {
        for (const BufferUse& u : shape[j].reads)
          between[u.buffer] = u.bytes;
        for (const BufferUse& u : shape[j].writes)
          between[u.buffer] = u.bytes;
      }
      for (const BufferUse& u : s.writes)
        between[u.buffer] = u.bytes;
      between.erase(r.buffer);
      double distance = 0;
      for (const auto& [buffer, bytes] : between)
        distance += double(bytes);
      hit += std::clamp(l2Bytes - distance, 0.0, double(r.bytes));
    }
    // A launch's own re-reads (beyond one read of each buffer): rows read again while on chip.
    const double read = double(kernels[k].globalSectorsRead * 32);
    const double again = std::max(0.0, read - unique);
    hits[k] = static_cast<uint64_t>(std::min(read, hit + again));
    for (const BufferUse& u : s.reads)
      lastTouch[u.buffer] = k;
    for (const BufferUse& u : s.writes)
      lastTouch[u.buffer] = k;
  }
  return hits;
}

ModeledTime modelProgram(const std::vector<LaunchCounters>& kernels, const ModelProfile& p,
                         const ProgramShape& shape) {
  const bool shaped = shape.size() == kernels.size();
  std::vector<uint64_t> hits =
      shaped ? l2HitBytes(kernels, shape, p.cost.l2Bytes) : std::vector<uint64_t>(kernels.size());
  ModeledTime total;
  for (size_t k = 0; k < kernels.size(); ++k)
    total += modelKernel(kernels[k], p, shaped ? &shape[k] : nullptr, hits[k]);
  return total;
}

double bandwidthLimitUs(uint64_t bytes, const ModelProfile& p) {
  return static_cast<double>(bytes) / (p.cost.peakDramGBs * 1e3);
}

double copyBaselineUs(uint64_t bytes, const ModelProfile& p) {
  const CopyLaunch c = copyLaunch(bytes, p.cost.smCount);
  LaunchCounters k;
  k.blocks = c.grid;
  k.globalSectorsRead = k.globalSectorsWritten = (c.vectors * kCopyVectorBytes + 31) / 32;
  k.globalLoadRequests = (c.vectors + 31) / 32; // a warp's request: 32 vectors of 16 bytes
  // about 10 warp instructions per vector: the loop's 37 per trip of 4
  k.warpInstructions = k.globalLoadRequests * 10;
  KernelShape s;
  s.blockSize = c.block;
  s.blocksPerSM = kCopyBlocksPerSM;
  s.loadsInFlight = kCopyUnroll;
  return modelKernel(k, p, &s).totalUs();
}

} // namespace weft::bench
