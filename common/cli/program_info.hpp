// What every binary answers about itself without reading its configuration: `--version` (the one
// version of the suite, debian/changelog's top entry, which CMake reads) and `--help` (the text
// its manual page is generated from, so the two cannot disagree).
#pragma once

#include <optional>
#include <string_view>

namespace rr::cli {

// The Environment section of the binaries that read the suite's settings (the daemons).
inline constexpr std::string_view kSettingsFromEnvironment =
    "  Settings are read from the environment only; under systemd from\n"
    "  /etc/rocket-rides/rocket-rides.env, which lists each one with its default.\n";

// --help is NAME - SUMMARY, the usage, then "Options:" (the binary's own, then --help and
// --version, which every binary has) and "Environment:".
struct ProgramInfo {
  std::string_view name;         // the binary's name, as on its log lines
  std::string_view summary;      // one line: what it is (the manual page's NAME line)
  std::string_view usage;        // the command lines and what the binary does
  std::string_view options;      // option lines of its own, or empty
  std::string_view environment;  // the Environment section's lines
};

// The suite's version, e.g. "0.1.0".
std::string_view version();

// `--version` or `--help` as the only argument: prints the answer on standard output and returns
// exit status 0. Anything else: nullopt, and the main goes on with its own argument handling.
std::optional<int> answer_version_or_help(int argc, const char* const* argv, const ProgramInfo& info);

}  // namespace rr::cli
