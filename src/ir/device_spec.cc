#include "weft/device_spec.h"

namespace weft {

std::optional<DeviceSpec> deviceSpecProfile(const std::string& name) {
  DeviceSpec s;
  s.name = name;
  if (name == "v100") { // Tesla V100-SXM2 16/32 GB
    s.computeCapability = 70;
    s.smCount = 80;
    s.maxThreadsPerSM = 2048;
    s.maxBlocksPerSM = 32;
    s.sharedMemoryPerSM = 96 * 1024;
    s.sharedMemoryPerBlock = 96 * 1024;
    s.sharedMemoryReservedPerBlock = 0;
    s.memoryBandwidthGBs = 900;
    s.clockGHz = 1.53;
    return s;
  }
  if (name == "a100") { // A100-SXM4 40 GB
    s.computeCapability = 80;
    s.smCount = 108;
    s.maxThreadsPerSM = 2048;
    s.maxBlocksPerSM = 32;
    s.sharedMemoryPerSM = 164 * 1024;
    s.sharedMemoryPerBlock = 163 * 1024;
    s.memoryBandwidthGBs = 1555;
    s.clockGHz = 1.41;
    return s;
  }
  if (name == "h100") { // H100-SXM5 80 GB
    return s; // the defaults are the H100's
  }
  return std::nullopt;
}

std::vector<std::string> deviceSpecProfileNames() { return {"v100", "a100", "h100"}; }

} // namespace weft
