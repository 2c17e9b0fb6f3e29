// Identifiers: both UUID sources give well-formed version 4 UUIDs that do not repeat.
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstring>
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

BOOST_AUTO_TEST_CASE(threads_never_share_os_random_uuids) {
  // random_uuid() draws the OS's bytes a block per thread: blocks of two threads must not overlap.
  std::set<std::string> first, second;
  std::thread a([&] {
    for (int i = 0; i < 100; ++i) first.insert(rr::random_uuid());
  });
  std::thread b([&] {
    for (int i = 0; i < 100; ++i) second.insert(rr::random_uuid());
  });
  a.join();
  b.join();
  first.merge(second);
  BOOST_TEST(first.size() == 200u);
}

BOOST_AUTO_TEST_CASE(a_forked_child_never_repeats_its_parents_next_uuid) {
  // The parent's block has bytes left after this draw; a child that inherited them would hand out
  // the very UUID the parent hands out next (a lock token twice).
  rr::random_uuid();
  int pipe_ends[2];
  BOOST_REQUIRE(pipe(pipe_ends) == 0);
  pid_t child = fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    std::string id = rr::random_uuid();
    ssize_t written = write(pipe_ends[1], id.data(), id.size());
    _exit(written == static_cast<ssize_t>(id.size()) ? 0 : 1);
  }
  close(pipe_ends[1]);
  char buffer[64] = {};
  ssize_t got = 0;
  while (got < 36) {
    ssize_t n = read(pipe_ends[0], buffer + got, sizeof buffer - 1 - static_cast<std::size_t>(got));
    if (n <= 0) break;
    got += n;
  }
  close(pipe_ends[0]);
  int status = 0;
  waitpid(child, &status, 0);
  BOOST_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  BOOST_REQUIRE(got == 36);
  std::string from_child(buffer, 36);
  BOOST_TEST(from_child != rr::random_uuid());
}

BOOST_AUTO_TEST_SUITE_END()
