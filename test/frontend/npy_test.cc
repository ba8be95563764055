// .npy files: round trips of every dtype, numpy's header versions, and the errors.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "frontend/npy.h"
#include "ir/dtype.h"
#include "weft/error.h"

using namespace weft;
using weft::frontend::decodeNpy;
using weft::frontend::encodeNpy;

namespace {

std::string errorOf(const std::string& bytes, std::optional<DType> expected = std::nullopt) {
  try {
    decodeNpy(bytes, "a.npy", expected);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

/// A .npy file with the given version, header dict text and data bytes (header padded to 64).
std::string npyFile(int major, std::string dict, const std::string& data) {
  size_t pre = major == 1 ? 10 : 12;
  while ((pre + dict.size() + 1) % 64)
    dict += ' ';
  dict += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  size_t n = dict.size();
  for (size_t i = 0; i < pre - 8; ++i)
    out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + dict + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.begin(), s.size());
  return s;
}

} // namespace

TEST_CASE("every dtype round-trips through .npy") {
  for (DType t : ir::kAllDTypes) {
    HostTensor x(t, {2, 3});
    for (int i = 0; i < 6; ++i)
      x.set(i, t == DType::boolean ? i % 2 : i - 2);
    HostTensor back = decodeNpy(encodeNpy(x), "x.npy", t);
    CHECK(back.dtype == t);
    CHECK(back.shape == x.shape);
    CHECK(back.bytes == x.bytes);
  }
}

TEST_CASE("the written header is numpy's: v1.0, padded to 64 bytes, descr by dtype") {
  HostTensor x(DType::f32, {5});
  std::string bytes = encodeNpy(x);
  CHECK(bytes.size() == 128 + 20); // 10 + 57 + '\n' rounds up to 128, as numpy pads
  CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(bytes.substr(10, 60) == "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }   ");
  CHECK(bytes[127] == '\n');
  CHECK(encodeNpy(HostTensor(DType::bf16, {1})).find("'descr': '<u2'") != std::string::npos);
  CHECK(encodeNpy(HostTensor(DType::boolean, {}))
            .find("'descr': '|b1', 'fortran_order': False, 'shape': ()") != std::string::npos);
}

TEST_CASE("versions 2.0 and 3.0 and numpy's spellings are read") {
  for (int major : {1, 2, 3}) {
    HostTensor t =
        decodeNpy(npyFile(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }",
                          floats({1.5f, -2.0f})),
                  "v.npy");
    CHECK(t.dtype == DType::f32);
    CHECK(t.shape == std::vector<int64_t>{2, 1});
    CHECK(t.get(0) == 1.5);
    CHECK(t.get(1) == -2.0);
  }
  CHECK(decodeNpy(npyFile(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (1,), }", "\xff"),
                  "i.npy")
            .get(0) == -1);
}

TEST_CASE("<u2 reads as bf16 only where bf16 is expected") {
  std::string data("\x80\x3f", 2); // bf16 1.0
  std::string f = npyFile(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", data);
  CHECK(decodeNpy(f, "b.npy", DType::bf16).get(0) == 1.0);
  CHECK(errorOf(f) ==
        "a.npy: .npy dtype '<u2' is read only where bf16 is expected (weft writes bf16 as <u2 "
        "bits); this input is not bf16");
}

TEST_CASE(".npy errors") {
  CHECK(errorOf("hello") == "a.npy: not a .npy file (it does not start with \\x93NUMPY)");
  CHECK(errorOf(npyFile(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                        floats({1, 2, 3, 4}))) ==
        "a.npy: the array is in Fortran order; weft reads C order only (save "
        "np.ascontiguousarray(arr))");
  CHECK(errorOf(
            npyFile(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", floats({1}))) ==
        "a.npy: .npy dtype '>f4' is big-endian; weft reads little-endian data only (save it with "
        "arr.astype(arr.dtype.newbyteorder('<')))");
  CHECK(errorOf(npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                        floats({1, 2}))) ==
        "a.npy: truncated data: shape (2, 3) of f32 needs 24 bytes but the file holds 8");
  CHECK(errorOf(npyFile(1, "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }",
                        std::string(8, '\0'))) == "a.npy: unsupported .npy dtype '<u8'; weft reads "
                                                  "<f4 <f2 <f8 |i1 <i4 <i8 |b1 (and <u2 as bf16)");
  CHECK(
      errorOf(npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", floats({1})),
              DType::f64) == "a.npy: the array has dtype f32 ('<f4') but f64 is expected");
  std::string cut =
      npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "").substr(0, 30);
  CHECK(
      errorOf(cut) ==
      "a.npy: truncated .npy header: it declares 118 bytes but the file has 20 after the preamble");
}

TEST_CASE("an empty array decodes (its data pointer is never handed to memcpy)") {
  HostTensor t = decodeNpy(
      npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }", ""), "a.npy");
  CHECK(t.shape == std::vector<int64_t>{0, 4});
  CHECK(t.bytes.empty());
}

TEST_CASE("inputs fuzzing found once decode or give an InputError naming the file") {
  // Each file of fuzz_regressions/npy/ once crashed the reader (tools/fuzz/npy_reader_fuzzer.cc).
  // Now each is one clear error, or a tensor whose bytes match its shape and that round-trips.
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           WEFT_SOURCE_DIR "/test/frontend/fuzz_regressions/npy")) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO(entry.path().filename().string());
    for (std::optional<DType> expected : {std::optional<DType>{}, std::optional<DType>{DType::bf16}}) {
      try {
        HostTensor t = decodeNpy(bytes, "a.npy", expected);
        CHECK(t.byteSize() == static_cast<size_t>(t.numElements()) * ir::dtypeBytes(t.dtype));
        HostTensor back = decodeNpy(encodeNpy(t), "b.npy", t.dtype);
        CHECK(back.shape == t.shape);
        CHECK(back.bytes == t.bytes);
      } catch (const InputError& e) {
        CHECK(std::string(e.what()).rfind("a.npy: ", 0) == 0);
      }
    }
    ++n;
  }
  CHECK(n >= 1);
}
