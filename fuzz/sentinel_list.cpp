// REDIS_SENTINELS and REDIS_SENTINEL_MASTER (common/redis/sentinel_list.*): any text is read or
// refused with RedisUrlError; a list read has one endpoint per comma-separated entry, each with a
// host a name can have and a port from 1 to 65535, no two alike, and written back as describe()
// writes them (joined by commas) it reads as the same list; a master name is accepted exactly when
// it is 1 to 200 printable ASCII characters without spaces, and kept as it is.
// Input: the sentinel list on the first line, the master name after it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/redis/sentinel_list.hpp"
#include "fuzz/support/fuzz_check.hpp"
#include "fuzz/support/input_lines.hpp"

namespace {

bool valid_master_name(std::string_view name) {
  return !name.empty() && name.size() <= 200 &&
         std::all_of(name.begin(), name.end(), [](unsigned char c) { return c > ' ' && c < 0x7f; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  rr::fuzz::InputLines input(data, size);
  std::string_view list = input.line();
  std::string_view master_name = input.rest();

  try {
    auto sentinels = rr::redis::parse_sentinel_list(list);
    FUZZ_CHECK(sentinels.size() == static_cast<std::size_t>(std::count(list.begin(), list.end(), ',')) + 1);
    std::string written;
    std::set<std::string> seen;
    for (const auto& sentinel : sentinels) {
      FUZZ_CHECK(!sentinel.host.empty() && sentinel.port >= 1 && !sentinel.is_unix_socket());
      FUZZ_CHECK(!sentinel.password && !sentinel.username && sentinel.db == 0);
      FUZZ_CHECK(std::none_of(sentinel.host.begin(), sentinel.host.end(), [](unsigned char c) {
        return c <= ' ' || c >= 0x7f || c == '/' || c == '[' || c == ']';
      }));
      FUZZ_CHECK(seen.insert(sentinel.describe()).second);
      if (!written.empty()) written += ",";
      written += sentinel.describe();
    }
    std::vector<rr::redis::RedisEndpoint> again;
    try {
      again = rr::redis::parse_sentinel_list(written);
    } catch (const rr::redis::RedisUrlError&) {
      FUZZ_CHECK(!"the list as describe() writes it is refused");
    }
    FUZZ_CHECK(again.size() == sentinels.size());
    for (std::size_t i = 0; i < again.size(); ++i) {
      FUZZ_CHECK(again[i].host == sentinels[i].host && again[i].port == sentinels[i].port);
    }
  } catch (const rr::redis::RedisUrlError&) {
  }

  try {
    FUZZ_CHECK(rr::redis::validate_sentinel_master_name(master_name) == master_name);
    FUZZ_CHECK(valid_master_name(master_name));
  } catch (const rr::redis::RedisUrlError&) {
    FUZZ_CHECK(!valid_master_name(master_name));
  }
  return 0;
}
