// libFuzzer target: any bytes given to the ONNX importer either give a graph that verifies
// and prints, or an InputError (UnsupportedError and ImportTimeValueError are InputErrors).
// The same bytes go to the TensorProto reader (onnx-test's input_N.pb / output_N.pb files),
// which must give a tensor whose byte size matches its shape, or an InputError. Anything else
// (a crash, a sanitizer report, another exception, an allocation past -rss_limit_mb) is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "frontend/onnx/onnx_import.h"
#include "ir/dtype.h"
#include "ir/printer.h"
#include "ir/graph.h"
#include "weft/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    weft::ir::Graph g = weft::onnx::importOnnxBytes(bytes, "fuzz.onnx");
    weft::ir::verify(g);
    (void)weft::ir::printGraph(g, "fuzz");
  } catch (const weft::InputError&) {
  }
  try {
    weft::HostTensor t = weft::onnx::parseTensorProto(bytes, "fuzz.pb");
    if (t.byteSize() != static_cast<size_t>(t.numElements()) * weft::ir::dtypeBytes(t.dtype)) {
      std::fprintf(stderr, "tensor %s holds %zu bytes\n", t.typeStr().c_str(), t.byteSize());
      std::abort();
    }
  } catch (const weft::InputError&) {
  }
  return 0;
}
