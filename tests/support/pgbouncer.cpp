// Throwaway PgBouncer processes for tests.
#include "support/pgbouncer.hpp"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "support/test_database.hpp"

namespace rr::test {

namespace {

// The "user@host:port" part of a postgresql:// URI, taken apart.
struct Authority {
  std::size_t start = 0;                // first character after "://"
  std::size_t end = std::string::npos;  // the '/' or '?' after it, or npos
  std::string user;                     // "user@" or ""
  std::string host;
  std::string port = "5432";
};

Authority authority_of(const std::string& url) {
  Authority a;
  auto scheme = url.find("://");
  a.start = scheme == std::string::npos ? 0 : scheme + 3;
  a.end = url.find_first_of("/?", a.start);
  std::string text = url.substr(a.start, a.end == std::string::npos ? std::string::npos : a.end - a.start);
  if (auto at = text.rfind('@'); at != std::string::npos) {
    a.user = text.substr(0, at + 1);
    text = text.substr(at + 1);
  }
  if (auto colon = text.rfind(':'); colon != std::string::npos) {
    a.port = text.substr(colon + 1);
    text = text.substr(0, colon);
  }
  a.host = text;
  return a;
}

}  // namespace

PgBouncer::PgBouncer(const std::string& direct_url, int pool_size) : port_(free_port()) {
  namespace fs = std::filesystem;
  directory_ = (fs::temp_directory_path() / ("rr-pgbouncer-" + random_suffix(8))).string();
  fs::create_directories(directory_);
  // PgBouncer refuses to run as root; started as root, it becomes `user` and must still read
  // its files.
  const bool as_root = ::geteuid() == 0;
  if (as_root) {
    const passwd* postgres = ::getpwnam("postgres");
    BOOST_REQUIRE_MESSAGE(postgres, "no postgres user to run PgBouncer as");
    BOOST_REQUIRE(::chown(directory_.c_str(), postgres->pw_uid, postgres->pw_gid) == 0);
  }
  const Authority server = authority_of(direct_url);
  std::ofstream(directory_ + "/userlist.txt") << "\"postgres\" \"\"\n";
  config_path_ = directory_ + "/pgbouncer.ini";
  // The site file: this fixture's own keys around deploy/pgbouncer.ini, the policy production runs,
  // included right under the one [pgbouncer] header (see that file on why).
  std::ofstream config(config_path_);
  config << "[databases]\n"
         << "* = host=" << server.host << " port=" << server.port << "\n"
         << "[pgbouncer]\n"
         << "%include " << ROCKET_RIDES_SOURCE_DIR << "/deploy/pgbouncer.ini\n"
         << "listen_addr = 127.0.0.1\n"
         << "listen_port = " << port_ << "\n"
         << "unix_socket_dir =\n"
         << "auth_type = trust\n"
         << "auth_file = " << directory_ << "/userlist.txt\n"
         << "admin_users = postgres\n"
         << (as_root ? "user = postgres\n" : "")
         // Fewer server sessions than clients, so that clients really share them.
         << "default_pool_size = " << pool_size << "\n"
         << "reserve_pool_size = 0\n";
  config.close();
  start();
}

PgBouncer::~PgBouncer() {
  stop();
  std::error_code ignored;
  std::filesystem::remove_all(directory_, ignored);
}

void PgBouncer::start() {
  process_.emplace(std::vector<std::string>{"/usr/sbin/pgbouncer", config_path_});
  BOOST_REQUIRE_MESSAGE(wait_for_port(port_, std::chrono::seconds(10)),
                        "pgbouncer did not start: " << process_->output());
}

void PgBouncer::stop() {
  if (!process_) return;
  // SIGTERM is PgBouncer's immediate shutdown: clients and server sessions are dropped at once.
  process_->signal(SIGTERM);
  process_->wait(std::chrono::seconds(10));
  process_.reset();
}

void PgBouncer::restart() {
  stop();
  start();
}

std::string PgBouncer::route(const std::string& url) const {
  const Authority a = authority_of(url);
  return url.substr(0, a.start) + a.user + "127.0.0.1:" + std::to_string(port_) +
         (a.end == std::string::npos ? "" : url.substr(a.end));
}

std::string PgBouncer::admin(const std::string& command) const {
  auto result = run_command({"/usr/bin/psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", std::to_string(port_), "-U",
                             "postgres", "-d", "pgbouncer", "-c", command});
  BOOST_REQUIRE_MESSAGE(result.exit_code == 0, "pgbouncer admin `" << command << "` failed: " << result.err);
  return result.out;
}

PgBouncer* shared_pgbouncer() {
  static std::unique_ptr<PgBouncer> instance = []() -> std::unique_ptr<PgBouncer> {
    const char* wanted = std::getenv("ROCKET_RIDES_TEST_PGBOUNCER");
    if (!wanted || std::string(wanted) != "1") return nullptr;
    // Binaries the tests start inherit this: through PgBouncer they must not prepare statements.
    ::setenv("DATABASE_PREPARED_STATEMENTS", "off", 1);
    return std::make_unique<PgBouncer>(require_env("DATABASE_URL"));
  }();
  return instance.get();
}

}  // namespace rr::test
