// Reading a provider's answer without a document (common/payments/provider_answer.hpp): the id of
// a created object, an error's message and code, and the cases a parsed document's lookups would
// read as absent. No network: the bodies are Stripe's shapes, written out.
#include <pthread.h>

#include <boost/test/unit_test.hpp>
#include <functional>
#include <string>

#include "common/payments/provider_answer.hpp"

using rr::payments::read_provider_answer;

namespace {

// Runs `work` on a thread whose stack is as small as a fiber's (256 KiB in a release build), where
// the API reads the provider's answers.
void on_a_fiber_sized_stack(std::function<void()> work) {
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, 256 * 1024);
  pthread_t thread;
  auto run = [](void* argument) -> void* {
    (*static_cast<std::function<void()>*>(argument))();
    return nullptr;
  };
  BOOST_REQUIRE(pthread_create(&thread, &attributes, run, &work) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(provider_answer)

BOOST_AUTO_TEST_CASE(a_charge_object_gives_its_top_level_id_only) {
  auto fields = read_provider_answer(
      R"({"id":"ch_123","object":"charge","amount":2000,"paid":true,"refunded":false,"captured":null,)"
      R"("outcome":{"id":"not_this_one","type":"authorized"},"refunds":{"data":[{"id":"re_1"}],"has_more":false},)"
      R"("metadata":{"error":{"message":"not an error"}},"payment_method_details":{"card":{"brand":"visa"}}})");
  BOOST_TEST(fields.json);
  BOOST_TEST(fields.id == "ch_123");
  BOOST_TEST(fields.message == "");
  BOOST_TEST(fields.code == "");
}

BOOST_AUTO_TEST_CASE(an_error_gives_its_message_and_code) {
  auto fields = read_provider_answer(
      R"({"error":{"type":"card_error","code":"card_declined","decline_code":"generic_decline",)"
      R"("message":"Your card was declined.","charge":"ch_9","param":{"message":"nested, not it"}}})");
  BOOST_TEST(fields.json);
  BOOST_TEST(fields.id == "");
  BOOST_TEST(fields.message == "Your card was declined.");
  BOOST_TEST(fields.code == "card_declined");
}

BOOST_AUTO_TEST_CASE(escapes_are_decoded_and_the_first_member_of_a_name_counts) {
  auto fields = read_provider_answer(R"({"id":"ch_\u0041\"b","id":"ch_second","error":{"message":"a\nb"},)"
                                     R"("error":{"message":"second"}})");
  BOOST_TEST(fields.id == "ch_A\"b");
  BOOST_TEST(fields.message == "a\nb");
}

BOOST_AUTO_TEST_CASE(members_of_another_type_read_as_absent) {
  auto fields = read_provider_answer(R"({"id":42,"error":"declined"})");
  BOOST_TEST(fields.json);
  BOOST_TEST(fields.id == "");
  BOOST_TEST(fields.message == "");
  // The first "id" is a number: a later string "id" is not taken instead.
  BOOST_TEST(read_provider_answer(R"({"id":null,"id":"ch_1"})").id == "");
  // Not an object at the top: nothing to read.
  auto array = read_provider_answer(R"([{"id":"ch_1"}])");
  BOOST_TEST(array.json);
  BOOST_TEST(array.id == "");
}

BOOST_AUTO_TEST_CASE(a_body_that_is_not_json_gives_no_fields) {
  for (std::string body : {"", "<html>Bad Gateway</html>", R"({"id":"ch_1")", R"({"id":"ch_1"} trailing)",
                           R"({"error":{"message":"cut off)"}) {
    auto fields = read_provider_answer(body);
    BOOST_TEST(!fields.json, body);
    BOOST_TEST(fields.id == "", body);
    BOOST_TEST(fields.message == "", body);
  }
}

BOOST_AUTO_TEST_CASE(asked_for_the_id_only_it_stops_there) {
  // What follows the id is not read: not even a broken rest makes the answer unreadable.
  auto fields = read_provider_answer(R"({"id":"ch_1","object":"charge","error":{"message":"m"},)", true);
  BOOST_TEST(fields.json);
  BOOST_TEST(fields.id == "ch_1");
  BOOST_TEST(fields.message == "");
  // Read whole, the same text is not JSON.
  BOOST_TEST(!read_provider_answer(R"({"id":"ch_1","object":"charge","error":{"message":"m"},)").json);
  // An id that is not the first member is still found; without one the whole body is read.
  BOOST_TEST(read_provider_answer(R"({"object":"charge","outcome":{"id":"x"},"id":"ch_2"})", true).id == "ch_2");
  auto no_id = read_provider_answer(R"({"object":"charge"})", true);
  BOOST_TEST(no_id.json);
  BOOST_TEST(no_id.id == "");
  BOOST_TEST(!read_provider_answer(R"({"object":"charge")", true).json);
  // A nested "id" never ends the reading.
  BOOST_TEST(read_provider_answer(R"({"outcome":{"id":"x"}} trailing)", true).json == false);
}

BOOST_AUTO_TEST_CASE(a_long_string_outgrows_the_stack_buffer_and_is_still_read_whole) {
  std::string message(10000, 'x');
  auto fields = read_provider_answer(R"({"error":{"message":")" + message + R"("}})");
  BOOST_TEST(fields.message == message);
}

BOOST_AUTO_TEST_CASE(a_raw_nul_byte_after_the_json_makes_the_body_not_json) {
  // RapidJSON's streams end at a NUL: read naively, what follows one would be ignored.
  for (std::string body : {std::string("{\"id\":\"ch_1\"}\0<html>", 20), std::string("{}\0", 3),
                           std::string("{\"error\":{\"message\":\"m\"}} \0 ", 28)}) {
    auto fields = read_provider_answer(body);
    BOOST_TEST(!fields.json, body.size());
    BOOST_TEST(fields.id == "");
    BOOST_TEST(fields.message == "");
  }
  // Escaped, a NUL is an ordinary character of a string.
  BOOST_TEST(read_provider_answer(R"({"id":"ch_\u0000"})").id == std::string("ch_\0", 4));
}

BOOST_AUTO_TEST_CASE(a_deeply_nested_answer_is_read_without_exhausting_the_stack) {
  // Well-formed: 100,000 levels inside the charge, which still gives its id.
  std::string deep = R"({"id":"ch_deep","nested":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  // Not JSON: a megabyte of '[' never closed.
  std::string unclosed(1000000, '[');
  rr::payments::ProviderAnswerFields nested, id_only, broken;
  on_a_fiber_sized_stack([&] {
    nested = read_provider_answer(deep);
    id_only = read_provider_answer(deep, true);
    broken = read_provider_answer(unclosed);
  });
  BOOST_TEST(nested.json);
  BOOST_TEST(nested.id == "ch_deep");
  BOOST_TEST(id_only.id == "ch_deep");
  BOOST_TEST(!broken.json);
}

BOOST_AUTO_TEST_SUITE_END()
