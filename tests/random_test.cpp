// Identifiers: both UUID sources give well-formed version 4 UUIDs that do not repeat.
#include <boost/test/unit_test.hpp>
#include <regex>
#include <set>
#include <thread>

#include "common/base/random.hpp"

BOOST_AUTO_TEST_SUITE(random_ids)

BOOST_AUTO_TEST_CASE(both_sources_give_distinct_version_4_uuids) {
  const std::regex v4("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    for (const auto& id : {rr::random_uuid(), rr::fast_uuid()}) {
      BOOST_TEST(std::regex_match(id, v4), id);
      seen.insert(id);
    }
  }
  BOOST_TEST(seen.size() == 4000u);
}

BOOST_AUTO_TEST_CASE(threads_get_different_fast_sequences) {
  // Each thread seeds its own generator from the OS: two threads must not replay each other.
  std::string first, second;
  std::thread a([&] { first = rr::fast_uuid(); });
  std::thread b([&] { second = rr::fast_uuid(); });
  a.join();
  b.join();
  BOOST_TEST(first != second);
}

BOOST_AUTO_TEST_SUITE_END()
