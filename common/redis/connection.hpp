// A blocking Redis connection on hiredis with RAII handles, timeouts, AUTH/SELECT and pipelining.
// Replies are copied into owned values whose types are checked before use.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/redis/redis_url.hpp"

struct redisContext;
struct redisReply;

namespace rr::redis {

// Any failure talking to Redis: cannot connect, I/O error or timeout, an error reply, a reply of
// an unexpected type. After one the connection reports broken() and must be replaced.
class RedisError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ContextDeleter {
  void operator()(redisContext* context) const;
};
struct ReplyDeleter {
  void operator()(redisReply* reply) const;
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// An owned copy of a reply. Error replies never become a Reply: they throw RedisError.
struct Reply {
  enum class Type { string, array, integer, nil, status };
  Type type = Type::nil;
  std::string text;  // string and status replies
  long long integer = 0;
  std::vector<Reply> elements;

  // Typed accessors: a reply of another type throws RedisError naming both types.
  // On a temporary (`conn.command(...).as_array()`) they move the value out, so a range-for over
  // the result does not dangle.
  long long as_integer() const;
  const std::string& as_string() const&;  // a bulk string or a status
  std::string as_string() &&;
  const std::vector<Reply>& as_array() const&;
  std::vector<Reply> as_array() &&;
  bool is_nil() const { return type == Type::nil; }
};

std::string_view type_name(Reply::Type type);

// Copies hiredis's reply; an error reply anywhere inside it (EXEC results nest them) is returned
// through `error` instead. Public so that the reading of reply bytes can be tested without a server.
Reply copy_reply(const redisReply& raw, std::string& error);

struct ConnectOptions {
  std::chrono::milliseconds connect_timeout{2000};
  // Read/write timeout of every command; a blocking command (BLPOP) must use a shorter server-side
  // timeout than this, or hiredis gives up on the context first.
  std::chrono::milliseconds command_timeout{5000};
};

class Connection {
 public:
  // Connects, authenticates and selects the database; throws RedisError.
  explicit Connection(RedisEndpoint endpoint, ConnectOptions options = {});

  Reply command(const std::vector<std::string>& argv);
  // Sends every command in one write and reads every reply: one round trip. Every reply is read
  // even after an error reply, then the first error is thrown (naming the command's position).
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands);

  // True after any error: the caller should drop this connection and open a new one.
  bool broken() const { return broken_; }
  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  [[noreturn]] void fail(const std::string& what);
  ReplyPtr read_reply();

  RedisEndpoint endpoint_;
  ContextPtr context_;
  bool broken_ = false;
};

}  // namespace rr::redis
