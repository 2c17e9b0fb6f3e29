// Discovery, connect, ROLE check; logs when the master it reaches changes (a failover followed).
#include "common/redis/master_connector.hpp"

#include "common/base/log.hpp"
#include "common/redis/server_role.hpp"

namespace rr::redis {

std::string RedisTarget::describe() const {
  if (!uses_sentinels()) return endpoint.describe();
  return "sentinel master '" + sentinel_master + "' via " + std::to_string(sentinels.size()) + " sentinels";
}

MasterConnector::MasterConnector(RedisTarget target, ConnectOptions options)
    : target_(std::move(target)), options_(options) {
  if (target_.uses_sentinels()) discovery_.emplace(target_.sentinels, target_.sentinel_master);
}

Connection MasterConnector::connect() {
  if (!discovery_) {
    Connection connection(target_.endpoint, options_);
    current_master_ = target_.endpoint;
    return connection;
  }
  MasterAddress found = discovery_->find_master();
  RedisEndpoint master = target_.endpoint;  // database, user and password from REDIS_URL
  master.socket_path.clear();
  master.host = found.master.host;
  master.port = found.master.port;
  Connection connection(master, options_);
  // A sentinel's view lags a failover by a moment, and a restarted old master answers as a
  // master until the sentinels demote it: only the server itself can say what it is now.
  ServerRole role = query_role(connection);
  if (role.kind != ServerRole::Kind::master) {
    throw RedisError("Redis at " + master.describe() + ", named master '" + target_.sentinel_master + "' by sentinel " +
                     found.sentinel.describe() + ", answers ROLE " + role.name() + "; asking the sentinels again");
  }
  if (!current_master_ || current_master_->describe() != master.describe()) {
    log::info("connected to the Redis master",
              {{"master", master.describe()},
               {"sentinel_master", target_.sentinel_master},
               {"named_by", found.sentinel.describe()},
               {"previous", current_master_ ? current_master_->describe() : std::string("none")}});
  }
  current_master_ = master;
  return connection;
}

}  // namespace rr::redis
