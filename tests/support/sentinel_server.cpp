// Throwaway redis-sentinel processes: a config file in a directory of their own (Sentinel
// rewrites it with what it learns, so it must be writable).
#include "support/sentinel_server.hpp"

#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/test_database.hpp"

namespace fs = std::filesystem;

namespace rr::test {

SentinelServer::SentinelServer(std::string master_name, std::uint16_t master_port, int quorum, SentinelTimings timings)
    : master_name_(std::move(master_name)), port_(free_port()) {
  directory_ = (fs::temp_directory_path() / ("rr-sentinel-" + random_suffix(8))).string();
  fs::create_directories(directory_);
  std::ofstream conf(directory_ + "/sentinel.conf");
  conf << "port " << port_ << "\n"
       << "bind 127.0.0.1\n"
       << "daemonize no\n"
       << "dir " << directory_ << "\n"
       << "sentinel monitor " << master_name_ << " 127.0.0.1 " << master_port << " " << quorum << "\n"
       << "sentinel down-after-milliseconds " << master_name_ << " " << timings.down_after_ms << "\n"
       << "sentinel failover-timeout " << master_name_ << " " << timings.failover_timeout_ms << "\n"
       << "sentinel parallel-syncs " << master_name_ << " 1\n";
  conf.close();
  start();
}

SentinelServer::~SentinelServer() {
  stop();
  std::error_code ignored;
  fs::remove_all(directory_, ignored);
}

void SentinelServer::start() {
  if (process_) return;
  process_.emplace(std::vector<std::string>{"/usr/bin/redis-sentinel", directory_ + "/sentinel.conf"});
  BOOST_REQUIRE_MESSAGE(wait_for_port(port_, std::chrono::seconds(10)),
                        "redis-sentinel did not start: " << process_->output());
}

void SentinelServer::stop() {
  if (!process_) return;
  process_->signal(SIGTERM);
  process_->wait(std::chrono::seconds(10));
  process_.reset();
}

std::string SentinelServer::cli(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"/usr/bin/redis-cli", "-p", std::to_string(port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv).out;
}

std::uint16_t SentinelServer::master_port() const {
  std::istringstream lines(cli({"SENTINEL", "get-master-addr-by-name", master_name_}));
  std::string host, port;
  if (!std::getline(lines, host) || !std::getline(lines, port)) return 0;
  try {
    return static_cast<std::uint16_t>(std::stoi(port));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace rr::test
