// ROLE's three reply shapes: master (offset, replicas), slave (its master, link state) and sentinel.
#include "common/redis/server_role.hpp"

namespace rr::redis {

std::string ServerRole::name() const {
  switch (kind) {
    case Kind::master:
      return "master";
    case Kind::replica:
      return "replica";
    case Kind::sentinel:
      return "sentinel";
  }
  return "unknown";
}

ServerRole parse_role(const Reply& reply) {
  const auto& fields = reply.as_array();
  if (fields.empty()) throw RedisError("empty ROLE reply");
  const std::string& kind = fields.front().as_string();
  ServerRole role;
  if (kind == "master") {
    role.kind = ServerRole::Kind::master;
    if (fields.size() >= 3) role.replicas = fields[2].as_array().size();
  } else if (kind == "slave") {
    role.kind = ServerRole::Kind::replica;
  } else if (kind == "sentinel") {
    role.kind = ServerRole::Kind::sentinel;
  } else {
    throw RedisError("unknown role '" + kind + "' in the ROLE reply");
  }
  return role;
}

ServerRole query_role(Connection& connection) { return parse_role(connection.command({"ROLE"})); }

}  // namespace rr::redis
