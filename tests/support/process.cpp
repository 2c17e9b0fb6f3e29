// fork/exec plumbing for tests that run the real binaries.
#include "support/process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/test_database.hpp"

extern char** environ;

namespace rr::test {
namespace {

std::vector<std::string> build_environment(const EnvChanges& changes) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [name, value] : changes) {
    if (value)
      vars[name] = *value;
    else
      vars.erase(name);
  }
  std::vector<std::string> out;
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

// Forks and execs with stdout to `out_path` and stderr to `err_path` (the same file when equal).
// Everything is allocated before fork: a test may have threads, and only async-signal-safe calls
// are allowed in the child.
pid_t spawn(const std::vector<std::string>& argv, const EnvChanges& env, const std::string& out_path,
            const std::string& err_path) {
  auto args = argv;
  auto envs = build_environment(env);
  auto cargs = c_strings(args);
  auto cenv = c_strings(envs);
  bool shared = out_path == err_path;
  pid_t pid = fork();
  if (pid == 0) {
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    int err = shared ? out : ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    execve(cargs[0], cargs.data(), cenv.data());
    _exit(127);
  }
  return pid;
}

std::string take_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  std::string text = fd >= 0 ? read_all(fd) : "";
  if (fd >= 0) ::close(fd);
  ::unlink(path.c_str());
  return text;
}

}  // namespace

std::string binary(const std::string& name) { return std::string(ROCKET_RIDES_BIN_DIR) + "/" + name; }

std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot bind a loopback port");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

CommandResult run_command(const std::vector<std::string>& argv, const EnvChanges& env) {
  std::string out_path = "/tmp/rr-cmd-" + random_suffix() + ".out";
  std::string err_path = out_path + ".err";
  pid_t pid = spawn(argv, env, out_path, err_path);
  int status = 0;
  waitpid(pid, &status, 0);
  CommandResult result;
  result.exit_code = decode_status(status);
  result.out = take_file(out_path);
  result.err = take_file(err_path);
  return result;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const EnvChanges& env) {
  output_path_ = "/tmp/rr-child-" + random_suffix() + ".log";
  pid_ = spawn(argv, env, output_path_, output_path_);
}

ChildProcess::~ChildProcess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    wait(std::chrono::seconds(10));
  }
  ::unlink(output_path_.c_str());
}

void ChildProcess::signal(int signo) {
  if (!status_) ::kill(pid_, signo);
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!status_) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = decode_status(status);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

bool ChildProcess::running() { return !wait(std::chrono::milliseconds(0)).has_value(); }

std::string ChildProcess::output() const {
  std::ifstream in(output_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool ChildProcess::wait_for_output(const std::string& needle, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (output().find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return output().find(needle) != std::string::npos;
}

bool wait_for_port(std::uint16_t port, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace rr::test
