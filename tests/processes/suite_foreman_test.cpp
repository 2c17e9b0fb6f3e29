// The whole suite under foreman with the Procfile, as the README's run command starts it: the
// simulator's traffic must produce rides, jobs in Redis and a completed abandoned request.
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "common/auth/users.hpp"
#include "common/http/client.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/test_database.hpp"

using namespace rr::test;

using rr::test::RedisServer;

namespace {

// A GET that reports a transport failure as status 0, so the test goes on to stop foreman.
rr::http::ClientResponse http_get(const std::string& url) {
  try {
    return rr::http::send({"GET", url, {}, "", std::chrono::seconds(5)});
  } catch (const rr::http::TransportError& e) {
    return {0, {}, e.what()};
  }
}

// With this process a subreaper, anything foreman leaves behind becomes our child. Foreman may
// exit while its children are still finishing their graceful stop: reap them as they exit, and
// kill whatever is still running after `grace`, so the test never leaves a server behind.
// Returns how many had to be killed.
std::vector<pid_t> children_except(pid_t keep) {
  std::vector<pid_t> out;
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (auto* entry = readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0 || pid == keep) continue;
    std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
    std::string line;
    std::getline(stat, line);
    auto close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(line.substr(close_paren + 2));
    char state = 0;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent == getpid()) out.push_back(pid);
  }
  closedir(proc);
  return out;
}

int stop_leftover_children(pid_t keep, std::chrono::seconds grace) {
  auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    auto left = children_except(keep);
    for (pid_t pid : left) ::waitpid(pid, nullptr, WNOHANG);
    left = children_except(keep);
    if (left.empty()) return 0;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (pid_t pid : left) {
        std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
        std::string name;
        std::getline(cmdline, name, '\0');
        BOOST_TEST_MESSAGE("still running after SIGTERM: " << name);
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
      return static_cast<int>(left.size());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(suite_under_foreman)

BOOST_AUTO_TEST_CASE(simulated_traffic_reaches_every_daemon_within_a_minute) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  TestDatabase db;
  RedisServer redis;  // its own queue, not shared with other suites
  auto token = rr::auth::create_user(db.conn(), "demo@example.com", "cus_demo").token;
  std::string env_path = "/tmp/rr-suite-" + random_suffix() + ".env";
  std::string api_port = std::to_string(free_port());
  std::string mock_port = std::to_string(free_port());
  // The Procfile's default metrics ports (9540-9543) may be taken on a shared machine.
  std::string api_metrics_port = std::to_string(free_port());
  {
    std::ofstream env(env_path);
    env << "DATABASE_URL=" << db.url() << "\nREDIS_URL=" << redis.url() << "\nAPI_PORT=" << api_port
        << "\nSTRIPE_MOCK_PORT=" << mock_port << "\nROCKET_RIDES_BIN=" << ROCKET_RIDES_BIN_DIR
        << "\nSTRIPE_API_BASE=http://127.0.0.1:" << mock_port << "\nSTRIPE_API_KEY=sk_test_suite"
        << "\nSTRIPE_TIMEOUT=1\nIDEMPOTENCY_KEY_LOCK_TIMEOUT=2"
        << "\nCOMPLETER_MIN_AGE=2\nCOMPLETER_LAST_RUN_THRESHOLD=1\nCOMPLETER_IDLE_SLEEP=0.5"
        << "\nMOCK_FAILURE_RATE=0.4\nSIMULATOR_API_URL=http://127.0.0.1:" << api_port << "\nSIMULATOR_TOKEN=" << token
        << "\nSIMULATOR_RATE=10\nSIMULATOR_ABANDON_RATE=0.6\nSIMULATOR_CONCURRENCY=4"
        << "\nAPI_METRICS_PORT=" << api_metrics_port << "\nENQUEUER_METRICS_PORT=" << free_port()
        << "\nCOMPLETER_METRICS_PORT=" << free_port() << "\nREAPER_METRICS_PORT=" << free_port() << "\n";
  }

  ChildProcess foreman({"/usr/bin/foreman", "start", "-f", std::string(ROCKET_RIDES_SOURCE_DIR) + "/Procfile", "-e",
                        env_path, "-d", ROCKET_RIDES_SOURCE_DIR});
  bool rides = false, jobs = false, completed = false;
  std::regex completed_line(R"(completer.*completed=[1-9])");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline && !(rides && jobs && completed)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    BOOST_REQUIRE_MESSAGE(foreman.running(), "foreman exited: " << foreman.output());
    rides = rides || db.scalar("SELECT count(*) FROM rides WHERE stripe_charge_id IS NOT NULL") != "0";
    jobs = jobs || redis.cli({"llen", "queue:default"}) != "0\n";
    completed = completed || std::regex_search(foreman.output(), completed_line);
  }
  // The Procfile gives the API its metrics port; the public port keeps /metrics to itself.
  auto metrics = http_get("http://127.0.0.1:" + api_metrics_port + "/metrics");
  auto public_metrics = http_get("http://127.0.0.1:" + api_port + "/metrics");
  foreman.signal(SIGTERM);
  auto status = foreman.wait(std::chrono::seconds(40));
  auto logs = foreman.output();
  // foreman signals its direct children only, so each Procfile line must `exec` the daemon
  // rather than leave it behind a shell; anything still running here means one does not.
  int killed = stop_leftover_children(redis.pid(), std::chrono::seconds(30));
  BOOST_TEST(killed == 0, killed << " process(es) outlived foreman's SIGTERM by 30 s");
  BOOST_TEST(rides, "no charged ride");
  BOOST_TEST(jobs, "no job reached Redis");
  BOOST_TEST(completed, "the completer finished no abandoned request");
  BOOST_TEST(status.has_value(), "foreman did not stop");
  BOOST_TEST(metrics.status == 200);
  BOOST_TEST(metrics.body.find("rocket_rides_http_requests_total{method=\"POST\",route=\"/rides\"") != std::string::npos);
  BOOST_TEST(public_metrics.status == 404);
  BOOST_TEST(logs.find(token) == std::string::npos, "a token was logged");
  if (!(rides && jobs && completed)) BOOST_TEST_MESSAGE(logs.substr(logs.size() > 6000 ? logs.size() - 6000 : 0));
  std::remove(env_path.c_str());
}

BOOST_AUTO_TEST_SUITE_END()
