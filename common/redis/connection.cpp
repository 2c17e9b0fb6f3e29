// hiredis behind RAII: every reply is type-checked and copied, every failure becomes RedisError.
#include "common/redis/connection.hpp"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <utility>

namespace rr::redis {

namespace {

timeval to_timeval(std::chrono::milliseconds duration) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(duration.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((duration.count() % 1000) * 1000);
  return tv;
}

std::string command_name(const std::vector<std::string>& argv) { return argv.empty() ? "(empty)" : argv.front(); }

}  // namespace

void ContextDeleter::operator()(redisContext* context) const { redisFree(context); }

Connection::Connection(RedisEndpoint endpoint, ConnectOptions options) : endpoint_(std::move(endpoint)) {
  const timeval connect_timeout = to_timeval(options.connect_timeout);
  context_.reset(endpoint_.is_unix_socket()
                     ? redisConnectUnixWithTimeout(endpoint_.socket_path.c_str(), connect_timeout)
                     : redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, connect_timeout));
  if (!context_) {
    broken_ = true;
    throw RedisError("cannot connect to Redis at " + endpoint_.describe() + ": out of memory");
  }
  if (context_->err != 0) fail("cannot connect to Redis at " + endpoint_.describe() + ": " + context_->errstr);
  if (redisSetTimeout(context_.get(), to_timeval(options.command_timeout)) != REDIS_OK) {
    fail("cannot set the Redis socket timeout");
  }
  // Keepalive finds a peer that vanished without a FIN (a failed-over host) on an idle connection.
  if (!endpoint_.is_unix_socket()) redisEnableKeepAlive(context_.get());

  if (endpoint_.password) {
    std::vector<std::string> auth{"AUTH"};
    if (endpoint_.username) auth.push_back(*endpoint_.username);
    auth.push_back(*endpoint_.password);
    try {
      command(auth);
    } catch (const RedisError& e) {
      // The server's message, never the password.
      throw RedisError("Redis at " + endpoint_.describe() + " refused AUTH: " + e.what());
    }
  }
  if (endpoint_.db != 0) command({"SELECT", std::to_string(endpoint_.db)});
}

void Connection::fail(const std::string& what) {
  broken_ = true;
  throw RedisError(what);
}

ReplyPtr Connection::read_reply() {
  void* raw = nullptr;
  if (redisGetReply(context_.get(), &raw) != REDIS_OK || raw == nullptr) {
    if (raw != nullptr) freeReplyObject(raw);
    fail("Redis at " + endpoint_.describe() + ": " +
         (context_->err != 0 ? std::string(context_->errstr) : std::string("no reply")));
  }
  return ReplyPtr(static_cast<redisReply*>(raw));
}

Reply Connection::command(const std::vector<std::string>& argv) { return pipeline({argv}).front(); }

std::vector<Reply> Connection::pipeline(const std::vector<std::vector<std::string>>& commands) {
  if (broken_) throw RedisError("Redis connection to " + endpoint_.describe() + " is broken; reconnect");
  std::vector<const char*> args;
  std::vector<std::size_t> lengths;
  for (const auto& argv : commands) {
    if (argv.empty()) throw RedisError("empty Redis command");
    args.clear();
    lengths.clear();
    for (const auto& arg : argv) {
      args.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    // Appending only fills hiredis's output buffer; nothing is sent until the first read.
    if (redisAppendCommandArgv(context_.get(), static_cast<int>(args.size()), args.data(), lengths.data()) !=
        REDIS_OK) {
      fail("cannot queue Redis command " + command_name(argv) + ": " + context_->errstr);
    }
  }

  std::vector<Reply> replies;
  replies.reserve(commands.size());
  std::string first_error;
  std::size_t failed_index = 0;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    ReplyPtr raw = read_reply();
    std::string error;
    replies.push_back(copy_reply(*raw, error));
    if (!error.empty() && first_error.empty()) {
      first_error = error;
      failed_index = i;
    }
  }
  if (!first_error.empty()) {
    // The protocol is still in step, but an error reply (READONLY after a failover, LOADING, OOM)
    // is often about this server; a fresh connection is cheap and safer.
    fail("Redis command " + std::to_string(failed_index + 1) + " of " + std::to_string(commands.size()) + " (" +
         command_name(commands[failed_index]) + ") failed: " + first_error);
  }
  return replies;
}

}  // namespace rr::redis
