// Starting the group and waiting for Sentinel's view of it to settle (sentinels find each other
// through the master's hello channel every 2 s, replicas through INFO).
#include "support/sentinel_group.hpp"

#include <sstream>
#include <thread>

namespace rr::test {

namespace {

using clock_type = std::chrono::steady_clock;

}  // namespace

std::map<std::string, std::string> field_pairs(const std::string& cli_output) {
  std::map<std::string, std::string> fields;
  std::istringstream lines(cli_output);
  std::string key, value;
  while (std::getline(lines, key) && std::getline(lines, value)) fields[key] = value;
  return fields;
}

SentinelGroup::SentinelGroup(std::size_t replicas, std::string master_name) : master_name_(std::move(master_name)) {
  // No 5 s wait for more replicas before a diskless sync: a (re)joining replica syncs at once.
  const std::vector<std::string> quick_sync{"--repl-diskless-sync-delay", "0"};
  master_ = std::make_unique<RedisServer>(quick_sync);
  auto replica_args = quick_sync;
  replica_args.insert(replica_args.end(), {"--replicaof", "127.0.0.1", std::to_string(master_->port())});
  for (std::size_t i = 0; i < replicas; ++i) replicas_.push_back(std::make_unique<RedisServer>(replica_args));
  for (int i = 0; i < 3; ++i) {
    sentinels_.push_back(std::make_unique<SentinelServer>(master_name_, master_->port(), 2));
  }
}

RedisServer& SentinelGroup::server_on(std::uint16_t port) {
  if (master_->port() == port) return *master_;
  for (auto& replica : replicas_) {
    if (replica->port() == port) return *replica;
  }
  throw std::runtime_error("no server of the group on port " + std::to_string(port));
}

std::uint16_t SentinelGroup::named_master_port() {
  for (auto& sentinel : sentinels_) {
    if (sentinel->running()) return sentinel->master_port();
  }
  return 0;
}

std::string SentinelGroup::sentinel_list() const {
  std::string list;
  for (const auto& sentinel : sentinels_) {
    if (!list.empty()) list += ",";
    list += sentinel->address();
  }
  return list;
}

bool SentinelGroup::wait_until_watched(std::size_t replicas, std::chrono::milliseconds timeout) {
  const auto deadline = clock_type::now() + timeout;
  while (clock_type::now() < deadline) {
    std::size_t running = 0;
    for (const auto& sentinel : sentinels_) running += sentinel->running() ? 1 : 0;
    bool settled = true;
    for (const auto& sentinel : sentinels_) {
      if (!sentinel->running()) continue;
      auto fields = field_pairs(sentinel->cli({"SENTINEL", "master", master_name_}));
      if (fields["flags"] != "master" || fields["num-other-sentinels"] != std::to_string(running - 1) ||
          std::stoul(fields["num-slaves"].empty() ? "0" : fields["num-slaves"]) < replicas) {
        settled = false;
        break;
      }
      // A replica that is listed but still syncing cannot acknowledge a WAIT yet.
      std::istringstream listed(sentinel->cli({"SENTINEL", "replicas", master_name_}));
      std::string line, previous;
      std::size_t linked = 0;
      while (std::getline(listed, line)) {
        if (previous == "master-link-status" && line == "ok") ++linked;
        previous = line;
      }
      if (linked < replicas) {
        settled = false;
        break;
      }
    }
    if (settled) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

bool SentinelGroup::wait_for_master(std::uint16_t port, std::chrono::milliseconds timeout) {
  const auto deadline = clock_type::now() + timeout;
  while (clock_type::now() < deadline) {
    bool agreed = true;
    for (const auto& sentinel : sentinels_) {
      if (sentinel->running() && sentinel->master_port() != port) agreed = false;
    }
    if (agreed) {
      std::istringstream lines(run_command({"/usr/bin/redis-cli", "-p", std::to_string(port), "ROLE"}).out);
      std::string role;
      std::getline(lines, role);
      if (role == "master") return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace rr::test
