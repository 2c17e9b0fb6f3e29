// --version and --help for every binary.
#include "common/cli/program_info.hpp"

#include <cstdio>
#include <string>

#include "common/cli/exit_codes.hpp"

#ifndef ROCKET_RIDES_VERSION
#error "ROCKET_RIDES_VERSION is defined by common/CMakeLists.txt from debian/changelog"
#endif

namespace rr::cli {

std::string_view version() { return ROCKET_RIDES_VERSION; }

std::optional<int> answer_version_or_help(int argc, const char* const* argv, const ProgramInfo& info) {
  if (argc != 2 || argv[1] == nullptr) return std::nullopt;
  const std::string_view arg = argv[1];
  std::string text;
  if (arg == "--version") {
    // "NAME VERSION" on the first line is what help2man reads.
    text.append(info.name).append(" ").append(version()).append("\n");
  } else if (arg == "--help") {
    text.append(info.name).append(" - ").append(info.summary).append("\n\n").append(info.usage);
    if (!text.ends_with('\n')) text.push_back('\n');
    text.append("\nOptions:\n").append(info.options);
    text.append("  --help     print this help and exit\n  --version  print the version and exit\n");
    text.append("\nEnvironment:\n").append(info.environment);
    if (!text.ends_with('\n')) text.push_back('\n');
  } else {
    return std::nullopt;
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace rr::cli
