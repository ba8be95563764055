#include "counters_table.h"

#include <fmt/format.h>

namespace weft::tools {
namespace {

std::string row(const std::string& name, const LaunchCounters& c) {
  return fmt::format("  {:<28} {:>12} {:>13} {:>9} {:>9} {:>11} {:>11} {:>13} {:>8} {:>8} {:>6} "
                     "{:>5} {:>8} {:>9}\n",
                     name, c.warpInstructions, c.threadInstructions, c.globalLoadRequests,
                     c.globalStoreRequests, c.globalSectorsRead, c.globalSectorsWritten,
                     c.globalBytes(), c.sharedLoads, c.sharedStores, c.blockBarriers,
                     c.gridBarriers, c.atomics, c.syncInstructions);
}

} // namespace

std::string formatCountersTable(const std::vector<LaunchCounters>& launches,
                                uint64_t compulsoryBytes) {
  std::string out = "counters (simulator, per kernel launch; sectors are 32 bytes):\n";
  out += fmt::format("  {:<28} {:>12} {:>13} {:>9} {:>9} {:>11} {:>11} {:>13} {:>8} {:>8} {:>6} "
                     "{:>5} {:>8} {:>9}\n",
                     "kernel", "warp instr", "thread instr", "ld req", "st req", "sect read",
                     "sect write", "global bytes", "shm ld", "shm st", "bar", "grid", "atomics",
                     "sync instr");
  LaunchCounters total;
  for (const LaunchCounters& c : launches) {
    out += row(c.kernel, c);
    total += c;
  }
  if (launches.size() > 1) out += row("total", total);
  out += fmt::format("global data traffic: {} bytes moved, {} compulsory", total.globalBytes(),
                     compulsoryBytes);
  if (compulsoryBytes > 0)
    out += fmt::format(" (ratio {:.3f})", static_cast<double>(total.globalBytes()) /
                                              static_cast<double>(compulsoryBytes));
  out += fmt::format("; synchronisation apart: {} sectors, {} warp instructions\n",
                     total.syncSectors, total.syncInstructions);
  for (const LaunchCounters& c : launches)
    if (c.clusterBarriers > 0 || c.clusterSharedLoads > 0)
      out += fmt::format("thread-block clusters: {}: {} cluster barrier(s), {} warp load(s) from "
                         "other blocks' shared memory\n",
                         c.kernel, c.clusterBarriers, c.clusterSharedLoads);
  return out;
}

} // namespace weft::tools
