// The finished-response memory behind in-memory replays: scoped per user, expiring, bounded.
#include <boost/test/unit_test.hpp>
#include <thread>

#include "common/idempotency/finished_responses.hpp"

using rr::idempotency::FinishedResponse;
using rr::idempotency::FinishedResponses;
using namespace std::chrono_literals;

namespace {

FinishedResponse response(const std::string& body) {
  return {FinishedResponses::fingerprint("POST", "/rides", "{\"n\":1}"), 201, body};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(finished_responses)

BOOST_AUTO_TEST_CASE(remembers_a_response_for_its_user_and_key_only) {
  FinishedResponses memory(10, 60s);
  memory.remember(1, "key-a", response("{\"ride\":1}"));
  auto found = memory.find(1, "key-a");
  BOOST_REQUIRE(found != nullptr);
  BOOST_TEST(found->status == 201);
  BOOST_TEST(found->body == "{\"ride\":1}");
  BOOST_TEST(found->request_fingerprint == "POST /rides {\"n\":1}");
  BOOST_TEST(memory.find(2, "key-a") == nullptr);  // keys are scoped per user
  BOOST_TEST(memory.find(1, "key-b") == nullptr);
  // A user id and key that would concatenate to the same text stay apart.
  memory.remember(12, "3", response("a"));
  BOOST_TEST(memory.find(1, "23") == nullptr);
}

BOOST_AUTO_TEST_CASE(entries_expire) {
  FinishedResponses memory(10, 50ms);
  memory.remember(1, "key-a", response("x"));
  BOOST_TEST(memory.find(1, "key-a") != nullptr);
  std::this_thread::sleep_for(80ms);
  BOOST_TEST(memory.find(1, "key-a") == nullptr);
  BOOST_TEST(memory.size() == 0u);
}

BOOST_AUTO_TEST_CASE(the_oldest_entries_go_first_when_full) {
  FinishedResponses memory(3, 60s);
  for (int i = 0; i < 5; ++i) memory.remember(1, "key-" + std::to_string(i), response(std::to_string(i)));
  BOOST_TEST(memory.size() == 3u);
  BOOST_TEST(memory.find(1, "key-0") == nullptr);
  BOOST_TEST(memory.find(1, "key-1") == nullptr);
  BOOST_TEST(memory.find(1, "key-4")->body == "4");
  // Remembering a key again does not take a second slot.
  for (int i = 0; i < 10; ++i) memory.remember(1, "key-4", response("4"));
  BOOST_TEST(memory.find(1, "key-2") != nullptr);
}

BOOST_AUTO_TEST_CASE(size_zero_or_ttl_zero_remembers_nothing) {
  FinishedResponses no_room(0, 60s);
  no_room.remember(1, "key-a", response("x"));
  BOOST_TEST(no_room.find(1, "key-a") == nullptr);
  FinishedResponses no_time(10, 0s);
  no_time.remember(1, "key-a", response("x"));
  BOOST_TEST(no_time.find(1, "key-a") == nullptr);
}

BOOST_AUTO_TEST_CASE(request_bytes_compare_every_part_and_where_it_ends) {
  auto stored = FinishedResponses::request_bytes("POST", "/rides", "application/json", "{\"a\":1}");
  BOOST_TEST(FinishedResponses::same_request_bytes(stored, "POST", "/rides", "application/json", "{\"a\":1}"));
  BOOST_TEST(!FinishedResponses::same_request_bytes(stored, "POST", "/rides", "application/json", "{\"a\":2}"));
  BOOST_TEST(!FinishedResponses::same_request_bytes(stored, "POST", "/rides", "text/plain", "{\"a\":1}"));
  BOOST_TEST(!FinishedResponses::same_request_bytes(stored, "POST", "/rides?x", "application/json", "{\"a\":1}"));
  BOOST_TEST(!FinishedResponses::same_request_bytes(stored, "PUT", "/rides", "application/json", "{\"a\":1}"));
  // The same characters split differently between the parts are another request.
  BOOST_TEST(!FinishedResponses::same_request_bytes(stored, "POST", "/ride", "sapplication/json", "{\"a\":1}"));
  BOOST_TEST(!FinishedResponses::same_request_bytes(stored, "POST", "/rides", "application/json{", "\"a\":1}"));
  // Nothing stored (a large body, or an entry made without bytes) matches nothing.
  BOOST_TEST(FinishedResponses::request_bytes("POST", "/rides", "", std::string(1025, 'x')).empty());
  BOOST_TEST(!FinishedResponses::same_request_bytes("", "POST", "/rides", "", ""));
  auto empty_body = FinishedResponses::request_bytes("POST", "/rides", "", "");
  BOOST_TEST(FinishedResponses::same_request_bytes(empty_body, "POST", "/rides", "", ""));
}

BOOST_AUTO_TEST_SUITE_END()
