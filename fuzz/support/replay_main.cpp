// A main for the fuzz targets outside libFuzzer: feeds each file named on the command line, or every
// file of a directory named there, to LLVMFuzzerTestOneInput once. The ordinary (GCC, sanitized)
// build replays each corpus this way, and scripts/fuzz.sh --coverage measures what the corpora reach.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

// The inputs an argument names: the file itself, or a directory's regular files in name order (the
// same order on every machine, so a failure replays the same way).
std::vector<fs::path> inputs_of(const fs::path& argument) {
  std::error_code ec;
  if (!fs::is_directory(argument, ec)) return {argument};
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(argument)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Each input is copied into a heap block of exactly its size, as libFuzzer does: AddressSanitizer
// then reports a read one byte past its end.
bool replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
    return false;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto data = std::make_unique<std::uint8_t[]>(bytes.size());
  std::copy(bytes.begin(), bytes.end(), data.get());
  LLVMFuzzerTestOneInput(data.get(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argv[0]);
    return 2;
  }
  std::size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    auto files = inputs_of(argv[i]);
    // An empty or missing corpus replays nothing and would pass: refuse it.
    if (files.empty()) {
      std::fprintf(stderr, "replay: %s holds no inputs\n", argv[i]);
      return 1;
    }
    for (const auto& file : files) {
      std::fprintf(stderr, "replay: %s\n", file.c_str());
      if (!replay(file)) return 1;
      ++replayed;
    }
  }
  std::printf("replayed %zu input(s)\n", replayed);
  return 0;
}
