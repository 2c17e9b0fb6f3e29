// Users and tokens: create, authenticate, reject; the `user` and `migrate` subcommands end to end.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "common/auth/token_cache.hpp"
#include "common/auth/tokens.hpp"
#include "common/auth/users.hpp"
#include "support/process.hpp"
#include "support/test_database.hpp"

using rr::test::binary;
using rr::test::run_command;
using rr::test::TestDatabase;

BOOST_AUTO_TEST_SUITE(users_and_tokens)

BOOST_AUTO_TEST_CASE(tokens_are_random_and_well_formed) {
  auto a = rr::auth::generate_token();
  auto b = rr::auth::generate_token();
  BOOST_TEST(a != b);
  BOOST_TEST(rr::auth::looks_like_token(a));
  BOOST_TEST(a.size() == 67u);
  BOOST_TEST(!rr::auth::looks_like_token("rr_" + std::string(64, 'g')));
  BOOST_TEST(!rr::auth::looks_like_token(a.substr(1)));
}

BOOST_AUTO_TEST_CASE(created_token_authenticates_and_only_its_hash_is_stored) {
  TestDatabase db;
  auto created = rr::auth::create_user(db.conn(), "rider@example.com", "cus_123");
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, std::chrono::seconds(5));
  auto lease = pool.acquire();
  auto user = rr::auth::authenticate(lease, created.token);
  BOOST_REQUIRE(user.has_value());
  BOOST_TEST(user->id == created.user.id);
  BOOST_TEST(user->stripe_customer_id == "cus_123");
  BOOST_TEST(db.scalar("SELECT encode(token_hash, 'hex') FROM api_tokens") ==
             rr::auth::to_hex(rr::auth::sha256(created.token)));
  BOOST_TEST(db.scalar("SELECT count(*) FROM api_tokens WHERE position(convert_to('" + created.token +
                       "', 'UTF8') in token_hash) > 0") == "0");
}

BOOST_AUTO_TEST_CASE(wrong_token_is_rejected) {
  TestDatabase db;
  auto created = rr::auth::create_user(db.conn(), "rider@example.com", "cus_123");
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, std::chrono::seconds(5));
  auto lease = pool.acquire();
  auto other = rr::auth::generate_token();
  BOOST_TEST(!rr::auth::authenticate(lease, other).has_value());
  BOOST_TEST(!rr::auth::authenticate(lease, "").has_value());
  BOOST_TEST(!rr::auth::authenticate(lease, "not a token").has_value());
  std::string tampered = created.token;
  tampered.back() = tampered.back() == '0' ? '1' : '0';
  BOOST_TEST(!rr::auth::authenticate(lease, tampered).has_value());
}

BOOST_AUTO_TEST_CASE(duplicate_email_is_a_clear_error) {
  TestDatabase db;
  rr::auth::create_user(db.conn(), "rider@example.com", "cus_123");
  BOOST_CHECK_THROW(rr::auth::create_user(db.conn(), "rider@example.com", "cus_456"), rr::auth::UserExists);
  BOOST_TEST(db.scalar("SELECT count(*) FROM users") == "1");
}

BOOST_AUTO_TEST_CASE(user_create_command_prints_only_the_token) {
  TestDatabase db;
  auto result = run_command(
      {binary("rocket-rides-api"), "user", "create", "--email", "cli@example.com", "--stripe-customer", "cus_cli"},
      {{"DATABASE_URL", db.url()}});
  BOOST_TEST(result.exit_code == 0, result.err);
  BOOST_REQUIRE(!result.out.empty());
  BOOST_TEST(result.out.back() == '\n');
  std::string token = result.out.substr(0, result.out.size() - 1);
  BOOST_TEST(token.find('\n') == std::string::npos);
  BOOST_TEST(rr::auth::looks_like_token(token));
  BOOST_TEST(result.err.find(token) == std::string::npos);
  BOOST_TEST(db.scalar("SELECT count(*) FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE u.email = "
                       "'cli@example.com' AND t.token_hash = sha256(convert_to('" +
                       token + "', 'UTF8'))") == "1");

  auto again = run_command(
      {binary("rocket-rides-api"), "user", "create", "--email", "cli@example.com", "--stripe-customer", "cus_cli"},
      {{"DATABASE_URL", db.url()}});
  BOOST_TEST(again.exit_code == 1);
  BOOST_TEST(again.out.empty());
  BOOST_TEST(again.err.find("already exists") != std::string::npos);

  auto fresh = run_command({binary("rocket-rides-api"), "user", "token", "--email", "cli@example.com"},
                           {{"DATABASE_URL", db.url()}});
  BOOST_TEST(fresh.exit_code == 0, fresh.err);
  BOOST_TEST(rr::auth::looks_like_token(fresh.out.substr(0, fresh.out.size() - 1)));
  BOOST_TEST(db.scalar("SELECT count(*) FROM api_tokens") == "2");
}

BOOST_AUTO_TEST_CASE(user_create_without_required_flags_is_a_usage_error) {
  TestDatabase db;
  auto result = run_command({binary("rocket-rides-api"), "user", "create", "--email", "x@example.com"},
                            {{"DATABASE_URL", db.url()}});
  BOOST_TEST(result.exit_code == 2);
  BOOST_TEST(result.err.find("--stripe-customer") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(migrate_command_is_idempotent) {
  TestDatabase db(/*migrated=*/false);
  for (int run = 0; run < 2; ++run) {
    auto result = run_command({binary("rocket-rides-api"), "migrate"}, {{"DATABASE_URL", db.url()}});
    BOOST_TEST(result.exit_code == 0, result.err);
  }
  BOOST_TEST(db.scalar("SELECT count(*) FROM schema_migrations") != "0");
}

BOOST_AUTO_TEST_CASE(missing_database_url_exits_2_naming_it) {
  auto result = run_command({binary("rocket-rides-api"), "migrate"}, {{"DATABASE_URL", std::nullopt}});
  BOOST_TEST(result.exit_code == 2);
  auto all = result.out + result.err;
  BOOST_TEST(all.find("DATABASE_URL") != std::string::npos);
  BOOST_TEST(std::count(all.begin(), all.end(), '\n') == 1);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(token_cache)

BOOST_AUTO_TEST_CASE(cached_users_expire_after_the_ttl) {
  rr::auth::TokenCache cache(10, std::chrono::milliseconds(50));
  cache.remember("hash-a", {1, "a@example.com", "cus_a"});
  BOOST_TEST(cache.find("hash-a").value().id == 1);
  BOOST_TEST(!cache.find("hash-b").has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  BOOST_TEST(!cache.find("hash-a").has_value());
}

BOOST_AUTO_TEST_CASE(the_cache_never_grows_past_its_bound) {
  rr::auth::TokenCache cache(3, std::chrono::seconds(60));
  for (int i = 0; i < 4; ++i) cache.remember("hash-" + std::to_string(i), {i, "x@example.com", "cus"});
  int present = 0;
  for (int i = 0; i < 4; ++i) present += cache.find("hash-" + std::to_string(i)).has_value() ? 1 : 0;
  BOOST_TEST(present <= 3);
  BOOST_TEST(cache.find("hash-3").has_value());
}

BOOST_AUTO_TEST_CASE(a_full_cache_drops_its_oldest_token_only) {
  rr::auth::TokenCache cache(3, std::chrono::seconds(60));
  for (int i = 0; i < 4; ++i) cache.remember("hash-" + std::to_string(i), {i, "x@example.com", "cus"});
  BOOST_TEST(cache.size() == 3u);
  BOOST_TEST(!cache.find("hash-0").has_value());
  for (int i = 1; i < 4; ++i) BOOST_TEST(cache.find("hash-" + std::to_string(i)).value().id == i);
}

BOOST_AUTO_TEST_CASE(a_revoked_token_stops_working_once_its_entry_expires) {
  TestDatabase db;
  auto created = rr::auth::create_user(db.conn(), "rider@example.com", "cus_123");
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, std::chrono::seconds(5));
  rr::auth::TokenCache cache(10, std::chrono::milliseconds(100));
  auto lease = pool.acquire();
  BOOST_TEST(rr::auth::authenticate_cached(cache, lease, created.token).has_value());
  db.scalar("DELETE FROM api_tokens");
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  BOOST_TEST(!rr::auth::authenticate_cached(cache, lease, created.token).has_value());
}

BOOST_AUTO_TEST_CASE(one_caller_renews_an_entry_near_its_expiry_while_the_others_keep_it) {
  rr::auth::TokenCache cache(10, std::chrono::milliseconds(400));
  cache.remember("hash-a", {1, "a@example.com", "cus_a"});
  // Early in its life nobody is asked to renew it.
  auto early = cache.find_for_renewal("hash-a", std::chrono::milliseconds(100));
  BOOST_TEST_REQUIRE(early.has_value());
  BOOST_TEST(!early->renew);
  std::this_thread::sleep_for(std::chrono::milliseconds(320));
  // In its last 100 ms: many callers at once, exactly one told to renew, every one given the user.
  std::atomic<int> renewers{0}, answered{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] {
      auto found = cache.find_for_renewal("hash-a", std::chrono::milliseconds(100));
      if (found && found->value.id == 1) ++answered;
      if (found && found->renew) ++renewers;
    });
  }
  for (auto& caller : callers) caller.join();
  BOOST_TEST(answered.load() == 8);
  BOOST_TEST(renewers.load() == 1);
  // The renewal remembered afresh: a full life again, and the next window has its own renewer.
  cache.remember("hash-a", {1, "a@example.com", "cus_a"});
  BOOST_TEST(!cache.find_for_renewal("hash-a", std::chrono::milliseconds(100))->renew);
  std::this_thread::sleep_for(std::chrono::milliseconds(320));
  BOOST_TEST(cache.find_for_renewal("hash-a", std::chrono::milliseconds(100))->renew);
  BOOST_TEST(!cache.find_for_renewal("hash-a", std::chrono::milliseconds(100))->renew);
}

BOOST_AUTO_TEST_CASE(an_unrenewed_entry_still_expires_at_its_ttl) {
  rr::auth::TokenCache cache(10, std::chrono::milliseconds(100));
  cache.remember("hash-a", {1, "a@example.com", "cus_a"});
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  BOOST_TEST(cache.find_for_renewal("hash-a", std::chrono::milliseconds(50))->renew);  // claimed, never renewed
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  BOOST_TEST(!cache.find_for_renewal("hash-a", std::chrono::milliseconds(50)).has_value());
  BOOST_TEST(!cache.find("hash-a").has_value());
}

// The way the API uses the cache, against a real database: callers that find no user (or are
// told to renew it) look the token up. Under continuous load across several expiries that is
// one lookup per renewal; without renewal ahead every caller arriving while the first lookup
// runs does its own (a herd of up to 8 per expiry here).
BOOST_AUTO_TEST_CASE(a_busy_token_costs_one_lookup_per_renewal_not_one_per_caller) {
  TestDatabase db;
  auto created = rr::auth::create_user(db.conn(), "busy@example.com", "cus_busy");
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 8, std::chrono::seconds(5));
  rr::auth::TokenCache cache(10, std::chrono::milliseconds(1000));
  {
    auto lease = pool.acquire();
    BOOST_TEST_REQUIRE(rr::auth::authenticate_cached(cache, lease, created.token).has_value());
  }
  std::atomic<int> lookups{0}, failures{0};
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] {
      while (std::chrono::steady_clock::now() < until) {
        if (rr::auth::cached_user_unless_renewing(cache, created.token)) continue;
        ++lookups;
        auto lease = pool.acquire();
        if (!rr::auth::authenticate_cached(cache, lease, created.token)) ++failures;
      }
    });
  }
  for (auto& caller : callers) caller.join();
  BOOST_TEST(failures.load() == 0);
  // Renewals at about 0.75, 1.5 and 2.25 s; the bound leaves room for a slow machine.
  BOOST_TEST(lookups.load() >= 2);
  BOOST_TEST(lookups.load() <= 6);
}

BOOST_AUTO_TEST_CASE(renewing_a_revoked_token_forgets_it_at_once) {
  TestDatabase db;
  auto created = rr::auth::create_user(db.conn(), "gone@example.com", "cus_gone");
  rr::db::ConnectionPool pool(db.url(), db.session_options(), 1, std::chrono::seconds(5));
  rr::auth::TokenCache cache(10, std::chrono::milliseconds(400));
  auto lease = pool.acquire();
  BOOST_TEST_REQUIRE(rr::auth::authenticate_cached(cache, lease, created.token).has_value());
  db.scalar("DELETE FROM api_tokens");
  // A live entry is the answer until its renewal: a lookup now would cost what the cache saves.
  BOOST_TEST(rr::auth::authenticate_cached(cache, lease, created.token).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(320));                           // into the last quarter
  BOOST_TEST(!rr::auth::cached_user_unless_renewing(cache, created.token).has_value());  // the renewer
  BOOST_TEST(rr::auth::cached_user(cache, created.token).has_value());                   // the others keep it meanwhile
  BOOST_TEST(!rr::auth::authenticate_cached(cache, lease, created.token).has_value());
  BOOST_TEST(!rr::auth::cached_user(cache, created.token).has_value());  // gone before its expiry
}

// A cold cache under load (an API just started): the callers missing the same token at once
// share one lookup instead of each asking the database.
BOOST_AUTO_TEST_CASE(callers_missing_the_same_token_at_once_share_one_lookup) {
  rr::auth::TokenCache cache(10, std::chrono::seconds(60));
  std::atomic<int> loads{0}, answered{0};
  std::atomic<bool> release{false};
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] {
      auto user = cache.load_shared("hash-a", [&]() -> std::optional<rr::auth::User> {
        ++loads;
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return rr::auth::User{7, "a@example.com", "cus_a"};
      });
      if (user && user->id == 7) ++answered;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all eight are in by then
  release = true;
  for (auto& caller : callers) caller.join();
  BOOST_TEST(loads.load() == 1);
  BOOST_TEST(answered.load() == 8);
  BOOST_TEST(cache.find("hash-a").value().id == 7);  // and remembered
}

// A load that fails reaches its own caller; those waiting on it then load for themselves.
BOOST_AUTO_TEST_CASE(a_failed_shared_load_leaves_the_waiters_to_load_themselves) {
  rr::auth::TokenCache cache(10, std::chrono::seconds(60));
  std::atomic<int> loads{0};
  std::atomic<bool> release{false};
  bool failed = false;
  std::optional<rr::auth::User> waiter_answer;
  std::thread leader([&] {
    try {
      cache.load_shared("hash-a", [&]() -> std::optional<rr::auth::User> {
        ++loads;
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        throw std::runtime_error("database down");
      });
    } catch (const std::runtime_error&) {
      failed = true;
    }
  });
  while (loads.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread waiter([&] {
    waiter_answer = cache.load_shared("hash-a", [&]() -> std::optional<rr::auth::User> {
      ++loads;
      return rr::auth::User{8, "b@example.com", "cus_b"};
    });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  release = true;
  leader.join();
  waiter.join();
  BOOST_TEST(failed);
  BOOST_TEST(loads.load() == 2);
  BOOST_TEST_REQUIRE(waiter_answer.has_value());
  BOOST_TEST(waiter_answer->id == 8);
}

BOOST_AUTO_TEST_SUITE_END()
