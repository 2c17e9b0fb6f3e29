// The WAIT command and what its answer, or a master's replica count, means for a batch.
#include "common/jobs/replica_acknowledgement.hpp"

namespace rr::jobs {

std::vector<std::string> ReplicaAcknowledgement::wait_command() const {
  return {"WAIT", std::to_string(required), std::to_string(timeout.count())};
}

void ReplicaAcknowledgement::check_acknowledged(long long acknowledged, std::size_t batch_size) const {
  if (acknowledged >= required) return;
  throw ReplicasShort("a batch of " + std::to_string(batch_size) + " jobs was acknowledged by " +
                      std::to_string(acknowledged) + " Redis replicas within " + std::to_string(timeout.count()) +
                      " ms, REDIS_MIN_REPLICAS is " + std::to_string(required) +
                      ": the jobs stay staged and go again with the same jids");
}

void ReplicaAcknowledgement::check_connected(const redis::ServerRole& role) const {
  if (role.replicas >= static_cast<std::size_t>(required)) return;
  throw ReplicasShort("the Redis master has " + std::to_string(role.replicas) +
                      " replicas online, REDIS_MIN_REPLICAS is " + std::to_string(required) +
                      ": nothing pushed, the jobs stay staged");
}

}  // namespace rr::jobs
