// The fuzz targets' assertion: a property that fails aborts the run, which libFuzzer reports as a
// crash (and saves the input) and a replay reports as a failed test. Unlike assert(), it holds in
// every build type.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace rr::fuzz {

[[noreturn]] inline void property_failed(const char* property, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", file, line, property);
  std::abort();
}

}  // namespace rr::fuzz

#define FUZZ_CHECK(property) \
  ((property) ? static_cast<void>(0) : ::rr::fuzz::property_failed(#property, __FILE__, __LINE__))
