// libFuzzer target: any bytes given to the .npy reader either give a tensor whose byte size
// matches its shape and that encodes and decodes back to the same tensor, or an InputError.
// Anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "frontend/npy.h"
#include "ir/dtype.h"
#include "weft/error.h"

namespace {

void check(const std::string& bytes, std::optional<weft::DType> expected) {
  weft::HostTensor t;
  try {
    t = weft::frontend::decodeNpy(bytes, "fuzz.npy", expected);
  } catch (const weft::InputError&) {
    return;
  }
  if (expected && t.dtype != *expected) {
    std::fprintf(stderr, "decoded %s where %s was expected\n", t.typeStr().c_str(),
                 std::string(weft::ir::dtypeName(*expected)).c_str());
    std::abort();
  }
  if (t.byteSize() != static_cast<size_t>(t.numElements()) * weft::ir::dtypeBytes(t.dtype)) {
    std::fprintf(stderr, "tensor %s holds %zu bytes\n", t.typeStr().c_str(), t.byteSize());
    std::abort();
  }
  weft::HostTensor back;
  try {
    back = weft::frontend::decodeNpy(weft::frontend::encodeNpy(t), "written.npy", t.dtype);
  } catch (const weft::InputError& e) {
    std::fprintf(stderr, "the written tensor does not read back: %s\n", e.what());
    std::abort();
  }
  if (back.dtype != t.dtype || back.shape != t.shape || back.bytes != t.bytes) {
    std::fprintf(stderr, "round trip changed %s into %s\n", t.typeStr().c_str(),
                 back.typeStr().c_str());
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  check(bytes, std::nullopt);
  check(bytes, weft::DType::bf16); // the only expectation that changes how bytes are read
  return 0;
}
