#pragma once
// The "sim" Device: weft::Device implemented on weft's PTX simulator. Modules are parsed
// and decoded once at loadModule; launches run synchronously on the calling thread and
// record LaunchCounters (see executor.h for what each counter counts). Graph capture
// records launches instead of running them; replay runs them in capture order.
//
// Grid barriers: codegen must emit a grid-wide barrier as a call to a non-inlined .func whose
// name starts with "weft_grid_barrier" (e.g. weft_grid_barrier(ptr counter)), called by every
// thread of every block, and the kernel must be launched cooperatively. Everything executed
// inside that function is synchronisation traffic (syncInstructions, syncSectors), and
// gridBarriers counts the calls every block made.
#include <memory>

#include "sim/executor.h"
#include "weft/device.h"

namespace weft::sim {

std::unique_ptr<Device> makeSimDevice(const DeviceSpec& spec, const ExecOptions& options);
std::unique_ptr<Device> makeSimDevice(const DeviceSpec& spec);

} // namespace weft::sim

namespace weft {
/// weft::makeSimDevice(spec): the simulator device modelling `spec`.
using sim::makeSimDevice;
} // namespace weft
