// What every binary answers about itself without reading its configuration: `--version` (the one
// version of the suite, debian/changelog's top entry, which CMake reads) and `--help` (the text
// its manual page is generated from, so the two cannot disagree).
#pragma once

#include <optional>
#include <string_view>

namespace rr::cli {

struct ProgramInfo {
  std::string_view name;     // the binary's name, as on its log lines
  std::string_view summary;  // one line: what it is (the manual page's NAME line)
  std::string_view usage;    // the rest of --help: the command lines, then options and environment
};

// The suite's version, e.g. "0.1.0".
std::string_view version();

// `--version` or `--help` as the only argument: prints the answer on standard output and returns
// exit status 0. Anything else: nullopt, and the main goes on with its own argument handling.
std::optional<int> answer_version_or_help(int argc, const char* const* argv, const ProgramInfo& info);

}  // namespace rr::cli
