#pragma once
// weft's exception types. Error is anything weft reports; InputError is an error caused by
// what the user gave weft (a graph file, a binding, a flag) and maps to exit code 2 in the CLI.
#include <stdexcept>
#include <string>

namespace weft {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The user's input is wrong: the message names where (file, op, field) and what rule broke.
class InputError : public Error {
public:
  using Error::Error;
};

/// A device (sim or cuda) reported a failure; the message carries the device's own words.
class DeviceError : public Error {
public:
  using Error::Error;
};

} // namespace weft
