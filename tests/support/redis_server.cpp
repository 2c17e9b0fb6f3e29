// Throwaway redis-server processes for tests.
#include "support/redis_server.hpp"

#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>

#include "support/test_database.hpp"

namespace fs = std::filesystem;

namespace rr::test {

RedisServer::RedisServer(std::vector<std::string> extra_args)
    : port_(free_port()),
      extra_args_(std::move(extra_args)),
      directory_((fs::temp_directory_path() / ("rr-redis-" + random_suffix(8))).string()) {
  fs::create_directories(directory_);
  start();
}

RedisServer::~RedisServer() {
  stop();
  std::error_code ignored;
  fs::remove_all(directory_, ignored);
}

void RedisServer::start() {
  std::vector<std::string> argv{"/usr/bin/redis-server",
                                "--port",
                                std::to_string(port_),
                                "--bind",
                                "127.0.0.1",
                                "--save",
                                "",
                                "--appendonly",
                                "no",
                                "--dir",
                                directory_};
  std::error_code ignored;
  fs::remove(fs::path(directory_) / "dump.rdb", ignored);
  argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
  process_.emplace(argv);
  BOOST_REQUIRE_MESSAGE(wait_for_port(port_, std::chrono::seconds(10)),
                        "redis-server did not start: " << process_->output());
}

void RedisServer::stop() {
  if (!process_) return;
  process_->signal(SIGTERM);
  process_->wait(std::chrono::seconds(10));
  process_.reset();
}

void RedisServer::kill() {
  if (!process_) return;
  process_->signal(SIGKILL);
  process_->wait(std::chrono::seconds(10));
  process_.reset();
}

std::string RedisServer::cli(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"/usr/bin/redis-cli", "-p", std::to_string(port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv).out;
}

}  // namespace rr::test
