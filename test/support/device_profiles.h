#pragma once
// The device profiles tests plan for (weft/device_spec.h's deviceSpecProfile), by name, so a
// test file does not define its own copy.
#include "weft/device_spec.h"

namespace weft::test {

inline DeviceSpec h100() {
  return *deviceSpecProfile("h100");
}

} // namespace weft::test
