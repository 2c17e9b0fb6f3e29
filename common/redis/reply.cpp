// Replies as owned values: hiredis's reply copied, and the typed accessors that refuse a reply of
// another type. No connection: what a server's bytes become, readable without one.
#include <hiredis/hiredis.h>

#include <utility>

#include "common/redis/connection.hpp"

namespace rr::redis {

namespace {

[[noreturn]] void wrong_type(Reply::Type wanted, Reply::Type got) {
  throw RedisError("expected a " + std::string(type_name(wanted)) + " reply, got " + std::string(type_name(got)));
}

}  // namespace

Reply copy_reply(const redisReply& raw, std::string& error) {
  Reply reply;
  switch (raw.type) {
    case REDIS_REPLY_STRING:
      reply.type = Reply::Type::string;
      reply.text.assign(raw.str, raw.len);
      break;
    case REDIS_REPLY_STATUS:
      reply.type = Reply::Type::status;
      reply.text.assign(raw.str, raw.len);
      break;
    case REDIS_REPLY_ERROR:
      if (error.empty()) error.assign(raw.str, raw.len);
      break;
    case REDIS_REPLY_INTEGER:
      reply.type = Reply::Type::integer;
      reply.integer = raw.integer;
      break;
    case REDIS_REPLY_NIL:
      reply.type = Reply::Type::nil;
      break;
    case REDIS_REPLY_ARRAY:
      reply.type = Reply::Type::array;
      reply.elements.reserve(raw.elements);
      for (std::size_t i = 0; i < raw.elements; ++i) {
        if (raw.element[i] == nullptr) {
          reply.elements.emplace_back();
        } else {
          reply.elements.push_back(copy_reply(*raw.element[i], error));
        }
      }
      break;
    default:
      if (error.empty()) error = "reply of unknown type " + std::to_string(raw.type);
  }
  return reply;
}

void ReplyDeleter::operator()(redisReply* reply) const { freeReplyObject(reply); }

std::string_view type_name(Reply::Type type) {
  switch (type) {
    case Reply::Type::string:
      return "string";
    case Reply::Type::array:
      return "array";
    case Reply::Type::integer:
      return "integer";
    case Reply::Type::nil:
      return "nil";
    case Reply::Type::status:
      return "status";
  }
  return "unknown";
}

long long Reply::as_integer() const {
  if (type != Type::integer) wrong_type(Type::integer, type);
  return integer;
}

const std::string& Reply::as_string() const& {
  if (type != Type::string && type != Type::status) wrong_type(Type::string, type);
  return text;
}

std::string Reply::as_string() && { return std::move(const_cast<std::string&>(std::as_const(*this).as_string())); }

const std::vector<Reply>& Reply::as_array() const& {
  if (type != Type::array) wrong_type(Type::array, type);
  return elements;
}

std::vector<Reply> Reply::as_array() && {
  return std::move(const_cast<std::vector<Reply>&>(std::as_const(*this).as_array()));
}

}  // namespace rr::redis
