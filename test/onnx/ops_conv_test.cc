// Conv and ConvTranspose tests: being written.
#include <catch2/catch.hpp>
