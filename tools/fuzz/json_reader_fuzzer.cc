// libFuzzer target: any bytes given to the JSON graph reader either give a graph that prints,
// writes and reads back to the same text, or an InputError. Anything else (a crash, a
// sanitizer report, another exception) is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "frontend/json_reader.h"
#include "frontend/json_writer.h"
#include "ir/printer.h"
#include "weft/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  weft::frontend::ParsedGraph g;
  try {
    g = weft::frontend::readGraphJson(text, "fuzz.json");
  } catch (const weft::InputError&) {
    return 0;
  }
  std::string printed = weft::ir::printGraph(g.graph, g.name);
  std::string written = weft::frontend::writeGraphJson(g.graph, g.name);
  weft::frontend::ParsedGraph back;
  try {
    back = weft::frontend::readGraphJson(written, "written.json");
  } catch (const weft::InputError& e) {
    std::fprintf(stderr, "the written graph does not read back: %s\n%s\n", e.what(),
                 written.c_str());
    std::abort();
  }
  if (weft::ir::printGraph(back.graph, back.name) != printed) {
    std::fprintf(stderr, "round trip changed the graph:\n%s\nvs\n%s\n", printed.c_str(),
                 weft::ir::printGraph(back.graph, back.name).c_str());
    std::abort();
  }
  return 0;
}
