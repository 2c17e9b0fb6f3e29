// Redis replies as the enqueuer reads them: bytes from the server through hiredis's reader (the
// one every Connection uses), copied by copy_reply (common/redis/connection.*), then read as ROLE
// (parse_role) and SENTINEL get-master-addr-by-name (parse_master_address) answers and as the
// integers and strings a pipeline's replies are taken as. Any bytes are read or refused with
// RedisError or a protocol error, without a crash; a master's replica count is its third field's
// length; an address read has a host and a port from 1 to 65535.
#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/redis/connection.hpp"
#include "common/redis/master_address.hpp"
#include "common/redis/server_role.hpp"
#include "fuzz/support/fuzz_check.hpp"

namespace {

struct ReaderDeleter {
  void operator()(redisReader* reader) const { redisReaderFree(reader); }
};

void read_as_every_answer(const rr::redis::Reply& reply) {
  try {
    auto role = rr::redis::parse_role(reply);
    const auto& fields = reply.as_array();
    if (role.kind == rr::redis::ServerRole::Kind::master && fields.size() >= 3) {
      FUZZ_CHECK(role.replicas == fields[2].as_array().size());
    }
    FUZZ_CHECK(!role.name().empty());
  } catch (const rr::redis::RedisError&) {
  }
  try {
    auto master = rr::redis::parse_master_address(reply, "mymaster");
    FUZZ_CHECK(!master.host.empty() && master.port >= 1);
  } catch (const rr::redis::RedisError&) {
  }
  try {
    reply.as_integer();
  } catch (const rr::redis::RedisError&) {
  }
  try {
    reply.as_string();
  } catch (const rr::redis::RedisError&) {
  }
  // The accessors that move out of a reply the caller no longer needs read the same values.
  try {
    FUZZ_CHECK(rr::redis::Reply(reply).as_string() == reply.as_string());
  } catch (const rr::redis::RedisError&) {
  }
  try {
    FUZZ_CHECK(rr::redis::Reply(reply).as_array().size() == reply.as_array().size());
  } catch (const rr::redis::RedisError&) {
  }
}

// hiredis allocates an array reply's element pointers for the count the server declares, before
// any element arrives ("*685477580" is a 5 GB calloc): a limit of hiredis's reader, which trusts
// its server, and not of ours. Inputs that declare more elements than this are left out.
constexpr long long kMaxDeclaredElements = 100000;

bool declares_a_huge_array(std::string_view input) {
  for (std::size_t at = input.find('*'); at != std::string_view::npos; at = input.find('*', at + 1)) {
    long long count = 0;
    for (std::size_t i = at + 1; i < input.size() && input[i] >= '0' && input[i] <= '9'; ++i) {
      count = count * 10 + (input[i] - '0');
      if (count > kMaxDeclaredElements) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (declares_a_huge_array(std::string_view(reinterpret_cast<const char*>(data), size))) return 0;
  std::unique_ptr<redisReader, ReaderDeleter> reader(redisReaderCreate());
  FUZZ_CHECK(reader != nullptr);
  if (redisReaderFeed(reader.get(), reinterpret_cast<const char*>(data), size) != REDIS_OK) return 0;
  // Every reply the bytes hold, as a pipeline reads them one after another.
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader.get(), &raw) != REDIS_OK || raw == nullptr) return 0;
    std::unique_ptr<redisReply, rr::redis::ReplyDeleter> owned(static_cast<redisReply*>(raw));
    std::string error;
    auto reply = rr::redis::copy_reply(*owned, error);
    if (!error.empty()) continue;  // the pipeline throws here, naming the command
    read_as_every_answer(reply);
  }
}
