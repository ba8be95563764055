#include "fusion/plan_serialization.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ir/fnv1a64.h"

// Bytes, version kFormatVersion:
//   "WEFTPLAN"  what (1 byte: 'P' a plan, 'G' a guard)  format version (u32)
//   body bytes (u64)  FNV-1a 64 of the body (u64)  body
// (fixed-width numbers little-endian). The body is the value's fields in the order the
// fields() functions below list them: integers, enums and bools as LEB128 varints (signed ones
// zigzagged), doubles as their 8 bytes (exact: a constant keeps every bit), strings and
// containers as a varint count and the elements, an optional as 0/1 and the value, a variant as
// its index and the alternative. A graph is its nodes (name, kind, operands, type, attributes),
// outputs, inputs, symbol equalities and fresh-name counters; a Dim its factor and symbols.
//
// Covered, every field of each (the test checks the counts against the structs): FusionPlan,
// DeviceSpec, ir::Graph, ir::Node, ir::TensorType, every ir::Attrs alternative,
// ir::SymbolEquality, ir::SymbolRange, Buffer, LibraryCall, GemmPlan, GemmOperand, GemmEpilogue,
// GemmPrologue, EpilogueRead, KernelPlan, Group, ElementwiseMapping, RowReduceMapping,
// ColumnReduceMapping, ValuePlacement (StoreDecision, ResidentDecision), Stage, LaunchPlan,
// PhasePlan, TileSpace, SlotPlan, StagedInput, TileSlice, SharedPartials.
// A field added to one of them is one name in its fields() list; both directions read it.
// Bump kFormatVersion when the order changes (cache entries are also keyed by weft's source
// hash, so an old entry is never read by a newer build anyway).

namespace weft::fusion {
namespace {

constexpr std::string_view kMagic = "WEFTPLAN";
constexpr uint32_t kFormatVersion = 5; // 5: Barrier::LastBlock; 4: RowReduceMapping::streamLoads; 3: the gather op
constexpr size_t kHeaderBytes = 8 + 1 + 4 + 8 + 8;

// ---- the fields of every struct, in order: one list for both directions ----

template <class IO> void fields(IO& io, ir::TensorType& t) {
  io.fields("TensorType", t.dtype, t.shape);
}
template <class IO> void fields(IO&, ir::NoAttrs&) {}
template <class IO> void fields(IO& io, ir::ParameterAttrs& a) {
  io.fields("ParameterAttrs", a.index);
}
template <class IO> void fields(IO& io, ir::ConstantAttrs& a) {
  io.fields("ConstantAttrs", a.values);
}
template <class IO> void fields(IO& io, ir::IotaAttrs& a) {
  io.fields("IotaAttrs", a.axis);
}
template <class IO> void fields(IO& io, ir::CompareAttrs& a) {
  io.fields("CompareAttrs", a.dir);
}
template <class IO> void fields(IO& io, ir::BroadcastAttrs& a) {
  io.fields("BroadcastAttrs", a.dims);
}
template <class IO> void fields(IO& io, ir::TransposeAttrs& a) {
  io.fields("TransposeAttrs", a.perm);
}
template <class IO> void fields(IO& io, ir::SliceAttrs& a) {
  io.fields("SliceAttrs", a.starts, a.limits, a.strides);
}
template <class IO> void fields(IO& io, ir::ConcatAttrs& a) {
  io.fields("ConcatAttrs", a.axis);
}
template <class IO> void fields(IO& io, ir::GatherAttrs& a) {
  io.fields("GatherAttrs", a.axes, a.dims);
}
template <class IO> void fields(IO& io, ir::PadAttrs& a) {
  io.fields("PadAttrs", a.low, a.high, a.value);
}
template <class IO> void fields(IO& io, ir::ReduceAttrs& a) {
  io.fields("ReduceAttrs", a.kind, a.axes);
}
template <class IO> void fields(IO& io, ir::Node& n) {
  io.fields("Node", n.id, n.name, n.kind, n.operands, n.type, n.attrs);
}
template <class IO> void fields(IO& io, ir::SymbolEquality& e) {
  io.fields("SymbolEquality", e.symbol, e.value, e.where);
}
template <class IO> void fields(IO& io, ir::SymbolRange& r) {
  io.fields("SymbolRange", r.lo, r.hi, r.divisor);
}

template <class IO> void fields(IO& io, DeviceSpec& d) {
  io.fields("DeviceSpec", d.name, d.computeCapability, d.smCount, d.warpSize, d.maxThreadsPerBlock,
            d.maxThreadsPerSM, d.maxBlocksPerSM, d.registersPerSM, d.maxRegistersPerThread,
            d.sharedMemoryPerSM, d.sharedMemoryPerBlock, d.sharedMemoryPerBlockDefault,
            d.sharedMemoryReservedPerBlock, d.memoryBandwidthGBs, d.clockGHz, d.warpSchedulersPerSM,
            d.gemmLibrary);
}

template <class IO> void fields(IO& io, ElementwiseMapping& m) {
  io.fields("ElementwiseMapping", m.vectorWidth, m.elementsPerThread);
}
template <class IO> void fields(IO& io, RowReduceMapping& m) {
  io.fields("RowReduceMapping", m.kind, m.threadsPerRow, m.rowsPerBlock, m.splitFactor,
            m.vectorWidth, m.clusterBlocks, m.streamLoads);
}
template <class IO> void fields(IO& io, ColumnReduceMapping& m) {
  io.fields("ColumnReduceMapping", m.tileColumns, m.tileRows, m.splitFactor, m.useAtomics);
}
template <class IO> void fields(IO& io, Group& g) {
  io.fields("Group", g.dominant, g.subDominants, g.ops, g.mapping, g.loopShape, g.tileDims, g.rows,
            g.rowLength, g.rowsPerTile, g.follows, g.acrossTiles, g.space);
}
template <class IO> void fields(IO& io, ValuePlacement::StoreDecision& s) {
  io.fields("StoreDecision", s.phases, s.recomputeBytes, s.storeBytes, s.tooManyOps);
}
template <class IO> void fields(IO& io, ValuePlacement::ResidentDecision& r) {
  io.fields("ResidentDecision", r.firstPhase, r.lastPhase, r.savedBytes);
}
template <class IO> void fields(IO& io, ValuePlacement& v) {
  io.fields("ValuePlacement", v.storage, v.buffer, v.sharedOffset, v.sharedBytes, v.registerReuse,
            v.warpLocal, v.partialsBuffer, v.stored, v.readAtOwnRows, v.resident);
}
template <class IO> void fields(IO& io, Stage& s) {
  io.fields("Stage", s.group, s.barrierBefore, s.materialized);
}
template <class IO> void fields(IO& io, LaunchPlan& l) {
  io.fields("LaunchPlan", l.blockSize, l.tiles, l.maxBlocks, l.sharedBytes, l.maxRegisters,
            l.cooperative, l.clusterSize, l.clusterRequired, l.fillSMs);
}
template <class IO> void fields(IO& io, TileSpace& t) {
  io.fields("TileSpace", t.kind, t.units, t.unitsPerTile, t.split, t.clusterParts, t.anchor);
}
template <class IO> void fields(IO& io, SlotPlan& s) {
  io.fields("SlotPlan", s.group, s.loop, s.rowDims, s.mapping, s.steps, s.reused, s.registers,
            s.across, s.combineOffset, s.combineOffsets, s.combineBytes);
}
template <class IO> void fields(IO& io, StagedInput& s) {
  io.fields("StagedInput", s.input, s.offset, s.vector, s.computed);
}
template <class IO> void fields(IO& io, TileSlice& s) {
  io.fields("TileSlice", s.input, s.offset, s.shape, s.sliceDims, s.rowDimOf);
}
template <class IO> void fields(IO& io, SharedPartials& s) {
  io.fields("SharedPartials", s.reduce, s.offset);
}
template <class IO> void fields(IO& io, PhasePlan& p) {
  io.fields("PhasePlan", p.firstStage, p.stageCount, p.space, p.acrossStages, p.slots,
            p.sharedPartials, p.stagedOffset, p.staged, p.slicesOffset, p.slices, p.contiguousTiles,
            p.stagingBytes, p.throughCluster);
}
template <class IO> void fields(IO& io, KernelPlan& k) {
  io.fields("KernelPlan", k.name, k.ops, k.inputs, k.outputs, k.groups, k.stages, k.placement,
            k.launch, k.phases, k.reduceScratchBytes, k.stagingBytes, k.registerLimit,
            k.minBlocksPerSM, k.residentTiles, k.residentSpace);
}

template <class IO> void fields(IO& io, GemmOperand& o) {
  io.fields("GemmOperand", o.layout, o.batchStride, o.ld, o.value, o.source, o.sourceType);
}
template <class IO> void fields(IO& io, GemmPlan& g) {
  io.fields("GemmPlan", g.engine, g.tf32, g.engineNote, g.batch, g.m, g.n, g.k, g.a, g.b, g.c,
            g.blockM, g.blockN, g.blockK, g.warpM, g.warpN, g.threadM, g.threadN, g.columnRun,
            g.vectorA, g.vectorB, g.vectorC, g.stages, g.asyncCopy, g.splitK, g.sharedPad,
            g.tileSums, g.blockSize, g.sharedBytes, g.tiles, g.maxBlocks, g.modeledBytes,
            g.compulsoryBytes);
}
template <class IO> void fields(IO& io, EpilogueRead& r) {
  io.fields("EpilogueRead", r.value, r.kind);
}
template <class IO> void fields(IO& io, GemmPrologue& p) {
  io.fields("GemmPrologue", p.source, p.ops, p.leaves);
}
template <class IO> void fields(IO& io, GemmEpilogue& e) {
  io.fields("GemmEpilogue", e.ops, e.result, e.reads, e.savedBytes, e.a, e.b, e.store);
}
template <class IO> void fields(IO& io, LibraryCall& c) {
  io.fields("LibraryCall", c.op, c.gemm, c.epilogue);
}

template <class IO> void fields(IO& io, Buffer& b) {
  io.fields("Buffer", b.kind, b.value, b.dtype, b.elements, b.slot);
}
template <class IO> void fields(IO& io, FusionPlan& p) {
  io.fields("FusionPlan", p.policy, p.device, p.graph, p.steps, p.buffers, p.bufferOfValue,
            p.symbolRanges, p.notes);
}

// ---- the two directions ----

template <class T, template <class...> class Of> struct IsA : std::false_type {};
template <template <class...> class Of, class... A> struct IsA<Of<A...>, Of> : std::true_type {};

class Writer {
public:
  std::string out;

  template <class... F> void fields(const char*, F&... f) { (value(f), ...); }

  template <class T> void value(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      out.push_back(v ? 1 : 0);
    } else if constexpr (std::is_enum_v<T>) {
      integer(static_cast<std::underlying_type_t<T>>(v));
    } else if constexpr (std::is_integral_v<T>) {
      integer(v);
    } else if constexpr (std::is_same_v<T, double>) {
      fixed(std::bit_cast<uint64_t>(v));
    } else if constexpr (std::is_same_v<T, std::string>) {
      varint(v.size());
      out += v;
    } else if constexpr (std::is_same_v<T, ir::Dim>) {
      integer(v.factor());
      value(v.symbols());
    } else if constexpr (std::is_same_v<T, ir::Graph>) {
      graph(v);
    } else if constexpr (IsA<T, std::vector>::value || IsA<T, std::set>::value) {
      varint(v.size());
      for (const auto& e : v)
        value(e);
    } else if constexpr (IsA<T, std::map>::value) {
      varint(v.size());
      for (const auto& [key, e] : v) {
        value(key);
        value(e);
      }
    } else if constexpr (IsA<T, std::optional>::value) {
      out.push_back(v ? 1 : 0);
      if (v) value(*v);
    } else if constexpr (IsA<T, std::variant>::value) {
      varint(v.index());
      std::visit([&](const auto& alt) { value(alt); }, v);
    } else {
      fusion::fields(*this, const_cast<T&>(v)); // reads the fields only
    }
  }

private:
  void fixed(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      out.push_back(char(v >> (8 * i)));
  }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out.push_back(char(v | 0x80));
      v >>= 7;
    }
    out.push_back(char(v));
  }
  template <class T> void integer(T v) {
    if constexpr (std::is_signed_v<T>)
      varint((uint64_t(int64_t(v)) << 1) ^ uint64_t(int64_t(v) >> 63)); // zigzag
    else
      varint(uint64_t(v));
  }
  void graph(const ir::Graph& g) {
    value(g.nodes());
    value(g.outputs());
    value(g.inputs());
    value(g.symbolEqualities());
    value(g.nameCounters());
  }
};

class Reader {
public:
  Reader(std::string_view body, size_t base)
      : begin_(body.data()), p_(body.data()), end_(body.data() + body.size()), base_(base) {}

  template <class... F> void fields(const char* what, F&... f) {
    const char* outer = where_;
    where_ = what;
    (value(f), ...);
    where_ = outer;
  }

  template <class T> void value(T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      uint8_t b = byte("a bool");
      if (b > 1) fail(fmt::format("a bool of {}", b));
      v = b == 1;
    } else if constexpr (std::is_enum_v<T>) {
      v = static_cast<T>(integer<std::underlying_type_t<T>>());
    } else if constexpr (std::is_integral_v<T>) {
      v = integer<T>();
    } else if constexpr (std::is_same_v<T, double>) {
      v = std::bit_cast<double>(fixed());
    } else if constexpr (std::is_same_v<T, std::string>) {
      size_t n = count(1);
      v.assign(p_, n);
      p_ += n;
    } else if constexpr (std::is_same_v<T, ir::Dim>) {
      v = dim();
    } else if constexpr (std::is_same_v<T, ir::Graph>) {
      v = graph();
    } else if constexpr (IsA<T, std::vector>::value) {
      size_t n = count(1);
      v.clear();
      if constexpr (std::is_arithmetic_v<typename T::value_type>) {
        v.resize(n);
        for (auto& e : v)
          value(e);
      } else {
        v.reserve(std::min<size_t>(n, 1024)); // grows only as elements parse
        for (size_t i = 0; i < n; ++i)
          value(v.emplace_back());
      }
    } else if constexpr (IsA<T, std::set>::value) {
      size_t n = count(1);
      v.clear();
      for (size_t i = 0; i < n; ++i) {
        typename T::value_type e{};
        value(e);
        if (!v.empty() && !(*v.rbegin() < e)) fail("a set out of order");
        v.emplace_hint(v.end(), std::move(e));
      }
    } else if constexpr (IsA<T, std::map>::value) {
      size_t n = count(2);
      v.clear();
      for (size_t i = 0; i < n; ++i) {
        typename T::key_type key{};
        value(key);
        if (!v.empty() && !(v.rbegin()->first < key)) fail("a map out of order");
        value(v.emplace_hint(v.end(), std::move(key), typename T::mapped_type{})->second);
      }
    } else if constexpr (IsA<T, std::optional>::value) {
      bool has = false;
      value(has);
      if (has)
        value(v.emplace());
      else
        v.reset();
    } else if constexpr (IsA<T, std::variant>::value) {
      size_t index = size_t(integer<uint64_t>());
      if (index >= std::variant_size_v<T>) fail(fmt::format("a variant alternative {}", index));
      alternative(v, index, std::make_index_sequence<std::variant_size_v<T>>{});
    } else {
      fusion::fields(*this, v);
    }
  }

  void finish() {
    if (p_ != end_) fail(fmt::format("{} byte(s) after the end", end_ - p_));
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(fmt::format("malformed plan bytes: {} at byte {} (in {})", what,
                                         base_ + size_t(p_ - begin_), where_));
  }

private:
  uint64_t fixed() {
    if (end_ - p_ < 8) fail("truncated (8 bytes expected)");
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= uint64_t(uint8_t(p_[i])) << (8 * i);
    p_ += 8;
    return v;
  }
  uint8_t byte(const char* what) {
    if (p_ == end_) fail(fmt::format("truncated ({} expected)", what));
    return uint8_t(*p_++);
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      uint8_t b = byte("a number");
      if (shift == 63 && b > 1) fail("a number past 64 bits");
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      if (shift == 63) fail("a number past 64 bits");
    }
  }
  template <class T> T integer() {
    uint64_t raw = varint();
    if constexpr (std::is_signed_v<T>) {
      int64_t v = int64_t(raw >> 1) ^ -int64_t(raw & 1);
      if (v < int64_t(std::numeric_limits<T>::min()) || v > int64_t(std::numeric_limits<T>::max()))
        fail(fmt::format("{} out of range", v));
      return T(v);
    } else {
      if (raw > uint64_t(std::numeric_limits<T>::max())) fail(fmt::format("{} out of range", raw));
      return T(raw);
    }
  }
  /// A count of elements at least `minBytes` each: never more than the bytes left hold.
  size_t count(size_t minBytes) {
    uint64_t n = varint();
    if (n > uint64_t(end_ - p_) / minBytes) fail(fmt::format("a count of {} past the end", n));
    return size_t(n);
  }
  template <class V, size_t... I> void alternative(V& v, size_t index, std::index_sequence<I...>) {
    ((index == I ? value(v.template emplace<I>()) : void()), ...);
  }
  ir::Dim dim() {
    int64_t factor = integer<int64_t>();
    size_t n = count(1);
    ir::Dim d(factor);
    std::string last;
    for (size_t i = 0; i < n; ++i) {
      std::string s;
      value(s);
      if (s.empty() || (i > 0 && s < last)) fail("a dim's symbols");
      d = d * ir::Dim::symbol(s);
      last = std::move(s);
    }
    return d;
  }
  /// The graph is rebuilt through Graph::add, which checks every node again (operands, names,
  /// the type against the one inferred): a plan's graph is well-formed by construction.
  ir::Graph graph() {
    ir::Graph g;
    const char* outer = where_;
    where_ = "Graph";
    size_t n = count(6);
    for (size_t i = 0; i < n; ++i) {
      ir::Node node;
      value(node);
      if (node.id != ir::NodeId(i)) fail(fmt::format("node {} with id {}", i, node.id));
      if (node.name.empty()) fail(fmt::format("node {} without a name", i));
      // add() numbers parameters itself: check that it numbers them as they were.
      std::optional<ir::Attrs> parameter;
      if (node.kind == ir::OpKind::Parameter) parameter = node.attrs;
      ir::NodeId id = -1;
      try {
        id = g.add(node.kind, std::move(node.operands), std::move(node.attrs), node.type,
                   std::move(node.name));
      } catch (const std::exception& e) {
        fail(fmt::format("node {}: {}", i, e.what()));
      }
      if (id != ir::NodeId(i) || (parameter && g.node(id).attrs != *parameter))
        fail(fmt::format("node {} rebuilt differently", i));
    }
    std::vector<ir::NodeId> outputs, inputs;
    value(outputs);
    value(inputs);
    for (ir::NodeId o : outputs)
      if (o < 0 || size_t(o) >= n) fail(fmt::format("output {}", o));
    g.setOutputs(outputs);
    if (g.outputs() != outputs || g.inputs() != inputs) fail("the graph's inputs or outputs");
    std::vector<ir::SymbolEquality> equalities;
    std::vector<int> counters;
    value(equalities);
    value(counters);
    if (counters.size() != size_t(ir::kNumOpKinds)) fail("the fresh-name counters");
    g.restoreBuildState(std::move(equalities), std::move(counters));
    where_ = outer;
    return g;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  size_t base_;
  const char* where_ = "the header";
};

void putFixed(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(char(v >> (8 * i)));
}
uint64_t getFixed(std::string_view bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= uint64_t(uint8_t(bytes[at + size_t(i)])) << (8 * i);
  return v;
}

std::string withHeader(char what, const std::string& body) {
  std::string out;
  out.reserve(kHeaderBytes + body.size());
  out += kMagic;
  out.push_back(what);
  putFixed(out, kFormatVersion, 4);
  putFixed(out, body.size(), 8);
  putFixed(out, ir::fnv1a64(body), 8);
  out += body;
  return out;
}

/// The body of `bytes` after checking its header, its size and its checksum.
std::string_view checkedBody(std::string_view bytes, char what) {
  auto malformed = [](const std::string& why) {
    return std::runtime_error(fmt::format("malformed plan bytes: {}", why));
  };
  if (bytes.size() < kHeaderBytes)
    throw malformed(fmt::format("{} byte(s), shorter than the header (truncated)", bytes.size()));
  if (bytes.substr(0, kMagic.size()) != kMagic) throw malformed("no WEFTPLAN header");
  size_t at = kMagic.size();
  if (bytes[at] != what) throw malformed(fmt::format("it holds '{}', not '{}'", bytes[at], what));
  uint64_t version = getFixed(bytes, at + 1, 4);
  if (version != kFormatVersion)
    throw malformed(fmt::format("format version {}; this build reads {}", version, kFormatVersion));
  uint64_t size = getFixed(bytes, at + 5, 8), checksum = getFixed(bytes, at + 13, 8);
  std::string_view body = bytes.substr(kHeaderBytes);
  if (size != body.size())
    throw malformed(
        fmt::format("a body of {} bytes where the header says {} (truncated?)", body.size(), size));
  if (ir::fnv1a64(body) != checksum) throw malformed("the checksum does not match (corrupt bytes)");
  return body;
}

template <class T> T read(std::string_view bytes, char what) {
  std::string_view body = checkedBody(bytes, what);
  Reader r(body, kHeaderBytes);
  T v{};
  r.value(v);
  r.finish();
  return v;
}

/// Counts each struct's fields as its fields() function lists them.
struct FieldCounter {
  std::map<std::string, size_t> counts;
  template <class... F> void fields(const char* name, F&...) { counts[name] = sizeof...(F); }
};

template <class... T> void countFields(FieldCounter& c) {
  auto one = [&](auto v) { fusion::fields(c, v); };
  (one(T{}), ...);
}

} // namespace

std::map<std::string, size_t> serializedFieldCounts() {
  FieldCounter c;
  countFields<ir::TensorType, ir::ParameterAttrs, ir::ConstantAttrs, ir::IotaAttrs,
              ir::CompareAttrs, ir::BroadcastAttrs, ir::TransposeAttrs, ir::SliceAttrs,
              ir::ConcatAttrs, ir::PadAttrs, ir::GatherAttrs, ir::ReduceAttrs, ir::Node, ir::SymbolEquality,
              ir::SymbolRange, DeviceSpec, ElementwiseMapping, RowReduceMapping,
              ColumnReduceMapping, Group, ValuePlacement::StoreDecision,
              ValuePlacement::ResidentDecision, ValuePlacement, Stage, LaunchPlan, TileSpace,
              SlotPlan, StagedInput, TileSlice, SharedPartials, PhasePlan, KernelPlan, GemmOperand,
              GemmPlan, EpilogueRead, GemmPrologue, GemmEpilogue, LibraryCall, Buffer, FusionPlan>(
      c);
  return c.counts;
}

std::string serializePlan(const FusionPlan& plan) {
  Writer w;
  w.out.reserve(1 << 16);
  w.value(plan);
  return withHeader('P', w.out);
}

FusionPlan deserializePlan(std::string_view bytes) {
  return read<FusionPlan>(bytes, 'P');
}

std::string serializeGuard(const ir::ShapeGuard& guard) {
  Writer w;
  w.value(guard);
  return withHeader('G', w.out);
}

ir::ShapeGuard deserializeGuard(std::string_view bytes) {
  return read<ir::ShapeGuard>(bytes, 'G');
}

} // namespace weft::fusion
